"""Notebook 04's experiment: Anthropic's contextual-retrieval stages, measured on one set of
chunks with each preamble generator.

- `contextual_stages`: the stages over one set of (contextualized) chunks: dense, hybrid (0.8
  dense / 0.2 BM25) and an optional rerank;
- `contextual_retrieval`: basic retrieval, then each stage with one generator's preambles,
  Pass@k and the top-20 failure reduction against basic (every stage recorded as a run);
- `contextual_table`: that for several generators, as one DataFrame;
- `contextual_comparison`: one recorded stage against basic retrieval, paired per query.
"""

from __future__ import annotations

from typing import Any, Literal, Sequence

from ..evaluate.benchmarks import Benchmark
from ..retrieve.retrievers import BM25Retriever, DenseRetriever, HybridRetriever
from ..types import Chunk
from .pipeline import recall_at, run_experiment

CONTEXT_STAGES = ("contextual embeddings", "contextual embeddings + BM25",
                  "contextual embeddings + BM25 + rerank")
LLM_GENERATORS = ("gemma", "smollm2", "anthropic")  # the generators whose preambles are cached


def contextual_stages(chunks: Sequence[Chunk], embedder, placement: Literal["before", "after"],
                      rerank_model: str | None = None, rerank_candidates: int = 50) -> dict:
    """Anthropic's retrieval stages over one set of (contextualized) chunks: dense, hybrid
    (0.8 dense / 0.2 BM25 over 150 candidates each), and a rerank of the hybrid's top
    `rerank_candidates` when a reranking model is given."""
    def hybrid():
        return HybridRetriever(DenseRetriever(chunks, embedder, placement),
                               BM25Retriever(chunks, placement), weights=(0.8, 0.2),
                               candidates=150)

    out = {CONTEXT_STAGES[0]: DenseRetriever(chunks, embedder, placement),
           CONTEXT_STAGES[1]: hybrid()}
    if rerank_model:
        from ..retrieve.rerank import make_reranker

        out[CONTEXT_STAGES[2]] = make_reranker(hybrid(), rerank_model,
                                               candidates=rerank_candidates, placement=placement)
    return out


CONTROLS = ("BM25 + embeddings, no preamble", "preamble only: hybrid with vs without")


def contextual_retrieval(bench: Benchmark, chunks: Sequence[Chunk], embedder, generator: str, *,
                         label: str, recorder=None, placement: Literal["before", "after"] = "after",
                         ks: Sequence[int] = (5, 10, 20), rerank_model: str | None = None,
                         rerank_candidates: int = 50) -> list[dict[str, Any]]:
    """Basic retrieval, then each contextual stage with `generator`'s preambles (LLM ones read
    from the committed cache): Pass@k and the top-20 failure reduction against basic.

    One dict per stage (the first is basic). ``generator="none"`` gives the basic row and the
    control that needs no preamble: plain embeddings + plain BM25 fused as the contextual
    hybrid is (the share of the gain BM25 brings on its own); call it first, since basic is
    recorded only then. With a `recorder`, every stage is recorded as a full run (experiment
    ``contextual · <label>``, strategy ``<stage> · <generator> · <label>``), per-query Pass@k
    included, so its claims get paired intervals.
    """
    from ..contextualize import contextualize, make_contextualizer, preamble_cache

    def measure(stage: str, units: Sequence[Chunk], retriever: Any = "dense") -> dict:
        out = run_experiment(bench, embedder=embedder, k=5, chunks=units, retriever=retriever,
                             depth=max(ks), label=stage, placement=placement)
        passk = recall_at(out, bench.queries, ks, per_query=True)
        # basic retrieval is recorded once, by the generator="none" call
        if recorder is not None and (stage != "basic" or generator == "none"):
            extra = retriever.params() if hasattr(retriever, "params") else {}
            out.strategy = (f"{stage} · {label}" if stage == "basic" or generator == "none"
                            else f"{stage} · {generator} · {label}")
            out.record(recorder, experiment=f"contextual · {label}",
                       embedder=embedder.name, k=5, generator=generator, chunks=label,
                       n_chunks=len(units), **extra)
        return passk

    base = measure("basic", chunks)
    rows: list[dict[str, Any]] = [{"generator": generator, "stage": "basic", **base}]
    base_failures = 1 - base["pass@20"]

    def reduction(passk) -> float:  # no failures to reduce: not measurable
        return 1 - (1 - passk["pass@20"]) / base_failures if base_failures > 0 else float("nan")

    if generator == "none":
        plain = contextual_stages(chunks, embedder, placement)[CONTEXT_STAGES[1]]
        passk = measure(CONTROLS[0], chunks, plain)
        rows.append({"generator": generator, "stage": CONTROLS[0], **passk,
                     "failure_reduction@20": reduction(passk)})
        return rows
    ctx = contextualize(bench.documents, chunks, make_contextualizer(generator),
                        placement=placement,
                        cache=preamble_cache(bench.name, generator)
                        if generator in LLM_GENERATORS else None)
    for stage, retriever in contextual_stages(ctx, embedder, placement, rerank_model,
                                              rerank_candidates).items():
        passk = measure(stage, ctx, retriever)
        rows.append({"generator": generator, "stage": stage, **passk,
                     "failure_reduction@20": reduction(passk)})
    return rows


