"""Chunks and their vectors on disk as numbered Parquet shards, written so a crash costs one shard.

`build_shards` cuts a corpus (any iterable of `Document`, in a fixed order) into shards of
``shard_docs`` documents, runs the batch stages of `ragkit.scale.stages` over each shard (in this
process, or under ``datasets.map(num_proc=N)``), and writes ``shard-00000.parquet`` ... Each
shard holds the chunk rows: ``row`` (a global int64 position, the id a faiss index uses),
``chunk_id``, ``doc_id``, ``start``, ``end``, ``text``, ``prefix``, ``strategy``, ``metadata``
(JSON), ``tokens``, ``truncated`` and ``vector`` (a fixed-size list of float32).

Resuming is the point. ``manifest.json`` (replaced atomically) holds the settings; it is
written once when a run starts and once when it ends. In between, a shard is written to a
temporary file and renamed into place, then one line appended to ``shards.jsonl`` (flushed to
disk) records it with its row count, the sha256 of its file and the sha256 of the documents it
came from: n shards cost O(n) manifest bytes, not the O(n^2) of rewriting a growing list after
each. The last write moves the list into ``manifest.json`` (``complete: true``) and removes the
journal. Re-running the same command skips every recorded shard (after checking the documents
still hash the same) and computes the rest, so a run killed after shard k resumes at k + 1 and
ends with the same bytes as an uninterrupted run: Parquet is written without timestamps, the
stages are deterministic and each shard's batches do not depend on the others. A line cut
short by the kill is dropped (its shard is made again). A folder built with other stage
settings, or from other documents, is refused with a message, never mixed. Folders written
before the journal (every shard listed in ``manifest.json``) read and resume as before.

Each shard's sha256 is checked when it is read. `ShardSet` raises `ShardError` naming the file
whose bytes changed; `build_shards` (which has the documents and the stages) makes a missing or
changed shard again from its documents, with a `ShardWarning`, so re-running the command that
built a folder repairs it.

`ShardSet` reads a folder back: its rows (`ShardSet.tables`), all vectors as one array
(`ShardSet.vectors`, preallocated from the manifest's counts) or any columns.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
import warnings
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from .. import jsonio
from ..cache import atomic_write_text
from ..types import Document
from .batches import Stage, chain, concat, documents_to_batch, run_datasets

MANIFEST = "manifest.json"
JOURNAL = "shards.jsonl"  # one line per finished shard while a run is in progress
FORMAT = "ragkit-shards/1"


class ShardError(ValueError):
    """A shard folder that cannot be resumed or read (the message says why and what to do)."""


class ShardWarning(UserWarning):
    """A recorded shard was missing or changed and `build_shards` made it again."""


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

    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")  # one a writer
    pq.write_table(table, tmp, compression="zstd", write_statistics=False)
    os.replace(tmp, path)


def _read_manifest(folder: Path) -> dict[str, Any] | None:
    path = folder / MANIFEST
    if not path.exists():
        return None
    try:
        man = jsonio.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise ShardError(f"{path}: unreadable manifest ({e}); remove the folder to rebuild"
                         ) from None
    if man.get("format") != FORMAT:
        raise ShardError(f"{path}: not a {FORMAT} manifest")
    return man


def _read_journal(folder: Path) -> tuple[list[dict[str, Any]], int]:
    """The shard entries appended to the journal, and the byte length of its whole lines. A
    last line without its newline (an append cut short by a kill) is left out; a whole line
    that does not parse is an error."""
    path = folder / JOURNAL
    if not path.exists():
        return [], 0
    data = path.read_bytes()
    whole = data.rfind(b"\n") + 1
    entries = []
    for i, line in enumerate(data[:whole].splitlines()):
        try:
            entry = json.loads(line)
            if not isinstance(entry, dict) or "name" not in entry:
                raise ValueError("not a shard entry")
        except ValueError as e:
            raise ShardError(f"{path}:{i + 1}: unreadable shard entry ({e}); remove the folder "
                             "to rebuild") from None
        entries.append(entry)
    return entries, whole


def _entries(man: dict[str, Any], journal: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The manifest's shards and the journal's, one entry per shard name (the later wins),
    in shard order."""
    merged = {e["name"]: e for e in man.get("shards", [])}
    merged.update({e["name"]: e for e in journal})
    return [merged[name] for name in sorted(merged)]


