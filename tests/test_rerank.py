"""The rerank stage (`ragkit.rerank`): a reranker wraps a first-stage retriever."""

from ragkit.types import Chunk, Document

DOC_TEXT = """# Refund Policy

This policy explains when Northwind Cloud returns money to a Suite customer and how long it takes.

## Annual plans

Annual plans can be cancelled within 30 days of purchase for a full refund. After 30 days the
unused months are refunded pro rata, minus a processing fee of 25 EUR.

## Monthly plans

Monthly plans are never refunded; cancelling stops the next renewal. Billing support answers
refund requests within two business days.
"""


def _doc() -> Document:
    return Document(id="refund", text=DOC_TEXT, metadata={"title": "Refund Policy",
                                                         "format": "markdown"})


def _chunks(doc: Document) -> list[Chunk]:
    """Three chunks: one per section body (spans sliced from the document)."""
    out = []
    for start_marker, end_marker in (("Annual plans can", "## Monthly"),
                                     ("Monthly plans are", None), ("This policy", "## Annual")):
        s = doc.text.index(start_marker)
        e = doc.text.index(end_marker) if end_marker else len(doc.text)
        e = len(doc.text[:e].rstrip())
        out.append(Chunk.make(doc, s, e, strategy="test"))
    return out


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
