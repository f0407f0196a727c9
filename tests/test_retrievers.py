"""Every retriever class satisfies the written interface, `ragkit.retrieve.Retriever`:
``search(queries, k, where=None) -> list[list[Hit]]`` with at most k hits per query, best
first, and ``flags`` a read-only property holding a list of strings.

Each class is built on a tiny corpus with the real bundled MiniLM embedder (the session
`embedder` fixture). The list of builders is checked against the package: a new class with a
``search`` method (its own or inherited) and no builder here fails
`test_every_retriever_class_is_covered`.
"""

import inspect

import pytest

from ragkit.chunkers import RecursiveChunker
from ragkit.retrieve import Hit, Retriever
from ragkit.types import Document

NOT_RETRIEVERS = {"VectorIndex", "ScaledIndex"}  # faiss indexes: search vectors, not queries

DOCS = [
    Document("refunds", "Refund policy. Gold members can ask for a full refund within 14 days "
             "of purchase. After that, refunds are prorated and paid back to the original card. "
             "Silver members get store credit instead.",
             metadata={"effective_date": "2024-01-01", "doc_type": "policy"}),
    Document("retention", "Data retention. Customer records are kept for seven years and then "
             "deleted. Backups are encrypted and rotated every thirty days. Access to records "
             "is logged.", metadata={"effective_date": "2023-06-01", "doc_type": "policy"}),
    Document("gateway", "Gateway firmware. The gateway checks for firmware updates every night. "
             "An update can be rolled back from the admin page within a week.",
             metadata={"effective_date": "2022-03-15", "doc_type": "manual"}),
]
QUERIES = ["How many days do Gold members have to get a refund?",
           "How long are customer records kept?", "How do I roll back a firmware update?"]


def _chunks(docs=DOCS):
    return RecursiveChunker(80, 0, "chars").chunk_all(docs)


def _build(name, embedder, docs=DOCS):
    from ragkit.late import LateDenseRetriever
    from ragkit.parents import ParentChildRetriever, SentenceWindowRetriever
    from ragkit.rerank import BiEncoderScorer, Reranker
    from ragkit.retrieve import BM25Retriever, DenseRetriever, HybridRetriever, TfidfRetriever

    chunks = _chunks(docs)
    parents = RecursiveChunker(160, 0, "chars")
    return {
        "DenseRetriever": lambda: DenseRetriever(chunks, embedder),
        "BM25Retriever": lambda: BM25Retriever(chunks),
        "TfidfRetriever": lambda: TfidfRetriever(chunks),
        "HybridRetriever": lambda: HybridRetriever(DenseRetriever(chunks, embedder),
                                                   BM25Retriever(chunks), candidates=10),
        "ParentChildRetriever": lambda: ParentChildRetriever(docs, parents, embedder,
                                                             child_tokens=16, child_k=8),
        "ParentChildRetriever/auto_merge": lambda: ParentChildRetriever(
            docs, parents, embedder, child_tokens=16, child_k=8, mode="auto_merge"),
        "SentenceWindowRetriever": lambda: SentenceWindowRetriever(docs, embedder, window=1),
        "LateDenseRetriever": lambda: LateDenseRetriever(chunks, docs, embedder, cache=False),
        "Reranker": lambda: Reranker(BM25Retriever(chunks), BiEncoderScorer(embedder=embedder),
                                     candidates=6),
    }[name]()


BUILT = ["DenseRetriever", "BM25Retriever", "TfidfRetriever", "HybridRetriever",
         "ParentChildRetriever", "ParentChildRetriever/auto_merge", "SentenceWindowRetriever",
         "LateDenseRetriever", "Reranker"]


def _classes_with_search() -> set[str]:
    """Names of the library's classes (ragkit/ minus ragkit/tools/) with a ``search`` method,
    their own or inherited; the `Retriever` protocol itself is not one."""
    import importlib
    import pkgutil

    import ragkit

    names = set()
    for info in pkgutil.walk_packages(ragkit.__path__, "ragkit."):
        if info.name.startswith("ragkit.tools") or info.name == "ragkit.__main__":
            continue
        module = importlib.import_module(info.name)
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == info.name and callable(getattr(cls, "search", None)) \
                    and cls is not Retriever:
                names.add(name)
    return names


def test_every_retriever_class_is_covered():
    assert _classes_with_search() - NOT_RETRIEVERS == {b.split("/")[0] for b in BUILT}


@pytest.mark.parametrize("name", BUILT)
def test_retriever_satisfies_the_protocol(name, embedder):
    r = _build(name, embedder)
    assert isinstance(r, Retriever)
    declared = inspect.getattr_static(type(r), "flags")
    assert isinstance(declared, property), f"{type(r).__name__}.flags is not a property"
    assert declared.fset is None, "flags must be read-only"
    assert isinstance(r.flags, list) and all(isinstance(f, str) for f in r.flags)
    for k in (1, 2, 5):
        results = r.search(QUERIES, k)
        assert isinstance(results, list) and len(results) == len(QUERIES)
        for hits in results:
            assert 1 <= len(hits) <= k
            assert all(isinstance(h, Hit) for h in hits)
            scores = [h.score for h in hits]
            assert all(b <= a + 1e-6 for a, b in zip(scores, scores[1:])), scores
    filtered = r.search(QUERIES[:1], 5, where={"doc_id": "retention"})[0]
    assert filtered and {h.chunk.doc_id for h in filtered} == {"retention"}


def test_something_without_flags_is_not_a_retriever():
    class SearchOnly:
        def search(self, queries, k, where=None):
            return [[] for _ in queries]

    assert not isinstance(SearchOnly(), Retriever)


# The same sentence in an old and a new fee schedule (the old one listed first, so that input
# order alone would rank it first): every retriever must rank the newer document's copy first.
SAME = "Gold members can ask for a full refund within 30 days."
TIE_DOCS = [
    Document("fees-2021", SAME, metadata={"effective_date": "2021-01-01", "doc_type": "policy"}),
    Document("fees-2024", SAME, metadata={"effective_date": "2024-01-01", "doc_type": "policy"}),
    Document("gateway", "The gateway checks for firmware updates every night.",
             metadata={"effective_date": "2022-03-15", "doc_type": "manual"}),
]


@pytest.mark.parametrize("name", BUILT)
def test_equal_scores_rank_the_newer_document_first(name, embedder):
    r = _build(name, embedder, TIE_DOCS)
    hits = r.search(["How long do Gold members have to ask for a refund?"], 2)[0]
    assert [h.chunk.doc_id for h in hits] == ["fees-2024", "fees-2021"]
    assert hits[0].score >= hits[1].score


def test_fusion_breaks_ties_toward_the_newer_document():
    from ragkit.retrieve import fuse

    old, new = (Hit(c, 1.0) for c in _chunks(TIE_DOCS[:2]))
    # old first in one ranking, new first in the other: equal fused scores
    fused = fuse([[old, new], [new, old]], (0.5, 0.5), 2)
    assert fused[0].score == fused[1].score
    assert [h.chunk.doc_id for h in fused] == ["fees-2024", "fees-2021"]
