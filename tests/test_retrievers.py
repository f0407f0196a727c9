"""Every retriever class satisfies the written interface, `ragkit.retrieve.Retriever`:
``search(queries, k, where=None) -> list[list[Hit]]`` with at most k hits per query, best
first, ``flags`` a read-only property holding a list of strings, and ``describe()`` one line
of text.

Each class is built on a tiny corpus with the real bundled MiniLM embedder (the session
`embedder` fixture). The list of builders is checked against the package: a new class with a
``search`` method (its own or inherited) and no builder here fails
`test_every_retriever_class_is_covered`; and every class with a ``search`` method anywhere in
the package, the tools included, declares the protocol and defines its three members
(`test_every_retriever_class_declares_the_protocol`).
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
    from ragkit.retrieve import (BM25Retriever, DenseRetriever, HybridRetriever, LateDenseRetriever,
                                 ParentChildRetriever, SentenceWindowRetriever, TfidfRetriever)
    from ragkit.retrieve.rerank import BiEncoderScorer, Reranker

    chunks = _chunks(docs)
    parents = RecursiveChunker(160, 0, "chars")
    return {
        "DenseRetriever": lambda: DenseRetriever(chunks, embedder),
        "DenseRetriever/windows": lambda: DenseRetriever(chunks, embedder, long="windows"),
        "BM25Retriever": lambda: BM25Retriever(chunks),
        "BM25Retriever/identifiers": lambda: BM25Retriever(chunks, tokens="identifiers"),
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


BUILT = ["DenseRetriever", "DenseRetriever/windows", "BM25Retriever",
         "BM25Retriever/identifiers", "TfidfRetriever", "HybridRetriever",
         "ParentChildRetriever", "ParentChildRetriever/auto_merge", "SentenceWindowRetriever",
         "LateDenseRetriever", "Reranker"]


def _search_classes(tools: bool = False) -> dict[str, type]:
    """The package's classes with a ``search`` method, their own or inherited, by name (the
    tools' too with `tools`); the `Retriever` protocol itself is not one."""
    import importlib
    import pkgutil

    import ragkit

    found = {}
    for info in pkgutil.walk_packages(ragkit.__path__, "ragkit."):
        if info.name == "ragkit.__main__" or (info.name.startswith("ragkit.tools")
                                              and not tools):
            continue
        module = importlib.import_module(info.name)
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == info.name and callable(getattr(cls, "search", None)) \
                    and cls is not Retriever:
                found[name] = cls
    return found


def _classes_with_search() -> set[str]:
    """Names of the library's classes (ragkit/ minus ragkit/tools/) with a ``search`` method."""
    return set(_search_classes())


def test_every_retriever_class_declares_the_protocol():
    """Issue 33: one `Retriever` (`ragkit.retrieve.base`), declared by every class with a
    ``search`` method in the package, the tools' included, each with its own ``search``, a
    ``flags`` property and ``describe``."""
    found = {n: c for n, c in _search_classes(tools=True).items() if n not in NOT_RETRIEVERS}
    assert {"DenseRetriever", "Reranker", "IndexRetriever", "FrozenFirstStage"} <= set(found)
    for name, cls in found.items():
        assert Retriever in cls.__mro__, f"{name} does not declare Retriever"
        for member in ("search", "flags", "describe"):
            mine = inspect.getattr_static(cls, member)
            assert mine is not Retriever.__dict__[member], f"{name} has no {member} of its own"
        assert isinstance(inspect.getattr_static(cls, "flags"), property), name


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
    said = r.describe()
    assert isinstance(said, str) and said.strip() and "\n" not in said, said
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
    from ragkit.retrieve.retrievers import fuse

    old, new = (Hit(c, 1.0) for c in _chunks(TIE_DOCS[:2]))
    # old first in one ranking, new first in the other: equal fused scores
    fused = fuse([[old, new], [new, old]], (0.5, 0.5), 2)
    assert fused[0].score == fused[1].score
    assert [h.chunk.doc_id for h in fused] == ["fees-2024", "fees-2021"]


# -- keyword search over code: identifiers split into their words --------------------------