def _append_entry(folder: Path, entry: dict[str, Any]) -> None:
    """One finished shard, as one line at the end of the journal, on disk before returning."""
    with open(folder / JOURNAL, "ab") as f:
        f.write(json.dumps(entry, sort_keys=True).encode("utf-8") + b"\n")
        f.flush()
        os.fsync(f.fileno())


def _batches(docs: Iterable[Document], size: int) -> Iterator[list[Document]]:
    batch: list[Document] = []
    for doc in docs:
        batch.append(doc)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def stage_settings(stages: Sequence[Stage], shard_docs: int, batch_size: int) -> dict[str, Any]:
    """What a shard folder records as its settings (a resumed run must match them)."""
    return {"stages": [{"stage": type(s).__name__, **s.settings()} for s in stages],
            "shard_docs": shard_docs, "batch_size": batch_size}


def open_folder(folder: Path, settings: dict[str, Any]) -> tuple[dict[str, Any], dict]:
    """(the manifest, {shard name: entry} of the shards recorded so far) of a folder a run
    writes into: a new manifest for a new folder, a `ShardError` for one built with other
    settings; a journal line cut short by a kill is dropped (its shard is made again)."""
    folder.mkdir(parents=True, exist_ok=True)
    man = _read_manifest(folder)
    if man is None:
        man = {"format": FORMAT, "settings": settings, "shards": [], "complete": False}
        atomic_write_text(folder / MANIFEST, json.dumps(man, indent=1, sort_keys=True))
    elif json.dumps(man["settings"], sort_keys=True) != json.dumps(settings, sort_keys=True):
        raise ShardError(f"{folder}: its shards were built with other settings "
                         f"({man['settings']}); use a new folder, or delete this one to rebuild")
    recorded, whole = _read_journal(folder)
    journal = folder / JOURNAL
    if journal.exists() and journal.stat().st_size > whole:  # a cut-short last line: drop it
        with open(journal, "r+b") as f:
            f.truncate(whole)
    return man, {s["name"]: s for s in _entries(man, recorded)}


def still_good(folder: Path, entry: dict[str, Any], k: int, digest: str) -> bool:
    """Whether recorded shard k can be kept: a `ShardError` when it was built from other
    documents than `digest`; False, with a `ShardWarning`, when its file is missing or its
    bytes changed (it is made again)."""
    path = folder / entry["name"]
    if entry["docs_sha256"] != digest:
        raise ShardError(f"{path}: built from other documents than shard {k} "
                         "of this corpus; use a new folder for a changed corpus")
    if not path.exists() or file_digest(path) != entry["sha256"]:
        warnings.warn(f"{path}: missing or changed since it was recorded "
                      "(sha256); made again from its documents", ShardWarning, stacklevel=3)
        return False
    return True


def write_shard(rows: dict[str, Any], path: Path, first_row: int,
                documents: Sequence[Document] = (), **info: Any) -> dict[str, Any]:
    """Chunk rows -> shard file `path` (rows numbered from `first_row`); its manifest entry.
    The shard's `documents` give its ``docs``, ``docs_sha256`` and ``chars``, or `info` does."""
    table = to_table(rows, first_row)
    _write_table(table, path)
    if documents:
        info = {"docs": len(documents), "docs_sha256": docs_digest(documents),
                "chars": sum(len(d.text) for d in documents), **info}
    return {"name": path.name, "rows": table.num_rows, "first_row": first_row,
            "sha256": file_digest(path), **info,
            "dim": (table.schema.field("vector").type.list_size
                    if "vector" in table.column_names else 0)}


