"""Chunks and their vectors on disk as numbered Parquet shards, written so a crash costs one shard.

`build_shards` cuts a corpus (any iterable of `Document`, in a fixed order) into shards of
``shard_docs`` documents, runs the batch stages of `ragkit.stages` over each shard (in this
process, or under ``datasets.map(num_proc=N)``), and writes ``shard-00000.parquet`` ... Each
shard holds the chunk rows: ``row`` (a global int64 position, the id a faiss index uses),
``chunk_id``, ``doc_id``, ``start``, ``end``, ``text``, ``prefix``, ``strategy``, ``metadata``
(JSON), ``tokens``, ``truncated`` and ``vector`` (a fixed-size list of float32).

Resuming is the point. A shard is written to a temporary file and renamed into place, then
``manifest.json`` (also replaced atomically) records it with its row count, the sha256 of its
file and the sha256 of the documents it came from. Re-running the same command skips every
shard the manifest lists (after checking the documents still hash the same) and computes the
rest, so a run killed after shard k resumes at k + 1 and ends with the same bytes as an
uninterrupted run: Parquet is written without timestamps, the stages are deterministic and
each shard's batches do not depend on the others. A folder built with other stage settings,
or from other documents, is refused with a message, never mixed.

`ShardSet` reads a finished folder back: its rows (`ShardSet.tables`), all vectors as one
array (`ShardSet.vectors`, preallocated from the manifest's counts) or any columns.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from .cache import atomic_write_text
from .stages import Stage, chain, concat, documents_to_batch, run_datasets
from .types import Document

MANIFEST = "manifest.json"
FORMAT = "ragkit-shards/1"


class ShardError(ValueError):
    """A shard folder that cannot be resumed or read (the message says why and what to do)."""


def shard_name(k: int) -> str:
    """``shard_name(3) -> 'shard-00003.parquet'``"""
    return f"shard-{k:05d}.parquet"


def docs_digest(docs: Sequence[Document]) -> str:
    """sha256 over the documents' ids, texts and metadata (what a shard was built from)."""
    h = hashlib.sha256()
    for row in zip(*documents_to_batch(docs).values()):
        h.update(json.dumps(row, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def to_table(rows: dict[str, Any], first_row: int):
    """Chunk rows (a stage's output) -> a pyarrow Table with a global ``row`` id column."""
    import pyarrow as pa

    n = len(rows.get("chunk_id", []))
    vecs = np.asarray(rows.get("vector", np.zeros((n, 0))), np.float32).reshape(n, -1)
    cols: dict[str, Any] = {"row": pa.array(np.arange(first_row, first_row + n, dtype=np.int64))}
    for name in ("chunk_id", "doc_id", "text", "prefix", "strategy", "metadata"):
        cols[name] = pa.array(rows.get(name, []), pa.string())
    for name in ("start", "end", "tokens"):
        cols[name] = pa.array(rows.get(name, [0] * n), pa.int64())
    cols["truncated"] = pa.array(rows.get("truncated", [False] * n), pa.bool_())
    if vecs.shape[1]:  # chunk-only stages leave no vector column
        cols["vector"] = pa.FixedSizeListArray.from_arrays(
            pa.array(vecs.ravel(), pa.float32()), vecs.shape[1])
    return pa.table(cols)


def _write_table(table, path: Path) -> None:
    import pyarrow.parquet as pq

    tmp = path.with_name(f".{path.name}.tmp")
    pq.write_table(table, tmp, compression="zstd", write_statistics=False)
    os.replace(tmp, path)


def _read_manifest(folder: Path) -> dict[str, Any] | None:
    path = folder / MANIFEST
    if not path.exists():
        return None
    try:
        man = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise ShardError(f"{path}: unreadable manifest ({e}); remove the folder to rebuild"
                         ) from None
    if man.get("format") != FORMAT:
        raise ShardError(f"{path}: not a {FORMAT} manifest")
    return man


def _batches(docs: Iterable[Document], size: int) -> Iterator[list[Document]]:
    batch: list[Document] = []
    for doc in docs:
        batch.append(doc)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def build_shards(docs: Iterable[Document], folder: str | Path, stages: Sequence[Stage], *,
                 shard_docs: int = 1000, num_proc: int = 1, batch_size: int = 64,
                 total_docs: int | None = None, progress: bool = False,
                 after_shard: Callable[[int], None] | None = None) -> "ShardSet":
    """Run `stages` over `docs` shard by shard into `folder`, resuming what a previous run of
    the same settings finished. `after_shard(k)` is called once shard k is safely on disk (a
    progress hook; the tests raise from it to simulate a crash). ``num_proc > 1`` runs each
    shard under ``datasets.map(batched=True, num_proc=num_proc)``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    settings = {"stages": [{"stage": type(s).__name__, **s.settings()} for s in stages],
                "shard_docs": shard_docs, "batch_size": batch_size}
    man = _read_manifest(folder)
    if man is None:
        man = {"format": FORMAT, "settings": settings, "shards": [], "complete": False}
    elif json.dumps(man["settings"], sort_keys=True) != json.dumps(settings, sort_keys=True):
        raise ShardError(f"{folder}: its shards were built with other settings "
                         f"({man['settings']}); use a new folder, or delete this one to rebuild")
    done = {s["name"]: s for s in man["shards"]}
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=total_docs, desc="documents", unit="doc")
    next_row = 0
    for k, batch in enumerate(_batches(docs, shard_docs)):
        name = shard_name(k)
        digest = docs_digest(batch)
        if name in done:
            entry = done[name]
            if entry["docs_sha256"] != digest:
                raise ShardError(f"{folder / name}: built from other documents than shard {k} "
                                 "of this corpus; use a new folder for a changed corpus")
            if not (folder / name).exists() or file_digest(folder / name) != entry["sha256"]:
                raise ShardError(f"{folder / name}: missing or changed since it was recorded; "
                                 "delete the folder to rebuild")
        else:
            if num_proc > 1:
                rows = run_datasets(stages, batch, num_proc=num_proc, batch_size=batch_size)
            else:
                rows = concat([chain(stages, documents_to_batch(batch[i: i + batch_size]))
                               for i in range(0, len(batch), batch_size)])
            table = to_table(rows, next_row)
            _write_table(table, folder / name)
            entry = {"name": name, "docs": len(batch), "rows": table.num_rows,
                     "first_row": next_row, "docs_sha256": digest,
                     "sha256": file_digest(folder / name),
                     "chars": sum(len(d.text) for d in batch),
                     "dim": (table.schema.field("vector").type.list_size
                             if "vector" in table.column_names else 0)}
            man["shards"] = [*man["shards"], entry]
            atomic_write_text(folder / MANIFEST, json.dumps(man, indent=1, sort_keys=True))
            done[name] = entry
        next_row = entry["first_row"] + entry["rows"]
        if bar is not None:
            bar.update(entry["docs"])
        if after_shard is not None:
            after_shard(k)
    if bar is not None:
        bar.close()
    man["complete"] = True
    atomic_write_text(folder / MANIFEST, json.dumps(man, indent=1, sort_keys=True))
    return ShardSet(folder)


def write_row_shards(batches: Iterable[dict[str, Any]], folder: str | Path,
                     settings: dict[str, Any]) -> "ShardSet":
    """Write ready-made chunk-row batches (one shard each) with a manifest, in one go (not
    resumable): for rows that come from elsewhere, e.g. the synthetic vectors of a size sweep."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    man: dict[str, Any] = {"format": FORMAT, "settings": settings, "shards": [],
                           "complete": False}
    next_row = 0
    for k, rows in enumerate(batches):
        table = to_table(rows, next_row)
        _write_table(table, folder / shard_name(k))
        man["shards"].append({"name": shard_name(k), "docs": len(set(rows["doc_id"])),
                              "rows": table.num_rows, "first_row": next_row, "docs_sha256": "",
                              "sha256": file_digest(folder / shard_name(k)),
                              "chars": sum(map(len, rows["text"])),
                              "dim": table.schema.field("vector").type.list_size})
        next_row += table.num_rows
    man["complete"] = True
    atomic_write_text(folder / MANIFEST, json.dumps(man, indent=1, sort_keys=True))
    return ShardSet(folder)


class ShardSet:
    """A folder of finished shards, read back."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        man = _read_manifest(self.folder)
        if man is None:
            raise ShardError(f"{self.folder}: no {MANIFEST} (not a shard folder)")
        self.manifest = man
        self.shards = [self.folder / s["name"] for s in man["shards"]]

    def __len__(self) -> int:
        return sum(s["rows"] for s in self.manifest["shards"])

    @property
    def complete(self) -> bool:
        return bool(self.manifest.get("complete"))

    @property
    def dim(self) -> int:
        dims = {s["dim"] for s in self.manifest["shards"] if s["rows"]}
        if len(dims) != 1:
            raise ShardError(f"{self.folder}: shards disagree on the vector size ({dims})")
        return dims.pop()

    def tables(self, columns: Sequence[str] | None = None) -> Iterator[Any]:
        """One pyarrow Table per shard, in order."""
        import pyarrow.parquet as pq

        for path in self.shards:
            yield pq.read_table(path, columns=list(columns) if columns else None)

    def vectors(self) -> np.ndarray:
        """Every vector, in row order, as one float32 array (filled shard by shard)."""
        out = np.empty((len(self), self.dim), np.float32)
        pos = 0
        for table in self.tables(["vector"]):
            block = vector_block(table)
            out[pos: pos + len(block)] = block
            pos += len(block)
        return out

    def column(self, name: str) -> list:
        """One column of every row, in row order."""
        return [v for t in self.tables([name]) for v in t.column(name).to_pylist()]

    def stats(self) -> dict[str, int]:
        """Documents, chunks and characters over the finished shards."""
        s = self.manifest["shards"]
        return {"documents": sum(x["docs"] for x in s), "chunks": len(self),
                "chars": sum(x["chars"] for x in s), "shards": len(s)}


def vector_block(table) -> np.ndarray:
    """The ``vector`` column of a shard table as a (rows x dim) float32 array."""
    col = table.column("vector").combine_chunks()
    dim = col.type.list_size
    return col.flatten().to_numpy(zero_copy_only=False).reshape(-1, dim).astype(np.float32,
                                                                             copy=False)
