"""Disk caches that are safe to share, inspect and corrupt.

- Vectors are stored in NPZ shards (``allow_pickle=False``), each holding its keys, its vectors
  and a sha256 of both; a shard whose checksum does not match (truncated, edited, half-written)
  is reported with a warning, ignored and its entries recomputed.
- Every write goes to a temporary file in the same folder and is then renamed into place
  (`os.replace` is atomic), so two processes writing at once can only produce two complete
  files, never a torn one.
- Nothing is ever pickled.

    >>> import tempfile, numpy as np
    >>> store = VectorCache(tempfile.mkdtemp())
    >>> store.put(["a"], np.ones((1, 3), dtype=np.float32)); store.get(["a", "b"])[1]
    ['b']
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from . import jsonio


class CacheWarning(UserWarning):
    """A cache entry was corrupt and will be recomputed."""


def new_file_mode() -> int:
    """The mode `open` gives a new file: 0666 less the process's umask."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def atomic_write_bytes(path: str | Path, data: bytes, mode: int | None = None) -> None:
    """Write `data` to `path` all at once: a temporary file in the same folder, renamed into
    place, so a failed write leaves the old file and no partial one. A `path` that is a
    symlink stays one: the data goes to its target (the temporary file is made next to the
    target), never over the link. `mode`: the permission bits the file gets (default: an
    existing file keeps its own; a new one gets what `open` would give it, 0666 less the
    umask, not the temporary file's 0600)."""
    path = Path(os.path.realpath(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    if mode is None:
        try:
            mode = os.stat(path).st_mode & 0o7777
        except FileNotFoundError:
            mode = new_file_mode()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if mode is not None:
                os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


STALE_TEMPORARY_S = 3600  # a temporary file this old was left by a killed writer


def sweep_temporaries(folder: str | Path, older_than: float = STALE_TEMPORARY_S) -> int:
    """Remove the temporary files `atomic_write_bytes` left in `folder` when its process was
    killed mid-write (SIGTERM or SIGKILL run no cleanup): ``.<name>.<random>.tmp`` files not
    modified for `older_than` seconds (a live write renames its file within seconds). Returns
    how many were removed; a folder that cannot be read or written is left as it is."""
    import time

    removed, now = 0, time.time()
    try:
        candidates = list(Path(folder).glob(".*.tmp"))
    except OSError:
        return 0
    for tmp in candidates:
        with contextlib.suppress(OSError):
            if now - tmp.stat().st_mtime > older_than:
                tmp.unlink()
                removed += 1
    return removed


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def _digest(keys: np.ndarray, vectors: np.ndarray) -> str:
    h = hashlib.sha256()
    h.update("\n".join(keys.tolist()).encode())
    h.update(np.ascontiguousarray(vectors).tobytes())
    h.update(str(vectors.shape).encode())
    return h.hexdigest()


# Shards already read and verified in this process, by path, with the file's identity when it
# was read (inode, size, modification time in ns): every `VectorCache` of a folder (each
# `Embedder` has its own) reads and checksums a shard once, not once per instance. A shard
# replaced or edited since has another identity and is read and verified anew.
_VERIFIED: dict[str, tuple[tuple[int, int, int], dict[str, np.ndarray]]] = {}


def _file_identity(path: Path) -> tuple[int, int, int]:
    st = path.stat()
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _verified_shard(shard: Path) -> dict[str, np.ndarray]:
    """A shard's vectors by key, read and checked against its checksum (ValueError if they do
    not match), or the entries this process verified when the file was last seen unchanged."""
    identity = _file_identity(shard)
    seen = _VERIFIED.get(str(shard))
    if seen is not None and seen[0] == identity:
        return seen[1]
    with np.load(shard, allow_pickle=False) as z:
        keys, vecs, digest = z["keys"], z["vectors"], str(z["sha256"])
    if _digest(keys, vecs) != digest:
        raise ValueError("checksum mismatch")
    entries = dict(zip(keys.tolist(), vecs))
    _VERIFIED[str(shard)] = (identity, entries)
    return entries


class VectorCache:
    """A folder of checksummed NPZ shards mapping string keys to float32 vectors."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self._mem: dict[str, np.ndarray] = {}
        self._loaded: set[str] = set()
        self._swept = False
        self.corrupt: list[str] = []
        self.unwritable: str | None = None  # why the folder could not be written, if it can't

    def _load(self) -> None:
        if not self.folder.is_dir():
            return
        if not self._swept:  # once per instance: what killed writers left behind
            self._swept = True
            sweep_temporaries(self.folder)
        for shard in sorted(self.folder.glob("*.npz")):
            if shard.name in self._loaded:
                continue
            self._loaded.add(shard.name)
            try:
                entries = _verified_shard(shard)
            except Exception as e:  # any unreadable shard is treated the same way
                self.corrupt.append(shard.name)
                warnings.warn(f"embedding cache shard {shard} is corrupt ({e}); its entries "
                              "will be recomputed", CacheWarning, stacklevel=3)
                continue
            self._mem.update(entries)

    def keys(self) -> list[str]:
        """Every key the folder's readable shards hold."""
        self._load()
        return list(self._mem)

    def get(self, keys: list[str]) -> tuple[dict[str, np.ndarray], list[str]]:
        """(found vectors by key, missing keys in the order given)."""
        if any(k not in self._mem for k in keys):
            self._load()
        found = {k: self._mem[k] for k in keys if k in self._mem}
        missing = [k for k in dict.fromkeys(keys) if k not in found]
        return found, missing

    def put(self, keys: list[str], vectors: np.ndarray) -> None:
        if not keys:
            return
        karr = np.asarray(keys, dtype=str)
        vecs = np.asarray(vectors, dtype=np.float32)
        digest = _digest(karr, vecs)
        import io

        buf = io.BytesIO()
        np.savez(buf, keys=karr, vectors=vecs, sha256=np.asarray(digest))
        name = f"{digest[:20]}.npz"
        for k, v in zip(keys, vecs):
            self._mem[k] = v
        if self.unwritable is None:
            try:
                atomic_write_bytes(self.folder / name, buf.getvalue())
                self._loaded.add(name)
            except OSError as e:  # a read-only cache: keep the vectors for this run only
                self.unwritable = f"{e.strerror or e}"
                warnings.warn(f"embedding cache {self.folder} cannot be written "
                              f"({self.unwritable}); vectors are kept in memory for this run "
                              "only", CacheWarning, stacklevel=2)


    def fill(self, keys: list[str], compute: Callable[[list[str]], np.ndarray],
             slice_size: int = 512,
             progress: Callable[[int], Any] | None = None) -> dict[str, np.ndarray]:
        """Vectors for `keys` (none of them cached yet), computed a slice at a time and stored
        as each slice is done. Each slice is claimed first (`Claims`), and between slices the
        folder is read again, so another process filling the same folder computes what this
        one has not claimed and no key is computed by both; when every key left is another
        process's claim, this one waits for its shard. `progress` is told how many keys
        another process delivered (`compute` reports its own)."""
        import time

        claims = Claims(self.folder)
        out: dict[str, np.ndarray] = {}
        while keys:
            mine, claim = claims.take(keys, slice_size)
            if mine:
                try:
                    vecs = compute(mine)
                    self.put(mine, vecs)
                finally:
                    Claims.release(claim)
                out.update(zip(mine, vecs))
            else:  # every key left is being computed by another process
                time.sleep(0.2)
            rest = [k for k in keys if k not in out]
            theirs, keys = self.get(rest) if rest else ({}, [])
            if theirs and progress is not None:
                progress(len(theirs))
            out.update(theirs)
        return out


class JsonlCache:
    """Append-only JSONL records keyed by `key`, each line carrying a checksum of itself.

    Used for LLM preambles. Lines that fail to parse or whose checksum does not match are
    reported once and ignored. Appends are a single ``write`` of one line opened in append
    mode; `rewrite` compacts the file atomically.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.corrupt = 0
        self.unwritable: str | None = None
        self._data: dict[str, dict[str, Any]] | None = None

    @staticmethod
    def _check(record: dict[str, Any]) -> str:
        body = {k: v for k, v in record.items() if k != "sha256"}
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]

    def load(self) -> dict[str, dict[str, Any]]:
        if self._data is not None:
            return self._data
        data: dict[str, dict[str, Any]] = {}
        try:
            raw = self.path.read_bytes() if self.path.exists() else b""
        except OSError as e:
            warnings.warn(f"{self.path}: cache cannot be read ({e.strerror or e}); its entries "
                          "will be recomputed", CacheWarning, stacklevel=2)
            raw = b""
        # split on b"\n" only: a JSON string may hold U+2028, U+2029 or U+0085 (str.splitlines
        # would break there), and each line is decoded on its own, so one bad byte costs one line
        for n, chunk in enumerate(raw.split(b"\n"), 1):
            if not chunk.strip():
                continue
            try:
                rec = jsonio.loads(chunk.decode("utf-8"))
                ok = isinstance(rec, dict) and rec.get("sha256") == self._check(rec) \
                    and "key" in rec
            except (UnicodeDecodeError, ValueError, TypeError):
                ok = False
            if not ok:
                self.corrupt += 1
                warnings.warn(f"{self.path}:{n}: corrupt cache line ignored (will be "
                              "recomputed)", CacheWarning, stacklevel=2)
                continue
            data[rec["key"]] = rec
        self._data = data
        return data

    def get(self, key: str) -> dict[str, Any] | None:
        return self.load().get(key)

    def put(self, record: dict[str, Any]) -> None:
        rec = dict(record)
        rec["sha256"] = self._check(rec)
        self.load()[rec["key"]] = rec
        if self.unwritable is not None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(rec, sort_keys=True, ensure_ascii=False) + "\n")
        except OSError as e:  # a read-only cache: keep the record for this run only
            self.unwritable = f"{e.strerror or e}"
            warnings.warn(f"{self.path} cannot be written ({self.unwritable}); new entries are "
                          "kept in memory for this run only", CacheWarning, stacklevel=2)

    def rewrite(self, records: Iterable[dict[str, Any]] | None = None) -> None:
        """Write the cache anew, sorted by key (for committed caches that diff well), to a
        temporary file renamed into place. With no records nothing is written: a cache file
        exists only with content in it (an existing one is left as it is)."""
        recs = list(records) if records is not None else list(self.load().values())
        if not recs:
            return
        recs.sort(key=lambda r: r["key"])
        atomic_write_text(self.path, "".join(json.dumps(r, sort_keys=True, ensure_ascii=False)
                                             + "\n" for r in recs))


class Claims:
    """Which cache keys some process is computing right now, so that two processes filling one
    cache (two notebook kernels under ``ragkit reproduce --jobs 2``) never compute the same
    entry at once: a process `take`\\ s a slice of what it lacks, computes it, `put`\\ s it in
    the cache and `release`\\ s the claim; another process that lacks the same keys works on
    the rest, and waits for a key only when it has nothing else left.

    A claim is one small JSON file (``<folder>/.claims/<pid>-<n>.json``: the process id and the
    keys), made under an exclusive `fcntl.flock` on ``.claims/.lock``, so two processes cannot
    claim one key. A claim whose process has ended (it crashed or was killed before releasing)
    no longer counts, and is removed by the next `take`; so is a file that cannot be read.
    """

    def __init__(self, folder: str | Path):
        self.folder = Path(folder) / ".claims"
        self._n = 0
        self.unusable: str | None = None  # why claims cannot be made here (a read-only cache)

    @staticmethod
    def _alive(pid: int) -> bool:
        if pid == os.getpid():
            return True
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # alive, owned by someone else
            return True
        return True

    def _others(self) -> set[str]:
        """Keys claimed by other live processes (stale and unreadable claims are removed)."""
        keys: set[str] = set()
        for path in self.folder.glob("*.json"):
            try:
                rec = json.loads(path.read_text(encoding="utf-8"))
                pid, claimed = int(rec["pid"]), rec["keys"]
            except (OSError, ValueError, KeyError, TypeError):
                rec = None
            if rec is None or not self._alive(pid):
                with contextlib.suppress(OSError):
                    path.unlink()
                continue
            if pid != os.getpid():
                keys.update(claimed)
        return keys

    def take(self, keys: Iterable[str], limit: int,
             least: int = 16) -> tuple[list[str], Path | None]:
        """Keys no other process has claimed, claimed now for this one: (those keys, the claim
        to `release`); ([], None) when every key is claimed by another process. It takes half
        of what is unclaimed (at least `least`, at most `limit`), so that a second process
        arriving for the same keys finds the other half free instead of waiting for the
        whole slice. Where claims cannot be written (a read-only cache), every process works
        alone: the first `limit` keys, unclaimed."""
        keys = list(keys)
        if self.unusable is not None:
            return keys[:limit], None
        import fcntl

        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with open(self.folder / ".lock", "a+") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                others = self._others()
                free = [k for k in keys if k not in others]
                mine = free[:min(limit, max(least, -(-len(free) // 2)))]
                if not mine:
                    return [], None
                self._n += 1
                path = self.folder / f"{os.getpid()}-{self._n}.json"
                atomic_write_text(path, json.dumps({"pid": os.getpid(), "keys": mine}))
                return mine, path
        except OSError as e:
            self.unusable = f"{e.strerror or e}"
            return keys[:limit], None

    @staticmethod
    def release(claim: Path | None) -> None:
        if claim is not None:
            with contextlib.suppress(OSError):
                claim.unlink()
