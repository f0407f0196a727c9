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

_EXPORTS = {  # submodule -> the names it gives this package
    "retrievers": ("BM25Retriever", "matched_terms", "DenseRetriever", "HybridRetriever",
                   "TfidfRetriever", "newest_first"),
    "base": ("Hit", "Retriever"),
    "index": ("MetadataColumns", "VectorIndex", "Where", "matches"),
    "filters": ("Catalog", "filter_flips", "flip_reason", "readings_report", "readings_summary"),
    "rerank": ("OnnxCrossEncoderScorer", "detect_kind", "is_code", "make_reranker"),
    "parents": ("ParentChildRetriever", "SentenceWindowRetriever", "comparison_strategies"),
    "late": ("LateDenseRetriever",),
    "stack": ("STACK_WEIGHTS", "make_retriever", "stack_retriever"),
}
__all__, __getattr__, __dir__ = surface(__name__, _EXPORTS)
