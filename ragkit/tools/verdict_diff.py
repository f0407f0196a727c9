"""Do two runs of the course reach the same verdicts? (``ragkit verdict-diff``)

    ragkit verdict-diff RECORD OTHER [--record-notebooks DIR] [--other-notebooks DIR]

RECORD and OTHER are results folders: the float32 record (``results/``) and, for instance, the
opt-in bfloat16 run (``results/bf16/``, which ``make reproduce PRECISION=bf16`` writes), or a
cold run on another machine. Decimals are expected to move between them; what must not move is
what the course concludes. Two things are reported:

(a) **the largest paired recall@B difference per benchmark**: each run (one configuration: its
    notebook, experiment, benchmark, strategy, encoder and settings) is paired with the run of
    the same configuration in the other folder, and the per-question span recall@B values of
    the questions both scored are compared (OTHER − RECORD, mean over those questions, in
    points) at every budget; the largest difference in size per benchmark is shown, with the
    run that has it;
(b) **every verdict, pick and closing line that differs**: the lines of the executed notebooks'
    outputs (and of ``decision_guide.md``) that carry a verdict word (beats, loses, no
    measurable difference, supported, held, Use, Do not use, pick ...), with every decimal,
    interval, per-question tally (wins/losses/ties, "ahead on 12 questions, behind on 3, tied
    on 99") and precision flag replaced by ``#`` so that only the words, the names and the
    whole-number counts (such as "beats on 1 of 3") are compared. A line only one run has is
    printed, with its numbers, with ``-`` (RECORD) or ``+`` (OTHER), and with how far its 95 %
    interval stays from 0 (negative: the interval holds 0), so a flip at a near-tie shows.

The notebooks are read from ``RECORD/../notebooks`` for the record folder ``results/`` and from
``OTHER/notebooks`` otherwise, unless given. Exit codes: 0 = no verdict differs; 1 = some verdict
differs; 2 = a bad command line; 3 = an input it cannot use (named, one line). The figures go to
stdout and, with ``--out FILE``, to a JSON file.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Iterable

from .common import EXIT_FATAL, EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE
from .notebook_checks import DIRECTION

# a line is a verdict when it carries a direction word (the one list `notebook_checks` holds
# prose to) or one of the words a closing, a pick or a claim check uses
_CLOSING = re.compile(r"\b(ties|not decided|supported|held|cannot be tested|use|do not use|"
                      r"depends|no evidence|picks?|best|winner|behind)\b", re.IGNORECASE)


def is_verdict(line: str) -> bool:
    return bool(DIRECTION.search(line) or _CLOSING.search(line))


# what may move between two faithful runs: decimals (with a sign, a % or a unit), intervals,
# the per-question tallies of a paired comparison (wins/losses/ties, "ahead on 12 questions,
# behind on 3, tied on 99") and a row's precision flag; whole numbers stay (question counts,
# "1 of 3", chunk sizes)
_INTERVAL = re.compile(r"\[\s*[-+−]?\d[\d,.]*(?: ?%)?\s*,\s*[-+−]?\d[\d,.]*(?: ?%)?\s*\]")
_WLT = re.compile(r"\b\d+/\d+/\d+\b|\b\d+ wins? / \d+ loss(?:es)? / \d+ ties?\b")
_TALLY = re.compile(r"ahead on \d+ questions?, behind on \d+, tied on \d+")
_PRECISION = re.compile(r"\bprecision:\w+;?")
_DECIMAL = re.compile(r"[-+−]?\d[\d,]*\.\d+(?: ?%)?|[-+−]\d[\d,]*(?: ?%)?")


def skeleton(line: str) -> str:
    """A verdict line with the numbers that may move replaced by ``#``."""
    line = _PRECISION.sub("", line)
    line = _TALLY.sub("ahead on #, behind on #, tied on #", line)
    line = _INTERVAL.sub("#", line)
    line = _WLT.sub("#", line)
    line = _DECIMAL.sub("#", line)
    return re.sub(r"\s+", " ", line).strip()


