"""Retrieve: from a question to ranked chunks.

- `base`: the `Retriever` protocol every retriever declares (`search`, `flags`, `describe`);
- `retrievers`: the dense (embedder + faiss), BM25, TF-IDF and fused (`HybridRetriever`)
  retrievers, each returning `Hit(chunk, score)` lists;
- `index`: the faiss index with a metadata pre-filter (`VectorIndex`, `Where`);
- `filters`: metadata filters built from a corpus's catalogue and read off the question
  (`Catalog`);
- `rerank`: a second stage that rescores the first stage's top candidates (`make_reranker`);
- `parents`: embed small, return big: small-to-big, auto-merging and sentence windows
  (`ParentChildRetriever`, `SentenceWindowRetriever`);
- `late`: dense retrieval over late-chunked vectors (`LateDenseRetriever`);
- `stack`: retrievers by name (`make_retriever`) and ragkit's retrieval stack
  (`stack_retriever`).

Names load on first use (`ragkit._lazy`).
"""

from .._lazy import surface

_EXPORTS = {
    "BM25Retriever": "retrievers",
    "matched_terms": "retrievers",
    "DenseRetriever": "retrievers",
    "Hit": "base",
    "HybridRetriever": "retrievers",
    "Retriever": "base",
    "TfidfRetriever": "retrievers",
    "newest_first": "retrievers",
    "MetadataColumns": "index",
    "VectorIndex": "index",
    "Where": "index",
    "matches": "index",
    "Catalog": "filters",
    "filter_flips": "filters",
    "flip_reason": "filters",
    "readings_report": "filters",
    "readings_summary": "filters",
    "OnnxCrossEncoderScorer": "rerank",
    "detect_kind": "rerank",
    "is_code": "rerank",
    "make_reranker": "rerank",
    "ParentChildRetriever": "parents",
    "SentenceWindowRetriever": "parents",
    "comparison_strategies": "parents",
    "LateDenseRetriever": "late",
    "STACK_WEIGHTS": "stack",
    "make_retriever": "stack",
    "stack_retriever": "stack",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = surface(__name__, _EXPORTS)
