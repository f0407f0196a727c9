"""Execute the course notebooks in order (``make reproduce`` / ``make smoke``).

Notebook sources are jupytext "py:percent" files (``notebooks/NN_name.py``) that diff well. This
runner turns each into a notebook, executes it top to bottom in a fresh kernel with
``RAGKIT_PROFILE`` set, and fails hard on the first error (no ``|| echo failed``). In the full
profile the executed notebooks are written next to their sources (``notebooks/NN_name.ipynb``,
the copies readers open); in the smoke profile they go to ``results/smoke/notebooks/``.
It prints each notebook's wall time and the total, and writes them to
``reproduce_times.json`` in the profile's results folder (with the CPU count and environment
switches that change the work: ``RAGKIT_GEMMA_DIR``, ``RAGKIT_RERANK_MODEL``).

    ragkit reproduce --profile smoke [--only 00,01] [--timeout 900] [--jobs 2]

With ``--jobs N`` up to N notebooks run at once, each in its own kernel, in the stages
`stages` gives: every notebook that reads no other notebook's rows and times nothing across
cores runs in the first stage, longest first (by the last run's times, `longest_first`), so
the two kernels finish close together; a notebook that measures throughput across the
machine's cores (`RUNS_ALONE`) then runs with no other; a notebook whose cells read the rows
other notebooks wrote (`READS_OTHER_ROWS`) runs last, alone, so it reads this run's rows. A
run one at a time (``--jobs 1``) keeps the same order. While k kernels run,
each encoder takes ``cpu_count // k`` threads (`ragkit.environment.cpu_share`; the runner keeps
the count in the file ``RAGKIT_RUNNING_KERNELS`` names), so two kernels on two cores do not
fight over them; the one left alone takes both back. Each notebook's wall and CPU time are
still its own; the total is the run's wall time.

(``python -m ragkit.tools.reproduce`` is the same.) A whole full run ends by regenerating the
README's results section (`ragkit.tools.readme`).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path
from typing import Sequence

from ..config import PROJECT_ROOT
from .common import bounded, cache_state

NOTEBOOKS = PROJECT_ROOT / "notebooks"


def notebook_sources(folder: Path = NOTEBOOKS) -> list[Path]:
    return sorted(p for p in folder.glob("[0-9][0-9]_*.py"))


# Notebooks (by number) whose results depend on the rows other notebooks wrote: 07 reads every
# results file (`load_results`, `load_scores`) for its leaderboard, claims and decision guide.
# (01, 04, 05 and 10 read the results folder too, but only rows no other notebook writes: 01
# the chroma_repro rows it writes itself, 04 the rows of `ragkit bench context-speed`, 05 the
# rows of `ragkit bench late-quality`, 10 the FinanceBench rows of `ragkit bench design`.)
READS_OTHER_ROWS = frozenset({"07"})
# Notebooks that measure speed across the machine's cores: 09 times one process against two
# processes and Ray's actors, which another kernel on the same cores would distort.
RUNS_ALONE = frozenset({"09"})


def stages(numbers: Sequence[str]) -> list[list[str]]:
    """The notebooks (numbers, e.g. "07") cut into stages run one after another; the notebooks
    of one stage may run at the same time. Every notebook that neither reads other notebooks'
    rows nor times the machine's cores runs in the first stage; then each notebook in
    `RUNS_ALONE`, alone, so its timings are its own; then each notebook in `READS_OTHER_ROWS`,
    alone and last, so it reads the rows this run wrote rather than an earlier run's.

    >>> stages(["00", "01", "06", "07", "08", "09"])
    [['00', '01', '06', '08'], ['09'], ['07']]
    """
    free = [n for n in numbers if n not in READS_OTHER_ROWS | RUNS_ALONE]
    alone = [[n] for n in numbers if n in RUNS_ALONE and n not in READS_OTHER_ROWS]
    readers = [[n] for n in numbers if n in READS_OTHER_ROWS]
    return ([free] if free else []) + alone + readers


def longest_first(stems: Sequence[str], seconds: dict[str, float]) -> list[str]:
    """`stems` with the longest last-run time first (a notebook with no time recorded counts
    as longest), ties in the given order: the usual greedy order for two workers.

    >>> longest_first(["00_a", "01_b", "02_c"], {"00_a": 30.0, "01_b": 5.0, "02_c": 90.0})
    ['02_c', '00_a', '01_b']
    """
    return sorted(stems, key=lambda s: -seconds.get(s, float("inf")))


def last_times(profile: str, state: str | None = None,
               fallback: Path | None = None) -> dict[str, float]:
    """The wall seconds per notebook of the last recorded whole run of `profile`, taken from
    the run that started from the same vector cache `state` ("empty" or "warm") where one is
    recorded (a cold run's longest notebooks are not a warm run's), else from the last whole
    run; {} when there is none or the file is unreadable (the order is only a scheduling hint).
    With no whole run recorded in this run's results folder, the `fallback` folder's record is
    read (a first bf16 run is ordered by the float32 record's times)."""
    import json

    from ..config import get_settings

    for folder in (get_settings().results_dir, fallback):
        if folder is None:
            continue
        try:
            record = json.loads((folder / "reproduce_times.json").read_text())
            if record.get("profile") != profile:
                return {}
            same = (record.get("by_cache") or {}).get(state) or {} if state else {}
            times = same.get("notebooks") or record.get("notebooks", {})
            return {str(k): float(v) for k, v in times.items()}
        except FileNotFoundError:
            continue
        except (OSError, ValueError, TypeError, AttributeError):
            return {}
    return {}


def cell_seconds(cell) -> float:
    """Wall time of one executed cell, from the timing metadata nbclient records."""
    from datetime import datetime

    t = cell.metadata.get("execution", {})
    start, end = t.get("iopub.execute_input"), t.get("shell.execute_reply")
    if not (start and end):
        return 0.0
    parse = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00"))  # noqa: E731
    return (parse(end) - parse(start)).total_seconds()


def slowest_cells(nb, n: int = 3) -> list[list]:
    """[[seconds, first source line], ...] for the n slowest code cells."""
    cells = [(round(cell_seconds(c), 1), c.source.strip().splitlines()[0][:80])
             for c in nb.cells if c.cell_type == "code" and c.source.strip()]
    return [list(c) for c in sorted(cells, key=lambda c: -c[0])[:n]]


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def clean_outputs(nb, root: Path = PROJECT_ROOT):
    """Keep executed copies small, stable and machine-independent: no timing metadata, no
    progress-bar widgets (their saved state is most of a cold run's file, and a static copy
    cannot show them anyway), and paths in warnings relative to the project."""
    nb.metadata.pop("widgets", None)
    prefix = str(root).rstrip("/") + "/"
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type != "code":
            continue
        outputs = []
        for out in cell.outputs:
            if WIDGET_VIEW in out.get("data", {}):
                continue
            if out.get("output_type") == "stream":
                out["text"] = out["text"].replace(prefix, "")
            elif isinstance(out.get("data", {}).get("text/plain"), str):
                out["data"]["text/plain"] = out["data"]["text/plain"].replace(prefix, "")
            outputs.append(out)
        cell.outputs = outputs
    return nb


def children_cpu() -> float:
    """CPU seconds (user + system) of this process's finished, reaped children: a notebook's
    kernel once it has been shut down."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def execute(source: Path, profile: str, out_dir: Path, timeout: int = 1800,
            cells: dict | None = None, cpu: dict | None = None) -> float:
    """Run one notebook source; write the executed .ipynb into out_dir; return seconds.
    If `cells` is given, the slowest cells are stored in it under the notebook's stem; if
    `cpu` is, the kernel's CPU seconds (wall time on a busy machine overstates the work)."""
    import jupytext
    import nbformat
    from nbclient import NotebookClient

    nb = jupytext.read(source)
    nb.metadata.pop("jupytext", None)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    os.environ["RAGKIT_PROFILE"] = profile
    t0, c0 = time.time(), children_cpu()
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(source.parent)}})
    client.execute()  # the kernel is shut down (and reaped) when this returns
    elapsed = time.time() - t0
    if cpu is not None:
        cpu[source.stem] = round(children_cpu() - c0, 1)
    out_dir.mkdir(parents=True, exist_ok=True)
    if cells is not None:
        cells[source.stem] = slowest_cells(nb)
    nbformat.write(clean_outputs(nb), out_dir / f"{source.stem}.ipynb")
    return elapsed



