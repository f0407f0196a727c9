"""Retrievers: dense (embedder + faiss), BM25 (bm25s), and their fusion; the `Retriever`
interface every retriever in ragkit satisfies.

All return, per query, a ranked list of `Hit(chunk, score)`. Filters (`where`) are applied
before the search on both sides, so every retriever returns k hits when k chunks pass. Every
retriever breaks exact score ties the same way, toward the document with the newer
``effective_date`` (`newest_first`, `newer_first`; fusion too), so the 2024 fee schedule
outranks the 2021 one it repeats word for word.

    >>> r = DenseRetriever(chunks, Embedder())                                # doctest: +SKIP
    >>> r.search(["How long is the Gold refund window?"], k=5)[0][0].chunk.text  # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, Sequence, runtime_checkable

import numpy as np

from .index import VectorIndex, Where, matches
from .types import Chunk


@dataclass(frozen=True)
class Hit:
    chunk: Chunk
    score: float


@runtime_checkable
class Retriever(Protocol):
    """What every retriever offers (dense, BM25, TF-IDF, hybrid, late, parent-child, sentence
    window, reranked): `search` and `flags`. `ragkit.pipeline` relies on nothing else.

    ``search(queries, k, where=None)`` returns, per query, at most k `Hit`s, best first; `where`
    is one filter for every query or one per query (see `ragkit.index.matches`). ``flags`` is a
    read-only property: the list of strings a results row must carry about how the retriever was
    built (e.g. ``"truncated:73"``, chunks the encoder cut short), empty when there is nothing
    to say.
    """

    @property
    def flags(self) -> list[str]: ...

    def search(self, queries: Sequence[str], k: int, where: Where | Sequence[Where] = None
               ) -> list[list[Hit]]: ...


def _meta(c: Chunk) -> dict:
    return {**c.metadata, "doc_id": c.doc_id}


def _per_query(where: Where | Sequence[Where], n: int) -> list[Where]:
    if isinstance(where, (list, tuple)):
        if len(where) != n:
            raise ValueError(f"{len(where)} filters for {n} queries")
        return list(where)
    return [where] * n


class DenseRetriever:
    """Embeds every chunk (prefix + body) once and searches by cosine similarity.

    Subclasses that make the chunk vectors another way (late chunking) override
    `embed_chunks`; the index, the search and the flags stay this class's.
    """

    kind = "dense"

    def __init__(self, chunks: Sequence[Chunk], embedder, placement: Literal["before", "after"]
                 = "before", use_gpu: bool | None = None):
        self.chunks = list(chunks)
        self.embedder = embedder
        self.placement = placement
        vecs, self._flags = self.embed_chunks()
        self.index = VectorIndex(vecs, [_meta(c) for c in self.chunks], use_gpu=use_gpu)

    def embed_chunks(self) -> tuple[np.ndarray, list[str]]:
        """One vector per chunk of `self.chunks` (prefix + body, as `self.placement` puts
        them), and the encoder's flags (e.g. ["truncated:73"]: chunks it cut short)."""
        vecs = self.embedder.encode([c.embedding_text(self.placement) for c in self.chunks],
                                    "document")
        return vecs, self.embedder.flags()

    @property
    def flags(self) -> list[str]:
        return list(self._flags)

    def search(self, queries: Sequence[str], k: int, where: Where | Sequence[Where] = None
               ) -> list[list[Hit]]:
        qv = self.embedder.encode(list(queries), "query")
        wheres = _per_query(where, len(queries))
        out: list[list[Hit]] = [[] for _ in queries]
        groups: dict[str, list[int]] = {}
        for i, w in enumerate(wheres):  # batch the queries that share a filter
            groups.setdefault(repr(w) if not callable(w) else str(id(w)), []).append(i)
        for idx in groups.values():
            scores, ids = self.index.search(qv[idx], k, where=wheres[idx[0]])
            for row, i in enumerate(idx):
                out[i] = newest_first([Hit(self.chunks[j], float(s))
                                       for s, j in zip(scores[row], ids[row]) if j >= 0])
        return out


