"""``ragkit golden CORPUS_DIR QUESTIONS OUT``: build span-anchored gold from quoted evidence.

Reads a questions file (JSONL or CSV, evidence as verbatim quotes), anchors every quote in the
corpus with `ragkit.evaluate.build_golden` and writes the span-anchored golden file. Problems are
listed with their line, and so are questions kept with a warning (evidence that overlaps, a span
that cannot be checked); exit 0 when there are no problems, 1 when some questions were skipped,
3 when the corpus or the questions file cannot be used, 2 when OUT is one of the files it reads
(the questions, a document): refused before anything is written. (``python -m
ragkit.tools.golden`` is the same.)
"""

from __future__ import annotations

import sys
import warnings

from ..evaluate.golden import GoldenWarning, build_golden
from ..evaluate.questions import GoldenError
from ..files import shown
from ..text.corpus import load_corpus
from ..text.documents import DocumentError
from .common import Parser
from .outputs import OutputError, check_output


def main(argv: list[str] | None = None, prog: str = "ragkit golden") -> int:
    """Build span-anchored gold: CORPUS_DIR QUESTIONS OUT."""
    p = Parser(prog=prog, description=main.__doc__)
    p.add_argument("corpus")
    p.add_argument("questions")
    p.add_argument("out")
    p.add_argument("--include-hidden", action="store_true",
                   help="also read hidden files and folders and backup files in CORPUS_DIR")
    a = p.parse_args(argv)
    try:
        check_output(a.out, [a.questions], "OUT")  # the cheap check first
        corpus = load_corpus(a.corpus, include_hidden=a.include_hidden)
        check_output(a.out, [a.questions, *corpus.inputs], "OUT")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", GoldenWarning)
            records, problems = build_golden(a.questions, corpus.by_id(), a.out)
    except OutputError as e:  # before anything is written
        print(f"{prog}: {e}", file=sys.stderr)
        return 2
    except (DocumentError, GoldenError) as e:
        print(e)
        return 3
    except OSError as e:  # OUT's folder cannot be made, the disk is full: nothing written
        print(f"{prog}: OUT {shown(a.out)}: cannot be written ({e.strerror or e})",
              file=sys.stderr)
        return 3
    for line in corpus.summary():
        print(line)
    for w in caught:  # kept questions whose evidence overlaps or could not be checked
        if issubclass(w.category, GoldenWarning):
            print(f"warning: {w.message}")
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    for prob in problems:
        print(f"{a.questions}:{prob}")
    print(f"{len(records)} questions written to {a.out}; {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
