"""``ragkit bench splits``: the grouped tune / held-out halves of the four benchmarks.

    ragkit bench splits [--check]

Writes ``results/splits.json`` (`ragkit.evaluate.splits`): per benchmark, the rule, the number of
groups and the question ids on each side. Every bench that tunes a setting chooses it on the
tune side, and boards quote the held-out side. FinanceBench's PDFs are large and not everywhere:
where they cannot be had, its committed halves are kept (and the run says so). ``--check`` rebuilds the split and compares it
with the committed file (exit 1 when they differ), writing nothing.
"""

from __future__ import annotations

import argparse
import json
import sys

from .common import run_script

BENCHMARKS = ("course", "chroma", "anthropic", "financebench")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--check", action="store_true",
                   help="compare with results/splits.json; write nothing")


def run_args(args: argparse.Namespace) -> int:
    from ..evaluate.benchmarks import load
    from ..evaluate.splits import SIDES, SPLITS_FILE, leaks, splits_for, write_splits
    from ..report.tables import text_table

    from ..evaluate.sources import BenchmarkUnavailable

    benches, kept = [], []
    for n in BENCHMARKS:
        try:
            benches.append(load(n))
        except BenchmarkUnavailable as e:
            if n != "financebench":
                raise
            print(f"{n}: not available here ({e}); its committed halves are kept")
            kept.append(n)
    splits = splits_for(benches)
    rows = []
    for b in benches:
        s = splits[b.name]
        shared = leaks(b.queries, s.side, len(b.documents))
        if shared:  # the rule makes this impossible; a bug, not a user error
            raise AssertionError(f"{b.name}: split leaks: {shared[:3]}")
        rows.append([b.name, len(b.documents), len(b.queries), s.groups,
                     *(len(s.ids(side)) for side in SIDES)])
    print(text_table(["benchmark", "documents", "questions", "groups", *SIDES], rows))
    if args.check:
        saved = json.loads(SPLITS_FILE.read_text(encoding="utf-8"))
        saved = {n: v for n, v in saved.items() if n not in kept}
        fresh = {n: s.to_json() for n, s in splits.items()}
        if saved != fresh:
            print(f"{SPLITS_FILE} differs from the split rebuilt now; run ragkit bench splits")
            return 1
        print(f"{SPLITS_FILE}: as committed")
        return 0
    print(f"wrote {write_splits(splits, keep=kept)}")
    return 0


def main(argv: list[str] | None = None, prog: str = "ragkit bench splits") -> int:
    return run_script(__doc__, prog, add_arguments, run_args, argv)


if __name__ == "__main__":
    sys.exit(main())
