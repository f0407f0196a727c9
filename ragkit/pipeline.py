"""One retrieval experiment, end to end: chunk -> embed -> index -> retrieve -> evaluate.

Notebooks, benchmark scripts and the command line all call `run_experiment`, so every number in
the course is produced the same way. It returns an `Outcome` holding the chunks, the ranked hits
per query, the per-query metrics and their means, plus the flags a results row must carry
(e.g. how many chunks the encoder truncated).

    >>> out = run_experiment(load("chroma"), RecursiveChunker(250, 125), Embedder(), k=5)  # doctest: +SKIP
    >>> round(out.means["recall"], 3), round(out.means["iou"], 3)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Sequence

from .benchmarks import Benchmark
from .retrieve import BM25Retriever, DenseRetriever, Hit, HybridRetriever, TfidfRetriever
from .types import Chunk, Query


@dataclass
class Outcome:
    benchmark: str
    strategy: str
    chunks: list[Chunk]
    hits: dict[str, list[Hit]]
    per_query: Any  # pandas DataFrame
    means: dict[str, float]
    flags: list[str] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict, repr=False)  # doc id -> text

    def retrieved(self, query_id: str) -> list[Chunk]:
        return [h.chunk for h in self.hits.get(query_id, [])]

    def record(self, recorder, *, experiment: str, embedder: str, k: int, **extra: Any) -> None:
        """Write the means as results rows (one per metric)."""
        recorder.add_metrics(self.means, experiment=experiment, benchmark=self.benchmark,
                             strategy=self.strategy, embedder=embedder, k=k,
                             n_queries=len(self.per_query), flags=self.flags,
                             params={**self.params, **extra})


def _flags_of(r) -> list[str]:
    """A retriever's flags (an attribute or a method), else its dense stage's."""
    own = getattr(r, "flags", None)
    own = own() if callable(own) else own
    if own:
        return list(own)
    dense = getattr(r, "dense", None)
    return _flags_of(dense) if dense is not None and dense is not r else []


def make_retriever(chunks: Sequence[Chunk], embedder=None, kind: str = "dense",
                   placement: Literal["before", "after"] = "before"):
    if kind == "dense":
        return DenseRetriever(chunks, embedder, placement)
    if kind == "bm25":
        return BM25Retriever(chunks, placement)
    if kind == "tfidf":
        return TfidfRetriever(chunks, placement)
    if kind == "hybrid":
        return HybridRetriever(DenseRetriever(chunks, embedder, placement),
                               BM25Retriever(chunks, placement))
    raise ValueError(f"unknown retriever {kind!r}")


def run_experiment(bench: Benchmark, chunker=None, embedder=None, k: int = 5, *,
                   chunks: Sequence[Chunk] | None = None, retriever: Any = "dense",
                   placement: Literal["before", "after"] = "before",
                   where: Callable[[Query], Any] | None = None, depth: int | None = None,
                   omega: bool = True, label: str | None = None) -> Outcome:
    """Chunk every document (or use `chunks`), retrieve for every query, score.

    `retriever` is "dense", "bm25", "tfidf", "hybrid", or any object with
    ``search(queries, k, where)`` (e.g. a parent-child retriever); then `chunks` are the units
    it can return, used for precision_Ω and the rank metrics' relevance judgements.
    `where(query)` may return a metadata filter per query (notebook 03). `depth` retrieves more
    than k hits (kept in `Outcome.hits`, e.g. for recall@20) while span metrics use the top k.
    """
    from .evaluate import evaluate_retrieval

    if chunks is None:
        chunks = chunker.chunk_all(bench.documents, progress=True)
    chunks = list(chunks)
    if not chunks:
        raise ValueError(f"{label or chunker}: produced no chunks for {bench.name}")
    r = make_retriever(chunks, embedder, retriever, placement) if isinstance(retriever, str) \
        else retriever
    kind = retriever if isinstance(retriever, str) else type(retriever).__name__
    queries = list(bench.queries)
    filters = [where(q) for q in queries] if where else None
    hits = r.search([q.text for q in queries], max(k, depth or k), filters)
    by_id = {q.id: h for q, h in zip(queries, hits)}
    ranked = {qid: [(h.chunk, h.score) for h in hs] for qid, hs in by_id.items()}
    texts = {d.id: d.text for d in bench.documents}
    per_query, means = evaluate_retrieval(queries, ranked, chunks, k=k, omega=omega,
                                          texts=texts)
    returned = [h.chunk for hs in hits for h in hs[:k]]
    means["n_chunks"] = float(len(chunks))
    means["mean_chunk_chars"] = float(sum(c.end - c.start for c in chunks) / len(chunks))
    if returned:
        means["mean_returned_chars"] = float(sum(c.end - c.start for c in returned)
                                             / len(returned))
    flags = _flags_of(r)
    if chunker is not None and callable(getattr(chunker, "flags", None)):
        flags += chunker.flags()  # e.g. a third-party splitter's unlocated chunks
    strategy = label or (chunker.label if chunker is not None else chunks[0].strategy)
    params = chunker.params() if chunker is not None else {}
    return Outcome(bench.name, strategy, chunks, by_id, per_query, means, flags,
                   {**params, "retriever": kind, "placement": placement}, texts)


def recall_at(outcome: Outcome, queries: Sequence[Query], ks: Sequence[int]) -> dict[str, float]:
    """Mean recall@k over gold units (Anthropic's Pass@k) for several k from one ranking; a
    unit counts when the top k hold all of its non-whitespace characters."""
    from .evaluate import covered_fraction

    out = {}
    answerable = [q for q in queries if q.gold]
    for k in ks:
        vals = []
        for q in answerable:
            top = outcome.retrieved(q.id)[:k]
            vals.append(sum(covered_fraction(g, top, outcome.texts.get(g.doc_id)) >= 1.0
                            for g in q.gold) / len(q.gold))
        out[f"pass@{k}"] = sum(vals) / len(vals) if vals else 0.0
    return out


def compare(benches: Sequence[Benchmark], chunkers: Sequence, embedder, recorder=None, *,
            k: int = 5, experiment: str = "compare", retriever: str = "dense",
            metrics: Sequence[str] = ("recall", "precision", "iou", "precision_omega",
                                      "recall@k", "mrr@k", "ndcg@10", "n_chunks"),
            return_outcomes: bool = False) -> Any:
    """Every chunker on every benchmark: a tidy DataFrame (and results rows if a recorder).

    Rows: benchmark, strategy, metric columns, flags. Chunk vectors are cached, so a second
    call with the same chunkers costs only the queries. With ``return_outcomes=True`` also
    returns the `Outcome` of each run, keyed by (benchmark, strategy).
    """
    import pandas as pd
    from tqdm.auto import tqdm

    rows, outcomes = [], {}
    jobs = [(b, c) for b in benches for c in chunkers]
    for bench, chunker in tqdm(jobs, desc=experiment, leave=False):
        out = run_experiment(bench, chunker, embedder, k=k, retriever=retriever)
        if recorder is not None:
            out.record(recorder, experiment=experiment, embedder=getattr(embedder, "name", ""),
                       k=k)
        rows.append({"benchmark": bench.name, "strategy": out.strategy,
                     **{m: out.means.get(m) for m in metrics},
                     "flags": ";".join(out.flags)})
        outcomes[(bench.name, out.strategy)] = out
    table = pd.DataFrame(rows)
    return (table, outcomes) if return_outcomes else table


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
        from .rerank import make_reranker

        out[CONTEXT_STAGES[2]] = make_reranker(hybrid(), rerank_model,
                                               candidates=rerank_candidates, placement=placement)
    return out


def contextual_retrieval(bench: Benchmark, chunks: Sequence[Chunk], embedder, generator: str, *,
                         label: str, recorder=None, placement: Literal["before", "after"] = "after",
                         ks: Sequence[int] = (5, 10, 20), rerank_model: str | None = None,
                         rerank_candidates: int = 50) -> list[dict[str, Any]]:
    """Basic retrieval, then each contextual stage with `generator`'s preambles (LLM ones read
    from the committed cache): Pass@k and the top-20 failure reduction against basic.

    One dict per stage (the first is basic); with a `recorder`, each stage's metrics are also
    written as results rows (experiment ``contextual · <label>``). ``generator="none"`` gives
    the basic row only.
    """
    from .contextualize import contextualize, make_contextualizer, preamble_cache

    basic = run_experiment(bench, embedder=embedder, k=5, chunks=chunks, depth=max(ks),
                           label="basic")
    base = recall_at(basic, bench.queries, ks)
    rows: list[dict[str, Any]] = [{"generator": generator, "stage": "basic", **base}]
    if generator == "none":
        return rows
    ctx = contextualize(bench.documents, chunks, make_contextualizer(generator),
                        placement=placement,
                        cache=preamble_cache(bench.name, generator)
                        if generator in LLM_GENERATORS else None)
    base_failures = 1 - base["pass@20"]
    for stage, retriever in contextual_stages(ctx, embedder, placement, rerank_model,
                                              rerank_candidates).items():
        out = run_experiment(bench, embedder=embedder, k=5, chunks=ctx, retriever=retriever,
                             depth=max(ks), label=stage)
        passk = recall_at(out, bench.queries, ks)
        # no failures to reduce: not measurable
        reduction = (1 - (1 - passk["pass@20"]) / base_failures if base_failures > 0
                     else float("nan"))
        if recorder is not None:
            for metric, value in {**passk, "failure_reduction@20": reduction}.items():
                recorder.add(experiment=f"contextual · {label}", benchmark=bench.name,
                             strategy=stage, metric=metric, value=value, embedder=embedder.name,
                             k=20, n_queries=len(bench.queries), flags=out.flags,
                             params={"generator": generator, "placement": placement,
                                     "chunks": label, "n_chunks": len(ctx),
                                     **(retriever.describe() if hasattr(retriever, "describe")
                                        else {})})
        rows.append({"generator": generator, "stage": stage, **passk,
                     "failure_reduction@20": reduction})
    return rows
