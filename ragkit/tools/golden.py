"""``ragkit golden CORPUS_DIR QUESTIONS OUT``: build span-anchored gold from quoted evidence.

Reads a questions file (JSONL or CSV, evidence as verbatim quotes), anchors every quote in the
corpus with `ragkit.golden.build_golden` and writes the span-anchored golden file. Problems are
listed with their line; exit 0 when there are none, 1 when some questions were skipped, 3 when
the corpus or the questions file cannot be used. (``python -m ragkit.tools.golden`` is the same.)
"""

from __future__ import annotations

import argparse

from ..documents import DocumentError, load_corpus
from ..golden import GoldenError, build_golden


def main(argv: list[str] | None = None, prog: str = "ragkit golden") -> int:
    """Build span-anchored gold: CORPUS_DIR QUESTIONS OUT."""
    p = argparse.ArgumentParser(prog=prog, description=main.__doc__)
    p.add_argument("corpus")
    p.add_argument("questions")
    p.add_argument("out")
    a = p.parse_args(argv)
    try:
        docs = load_corpus(a.corpus).by_id()
        records, problems = build_golden(a.questions, docs, a.out)
    except (DocumentError, GoldenError) as e:
        print(e)
        return 3
    for prob in problems:
        print(f"{a.questions}:{prob}")
    print(f"{len(records)} questions written to {a.out}; {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