class BM25Retriever:
    """bm25s over prefix + body (so a contextual preamble is searchable too)."""

    kind = "bm25"

    def __init__(self, chunks: Sequence[Chunk], placement: Literal["before", "after"] = "before",
                 stopwords: str | None = "en"):
        import bm25s

        self.chunks = list(chunks)
        self._stop = stopwords
        corpus = [c.embedding_text(placement) for c in self.chunks]
        self._bm25 = bm25s.BM25()
        self._bm25.index(bm25s.tokenize(corpus, stopwords=stopwords, show_progress=False),
                         show_progress=False)
        self._metas = [_meta(c) for c in self.chunks]

    @property
    def flags(self) -> list[str]:
        return []

    def scores(self, query: str) -> np.ndarray:
        import bm25s

        toks = bm25s.tokenize([query], stopwords=self._stop, show_progress=False,
                              return_ids=False)[0]
        return np.asarray(self._bm25.get_scores(toks), dtype=np.float64)

    def search(self, queries: Sequence[str], k: int, where: Where | Sequence[Where] = None
               ) -> list[list[Hit]]:
        out = []
        for q, w in zip(queries, _per_query(where, len(queries))):
            s = self.scores(q)
            allowed = np.array([matches(m, w) for m in self._metas], dtype=bool)
            s = np.where(allowed, s, -np.inf)
            order = np.lexsort((np.arange(len(s)), -s))[: min(k, int(allowed.sum()))]
            out.append(newest_first([Hit(self.chunks[j], float(s[j])) for j in order]))
        return out


class TfidfRetriever:
    """TF-IDF cosine over prefix + body (scikit-learn): the keyword baseline of notebook 01."""

    kind = "tfidf"

    def __init__(self, chunks: Sequence[Chunk], placement: Literal["before", "after"] = "before"):
        from sklearn.feature_extraction.text import TfidfVectorizer

        self.chunks = list(chunks)
        self._vec = TfidfVectorizer(sublinear_tf=True, stop_words="english")
        self._m = self._vec.fit_transform([c.embedding_text(placement) for c in self.chunks])
        self._metas = [_meta(c) for c in self.chunks]

    @property
    def flags(self) -> list[str]:
        return []

    def search(self, queries: Sequence[str], k: int, where: Where | Sequence[Where] = None
               ) -> list[list[Hit]]:
        sims = (self._vec.transform(list(queries)) @ self._m.T).toarray()
        out = []
        for s, w in zip(sims, _per_query(where, len(queries))):
            allowed = np.array([matches(m, w) for m in self._metas], dtype=bool)
            s = np.where(allowed, s, -np.inf)
            order = np.lexsort((np.arange(len(s)), -s))[: min(k, int(allowed.sum()))]
            out.append(newest_first([Hit(self.chunks[j], float(s[j])) for j in order]))
        return out


def newest_first(hits: list[Hit], decimals: int = 6) -> list[Hit]:
    """Break exact score ties toward the document with the newer effective date (e.g. the
    same sentence in the 2021 and the 2024 fee schedule: the 2024 one ranks first)."""
    return sorted(hits, key=lambda h: (-round(h.score, decimals), newer_first(h.chunk)))


def newer_first(chunk: Chunk) -> tuple[int, ...]:
    """A sort key that puts the chunk of the newer ``effective_date`` first (undated last)."""
    return tuple(-ord(ch) for ch in str(chunk.metadata.get("effective_date") or "0000-00-00"))


def fuse(rankings: Sequence[list[Hit]], weights: Sequence[float], k: int,
         constant: float = 0.0) -> list[Hit]:
    """Weighted reciprocal-rank fusion: score = sum(w / (rank + 1 + constant)).

    ``constant=0`` with weights (0.8, 0.2) is the Anthropic cookbook's fusion; ``constant=60``
    with equal weights is classic RRF. Ties break toward the newer document, then on chunk id
    for determinism.
    """
    scores: dict[str, float] = {}
    chunk_of: dict[str, Chunk] = {}
    for hits, w in zip(rankings, weights):
        for rank, h in enumerate(hits):
            scores[h.chunk.id] = scores.get(h.chunk.id, 0.0) + w / (rank + 1 + constant)
            chunk_of[h.chunk.id] = h.chunk
    best = sorted(scores, key=lambda cid: (-scores[cid], newer_first(chunk_of[cid]), cid))[:k]
    return [Hit(chunk_of[c], scores[c]) for c in best]


class HybridRetriever:
    """Dense + BM25, each taking `candidates` hits, fused by weighted reciprocal rank."""

    kind = "hybrid"

    def __init__(self, dense: DenseRetriever, bm25: BM25Retriever, weights=(0.8, 0.2),
                 candidates: int = 150, constant: float = 0.0):
        self.dense, self.bm25 = dense, bm25
        self.weights, self.candidates, self.constant = tuple(weights), candidates, constant

    @property
    def flags(self) -> list[str]:
        return [*self.dense.flags, *self.bm25.flags]

    def search(self, queries: Sequence[str], k: int, where: Where | Sequence[Where] = None
               ) -> list[list[Hit]]:
        d = self.dense.search(queries, self.candidates, where)
        b = self.bm25.search(queries, self.candidates, where)
        return [fuse([x, y], self.weights, k, self.constant) for x, y in zip(d, b)]
