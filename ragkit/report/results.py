"""Every number the course reports, written as rows of one schema and read back as a table.

Each notebook owns one file, ``results/<notebook>.jsonl``; a `Recorder` collects the rows of a
run and `save()` replaces that file atomically, so re-running a notebook regenerates its numbers
instead of appending duplicates. (`append_rows` is for command-line runs that add to a file.)
One row is one metric value, with everything that produced it:

    notebook, experiment, benchmark, strategy, params, embedder, k, budget, depth, metric,
    value, n_queries, run, profile, seed, device, flags, ragkit_version, git_sha, timestamp

``budget`` is the context budget in cl100k_base tokens for budgeted metrics (``recall@B``,
``pass@B`` …; see `ragkit.evaluate`), empty for fixed-k ones; ``depth`` is how many hits were
retrieved per query; ``run`` names the per-query run the row summarises: the hits
(``results/runs/<notebook>.hits.parquet``: query id, rank, doc_id, start, end, score, tokens)
and the per-query metric values (``results/runs/<notebook>.scores.parquet``), so any metric
and any paired interval can be recomputed later without re-embedding (`load_scores`).
``flags`` lists anything a reader must know (a truncation, a fallback, a skipped judge).
Values are kept at full precision (round for display only); rows are sorted, so two
identical runs write identical rows apart from ``timestamp`` and ``git_sha``.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from .. import jsonio
from ..cache import atomic_write_bytes, atomic_write_text
from ..config import PROJECT_ROOT, get_settings, resolve_device

SCHEMA = ("notebook", "experiment", "benchmark", "strategy", "params", "embedder", "k", "budget",
          "depth", "metric", "value", "n_queries", "run", "profile", "seed", "device", "flags",
          "ragkit_version", "git_sha", "timestamp")
VOLATILE = ("timestamp", "git_sha")
# Metric names that rows once used, and the names they are read as now. Until 2026-12-06 the
# share of gold units wholly inside the top k was stored as "recall@k", beside span recall at k
# stored as "recall"; it is stored as "pass@k" since. Rows and per-query tables written
# before then are read under the new name (`read_rows`, `read_scores`), and a run that keeps
# saved rows (`Recorder.keep_saved`) writes them back under it.
RENAMED_METRICS = {"recall@k": "pass@k", "diff_recall@k": "diff_pass@k"}


@lru_cache(maxsize=1)
def git_sha() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=PROJECT_ROOT,
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def make_row(*, notebook: str, experiment: str, benchmark: str, strategy: str, metric: str,
             value: float, embedder: str = "", k: int | None = None, n_queries: int = 0,
             params: Mapping[str, Any] | None = None, flags: Iterable[str] = (),
             device: str | None = None, budget: int | None = None, depth: int | None = None,
             run: str | None = None) -> dict[str, Any]:
    from .. import __version__

    s = get_settings()
    return {
        "notebook": notebook, "experiment": experiment, "benchmark": benchmark,
        "strategy": strategy, "params": dict(params or {}), "embedder": embedder, "k": k,
        "budget": budget, "depth": depth, "metric": metric,
        "value": None if value is None or value != value else float(value),
        "n_queries": int(n_queries), "run": run, "profile": s.profile, "seed": s.seed,
        "device": device or resolve_device(), "flags": sorted(set(flags)),
        "ragkit_version": __version__, "git_sha": git_sha(),
        "timestamp": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    }


def _sort_key(row: Mapping[str, Any]) -> str:
    return json.dumps([row.get(f) for f in SCHEMA if f not in VOLATILE], sort_keys=True,
                      default=str)


def results_path(notebook: str) -> Path:
    return get_settings().results_dir / f"{notebook}.jsonl"


def figure_path(name: str) -> Path:
    """Where a figure goes: ``results/figures/<name>.png`` (smoke runs: under results/smoke)."""
    path = get_settings().results_dir / "figures" / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def save_figure(fig, name: str) -> Path:
    """Save a matplotlib figure reproducibly (no timestamp in the PNG metadata)."""
    path = figure_path(name)
    fig.savefig(path, dpi=110, bbox_inches="tight", metadata={"Software": None})
    return path


def show_figure(fig, name: str) -> Path:
    """Save `fig` (`save_figure`) and show it inline when running under IPython, as a PNG
    output of the cell, so the executed notebook carries the figure itself. Returns the path."""
    path = save_figure(fig, name)
    try:
        from IPython import get_ipython
        from IPython.display import Image, display
    except ImportError:
        return path
    if get_ipython() is not None:
        display(Image(filename=str(path)))
    import matplotlib.pyplot as plt

    plt.close(fig)  # shown once, as the saved PNG
    return path


def runs_path(notebook: str, kind: str) -> Path:
    """``results/runs/<notebook>.<kind>.parquet`` (kind: ``hits`` or ``scores``)."""
    return get_settings().results_dir / "runs" / f"{notebook}.{kind}.parquet"


class Recorder:
    """Collects the rows of one notebook run, and its per-query runs; `save()` writes them
    (replacing the old files)."""

    def __init__(self, notebook: str):
        self.notebook = notebook
        self.rows: list[dict[str, Any]] = []
        self.hits: dict[str, Any] = {}    # run id -> DataFrame of ranked hits
        self.scores: dict[str, Any] = {}  # run id -> DataFrame of per-query metric values

    def add_run(self, run: str, hits, scores) -> None:
        """Keep one run's hits and per-query scores (long format: query_id, type, metric,
        budget, value) to be saved with the rows."""
        self.hits[run] = hits.assign(run=run)
        self.scores[run] = scores.assign(run=run)

    def add(self, **kw: Any) -> dict[str, Any]:
        row = make_row(notebook=self.notebook, **kw)
        self.rows.append(row)
        return row

    def add_metrics(self, metrics: Mapping[str, float], **kw: Any) -> None:
        """One row per metric of a `{metric: value}` mapping (e.g. from `evaluate`)."""
        for metric, value in metrics.items():
            self.add(metric=metric, value=value, **kw)

    def frames(self):
        """This run's rows and per-query scores as DataFrames (before `save`), e.g. for
        `ragkit.report.check_claims` inside a notebook."""
        import pandas as pd

        rows = pd.DataFrame(self.rows, columns=list(SCHEMA))
        scores = (pd.concat(list(self.scores.values()), ignore_index=True) if self.scores
                  else pd.DataFrame(columns=["run", "query_id", "type", "metric", "budget",
                                             "value"]))
        return rows, scores

    def keep_saved(self, keep: Callable[[dict[str, Any]], bool]) -> int:
        """Carry over the rows this notebook already saved that `keep` accepts, with their
        per-query runs, so that `save()` writes them back unchanged: a bench re-run on one
        benchmark keeps the others' rows. Returns how many rows were kept (0 when nothing is
        saved yet)."""
        import pandas as pd

        path = results_path(self.notebook)
        if not path.exists():
            return 0
        kept = [r for r in read_rows(path) if keep(r)]
        runs = {r["run"] for r in kept if r.get("run")}
        for kind, store in (("hits", self.hits), ("scores", self.scores)):
            saved = runs_path(self.notebook, kind)
            if runs and saved.exists():
                frame = read_scores(saved) if kind == "scores" else pd.read_parquet(saved)
                for run, part in frame[frame.run.isin(runs)].groupby("run", sort=True):
                    store.setdefault(run, part.reset_index(drop=True))
        self.rows.extend(kept)
        return len(kept)

    def save(self) -> Path:
        path = results_path(self.notebook)
        write_rows(path, self.rows)
        for kind, runs in (("hits", self.hits), ("scores", self.scores)):
            target = runs_path(self.notebook, kind)
            if runs:
                write_parquet(target, runs)
            elif target.exists():
                target.unlink()
        return path


def write_parquet(path: Path, runs: Mapping[str, Any]) -> None:
    """Concatenate the runs' frames (sorted by run id) into one parquet file, atomically
    (`atomic_write_bytes`: a unique temporary file, renamed; through a symlink to its target)."""
    import io

    import pandas as pd

    df = pd.concat([runs[r] for r in sorted(runs)], ignore_index=True)
    for col in ("run", "query_id", "doc_id", "type", "metric"):
        if col in df:
            df[col] = df[col].astype(str)
    buf = io.BytesIO()
    df.to_parquet(buf, index=False, compression="zstd")
    atomic_write_bytes(path, buf.getvalue())


def read_scores(path: str | Path):
    """One per-query scores file (``runs/<notebook>.scores.parquet``), with the metric names
    of `RENAMED_METRICS` read under their current names.

    >>> import pandas as pd, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = Path(d) / "x.scores.parquet"
    ...     pd.DataFrame({"metric": ["recall@k", "recall"], "value": [1.0, 0.5]}).to_parquet(path)
    ...     read_scores(path).metric.tolist()
    ['pass@k', 'recall']
    """
    import pandas as pd

    frame = pd.read_parquet(path)
    if "metric" in frame:
        frame["metric"] = frame["metric"].replace(RENAMED_METRICS)
    return frame


def load_scores(folder: str | Path | None = None):
    """Every per-query metric value under `folder` (default: the results dir), long format:
    run, query_id, type, metric, budget, value (budget -1 for fixed-k metrics)."""
    import pandas as pd

    folder = Path(folder or get_settings().results_dir) / "runs"
    parts = [read_scores(p) for p in sorted(folder.glob("*.scores.parquet"))]
    cols = ["run", "query_id", "type", "metric", "budget", "value"]
    return pd.concat(parts, ignore_index=True)[cols] if parts else pd.DataFrame(columns=cols)


def load_hits(folder: str | Path | None = None):
    """Every saved ranked hit under `folder`: run, query_id, rank, doc_id, start, end, score,
    tokens, prefix_tokens."""
    import pandas as pd

    folder = Path(folder or get_settings().results_dir) / "runs"
    parts = [pd.read_parquet(p) for p in sorted(folder.glob("*.hits.parquet"))]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def saved_hits(hits, run: str, query_id: str, docs: Mapping[str, Any]) -> list:
    """The hits `load_hits` saved for `run` and one question, rebuilt in rank order as
    `ragkit.retrieve.Hit`s over `docs` (doc id -> Document), so a saved ranking can be packed
    and read again (`ragkit.report.hits_table`). The rows keep a prefix's tokens but not its
    text, so a run whose hits carry a prefix is refused rather than read without it."""
    from ..retrieve.base import Hit
    from ..types import Chunk

    rows = hits[(hits.run == run) & (hits.query_id == query_id)].sort_values("rank")
    if (rows.prefix_tokens > 0).any():
        raise ValueError(f"run {run}: its saved hits carry prefixes, whose text is not saved")
    return [Hit(Chunk.make(docs[r.doc_id], int(r.start), int(r.end), "saved"), float(r.score))
            for r in rows.itertuples()]


def write_rows(path: str | Path, rows: Iterable[Mapping[str, Any]]) -> None:
    rows = sorted(rows, key=_sort_key)
    atomic_write_text(path, "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n"
                                    for r in rows))


def append_rows(path: str | Path, rows: Iterable[Mapping[str, Any]]) -> None:
    """Add rows at the end of a results file, in place (`ragkit.files.append_bytes`): the
    rows already there are left as they are, byte for byte, and the file keeps its mode,
    its inode and so its hard links. The existing rows are read first (a file that is not
    JSON rows is refused, `ResultsFileError`), and the read and the append happen under a
    lock file next to it (``.<name>.lock``), so runs appending to one file at once keep every
    row. A `path` that is a symlink is resolved first: the lock and the rows go next to and
    into its target, and the link stays a link."""
    import os

    from filelock import FileLock

    from ..files import append_bytes

    path = Path(os.path.realpath(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    new = sorted(rows, key=_sort_key)
    with FileLock(str(path.parent / f".{path.name}.lock")):
        if path.exists():
            read_rows(path)
        append_bytes(path, "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n"
                                   for r in new).encode("utf-8"))


class ResultsFileError(ValueError):
    """A results file that is not JSON rows; the message names file and line."""


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a results file; `ResultsFileError` naming file and line for a line that is
    not a JSON object. Lines are split on "\\n" only (never `str.splitlines()`, which breaks
    inside JSON strings holding U+2028, U+2029 or U+0085). A metric named in `RENAMED_METRICS`
    is read under its current name."""
    out = []
    for n, raw in enumerate(Path(path).read_bytes().split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            row = jsonio.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as e:
            raise ResultsFileError(f"{path}:{n}: not UTF-8 (byte 0x{raw[e.start]:02x})") from None
        except json.JSONDecodeError as e:
            raise ResultsFileError(f"{path}:{n}: not a JSON row ({e})") from None
        if not isinstance(row, dict):
            raise ResultsFileError(f"{path}:{n}: not a JSON row (a {type(row).__name__})")
        metric = row.get("metric")
        if isinstance(metric, str) and metric in RENAMED_METRICS:
            row["metric"] = RENAMED_METRICS[metric]
        out.append(row)
    return out


def load_results(folder: str | Path | None = None):
    """Every row under `folder` (default: the results dir) as a pandas DataFrame."""
    import pandas as pd

    folder = Path(folder or get_settings().results_dir)
    rows = [r for p in sorted(folder.glob("*.jsonl")) for r in read_rows(p)]
    df = pd.DataFrame(rows, columns=list(SCHEMA))
    return df


def comparable(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """Rows with the volatile fields removed, as sorted JSON strings (for determinism checks)."""
    return sorted(json.dumps({k: v for k, v in r.items() if k not in VOLATILE}, sort_keys=True)
                  for r in rows)