def _execute_one(source: Path, profile: str, out_dir: Path,
                 timeout: int) -> tuple[float, list[list], float]:
    """`execute` in a worker process: (wall seconds, slowest cells, the kernel's CPU seconds)."""
    cells: dict = {}
    cpu: dict = {}
    try:
        secs = execute(source, profile, out_dir, timeout, cells, cpu)
    except Exception as e:  # nbclient's errors do not all survive pickling: pass the text
        raise RuntimeError(f"{source.name} failed: {type(e).__name__}: {e}") from None
    return secs, cells[source.stem], cpu[source.stem]


def _report(stem: str, secs: float, slow: list[list], cpu_s: float) -> None:
    cells = "; ".join(f"{s:.0f}s `{line}`" for s, line in slow)
    print(f"  {stem}: {secs:.1f}s wall, {cpu_s:.1f}s CPU (slowest cells: {cells})", flush=True)


def run_notebooks(sources: Sequence[Path], profile: str, out_dir: Path, timeout: int,
                  jobs: int = 1, state: str | None = None, fallback: Path | None = None
                  ) -> tuple[dict[str, float], dict[str, list], dict[str, float]]:
    """Execute the notebooks, one at a time (``jobs=1``) or up to `jobs` at once within each of
    `stages`, longest first by the last run from the same cache `state` (`last_times`); stop
    at the first that fails. Returns each notebook's wall seconds, slowest cells and kernel CPU
    seconds, by stem, in notebook order."""
    times: dict[str, float] = {}
    cells: dict[str, list] = {}
    cpu: dict[str, float] = {}
    by_number = {s.name[:2]: s for s in sources}
    previous = last_times(profile, state, fallback)
    ordered = [[by_number[n] for n in longest_first(stage, {n: previous.get(by_number[n].stem)
                                                            for n in stage
                                                            if by_number[n].stem in previous})]
               for stage in stages(list(by_number))]
    if jobs == 1:
        for src in (src for stage in ordered for src in stage):
            print(f"running {src.name} ({profile}) ...", flush=True)
            secs = execute(src, profile, out_dir, timeout, cells, cpu)
            times[src.stem] = round(secs, 1)
            _report(src.stem, secs, cells[src.stem], cpu[src.stem])
        return times, cells, cpu
    import multiprocessing
    import tempfile
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from unittest.mock import patch

    from ..cache import atomic_write_text
    from ..config import RUNNING_KERNELS

    context = multiprocessing.get_context("spawn")  # no fork of a process holding threads
    with tempfile.TemporaryDirectory(prefix="ragkit-kernels-") as tmp, \
            patch.dict(os.environ, {RUNNING_KERNELS: str(Path(tmp) / "running")}), \
            ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
        share = Path(tmp) / "running"
        for stage in ordered:
            print(f"running {', '.join(src.name for src in stage)} ({profile}, "
                  f"{min(jobs, len(stage))} at once) ...", flush=True)
            # each kernel's encoder takes its share of the CPUs (`ragkit.environment.cpu_share`)
            atomic_write_text(share, str(min(jobs, len(stage))))
            running = {pool.submit(_execute_one, src, profile, out_dir, timeout): src.stem
                       for src in stage}
            while running:
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                atomic_write_text(share, str(max(1, min(jobs, len(running) - len(done)))))
                for future in done:
                    stem = running.pop(future)
                    if future.exception() is not None:  # stop: no notebook not yet
                        for queued in running:           # handed to a worker starts
                            queued.cancel()
                        busy = [n for f, n in running.items() if f.running()]
                        # said now, in two lines: the pool waits for what its workers hold
                        lines = [re.sub(r"\x1b\[[0-9;]*m", "", x).strip()
                                 for x in str(future.exception()).splitlines() if x.strip()]
                        print(" … ".join(dict.fromkeys([lines[0], lines[-1]])) + (
                            f"\nstopping once the notebooks the workers already hold end: "
                            f"{', '.join(busy)}" if busy else ""), file=sys.stderr, flush=True)
                        raise future.exception()
                    secs, slow, cpu_s = future.result()
                    times[stem], cells[stem], cpu[stem] = round(secs, 1), slow, cpu_s
                    _report(stem, secs, slow, cpu_s)
    order = [s.stem for s in sources]
    return ({k: times[k] for k in order}, {k: cells[k] for k in order},
            {k: cpu[k] for k in order})

