"""What a configuration of the experiment design costs (``ragkit bench design --costs``):
chunking CPU seconds, the dense index's size and single-question latency, measured on the
same machine for every chunker and first stage; `load_costs` reads them back for the
decision guide and the README."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .design import CANDIDATES, Config

COST_METRICS = ("chunks", "chunk_cpu_s", "index_mb", "query_p50_ms", "query_p95_ms")


def _dense_parts(r, depth: int = 0) -> list:
    """The dense retrievers inside a retriever (a stack holds one, a reranker wraps one)."""
    from ..retrieve.retrievers import DenseRetriever

    if isinstance(r, DenseRetriever):
        return [r]
    if depth > 3:
        return []
    out = []
    for v in vars(r).values():
        for x in (v if isinstance(v, (list, tuple)) else [v]):
            if hasattr(x, "search") and x is not r:
                out += _dense_parts(x, depth + 1)
    return out


def measure_costs(bench, chunker, embedder, config: Config, n_queries: int = 40
                  ) -> dict[str, Any]:
    """Chunking CPU seconds over the benchmark, the dense index's size (float32 vectors,
    windows included) and single-question latency (top 10, p50 / p95 over the first
    `n_queries` questions, after one untimed warm-up) of one configuration. The chunks'
    vectors may come from the cache; the questions' vectors and cross-encoder scores do not,
    so the latency is what a new question costs."""
    import time

    from ..retrieve.stack import stack_retriever

    t = time.process_time()
    chunks = chunker.chunk_all(bench.documents)
    chunk_s = time.process_time() - t
    if config.first_stage == "dense":
        from ..retrieve.retrievers import DenseRetriever

        r: Any = DenseRetriever(chunks, embedder)
    else:
        r = stack_retriever(chunks, embedder, rerank="packaged"
                            if config.reranker == "cross-encoder" else None,
                            candidates=CANDIDATES)
    size = sum(d.index.vectors.nbytes for d in _dense_parts(r))
    timed = query_latency(uncached(r, embedder), [q.text for q in bench.queries[: n_queries + 1]])
    return {"chunks": len(chunks), "chunk_cpu_s": chunk_s, "index_mb": size / 2**20, **timed}


def uncached(retriever, embedder):
    """`retriever` with what a new question costs put back: its dense parts encode questions
    with a copy of `embedder` that has no cache, and a cross-encoder scorer forgets its scores.
    Changes `retriever` in place and returns it."""
    fresh = type(embedder)(embedder.source, cache=False, show_progress=False)
    for d in _dense_parts(retriever):
        d.embedder = fresh
    scorer = getattr(retriever, "scorer", None)
    if scorer is not None and hasattr(scorer, "_cache"):
        scorer._cache = None
    return retriever


def query_latency(retriever, questions: Sequence[str], k: int = 10) -> dict[str, float]:
    """Single-question latency of `retriever`: the first question is an untimed warm-up, each
    other one is searched alone for its top `k`; p50 and p95 in milliseconds, and how many
    were timed.

    >>> class Slow:
    ...     def search(self, qs, k): return [[] for _ in qs]
    >>> t = query_latency(Slow(), ["warm", "a", "b", "c"])
    >>> t["n_timed"], 0 <= t["query_p50_ms"] <= t["query_p95_ms"]
    (3, True)
    """
    import time

    if len(questions) < 2:
        raise ValueError("query_latency needs a warm-up question and at least one to time")
    retriever.search(list(questions[:1]), k)
    times = []
    for q in questions[1:]:
        t0 = time.perf_counter()
        retriever.search([q], k)
        times.append(1000 * (time.perf_counter() - t0))
    return {"query_p50_ms": float(np.percentile(times, 50)),
            "query_p95_ms": float(np.percentile(times, 95)), "n_timed": len(times)}


def load_costs(rows) -> list[dict[str, Any]]:
    """The measured costs from results rows (experiment ``design_costs``), one dict per
    benchmark and configuration, in the guide's column names."""
    mine = rows[rows.experiment == "design_costs"]
    out = []
    for (bench, label), g in mine.groupby(["benchmark", "strategy"], sort=True):
        v = dict(zip(g.metric, g.value))
        out.append({"benchmark": bench, "configuration": label, "chunks": int(v["chunks"]),
                    "chunk_cpu_s": v["chunk_cpu_s"], "index_mb": v["index_mb"],
                    "p50_ms": v["query_p50_ms"], "p95_ms": v["query_p95_ms"],
                    "n_timed": int(g.n_queries.iloc[0])})
    return out


ENCODER_COST_METRICS = ("chunks", "dim", "index_mb", "chunk_encode_ms", "query_encode_p50_ms",
                        "query_encode_p95_ms")


def measure_encoder_costs(bench, chunker, embedder, n_chunks: int = 32, n_queries: int = 20
                          ) -> dict[str, Any]:
    """What an encoder costs on one benchmark's chunks, measured without encoding them all:
    milliseconds per chunk over a fixed sample (the `n_chunks` chunks first by id, encoded as
    one batch, as an index build does, after a warm-up), single-question encoding p50 / p95
    over the first `n_queries` questions (after one untimed), the vector's dimension, and the
    float32 flat index's size for every chunk (chunks × dimension × 4 bytes, exact). Nothing
    is read from or written to the vector cache, so two encoders are timed alike."""
    import time

    chunks = chunker.chunk_all(bench.documents)
    sample = sorted(chunks, key=lambda c: c.id)[:n_chunks]
    fresh = type(embedder)(embedder.source, cache=False, show_progress=False)
    texts = [c.embedding_text("before") for c in sample]
    fresh.encode(texts[:2])  # warm-up: the first call loads and compiles
    t0 = time.perf_counter()
    vectors = fresh.encode(texts)
    chunk_ms = 1000 * (time.perf_counter() - t0) / max(1, len(texts))
    questions = [q.text for q in bench.queries[: n_queries + 1]]
    fresh.encode(questions[:1], "query")
    times = []
    for q in questions[1:]:
        t0 = time.perf_counter()
        fresh.encode([q], "query")
        times.append(1000 * (time.perf_counter() - t0))
    dim = int(vectors.shape[1])
    return {"chunks": len(chunks), "dim": dim, "index_mb": len(chunks) * dim * 4 / 2**20,
            "chunk_encode_ms": chunk_ms, "query_encode_p50_ms": float(np.percentile(times, 50)),
            "query_encode_p95_ms": float(np.percentile(times, 95)), "n_timed": len(times),
            "n_sampled": len(sample)}


def load_encoder_costs(rows) -> list[dict[str, Any]]:
    """The measured encoder costs from results rows (experiment ``encoder_costs``), one dict
    per benchmark and encoder."""
    mine = rows[rows.experiment == "encoder_costs"]
    out = []
    for (bench, encoder), g in mine.groupby(["benchmark", "strategy"], sort=True):
        v = dict(zip(g.metric, g.value))
        out.append({"benchmark": bench, "encoder": encoder, **{m: v[m] for m in
                                                               ENCODER_COST_METRICS if m in v}})
    return out
