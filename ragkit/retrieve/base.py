"""`Retriever`: what every retriever in ragkit is (dense, BM25, TF-IDF, hybrid, late,
parent-child, sentence window, reranked, and the tools' index and frozen first stage), and the
`Hit` it returns.

Each implementation declares it (``class DenseRetriever(Retriever)``), and
``tests/test_retrievers.py`` walks the package: every class with a ``search`` method (the faiss
indexes aside, which search vectors) declares the protocol and defines its three members.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, Sequence, runtime_checkable

from ..types import Chunk

if TYPE_CHECKING:
    from .index import Where


@dataclass(frozen=True)
class Hit:
    chunk: Chunk
    score: float


@runtime_checkable
class Retriever(Protocol):
    """What every retriever offers: `search`, `flags` and `describe`;
    `ragkit.experiments.pipeline` relies on nothing else.

    ``search(queries, k, where=None)`` returns, per query, at most k `Hit`s, best first, and
    fewer than k only when no more exist (`ragkit.experiments.search_deep` relies on it); `where`
    is one filter for every query or one per query (see `ragkit.retrieve.matches`). ``flags`` is a
    read-only property: the list of strings a results row must carry about how the retriever was
    built (e.g. ``"truncated:73"``, chunks the encoder cut short), empty when there is nothing
    to say. ``describe()`` is one line a person reads: what is searched, and how (e.g.
    ``"BM25 over 629 chunks (prefix + body; words, stopwords en)"``).

    A retriever whose settings belong in a results row (the fusion's weights, the reranker's
    model) also has ``params()``, a dict of them.
    """

    @property
    def flags(self) -> list[str]: ...

    def search(self, queries: Sequence[str], k: int, where: Where | Sequence[Where] = None
               ) -> list[list[Hit]]: ...

    def describe(self) -> str: ...
