"""The pipeline's stages as functions over *batches* (`ragkit.scale.batches`), so an existing
engine can run them.

Every stage is a small class whose instances are plain callables ``batch -> batch``. An
instance holds only its settings until first called, then loads what it needs (a chunker, an
encoder) and keeps it: the same object is a `datasets` map function (pickled into each worker
process) and a Ray Data actor class (one encoder per actor; ``concurrency`` actors, one per GPU
on a cluster). Nothing else is global, so the output depends only on the input rows and the
settings (`settings()`, which `ragkit.scale.shards` stores with the shards). Stages never cache to
disk: the shards they feed are the cache.

    >>> stage = ChunkStage("fixed_chars:5/0")
    >>> out = stage({"doc_id": ["d"], "text": ["Hello world"], "metadata": ["{}"]})
    >>> out["text"], out["start"]
    (['Hello', ' worl', 'd'], [0, 5, 10])

A chain of stages runs three ways on the same batch: `ragkit.scale.batches.run_local` (in this
process), `ragkit.scale.batches.run_datasets` (``Dataset.map(batched=True, num_proc=N)``) and
`ragkit.scale.raydata` (Ray Data on a cluster, the encoder in an actor pool, Parquet shards in
and out). They return the same chunk rows; the vectors agree to float rounding (an encoder's
result for a text can move by ~1e-7 with the other texts in its padded batch).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ..types import Chunk, Document
from .batches import (CHUNK_COLUMNS, Stage, _column, batch_to_chunks, batch_to_documents,
                      chunks_to_batch)


class ChunkStage(Stage):
    """Document batch -> chunk batch, with a chunker given by spec (``recursive:250/0``, see
    `ragkit.chunkers.get_chunker`) and its keyword settings; ``context`` names an optional
    preamble generator that needs no model (``structural`` or ``extractive``, see
    `ragkit.contextualize`): the contextualize stage, which needs each chunk's document."""

    _lazy = ("_chunker", "_context")

    def __init__(self, chunker: str = "recursive:250/0", context: str | None = None,
                 context_budget: int = 100, **params: Any):
        self.spec, self.params, self.context = chunker, dict(params), context
        self.context_budget = context_budget
        if context not in (None, "structural", "extractive"):
            raise ValueError(f"context must be None, 'structural' or 'extractive' (a batch "
                             f"stage loads no LLM), not {context!r}")
        self._chunker = None
        self._context = None

    def settings(self) -> dict[str, Any]:
        out: dict[str, Any] = {"chunker": self.spec, **self.params}
        if self.context:
            out.update(context=self.context, context_budget=self.context_budget)
        return out

    @property
    def chunker(self):
        if self._chunker is None:
            from ..chunkers import get_chunker

            self._chunker = get_chunker(self.spec, **self.params)
        return self._chunker

    def chunks(self, docs: Sequence[Document]) -> list[Chunk]:
        """The chunks of `docs` (with preambles when ``context`` is set), in document order."""
        out = []
        for doc in docs:
            chunks = self.chunker.chunk(doc)
            if self.context:
                if self._context is None:
                    from ..contextualize import make_contextualizer

                    self._context = make_contextualizer(self.context, self.context_budget)
                self._context.prepare(doc, chunks)
                chunks = [c.with_prefix(self._context.preamble(doc, c)) for c in chunks]
            out.extend(chunks)
        return out

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        return chunks_to_batch(self.chunks(batch_to_documents(batch)))


class EmbedStage(Stage):
    """Chunk batch -> the same rows plus ``vector``, ``tokens`` and ``truncated``: what the
    encoder sees is the chunk's prefix and text (`Chunk.embedding_text`). ``threads`` caps the
    encoder's CPU threads in this worker (1 when several workers share the cores)."""

    _lazy = ("_embedder",)

    def __init__(self, model: str | None = None, batch_size: int = 32, device: str | None = None,
                 backend: str | None = None, threads: int | None = None):
        self.model, self.batch_size, self.device = model, batch_size, device
        self.backend, self.threads = backend, threads
        self._embedder = None

    @property
    def embedder(self):
        if self._embedder is None:
            from ..embed.encoders import Embedder

            if self.threads:
                import torch  # ONNX Runtime takes its thread count from torch's (ragkit.embed)

                torch.set_num_threads(self.threads)
            self._embedder = Embedder(self.model, device=self.device, batch_size=self.batch_size,
                                      cache=False, show_progress=False, backend=self.backend)
        return self._embedder

    def settings(self) -> dict[str, Any]:
        s = self.embedder.settings()
        return {**s, "backend": self.embedder.backend, "stage": "embed"}

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        import warnings

        from ..embed.encoders import TruncationWarning

        out = {name: _column(batch, name) for name in CHUNK_COLUMNS}
        texts = [c.embedding_text() for c in batch_to_chunks(out)]
        emb = self.embedder
        with warnings.catch_warnings():  # each row says it in `truncated` instead
            warnings.simplefilter("ignore", TruncationWarning)
            vecs = emb.encode(texts) if texts else np.zeros((0, emb.dimension), np.float32)
        tokens = emb.count_tokens(texts) if texts else []
        out["vector"] = vecs.astype(np.float32)
        out["tokens"] = tokens
        out["truncated"] = [n > emb.max_tokens for n in tokens]
        return out


class LateEmbedStage(ChunkStage):
    """Document batch -> chunk batch with late-chunked vectors (`ragkit.embed.LateEmbedder`):
    each document is encoded whole (in windows when long) and pooled per chunk. ``tokens`` is
    the chunk's own text in the encoder's tokens; nothing is truncated (``truncated`` False)."""

    _lazy = ("_chunker", "_context", "_late")

    def __init__(self, chunker: str = "recursive:250/0", model: str | None = None,
                 device: str | None = None, threads: int | None = None, **params: Any):
        super().__init__(chunker, **params)
        self.model, self.device, self.threads = model, device, threads
        self._late = None

    @property
    def late(self):
        if self._late is None:
            embed = EmbedStage(self.model, device=self.device, threads=self.threads)
            from ..embed.late import LateEmbedder

            self._late = LateEmbedder(embed.embedder, cache=False)
        return self._late

    def settings(self) -> dict[str, Any]:
        return {**super().settings(), **self.late.settings(), "stage": "late"}

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        import warnings

        from ..embed.late_plan import LateChunkingWarning

        docs = batch_to_documents(batch)
        chunks = self.chunks(docs)
        with warnings.catch_warnings():  # windowed documents are normal at this scale
            warnings.simplefilter("ignore", LateChunkingWarning)
            vecs = self.late.embed(docs, chunks, cache=False)
        out: dict[str, Any] = chunks_to_batch(chunks)
        out["vector"] = vecs.astype(np.float32)
        out["tokens"] = self.late.embedder.count_tokens([c.text for c in chunks]) if chunks else []
        out["truncated"] = [False] * len(chunks)
        return out