CODE = [Document("http", "class HttpRetryPolicy:\n    def backoff_seconds(self, attempt):\n"
                         "        return min(2 ** attempt, self.max_delay)\n"),
        Document("cache", "def evict_stale_entries(cache, now):\n    for key in list(cache):\n"
                          "        if cache[key].expires < now:\n            del cache[key]\n"),
        Document("parse", "function parseWebhookHeader(header) {\n"
                          "  return header.split(',');\n}\n")]


@pytest.mark.parametrize("query, doc", [
    ("How are stale entries evicted from the cache?", "cache"),
    ("What does the retry policy use for backoff?", "http"),
    ("How is the webhook header parsed?", "parse"),
])
def test_identifier_tokens_find_code_by_the_words_inside_its_names(query, doc):
    from ragkit.retrieve import BM25Retriever

    chunks = RecursiveChunker(400, 0, "chars").chunk_all(CODE)
    assert BM25Retriever(chunks, tokens="identifiers").search([query], 1)[0][0].chunk.doc_id == doc
    # bm25s' own words cannot see inside evict_stale_entries, HttpRetryPolicy or parseWebhookHeader
    plain = BM25Retriever(chunks).scores(query)
    idents = BM25Retriever(chunks, tokens="identifiers").scores(query)
    target = next(i for i, c in enumerate(chunks) if c.doc_id == doc)
    assert idents[target] > plain[target]


def test_identifier_tokens_keep_prose_as_bm25s_tokenizes_it():
    """On text without compound identifiers, the two tokenisations rank alike."""
    import bm25s

    from ragkit.retrieve import BM25Retriever
    from ragkit.retrieve.retrievers import identifier_words

    text = "Gold members can ask for a full refund within 14 days of purchase."
    stop = frozenset(bm25s.stopwords.STOPWORDS_EN)
    assert identifier_words(text, stop) == bm25s.tokenize([text], stopwords="en",
                                                          return_ids=False,
                                                          show_progress=False)[0]
    chunks = _chunks()
    for q in QUERIES:
        a = [h.chunk.id for h in BM25Retriever(chunks).search([q], 3)[0]]
        b = [h.chunk.id for h in BM25Retriever(chunks, tokens="identifiers").search([q], 3)[0]]
        assert a == b
    assert BM25Retriever(chunks, tokens="identifiers").search(["the of and"], 2)[0]  # no words
    with pytest.raises(ValueError, match="tokens must be"):
        BM25Retriever(chunks, tokens="chars")


# -- chunks longer than the encoder's window: embedded as windows, never cut -----------------

def test_windows_cover_a_long_chunk_within_the_encoder_limit(embedder):
    from ragkit.retrieve.retrievers import encoder_windows
    from ragkit.types import Chunk

    lines = [f"line {i}: the gateway retries the upload after {i} seconds of waiting"
             for i in range(80)]
    doc = Document("long", "\n".join(lines) + "\n")
    long = Chunk.make(doc, 0, len(doc.text), strategy="x", prefix="# uploads.py")
    short = Chunk.make(doc, 0, 40, strategy="x")
    texts, owner = encoder_windows([short, long], embedder)
    assert owner[0] == 0 and texts[0] == short.text  # a chunk that fits is read as it is
    windows = [t for t, o in zip(texts, owner) if o == 1]
    assert len(windows) > 2
    assert all(n <= embedder.max_tokens for n in embedder.count_tokens(windows))
    assert all(w.startswith("# uploads.py\n\n") for w in windows)
    bodies = [w[len("# uploads.py\n\n"):] for w in windows]
    assert "".join(bodies) == long.text  # every character in exactly one window
    assert all(b.endswith("\n") for b in bodies[:-1])  # cut where a line starts