def contextual_table(bench: Benchmark, chunks: Sequence[Chunk], generators: Sequence[str], *,
                     embedder, label: str, recorder=None,
                     placement: Literal["before", "after"] = "after",
                     ks: Sequence[int] = (5, 10, 20), rerank_model: str | None = None,
                     rerank_for: Sequence[str] = (), rerank_candidates: int = 50,
                     tag: str = "", with_basic: bool = True):
    """`contextual_retrieval` for several generators on the same chunks, as one DataFrame:
    the basic row and the no-preamble control first (``with_basic``), then every stage of each
    generator (the rescoring stage only for generators in `rerank_for`, and only when
    `rerank_model` is set). `tag` is appended to the generator names (``structural (router
    chunks)``)."""
    import pandas as pd

    def run(generator: str) -> list[dict[str, Any]]:
        return contextual_retrieval(bench, chunks, embedder, generator, label=label,
                                    recorder=recorder, placement=placement, ks=ks,
                                    rerank_model=rerank_model if generator in rerank_for
                                    else None, rerank_candidates=rerank_candidates)

    rows = run("none") if with_basic else []
    for g in generators:
        rows += run(g)[1:]
    out = pd.DataFrame(rows)
    if tag and len(out):
        out["generator"] = out["generator"] + f" ({tag})"
    return out


def contextual_comparison(rows, scores, label: str, stage: str, generator: str = "none",
                          against: str | None = None, metric: str = "pass@20",
                          against_label: str | None = None):
    """Paired comparison (`ragkit.evaluate.Comparison`) of one recorded contextual run against
    basic retrieval on the same chunks (or against the run whose strategy is `against`), on
    the per-query `metric`. `rows` and `scores` are `Recorder.frames()`; `label` names the
    chunks as in `contextual_retrieval` (``upstream chunks``); `stage` is a stage name
    (``CONTEXT_STAGES``, ``CONTROLS``, or ``basic``) and `generator` the preamble generator
    (``none`` for basic and the control). `against_label` compares with a run on other chunks
    of the same questions (``code chunks`` against ``upstream chunks``)."""
    from ..evaluate.runs import per_query, versus

    def values(strategy: str, label: str):
        mine = rows[(rows.experiment == f"contextual · {label}") & (rows.strategy == strategy)
                    & rows.run.notna()]
        runs = sorted(set(mine.run))
        if len(runs) != 1:
            raise KeyError(f"{len(runs)} recorded runs of {strategy!r}")
        return per_query(scores, runs[0], metric).dropna()

    other = against_label or label
    mine = f"{stage} · {label}" if generator == "none" else f"{stage} · {generator} · {label}"
    return versus(values(mine, label), values(against or f"basic · {other}", other))


def with_intervals(table, frames, label: str, metric: str = "pass@20",
                   against_label: str | None = None):
    """`table` (a `contextual_table`) with one more column: each row's paired difference from
    basic retrieval on `metric`, in points, with its 95 % interval (``+6.2 [+2.8, +9.6]``), read
    from the recorded runs (`frames` is `Recorder.frames()`; `label` names the chunks as in
    `contextual_retrieval`). The basic row, and a row with no recorded run, read ``–``."""
    def cell(r) -> str:
        if r.stage == "basic" and against_label is None:
            return "–"
        generator = r.generator.split(" (")[0]  # a tag is appended as " (router chunks)"
        try:
            c = contextual_comparison(*frames, label, r.stage, generator, metric=metric,
                                      against_label=against_label)
        except KeyError:
            return "–"
        return f"{100 * c.diff:+.1f} [{100 * c.low:+.1f}, {100 * c.high:+.1f}]"

    column = f"Δ {metric} vs basic, points [95 % CI]"
    return table.assign(**{column: [cell(r) for r in table.itertuples()]})
