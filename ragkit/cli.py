"""The `ragkit` command: run the course's comparison on your own documents.

    ragkit chunk PATH --strategy structure            # chunks + linter report
    ragkit eval --corpus DIR --golden FILE --strategies recursive:250/0,structure
    ragkit show --corpus DIR --golden FILE --question 3 --strategies ...

Golden files are JSONL or CSV. Each question gives its evidence as verbatim quotes
(``{"id", "question", "type", "evidence": [{"doc_id"?, "quote"}]}``, or CSV columns
``id,question,quote,doc_id``); ragkit finds each quote in the documents and scores against its
span. A quote that is missing or occurs more than once is reported with its line and skipped —
never guessed. Files that cannot be read are reported and skipped too; the run continues.

Exit codes: 0 = done, nothing to report; 1 = done, but some files or questions were skipped
(see the summary); 2 = bad command line; 3 = nothing to evaluate (no readable documents or
no usable question).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, EXIT_FATAL = 0, 1, 2, 3
DEFAULT_STRATEGIES = "fixed_chars:1000/200,recursive:250/0"


class CliError(Exception):
    """A fatal input problem: printed without a traceback, exit code 3."""


def _load_docs(path: str):
    from .documents import load_corpus, load_document

    p = Path(path)
    if p.is_file():
        return [load_document(p)], []
    if not p.is_dir():
        raise CliError(f"{path}: no such file or folder")
    corpus = load_corpus(p, strict=False)
    if not corpus.documents:
        raise CliError(f"{path}: no readable documents" + "".join(f"\n  {e}" for e in
                                                                   corpus.errors))
    return corpus.documents, corpus.errors


def _load_folder(corpus: str, golden: str):
    """(benchmark, file errors, question problems) — see `benchmarks.load_folder`."""
    from .benchmarks import load_folder

    if not Path(corpus).is_dir():
        raise CliError(f"{corpus}: no such folder")
    if not Path(golden).is_file():
        raise CliError(f"{golden}: no such file")
    bench, errors, problems = load_folder(corpus, golden)
    if not bench.documents:
        raise CliError(f"{corpus}: no readable documents" + "".join(f"\n  {e}" for e in errors))
    return bench, errors, problems


def _strategies(spec: str):
    from .chunkers import get_chunker

    try:
        return [get_chunker(s.strip()) for s in spec.split(",") if s.strip()]
    except (KeyError, ValueError, TypeError) as e:
        raise CliError(f"--strategies: {e}") from None


def _embedder(model: str | None):
    from .embed import Embedder

    return Embedder(model)


def cmd_chunk(a) -> int:
    docs, errors = _load_docs(a.path)
    chunker = _strategies(a.strategy)[0]
    rows = []
    for doc in docs:
        for c in chunker.chunk(doc):
            rows.append({"id": c.id, "doc_id": c.doc_id, "start": c.start, "end": c.end,
                         "prefix": c.prefix, "text": c.text, "strategy": c.strategy})
    if a.out:
        Path(a.out).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                               encoding="utf-8")
        print(f"{len(rows)} chunks written to {a.out}")
    else:
        for r in rows[: a.limit]:
            body = " ".join(r["text"].split())
            print(f"{r['doc_id']}[{r['start']}:{r['end']}] {body[:90]}")
        if len(rows) > a.limit:
            print(f"... {len(rows) - a.limit} more (use --out FILE to write them all)")
    _print_lint(docs, chunker, a.embedder)
    return _finish(errors, [])


def _print_lint(docs, chunker, model):
    try:
        from .lint import lint_corpus
    except ImportError:  # pragma: no cover - the linter ships with ragkit
        return
    print("\nlinter:")
    print(lint_corpus(docs, chunker, tokenizer=_embedder(model)).to_string(index=False))


def cmd_eval(a) -> int:
    from .config import get_settings, seed_everything
    from .pipeline import compare
    from .results import Recorder, append_rows

    seed_everything()
    bench, errors, problems = _load_folder(a.corpus, a.golden)
    answerable = [q for q in bench.queries if q.gold]
    if not answerable:
        _report(errors, problems)
        raise CliError(f"{a.golden}: no question could be anchored to the documents")
    results = Path(a.results or get_settings().results_dir / "cli_eval.jsonl")
    rec = Recorder("cli_eval")
    table = compare([bench], _strategies(a.strategies), _embedder(a.embedder), rec, k=a.k,
                    experiment="eval")
    append_rows(results, rec.rows)
    table = table.sort_values(["recall", "iou", "strategy"], ascending=[False, False, True])
    print(f"\n{len(bench.documents)} documents, {len(answerable)} answerable questions, "
          f"k = {a.k}\n")
    cols = ["recall", "precision", "iou", "recall@k", "mrr@k", "ndcg@10"]
    width = max(len(s) for s in table.strategy)
    print(f"{'#':>2}  {'strategy':<{width}}  " + "  ".join(f"{c:>9}" for c in cols)
          + "  chunks  flags")
    for i, r in enumerate(table.to_dict("records"), 1):
        print(f"{i:>2}  {r['strategy']:<{width}}  "
              + "  ".join(f"{100 * r[c]:>8.1f}%" for c in cols)
              + f"  {int(r['n_chunks']):>6}  {r['flags'] or '-'}")
    print(f"\nrows appended to {results}")
    return _finish(errors, problems)


def cmd_show(a) -> int:
    from .benchmarks import Benchmark
    from .evaluate import overlaps
    from .explain import diagnose
    from .pipeline import run_experiment

    full, errors, problems = _load_folder(a.corpus, a.golden)
    docs, queries = full.documents, full.queries
    match = [q for q in queries if q.id == str(a.question)]
    if not match and str(a.question).isdigit() and 1 <= int(a.question) <= len(queries):
        match = [queries[int(a.question) - 1]]
    if not match:
        raise CliError(f"question {a.question!r} not found in {a.golden}")
    q = match[0]
    by_id = {d.id: d for d in docs}
    print(f"Q {q.id}: {q.text}\n")
    for g in q.gold:
        print(f"gold {g.doc_id}[{g.start}:{g.end}]: {by_id[g.doc_id].text[g.start:g.end]}\n")
    bench = Benchmark("corpus", docs, [q])
    emb = _embedder(a.embedder)
    for chunker in _strategies(a.strategies):
        out = run_experiment(bench, chunker, emb, k=a.k)
        d = diagnose(q, out.chunks, out.hits[q.id], a.k) if q.gold else {"verdict": "-"}
        print(f"=== {out.strategy}  (verdict: {d['verdict']})")
        for rank, h in enumerate(out.hits[q.id][: a.k], 1):
            mark = "*" if overlaps(h.chunk, q.gold) else " "
            body = " ".join(h.chunk.text.split())
            print(f" {mark}{rank}. {h.chunk.doc_id}[{h.chunk.start}:{h.chunk.end}] "
                  f"{h.score:.3f}  {body[:110]}")
        print()
    print("* = overlaps the gold")
    return _finish(errors, problems)


def _report(errors, problems) -> None:
    if errors or problems:
        print(f"\nskipped: {len(errors)} file(s), {len(problems)} question(s)", file=sys.stderr)
        for line in [*errors, *problems]:
            print(f"  {line}", file=sys.stderr)


def _finish(errors, problems) -> int:
    _report(errors, problems)
    return EXIT_PROBLEMS if errors or problems else EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ragkit", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    strategies_help = ("comma-separated chunkers, each NAME or NAME:SIZE/OVERLAP, e.g. "
                       "recursive:250/0,structure (names: see ragkit.chunkers.REGISTRY)")

    c = sub.add_parser("chunk", help="chunk a file or folder; print chunks and the lint report")
    c.add_argument("path", help="a file or a folder of documents")
    c.add_argument("--strategy", default="recursive:250/0", help="one chunker spec")
    c.add_argument("--out", help="write every chunk as JSONL here")
    c.add_argument("--limit", type=int, default=20, help="chunks to print (default 20)")
    c.add_argument("--embedder", help="model whose token limit the linter checks")
    c.set_defaults(func=cmd_chunk)

    e = sub.add_parser("eval", help="compare strategies on your corpus and golden set")
    e.add_argument("--corpus", required=True, help="folder of documents")
    e.add_argument("--golden", required=True, help="questions (JSONL or CSV) with quotes")
    e.add_argument("--strategies", default=DEFAULT_STRATEGIES, help=strategies_help)
    e.add_argument("--embedder", help="sentence-transformers hub id or local folder "
                                      "(default: the bundled all-MiniLM-L6-v2)")
    e.add_argument("--k", type=int, default=5, help="chunks retrieved per question")
    e.add_argument("--results", help="results file to append rows to "
                                     "(default: results/cli_eval.jsonl)")
    e.set_defaults(func=cmd_eval)

    s = sub.add_parser("show", help="one question: the gold and what each strategy retrieved")
    s.add_argument("--corpus", required=True)
    s.add_argument("--golden", required=True)
    s.add_argument("--question", required=True, help="question id, or its 1-based position")
    s.add_argument("--strategies", default=DEFAULT_STRATEGIES, help=strategies_help)
    s.add_argument("--embedder")
    s.add_argument("--k", type=int, default=5)
    s.set_defaults(func=cmd_show)
    return p


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except CliError as e:
        print(f"ragkit: {e}", file=sys.stderr)
        return EXIT_FATAL


if __name__ == "__main__":
    sys.exit(main())
