"""Batches: the shape the stages (`ragkit.scale.stages`) and the shards (`ragkit.scale.shards`)
share, and the runners that apply any chain of stages to it.

A batch is a mapping of equal-length columns, the shape that `datasets.Dataset.map(batched=True)`
and Ray Data's ``map_batches`` both hand to a function. Two batch shapes flow through:

- a **document batch**: ``doc_id``, ``text``, ``metadata`` (a JSON object per row, as a string);
- a **chunk batch**: ``chunk_id``, ``doc_id``, ``start``, ``end``, ``text``, ``prefix``,
  ``strategy``, ``metadata`` (JSON), and after embedding ``vector`` (float32, one row per chunk),
  ``tokens`` (the encoder's input length, special tokens included) and ``truncated`` (whether
  that length is over the encoder's limit: never silent, each row says it).

`Stage` is the interface every stage implements (a callable ``batch -> batch`` that loads its
heavy parts on first call); `run_local` (in this process) and `run_datasets`
(``Dataset.map(batched=True, num_proc=N)``) run a chain of them over documents, `chain` and
`concat` apply and join batches. Ray Data's runner, which knows which stages hold an encoder, is
`ragkit.scale.stages.run_ray`.
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
    stage; rows come back in document order. Progress bars (datasets', and transformers' as each
    worker loads its encoder) are off meanwhile: in a notebook, a bar drawn by a forked worker
    is a widget message the kernel refuses to send from a fork, and prints whole instead."""
    import datasets
    from transformers.utils import logging as hf_logging

    ds = datasets.Dataset.from_dict(documents_to_batch(docs))
    bars = (datasets.utils.logging.is_progress_bar_enabled(), hf_logging.is_progress_bar_enabled())
    datasets.disable_progress_bars()
    hf_logging.disable_progress_bar()
    try:
        for stage in stages:
            ds = ds.map(stage, batched=True, batch_size=batch_size, num_proc=num_proc
                        if num_proc > 1 else None, remove_columns=ds.column_names,
                        load_from_cache_file=False, keep_in_memory=True)
    finally:
        if bars[0]:
            datasets.enable_progress_bars()
        if bars[1]:
            hf_logging.enable_progress_bar()
    cols = ds.to_dict()
    if "vector" in cols:
        cols["vector"] = np.asarray(cols["vector"], np.float32).reshape(len(ds), -1)
    return cols
