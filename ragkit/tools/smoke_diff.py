"""Before/after identity check: do two runs write the same results rows?

    ragkit smoke-diff BEFORE_DIR AFTER_DIR [--ignore-metric REGEX ...]

Each folder is a results folder (``RAGKIT_RESULTS_DIR`` of a run, e.g. two smoke runs of the
same notebooks, one on the base commit and one on a branch). Every ``*.jsonl`` file in either
is read as results rows; the volatile fields (``timestamp``, ``git_sha``: `ragkit.results.VOLATILE`)
are dropped, and the rows of each file are compared as multisets. Differing rows are printed,
``-`` for a row only BEFORE has and ``+`` for a row only AFTER has, under the file's name; a
file that only one folder has is named. Metrics that are wall-clock measurements (speeds,
seconds) differ between any two runs: ``--ignore-metric`` leaves out the rows whose metric
matches a regular expression (the default ignores none). Exit status 0 when the rows are
identical, 1 when they differ, 2 for a folder that does not exist.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

from ..results import comparable, read_rows


def row_differences(before: Path, after: Path, ignore: list[str] = ()) -> dict[str, list[str]]:
    """{file name: ["- row", "+ row", ...]} for every file whose rows differ (missing files
    included as a single line)."""
    patterns = [re.compile(p) for p in ignore]
    names = sorted({p.name for d in (before, after) for p in d.glob("*.jsonl")})
    out: dict[str, list[str]] = {}
    for name in names:
        a, b = before / name, after / name
        if not (a.exists() and b.exists()):
            out[name] = [f"only in {'BEFORE' if a.exists() else 'AFTER'}"]
            continue
        rows = [Counter(comparable(r for r in read_rows(p)
                                   if not any(x.search(str(r.get("metric"))) for x in patterns)))
                for p in (a, b)]
        lines = [f"- {r}" for r in sorted((rows[0] - rows[1]).elements())]
        lines += [f"+ {r}" for r in sorted((rows[1] - rows[0]).elements())]
        if lines:
            out[name] = lines
    return out


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    p = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    p.add_argument("before", type=Path)
    p.add_argument("after", type=Path)
    p.add_argument("--ignore-metric", action="append", default=[], metavar="REGEX",
                   help="leave out rows whose metric matches (repeatable)")
    args = p.parse_args(argv)
    for d in (args.before, args.after):
        if not d.is_dir():
            print(f"ragkit smoke-diff: {d} is not a folder", file=sys.stderr)
            return 2
    diff = row_differences(args.before, args.after, args.ignore_metric)
    files = sorted({x.name for d in (args.before, args.after) for x in d.glob("*.jsonl")})
    for name, lines in diff.items():
        print(f"{name}:")
        for line in lines:
            print(f"  {line}")
    n_rows = sum(len(read_rows(args.after / f)) for f in files if (args.after / f).exists())
    print(f"{len(files)} results files, {n_rows} rows after; "
          + (f"{len(diff)} file(s) differ" if diff else "identical rows (timestamps and git sha "
             "aside)"))
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
