"""Before/after identity check: do two runs write the same results rows?

    ragkit smoke-diff BEFORE_DIR AFTER_DIR [--ignore-metric REGEX ...]

Each folder is a results folder (``RAGKIT_RESULTS_DIR`` of a run, e.g. two smoke runs of the
same notebooks, one on the base commit and one on a branch). Every ``*.jsonl`` file in either
is read as results rows; the volatile fields (``timestamp``, ``git_sha``:
`ragkit.report.results.VOLATILE`) are dropped, and the rows of each file are compared as
multisets. Differing rows are printed, ``-`` for a row only BEFORE has and ``+`` for a row only
AFTER has, under the file's name; a file that only one folder has is named. Metrics that are wall-clock measurements (speeds,
seconds) differ between any two runs: ``--ignore-metric`` leaves out the rows whose metric
matches a regular expression (the default ignores none).

Exit codes (the README's): 0 = the rows are identical; 1 = they differ (and only that: 1 always
means "differences found"); 2 = a bad command line (a missing argument, a bad ``--ignore-metric``
expression); 3 = an input it cannot use: a folder that is not there or not a folder, a results
file that cannot be read, or a line in one that is not a JSON row (named with its line). Each
error is one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

from ..report.results import comparable, read_rows


class InputError(Exception):
    """An input smoke-diff cannot use: one line, exit code 3."""


def _rows(path: Path) -> list[dict]:
    """`read_rows`, with a file that cannot be read or holds a bad line as an `InputError`."""
    try:
        return read_rows(path)
    except ValueError as e:  # ResultsFileError: names the file and the line
        raise InputError(str(e)) from None
    except OSError as e:
        raise InputError(f"{path}: cannot be read ({e.strerror or e})") from None


def row_differences(before: Path, after: Path, ignore: list[str] = ()) -> dict[str, list[str]]:
    """{file name: ["- row", "+ row", ...]} for every file whose rows differ (missing files
    included as a single line). `InputError` for a file that cannot be read or parsed."""
    patterns = [re.compile(p) for p in ignore]
    names = sorted({p.name for d in (before, after) for p in d.glob("*.jsonl")})
    out: dict[str, list[str]] = {}
    for name in names:
        a, b = before / name, after / name
        if not (a.exists() and b.exists()):
            out[name] = [f"only in {'BEFORE' if a.exists() else 'AFTER'}"]
            continue
        rows = [Counter(comparable(r for r in _rows(p)
                                   if not any(x.search(str(r.get("metric"))) for x in patterns)))
                for p in (a, b)]
        lines = [f"- {r}" for r in sorted((rows[0] - rows[1]).elements())]
        lines += [f"+ {r}" for r in sorted((rows[1] - rows[0]).elements())]
        if lines:
            out[name] = lines
    return out


def _pattern(value: str) -> str:
    try:
        re.compile(value)
    except re.error as e:
        raise argparse.ArgumentTypeError(f"{value!r} is not a regular expression ({e})") from None
    return value


def main(argv: list[str] | None = None, prog: str = "ragkit smoke-diff") -> int:
    from .common import EXIT_FATAL, Parser

    p = Parser(prog=prog, description=__doc__.split("\n\n")[0])
    p.add_argument("before", type=Path)
    p.add_argument("after", type=Path)
    p.add_argument("--ignore-metric", action="append", default=[], metavar="REGEX",
                   type=_pattern, help="leave out rows whose metric matches (repeatable)")
    args = p.parse_args(argv)
    try:
        for d in (args.before, args.after):
            if not d.is_dir():
                raise InputError(f"{d}: {'not a folder' if d.exists() else 'no such folder'}")
        diff = row_differences(args.before, args.after, args.ignore_metric)
        files = sorted({x.name for d in (args.before, args.after) for x in d.glob("*.jsonl")})
        n_rows = sum(len(_rows(args.after / f)) for f in files if (args.after / f).exists())
    except InputError as e:
        print(f"{prog}: {' '.join(str(e).split())}", file=sys.stderr)
        return EXIT_FATAL
    for name, lines in diff.items():
        print(f"{name}:")
        for line in lines:
            print(f"  {line}")
    print(f"{len(files)} results files, {n_rows} rows after; "
          + (f"{len(diff)} file(s) differ" if diff else "identical rows (timestamps and git sha "
             "aside)"))
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
