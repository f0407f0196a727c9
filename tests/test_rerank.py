"""The rerank stage (`ragkit.rerank`): a reranker wraps a first-stage retriever."""

from conftest import refund_chunks as _chunks
from conftest import refund_doc as _doc


def test_reranker_wraps_a_retriever(embedder):
    from ragkit.rerank import BiEncoderScorer, Reranker, detect_kind
    from ragkit.retrieve import BM25Retriever

    doc = _doc()
    chunks = _chunks(doc)
    rr = Reranker(BM25Retriever(chunks), BiEncoderScorer(embedder=embedder), candidates=3)
    hits = rr.search(["how long does billing take to answer a refund request?"], k=2)
    assert len(hits[0]) == 2 and hits[0][0].chunk.start == chunks[1].start
    assert rr.describe() == {"first_stage": "bm25", "reranker": "bi-encoder",
                             "reranker_model": "all-MiniLM-L6-v2", "candidates": 3}
    assert detect_kind("cross-encoder/ms-marco-MiniLM-L6-v2") == "cross-encoder"