def interval_margin(line: str) -> float | None:
    """How far the first 95 % interval on `line` stays from 0, in its own units: the distance
    from 0 to its nearer end, negative when the interval holds 0 (None: no interval). A verdict
    that flips between two runs with a small margin in both is a near-tie."""
    m = _INTERVAL.search(line)
    if not m:
        return None
    ends = [float(x.strip().rstrip("%").strip().replace(",", "").replace("−", "-"))
            for x in m.group(0).strip("[]").split(",")]
    if len(ends) != 2:
        return None
    lo, hi = sorted(ends)
    return round(min(abs(lo), abs(hi)) * (1 if lo > 0 or hi < 0 else -1), 2)


def verdict_lines(text: str) -> list[str]:
    """The skeletons of the lines of `text` that carry a verdict word."""
    return [skeleton(line) for line in text.splitlines() if is_verdict(line)]


def notebook_text(path: Path) -> str:
    """Every text output of an executed notebook (Markdown shown, printed streams, plain-text
    results), in cell order."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    parts: list[str] = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                parts.append(str(out.get("text", "")))
            data = out.get("data", {})
            for kind in ("text/markdown", "text/plain"):
                if kind in data:
                    parts.append(str(data[kind]))
                    break
    return "\n".join(parts)


def _texts(results: Path, notebooks: Path) -> dict[str, str]:
    out = {nb.stem: notebook_text(nb) for nb in sorted(notebooks.glob("[0-9][0-9]_*.ipynb"))}
    guide = results / "decision_guide.md"
    if guide.exists():
        out[guide.name] = guide.read_text(encoding="utf-8")
    return out


def _originals(text: str) -> dict[str, list[str]]:
    """{skeleton: the verdict lines of `text` with their numbers}."""
    out: dict[str, list[str]] = defaultdict(list)
    for line in text.splitlines():
        if is_verdict(line):
            out[skeleton(line)].append(line.strip())
    return out


def _identity(row: dict) -> str:
    params = {k: v for k, v in (row.get("params") or {}).items() if k != "precision"}
    return json.dumps([row.get("notebook"), row.get("experiment"), row.get("benchmark"),
                       row.get("strategy"), row.get("embedder"), params], sort_keys=True)


def _runs(results: Path) -> dict[str, tuple[str, str, str]]:
    """{configuration: (results file stem, run id, benchmark)} of every run in `results`."""
    from ..report.results import read_rows

    out: dict[str, tuple[str, str, str]] = {}
    for path in sorted(results.glob("*.jsonl")):
        for row in read_rows(path):
            if row.get("run"):
                out.setdefault(_identity(row), (path.stem, row["run"], row.get("benchmark")))
    return out


def recall_differences(record: Path, other: Path) -> dict[str, dict]:
    """{benchmark: {"largest": points, "budget": B, "run": strategy, "runs": paired runs}}:
    the largest |mean paired recall@B difference| (OTHER − RECORD) over the paired runs."""
    import pandas as pd

    ours, theirs = _runs(record), _runs(other)
    scores: dict[tuple[Path, str], "pd.DataFrame"] = {}

    def recall(folder: Path, stem: str, run: str):
        key = (folder, stem)
        if key not in scores:
            path = folder / "runs" / f"{stem}.scores.parquet"
            frame = pd.read_parquet(path) if path.exists() else pd.DataFrame(
                columns=["query_id", "metric", "budget", "value", "run"])
            scores[key] = frame[frame["metric"] == "recall@B"]
        frame = scores[key]
        return frame[frame["run"] == run].set_index(["budget", "query_id"])["value"]

    out: dict[str, dict] = defaultdict(lambda: {"largest": 0.0, "budget": None, "run": None,
                                                "runs": 0})
    for ident in sorted(set(ours) & set(theirs)):
        (stem_a, run_a, bench), (stem_b, run_b, _) = ours[ident], theirs[ident]
        a, b = recall(record, stem_a, run_a), recall(other, stem_b, run_b)
        both = a.index.intersection(b.index)
        if not len(both):
            continue
        diff = (b.loc[both] - a.loc[both]).groupby(level="budget").mean() * 100
        cell = out[bench]
        cell["runs"] += 1
        for budget, d in diff.items():
            if abs(d) > abs(cell["largest"]):
                cell.update(largest=round(float(d), 2), budget=int(budget),
                            run=json.loads(ident)[3])
    return dict(out)


def compare(record: Path, other: Path, record_notebooks: Path,
            other_notebooks: Path) -> dict:
    """Both reports (see the module doc) as one JSON-ready dict."""
    # {source: {skeleton: its lines with their numbers}}, and the skeletons' multisets
    oa = {k: _originals(t) for k, t in _texts(record, record_notebooks).items()}
    ob = {k: _originals(t) for k, t in _texts(other, other_notebooks).items()}
    va = {k: Counter({x: len(v) for x, v in o.items()}) for k, o in oa.items()}
    vb = {k: Counter({x: len(v) for x, v in o.items()}) for k, o in ob.items()}
    differ: dict[str, list[str]] = {}
    shown: dict[str, list[dict]] = {}
    for name in sorted(set(va) | set(vb)):
        a, b = va.get(name, Counter()), vb.get(name, Counter())
        lines = ([f"- {x}" for x in sorted((a - b).elements())]
                 + [f"+ {x}" for x in sorted((b - a).elements())])
        if lines:
            differ[name] = lines
            shown[name] = [{"side": side, "line": line, "margin": interval_margin(line)}
                           for side, extra, orig in (("-", a - b, oa.get(name, {})),
                                                     ("+", b - a, ob.get(name, {})))
                           for x in sorted(extra) for line in orig[x][:extra[x]]]
    return {"recall_at_b": recall_differences(record, other),
            "verdict_lines": {k: sum(v.values()) for k, v in va.items()},
            "differing": differ, "differing_with_numbers": shown}


def _default_notebooks(results: Path) -> Path:
    inside = results / "notebooks"
    return inside if inside.is_dir() else results.parent / "notebooks"


def report(found: dict) -> Iterable[str]:
    yield "largest paired recall@B difference (other − record, points, mean over questions):"
    for bench, cell in sorted(found["recall_at_b"].items()):
        where = (f" at B = {cell['budget']} ({cell['run']})" if cell["budget"] is not None
                 else " (every paired value identical)")
        yield f"  {bench}: {cell['largest']:+.2f}{where}; {cell['runs']} paired runs"
    total = sum(found["verdict_lines"].values())
    n_diff = sum(len(v) for v in found["differing"].values())
    yield (f"verdict, pick and closing lines compared: {total} in "
           f"{len(found['verdict_lines'])} sources; differing: {n_diff}")
    for name, lines in found.get("differing_with_numbers", {}).items():
        yield f"  {name}:"
        for x in lines:
            margin = ("" if x["margin"] is None else
                      f"  [its interval's nearer end is {x['margin']:+g} from 0]")
            yield f"    {x['side']} {x['line']}{margin}"


def main(argv: list[str] | None = None, prog: str = "ragkit verdict-diff") -> int:
    p = argparse.ArgumentParser(prog=prog, description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("record", type=Path, help="the record's results folder (e.g. results)")
    p.add_argument("other", type=Path, help="the other run's results folder (results/bf16)")
    p.add_argument("--record-notebooks", type=Path, default=None)
    p.add_argument("--other-notebooks", type=Path, default=None)
    p.add_argument("--out", type=Path, default=None, help="also write the report as JSON")
    try:
        args = p.parse_args(argv)
    except SystemExit as e:
        return EXIT_USAGE if e.code else EXIT_OK
    folders = {"RECORD": args.record, "OTHER": args.other,
               "--record-notebooks": args.record_notebooks or _default_notebooks(args.record),
               "--other-notebooks": args.other_notebooks or _default_notebooks(args.other)}
    for what, folder in folders.items():
        if not folder.is_dir():
            print(f"ragkit verdict-diff: {what} {folder} is not a folder", file=sys.stderr)
            return EXIT_FATAL
    try:
        found = compare(args.record, args.other, folders["--record-notebooks"],
                        folders["--other-notebooks"])
    except (ValueError, OSError) as e:  # an unreadable row, parquet or notebook: one line
        print(f"ragkit verdict-diff: {e}".splitlines()[0], file=sys.stderr)
        return EXIT_FATAL
    for line in report(found):
        print(line)
    if args.out is not None:
        from ..cache import atomic_write_text

        atomic_write_text(args.out, json.dumps(found, indent=1, sort_keys=True) + "\n")
    return EXIT_PROBLEMS if found["differing"] else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