@pytest.mark.parametrize("placement", ["before", "after"])
def test_a_prefix_too_long_to_share_a_window_is_read_apart_and_said(embedder, placement):
    """A long LLM preamble leaves no room for the body: prefix and body are windowed apart,
    every character of both is read, each window fits, and the row's flags and a warning say
    so (it used to stop the whole run with a ValueError)."""
    from ragkit.retrieve import DenseRetriever
    from ragkit.retrieve.retrievers import encoder_windows
    from ragkit.types import Chunk

    doc = Document("d", "def retry(upload):\n    return upload.send(backoff=3)\n" * 12)
    preamble = " ".join(f"This chunk belongs to the upload module, part {i}." for i in range(40))
    long = Chunk.make(doc, 0, len(doc.text), strategy="x", prefix=preamble)
    plain = Chunk.make(doc, 0, 52, strategy="x")
    apart: list[int] = []
    texts, owner = encoder_windows([plain, long], embedder, placement, apart)
    assert apart == [1] and texts[0] == plain.text
    mine = [t for t, o in zip(texts, owner) if o == 1]
    assert all(n <= embedder.max_tokens for n in embedder.count_tokens(mine))
    order = (preamble, long.text) if placement == "before" else (long.text, preamble)
    assert "".join(mine) == "".join(order)  # every character once, nothing cut
    with pytest.warns(UserWarning, match="1 of 2 chunks have a prefix"):
        r = DenseRetriever([plain, long], embedder, placement, long="windows")
    assert "prefix_apart:1" in r.flags and "windows:1/2" in r.flags


def test_windowed_dense_finds_what_truncation_never_reads(embedder):
    """The answer sits past the encoder's 256 tokens: truncation never embeds it, windows do;
    a chunk that fits scores exactly as before."""
    from ragkit.retrieve import DenseRetriever
    from ragkit.types import Chunk

    filler = " ".join(f"Clause {i} covers routine invoicing matters." for i in range(60))
    long_doc = Document("long", filler + " The gateway firmware can be rolled back from the "
                                         "admin page within a week.")
    other = Document("other", "Customer records are kept for seven years and then deleted.")
    chunks = [Chunk.make(long_doc, 0, len(long_doc.text), strategy="x"),
              Chunk.make(other, 0, len(other.text), strategy="x")]
    q = ["How do I roll back the gateway firmware?"]
    from ragkit.embed import TruncationWarning

    with pytest.warns(TruncationWarning, match="exceed"):
        cut = DenseRetriever(chunks, embedder)
    win = DenseRetriever(chunks, embedder, long="windows")
    assert any(f.startswith("truncated:") for f in cut.flags)
    assert win.flags == ["windows:1/2"]
    assert win.search(q, 1)[0][0].chunk.doc_id == "long"
    assert win.search(q, 2)[0][0].score > cut.search(q, 2)[0][0].score
    assert [h.chunk.id for h in win.search(q, 2)[0]] == [c.id for c in chunks]  # two distinct
    recs = ["How long are customer records kept?"]
    assert win.search(recs, 1)[0][0].score == pytest.approx(cut.search(recs, 1)[0][0].score,
                                                             abs=1e-6)
    with pytest.raises(ValueError, match="long must be"):
        DenseRetriever(chunks, embedder, long="drop")


def test_the_stack_reads_whole_chunks_splits_identifiers_and_spares_code(embedder):
    from ragkit.retrieve import STACK_WEIGHTS, make_retriever, stack_retriever

    chunks = _chunks()
    first = make_retriever(chunks, embedder, "stack")
    assert first.params() == {"fusion_weights": list(STACK_WEIGHTS), "fusion_candidates": 150,
                              "fusion_constant": 0.0, "bm25_tokens": "identifiers",
                              "dense_long": "windows"}
    assert first.search(QUERIES[:1], 1)[0][0].chunk.doc_id == "refunds"
    reranked = stack_retriever(chunks, embedder, rerank=str(_minilm_folder()), candidates=4)
    assert reranked.params()["not_rescored"] == "is_code"
    assert reranked.params()["bm25_tokens"] == "identifiers"


def _minilm_folder():
    from ragkit.models import resolve_model

    return resolve_model(None)  # the bundled MiniLM folder, used as a bi-encoder scorer


def test_with_fusion_reuses_the_indexes_and_ranks_as_a_new_fusion_would(embedder):
    from ragkit.retrieve import HybridRetriever

    base = _build("HybridRetriever", embedder)
    other = base.with_fusion((0.3, 0.7), constant=60)
    assert other.dense is base.dense and other.bm25 is base.bm25
    fresh = HybridRetriever(base.dense, base.bm25, (0.3, 0.7), candidates=10, constant=60)
    ids = lambda r: [[h.chunk.id for h in hs] for hs in r.search(QUERIES, 4)]  # noqa: E731
    assert ids(other) == ids(fresh)
    assert other.params()["fusion_weights"] == [0.3, 0.7] and base.weights == (0.8, 0.2)