def finish_folder(folder: Path, man: dict[str, Any], entries: list[dict[str, Any]]) -> None:
    """Every shard's entry into ``manifest.json`` (``complete: true``, one atomic write), and
    the journal removed."""
    man["shards"] = entries
    man["complete"] = True
    atomic_write_text(folder / MANIFEST, json.dumps(man, indent=1, sort_keys=True))
    (folder / JOURNAL).unlink(missing_ok=True)  # its lines are in the manifest now


def build_shards(docs: Iterable[Document], folder: str | Path, stages: Sequence[Stage], *,
                 shard_docs: int = 1000, num_proc: int = 1, batch_size: int = 64,
                 total_docs: int | None = None, progress: bool = False,
                 after_shard: Callable[[int], None] | None = None) -> "ShardSet":
    """Run `stages` over `docs` shard by shard into `folder`, resuming what a previous run of
    the same settings finished. `after_shard(k)` is called once shard k is safely on disk (a
    progress hook; the tests raise from it to simulate a crash). ``num_proc > 1`` runs each
    shard under ``datasets.map(batched=True, num_proc=num_proc)``; Ray Data's runner, for a
    cluster, is `ragkit.scale.raydata.build_shards_ray` (the same folder format)."""
    folder = Path(folder)
    man, done = open_folder(folder, stage_settings(stages, shard_docs, batch_size))
    order: list[str] = []
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=total_docs, desc="documents", unit="doc")
    next_row = 0
    for k, batch in enumerate(_batches(docs, shard_docs)):
        name = shard_name(k)
        if name in done and not still_good(folder, done[name], k, docs_digest(batch)):
            del done[name]
        if name not in done:
            if num_proc > 1:
                rows = run_datasets(stages, batch, num_proc=num_proc, batch_size=batch_size)
            else:
                rows = concat([chain(stages, documents_to_batch(batch[i: i + batch_size]))
                               for i in range(0, len(batch), batch_size)])
            done[name] = write_shard(rows, folder / name, next_row, batch)
            _append_entry(folder, done[name])
        entry = done[name]
        order.append(name)
        next_row = entry["first_row"] + entry["rows"]
        if bar is not None:
            bar.update(entry["docs"])
        if after_shard is not None:
            after_shard(k)
    if bar is not None:
        bar.close()
    finish_folder(folder, man, [done[name] for name in order])
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
        self.manifest = {**man, "shards": _entries(man, _read_journal(self.folder)[0])}
        self.shards = [self.folder / s["name"] for s in self.manifest["shards"]]
        self._checked: set[str] = set()

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

    def check(self, k: int) -> Path:
        """Shard k's path, once its bytes are known to hash as the manifest recorded (checked
        on first read); a `ShardError` naming the file otherwise."""
        entry, path = self.manifest["shards"][k], self.shards[k]
        if path.name not in self._checked:
            if not path.exists():
                raise ShardError(f"{path}: missing (the manifest lists it); re-run the command "
                                 "that built the folder, or delete the folder to rebuild")
            want, got = entry.get("sha256"), file_digest(path)
            if want and got != want:
                raise ShardError(f"{path}: its sha256 is {got[:12]}..., not the "
                                 f"{want[:12]}... recorded when it was written (the file "
                                 "changed or is damaged); re-run the command that built the "
                                 "folder to make it again, or delete the folder to rebuild")
            self._checked.add(path.name)
        return path

    def table(self, k: int, columns: Sequence[str] | None = None) -> Any:
        """Shard k as a pyarrow Table (its hash checked first)."""
        import pyarrow.parquet as pq

        return pq.read_table(self.check(k), columns=list(columns) if columns else None)

    def tables(self, columns: Sequence[str] | None = None) -> Iterator[Any]:
        """One pyarrow Table per shard, in order (each shard's hash checked first)."""
        for k in range(len(self.shards)):
            yield self.table(k, columns)

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
