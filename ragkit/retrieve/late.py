"""Dense retrieval over late-chunked vectors (`ragkit.embed.late`): `LateDenseRetriever` is a
`DenseRetriever` whose chunk vectors are pooled from their documents' token states.

    >>> r = LateDenseRetriever(chunks, [doc], Embedder())         # doctest: +SKIP
    >>> r.search(["How long is the refund window?"], k=3)[0][0].chunk.text  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ..embed.encoders import Embedder
from ..embed.late import LateEmbedder
from ..types import Chunk, Document
from .retrievers import DenseRetriever


class LateDenseRetriever(DenseRetriever):
    """`DenseRetriever` over late-chunked chunk vectors: same `search(queries, k, where)`, same
    `flags` (the late embedder's); queries are embedded by `embedder` with its query prompt."""

    kind = "late"

    def __init__(self, chunks: Sequence[Chunk], docs: Iterable[Document] | Mapping[str, Document],
                 embedder: Embedder, window: int | None = None, overlap: int | None = None,
                 use_gpu: bool | None = None, **kw: Any):
        self.late = LateEmbedder(embedder, window=window, overlap=overlap, **kw)
        self._docs = docs
        super().__init__(chunks, embedder, "before", use_gpu)
        del self._docs  # read once, by embed_chunks

    def describe(self) -> str:
        return (f"late chunking: {self.embedder.name} cosine over {len(self.chunks)} chunks "
                "pooled from their documents' token states")

    def embed_chunks(self) -> tuple[np.ndarray, list[str]]:
        """Late-chunked vectors of `self.chunks` within their documents, and the late
        embedder's flags."""
        vecs = self.late.embed(self._docs, self.chunks)
        return vecs, list(self.late.flags)
