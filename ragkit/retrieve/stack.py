"""Retrievers by name, and ragkit's retrieval stack.

- `stack_retriever`: dense search over whole chunks (windows for long ones) fused with BM25
  over identifier words, optionally reranked (`ragkit.retrieve.rerank`);
- `make_retriever`: ``dense``, ``bm25``, ``tfidf``, ``hybrid`` or ``stack`` by name, as
  `ragkit.experiments.run_experiment` and the command line ask for them.
"""

from __future__ import annotations

from typing import Literal, Sequence

from ..types import Chunk
from .retrievers import BM25Retriever, DenseRetriever, HybridRetriever, TfidfRetriever

# The course's fusion of dense and keyword search: equal weights, chosen on the tune halves of
# the three benchmarks among 0.8 / 0.65 / 0.5 / 0.35 for dense (then a split by question-id
# parity; `ragkit bench prose` re-checks the fusion on Chroma's grouped tune half); Anthropic's
# cookbook uses 0.8/0.2.
STACK_WEIGHTS = (0.5, 0.5)


def stack_retriever(chunks: Sequence[Chunk], embedder, *, rerank: str | None = None,
                    candidates: int = 20, weights: Sequence[float] = STACK_WEIGHTS,
                    placement: Literal["before", "after"] = "before",
                    bm25_tokens: Literal["words", "identifiers"] = "identifiers"):
    """ragkit's retrieval stack: dense search that reads every chunk whole (windows for a
    chunk longer than the encoder, `DenseRetriever(long="windows")`) and BM25 over identifier
    words (`identifier_words`), fused by weighted reciprocal rank; with `rerank` (a model, or
    ``"packaged"``), the first `candidates` hits rescored by it, except source code, which
    keeps the places the first stage gave it (`ragkit.retrieve.is_code`: a cross-encoder trained
    on web passages reorders code worse than the keyword match does). `bm25_tokens` ``"words"``
    is BM25 over plain words instead (`ragkit bench prose` tries both)."""
    first = HybridRetriever(DenseRetriever(chunks, embedder, placement, long="windows"),
                            BM25Retriever(chunks, placement, tokens=bm25_tokens),
                            weights=tuple(weights))
    if not rerank:
        return first
    from .rerank import is_code, make_reranker

    return make_reranker(first, rerank, candidates=candidates, placement=placement,
                         keep=is_code)


def make_retriever(chunks: Sequence[Chunk], embedder=None, kind: str = "dense",
                   placement: Literal["before", "after"] = "before"):
    """A retriever by name: ``dense``, ``bm25``, ``tfidf``, ``hybrid`` (dense + BM25 fused
    0.8 / 0.2, as Anthropic's cookbook) or ``stack`` (`stack_retriever` without a reranker)."""
    if kind == "dense":
        return DenseRetriever(chunks, embedder, placement)
    if kind == "bm25":
        return BM25Retriever(chunks, placement)
    if kind == "tfidf":
        return TfidfRetriever(chunks, placement)
    if kind == "hybrid":
        return HybridRetriever(DenseRetriever(chunks, embedder, placement),
                               BM25Retriever(chunks, placement))
    if kind == "stack":
        return stack_retriever(chunks, embedder, placement=placement)
    raise ValueError(f"unknown retriever {kind!r}")