def cache_mb(folder: Path) -> float:
    """Megabytes of cached vectors (embeddings and late-chunking) under the cache folder."""
    files = [f for sub in ("embeddings", "late") for f in (folder / sub).rglob("*") if f.is_file()]
    return round(sum(f.stat().st_size for f in files) / 1e6, 1)


def write_times(profile: str, times: dict[str, float], total: float,
                cells: dict | None = None, cache_at_start: float | None = None,
                cpu: dict | None = None, load_at_start: float | None = None,
                jobs: int = 1, precision: str = "fp32") -> Path:
    import json
    import platform

    from ..config import get_settings
    from ..cache import atomic_write_text

    os.environ["RAGKIT_PROFILE"] = profile
    path = get_settings().results_dir / "reproduce_times.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    old = json.loads(path.read_text()) if path.exists() else {}
    settings = get_settings()
    env = {"RAGKIT_GEMMA_DIR": bool(settings.gemma_dir),
           "RAGKIT_RERANK_MODEL": bool(settings.rerank_model)}
    if len(times) == len(notebook_sources()):  # a whole run replaces the record
        from datetime import datetime, timezone

        record = {"profile": profile, "cpus": os.cpu_count(), "machine": platform.machine(),
                  "total_s": round(total, 1), "notebooks": times, "env": env,
                  "embed_backend": get_settings().embed_backend,
                  "vector_cache_mb_at_start": cache_at_start, "slowest_cells": cells or {},
                  "cpu_s": cpu or {}, "total_cpu_s": round(sum((cpu or {}).values()), 1),
                  "load_average_at_start": load_at_start, "jobs": jobs,
                  "precision": precision, "bf16_here": _bf16_here(),
                  "finished": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        # the last whole run of each cache state (empty, warm) is kept, so a run on a warm
        # cache does not hide how long a fresh clone takes, nor the other way round
        state = cache_state(cache_at_start or 0.0)
        summary = {k: record[k] for k in ("total_s", "total_cpu_s", "cpus", "finished", "jobs",
                                          "vector_cache_mb_at_start", "load_average_at_start",
                                          "precision", "notebooks")}
        before = old.get("by_cache", {})
        if not before and old.get("total_s") and old.get("finished") is None:
            # a record written before states were kept: it stands for its own state
            was = cache_state(old.get("vector_cache_mb_at_start") or 0.0)
            before = {was: {k: old.get(k) for k in summary if k != "finished"}}
            before[was]["finished"] = datetime.fromtimestamp(
                path.stat().st_mtime, timezone.utc).isoformat(timespec="seconds")
        record["by_cache"] = {**before, state: summary}
    else:  # a partial run (--only) is kept apart, so the whole run's figures stay coherent
        record = {**old, "partial": {**old.get("partial", {}), **times},
                  "partial_cpu_s": {**old.get("partial_cpu_s", {}), **(cpu or {})}}
    atomic_write_text(path, json.dumps(record, indent=1, sort_keys=True) + "\n")
    return path


def main(argv: list[str] | None = None, prog: str = "ragkit reproduce") -> int:
    p = argparse.ArgumentParser(prog=prog, description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--profile", choices=("smoke", "full"), default="full")
    p.add_argument("--only", default="", help="comma-separated notebook numbers, e.g. 00,01")
    p.add_argument("--timeout", type=bounded(1, 7 * 86_400), default=3600,
                   help="seconds per cell (at most a week)")
    p.add_argument("--jobs", type=bounded(1, 64), default=1,
                   help="notebooks run at once, in separate kernels (see `stages`)")
    p.add_argument("--precision", choices=("fp32", "bf16"), default="fp32",
                   help="fp32 (the record) or bf16: the encoder and late chunking under "
                        "bfloat16 autocast, rows and executed notebooks written to "
                        "results/bf16/ (never over the record), then compared with the record "
                        "by `ragkit verdict-diff`; refused where the machine has no bfloat16")
    args = p.parse_args(argv)
    from ..environment import offline_defaults

    offline_defaults()  # the notebooks' kernels inherit it
    only = {x.strip() for x in args.only.split(",") if x.strip()}
    sources = [s for s in notebook_sources() if not only or s.name[:2] in only]
    out_dir = NOTEBOOKS if args.profile == "full" else PROJECT_ROOT / "results/smoke/notebooks"
    from ..config import get_settings

    if args.precision == "bf16":
        os.environ["RAGKIT_PROFILE"] = args.profile
        record = get_settings().results_dir
        refused = bf16_setup(record)
        if refused:
            print(f"{prog}: --precision bf16 refused: {refused}", file=sys.stderr)
            return 3
        out_dir = get_settings().results_dir / "notebooks"

    cache_at_start = cache_mb(get_settings().cache_dir)
    load = round(os.getloadavg()[0], 2)  # other work on the machine inflates wall times
    t0 = time.time()
    times, cells, cpu = run_notebooks(sources, args.profile, out_dir, args.timeout, args.jobs,
                                      cache_state(cache_at_start),
                                      record if args.precision == "bf16" else None)
    total = time.time() - t0
    write_times(args.profile, times, total, cells, cache_at_start, cpu, load, args.jobs,
                args.precision)
    if args.profile == "full" and not only and args.precision == "fp32":
        from .readme import update_readme

        update_readme()
    print(f"total: {total:.1f}s wall, {sum(cpu.values()):.1f}s kernel CPU for {len(sources)} "
          f"notebooks ({args.profile} profile, {args.precision}, {args.jobs} at once; load "
          f"average {load} at the start)")
    if args.precision == "bf16":
        return check_against_record(record, get_settings().results_dir,
                                    NOTEBOOKS if args.profile == "full" else
                                    PROJECT_ROOT / "results/smoke/notebooks", out_dir)
    return 0


def bf16_setup(record: Path) -> str | None:
    """Point this run (and the kernels it starts) at bfloat16 and at ``<record>/bf16/``, seeded
    with the record's bench rows, which no notebook writes and some notebooks read (07's
    leaderboard, 05's late-quality table): they stay the float32 record's, so the only factor
    that differs between the two runs is the precision of what the notebooks encode. Returns why
    bf16 is refused on this machine (`ragkit.environment.bf16_unavailable`), else None."""
    import shutil

    from ..environment import bf16_unavailable

    why = bf16_unavailable()
    if why:
        return why
    target = record / "bf16"
    (target / "runs").mkdir(parents=True, exist_ok=True)
    for pattern in ("bench_*.jsonl", "splits.json", "runs/bench_*.parquet"):
        for src in record.glob(pattern):
            shutil.copyfile(src, target / src.relative_to(record))
    os.environ["RAGKIT_EMBED_PRECISION"] = "bf16"
    os.environ["RAGKIT_RESULTS_DIR"] = str(target)
    return None


def _bf16_here() -> str:
    """"available", or why this machine refuses ``--precision bf16`` (for the README)."""
    from ..environment import bf16_unavailable

    try:
        return bf16_unavailable() or "available"
    except ImportError:  # no torch: nothing was encoded here either
        return "torch is not installed"


def check_against_record(record: Path, other: Path, record_notebooks: Path,
                         other_notebooks: Path) -> int:
    """`ragkit verdict-diff` of this run against the record, printed and written to
    ``<other>/verdict_diff.json``: 0 when no verdict, pick or closing line differs, else 1."""
    import json

    from ..cache import atomic_write_text
    from .verdict_diff import compare, report

    found = compare(record, other, record_notebooks, other_notebooks)
    for line in report(found):
        print(line)
    atomic_write_text(other / "verdict_diff.json", json.dumps(found, indent=1, sort_keys=True)
                      + "\n")
    return 1 if found["differing"] else 0


if __name__ == "__main__":
    sys.exit(main())
