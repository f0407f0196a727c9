"""The pipeline's stages as functions over *batches*, so an existing engine can run them.

A batch is a mapping of equal-length columns, the shape that `datasets.Dataset.map(batched=True)`
and Ray Data's ``map_batches`` both hand to a function. Two batch shapes flow through:

- a **document batch**: ``doc_id``, ``text``, ``metadata`` (a JSON object per row, as a string);
- a **chunk batch**: ``chunk_id``, ``doc_id``, ``start``, ``end``, ``text``, ``prefix``,
  ``strategy``, ``metadata`` (JSON), and after embedding ``vector`` (float32, one row per chunk),
  ``tokens`` (the encoder's input length, special tokens included) and ``truncated`` (whether
  that length is over the encoder's limit: never silent, each row says it).

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

Helpers run a chain of stages three ways on the same batch: `run_local` (in this process),
`run_datasets` (``Dataset.map(batched=True, num_proc=N)``) and `run_ray` (Ray Data, the encoder
in an actor pool). They return the same chunk rows; the vectors agree to float rounding (an
encoder's result for a text can move by ~1e-7 with the other texts in its padded batch).
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ..types import Chunk, Document

DOC_COLUMNS = ("doc_id", "text", "metadata")
CHUNK_COLUMNS = ("chunk_id", "doc_id", "start", "end", "text", "prefix", "strategy", "metadata")
EMBED_COLUMNS = ("vector", "tokens", "truncated")


def _column(batch: Mapping[str, Any], name: str) -> list:
    """One column of a batch as a list of Python values (a Ray batch holds numpy arrays)."""
    values = batch[name]
    return values.tolist() if isinstance(values, np.ndarray) else list(values)


def documents_to_batch(docs: Iterable[Document]) -> dict[str, list]:
    """Documents -> a document batch.

    >>> documents_to_batch([Document("a", "text", {"lang": "en"})])["metadata"]
    ['{"lang": "en"}']
    """
    docs = list(docs)
    return {"doc_id": [d.id for d in docs], "text": [d.text for d in docs],
            "metadata": [json.dumps(dict(d.metadata), sort_keys=True, ensure_ascii=False,
                                    default=str) for d in docs]}


def batch_to_documents(batch: Mapping[str, Any]) -> list[Document]:
    """A document batch -> `Document` objects (metadata decoded)."""
    metas = _column(batch, "metadata") if "metadata" in batch else None
    ids, texts = _column(batch, "doc_id"), _column(batch, "text")
    return [Document(id=str(i), text=str(t), metadata=json.loads(metas[n]) if metas else {})
            for n, (i, t) in enumerate(zip(ids, texts))]


def chunks_to_batch(chunks: Sequence[Chunk]) -> dict[str, list]:
    """Chunks -> a chunk batch (metadata as JSON; the id is the chunk's own)."""
    return {
        "chunk_id": [c.id for c in chunks], "doc_id": [c.doc_id for c in chunks],
        "start": [c.start for c in chunks], "end": [c.end for c in chunks],
        "text": [c.text for c in chunks], "prefix": [c.prefix for c in chunks],
        "strategy": [c.strategy for c in chunks],
        "metadata": [json.dumps(dict(c.metadata), sort_keys=True, ensure_ascii=False,
                                default=str) for c in chunks],
    }


def batch_to_chunks(batch: Mapping[str, Any]) -> list[Chunk]:
    """A chunk batch -> `Chunk` objects; each id is recomputed and must match the stored one."""
    cols = {name: _column(batch, name) for name in CHUNK_COLUMNS}
    out = []
    for i in range(len(cols["chunk_id"])):
        c = Chunk(doc_id=cols["doc_id"][i], start=int(cols["start"][i]), end=int(cols["end"][i]),
                  text=cols["text"][i], strategy=cols["strategy"][i], prefix=cols["prefix"][i],
                  metadata=json.loads(cols["metadata"][i]))
        if c.id != cols["chunk_id"][i]:
            raise ValueError(f"chunk row {i} of {c.doc_id}: stored id {cols['chunk_id'][i]} "
                             f"does not match its content ({c.id})")
        out.append(c)
    return out


class Stage:
    """A callable over batches that loads its heavy parts on first call (and never pickles
    them: a worker process or a Ray actor loads its own)."""

    _lazy: tuple[str, ...] = ()

    def settings(self) -> dict[str, Any]:
        """What decides this stage's output (stored with the shards)."""
        raise NotImplementedError

    def __getstate__(self) -> dict[str, Any]:
        return {k: (None if k in self._lazy else v) for k, v in vars(self).items()}

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        raise NotImplementedError


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


def chain(stages: Sequence[Stage], batch: Mapping[str, Any]) -> dict[str, Any]:
    """Apply stages in order to one batch."""
    for stage in stages:
        batch = stage(batch)
    return dict(batch)


def run_local(stages: Sequence[Stage], docs: Iterable[Document], batch_size: int = 64
              ) -> dict[str, Any]:
    """The stages over `docs` in this process, `batch_size` documents at a time."""
    docs = list(docs)
    parts = [chain(stages, documents_to_batch(docs[i: i + batch_size]))
             for i in range(0, len(docs), batch_size)]
    return concat(parts)


def concat(parts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Concatenate batches column by column (vectors stacked)."""
    parts = [p for p in parts if len(next(iter(p.values()), []))]
    if not parts:
        return {}
    out: dict[str, Any] = {}
    for name in parts[0]:
        if name == "vector":
            out[name] = np.concatenate([np.asarray(p[name], np.float32).reshape(
                len(p["chunk_id"]), -1) for p in parts])
        else:
            out[name] = [v for p in parts for v in _column(p, name)]
    return out


def run_datasets(stages: Sequence[Stage], docs: Iterable[Document], num_proc: int = 1,
                 batch_size: int = 64) -> dict[str, Any]:
    """The stages under ``datasets.Dataset.map(batched=True, num_proc=num_proc)``, one map per
    stage; rows come back in document order."""
    import datasets

    ds = datasets.Dataset.from_dict(documents_to_batch(docs))
    quiet = not datasets.utils.logging.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        for stage in stages:
            ds = ds.map(stage, batched=True, batch_size=batch_size, num_proc=num_proc
                        if num_proc > 1 else None, remove_columns=ds.column_names,
                        load_from_cache_file=False, keep_in_memory=True)
    finally:
        if not quiet:
            datasets.enable_progress_bars()
    cols = ds.to_dict()
    if "vector" in cols:
        cols["vector"] = np.asarray(cols["vector"], np.float32).reshape(len(ds), -1)
    return cols


def run_ray(stages: Sequence[Stage], docs: Iterable[Document], concurrency: int = 2,
            batch_size: int = 64) -> dict[str, Any]:
    """The stages under Ray Data (local mode when no cluster is running): stages that hold an
    encoder run as an actor pool of `concurrency` actors, the others as tasks. Rows come back
    in document order (``preserve_order``). Needs Ray: ``make setup-scale`` (or
    ``pip install -e '.[scale]'`` in the project folder)."""
    try:
        import ray
    except ImportError as e:
        raise ImportError("Ray Data is not installed: make setup-scale (or pip install -e "
                          "'.[scale]' in the ragkit folder)") from e

    if not ray.is_initialized():
        import os  # a loaded machine can take over Ray's default 10 s to start its raylet

        os.environ.setdefault("RAY_raylet_start_wait_time_s", "120")
        ray.init(num_cpus=max(concurrency, 1), include_dashboard=False, log_to_driver=False,
                 configure_logging=False)
    ctx = ray.data.DataContext.get_current()
    ctx.execution_options.preserve_order = True
    ctx.enable_progress_bars = False
    ds = ray.data.from_items([dict(zip(DOC_COLUMNS, row)) for row in
                              zip(*documents_to_batch(docs).values())])
    for stage in stages:
        if isinstance(stage, (EmbedStage, LateEmbedStage)):
            ds = ds.map_batches(_RayActor, fn_constructor_args=(stage,), batch_size=batch_size,
                                concurrency=concurrency, batch_format="numpy")
        else:
            ds = ds.map_batches(_as_numpy, fn_args=(stage,), batch_size=batch_size,
                                batch_format="numpy")
    parts = [dict(b) for b in ds.iter_batches(batch_size=None, batch_format="numpy")]
    return concat(parts)


def _as_numpy(batch: Mapping[str, Any], stage: Stage) -> dict[str, Any]:
    """One stage's output with every column a numpy array (what Ray Data takes back)."""
    return {k: np.asarray(v) for k, v in stage(batch).items()}


class _RayActor:
    """A Ray Data actor wrapping one stage (its encoder is loaded once per actor)."""

    def __init__(self, stage: Stage):
        self.stage = stage

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        return _as_numpy(batch, self.stage)
