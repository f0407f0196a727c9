"""An IVF index whose vectors stay on disk: past one machine's memory with faiss.

`ScaledIndex` holds every vector in RAM, which stops at a few tens of millions of 384-dim
vectors on one machine (10 M float32 vectors are 15.4 GB). faiss's `OnDiskInvertedLists`
keeps IVF-Flat's inverted lists in one file that the search maps into memory: a query reads
only the ``nprobe`` lists it scans, and the kernel keeps as many of those pages as memory
allows (they are page cache: shared, clean and dropped under pressure, never the process's own
heap). faiss is already the course's index library, and the 1M sweep (`ragkit.scale.ann`)
measured the same IVF-Flat family, so its recall-latency curve carries over. LanceDB or Qdrant
would add a second engine and a second index format for the same job.

Building streams the vectors in blocks, so the process's own memory holds one block (plus the
trained cells) whatever the total; the merge maps every block file, and those mapped pages
count in its resident size (at 10M vectors the build's peak RSS was 22.6 GB on a 23 GB
machine, mostly page cache the kernel can drop):

1. `train_ivf`: k-means cells trained on a sample (seeded);
2. each block is added to a copy of the trained, empty index and written to its own file;
3. `faiss.contrib.ondisk.merge_ondisk` merges the blocks' lists into one ``.ivfdata`` file
   (reading the blocks memory-mapped), and the block files are removed.

`exact_top_k` is the truth to measure recall against without holding the vectors: a flat
search block by block, keeping each query's best k. `memory_mib` reads the process's resident
memory from ``/proc/self/status``: ``VmRSS`` (all resident pages), ``RssAnon`` (the process's
own memory) and ``RssFile`` (mapped file pages, here the index's lists), and the peak
``VmHWM``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

INDEX_FILE = "index.faiss"
LISTS_FILE = "lists.ivfdata"
INFO_FILE = "ondisk.json"
SEED = 13


def _faiss():
    import faiss

    return faiss


def train_ivf(sample: np.ndarray, nlist: int, niter: int = 20) -> Any:
    """An empty IVF-Flat inner-product index with `nlist` k-means cells trained on `sample`
    (faiss's k-means, seeded)."""
    faiss = _faiss()
    sample = np.ascontiguousarray(sample, np.float32)
    if len(sample) < nlist:
        raise ValueError(f"{nlist} cells need at least {nlist} training vectors, got "
                         f"{len(sample)}")
    quantizer = faiss.IndexFlatIP(sample.shape[1])
    index = faiss.IndexIVFFlat(quantizer, sample.shape[1], nlist, faiss.METRIC_INNER_PRODUCT)
    index.cp.seed = SEED
    index.cp.niter = niter
    index.own_fields = True
    quantizer.this.disown()
    index.train(sample)
    return index


def build_ondisk(trained: Any, blocks: Iterable[np.ndarray], folder: str | Path,
                 progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Fill `trained` (an empty, trained IVF-Flat index) with `blocks` (float32 arrays, ids
    counted from 0 in the order given) on disk in `folder`, which must be empty or absent;
    returns what was built: vectors, blocks, bytes of the lists file, seconds to add and to
    merge. `folder` then holds `INDEX_FILE`, `LISTS_FILE` and `INFO_FILE`."""
    from faiss.contrib.ondisk import merge_ondisk

    faiss = _faiss()
    folder = Path(folder)
    if folder.exists() and any(folder.iterdir()):
        raise FileExistsError(f"{folder}: not empty; give a new folder for the on-disk index")
    folder.mkdir(parents=True, exist_ok=True)
    if trained.ntotal:
        raise ValueError("the trained index must be empty")
    files, start, t0 = [], 0, time.perf_counter()
    for block in blocks:
        part = faiss.clone_index(trained)
        block = np.ascontiguousarray(block, np.float32)
        part.add_with_ids(block, np.arange(start, start + len(block), dtype=np.int64))
        files.append(str(folder / f"block_{len(files):05d}.faiss"))
        faiss.write_index(part, files[-1])
        start += len(block)
        del part
        if progress:
            progress(f"block {len(files)}: {start:,} vectors ({time.perf_counter() - t0:.0f} s)")
    add_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    merge_ondisk(trained, files, str(folder / LISTS_FILE))
    faiss.write_index(trained, str(folder / INDEX_FILE))
    for f in files:
        Path(f).unlink()
    info = {"n": start, "dim": trained.d, "nlist": trained.nlist, "blocks": len(files),
            "lists_bytes": (folder / LISTS_FILE).stat().st_size,
            "add_s": add_s, "merge_s": time.perf_counter() - t1}
    (folder / INFO_FILE).write_text(json.dumps(info, indent=1, sort_keys=True), encoding="utf-8")
    return info


def open_ondisk(folder: str | Path) -> Any:
    """The index `build_ondisk` wrote in `folder`, its lists mapped from disk (the folder may
    have moved: the lists file is looked for beside the index)."""
    faiss = _faiss()
    folder = Path(folder)
    for name in (INDEX_FILE, LISTS_FILE):
        if not (folder / name).is_file():
            raise FileNotFoundError(f"{folder}: no {name}; build the index with build_ondisk")
    return faiss.read_index(str(folder / INDEX_FILE), faiss.IO_FLAG_ONDISK_SAME_DIR)


class RunningTopK:
    """Each query's exact top `k` (inner product) over vectors that arrive in blocks (ids
    counted from 0 in arrival order), one block in memory at a time; ties keep the lower id.
    `exact_top_k` runs it over an iterable; the bench feeds it the blocks it indexes."""

    def __init__(self, queries: np.ndarray, k: int):
        self.queries = np.ascontiguousarray(queries, np.float32)
        self.k, self.seen = k, 0
        self.scores = np.full((len(queries), k), -np.inf, np.float32)
        self.ids = np.full((len(queries), k), -1, np.int64)

    def add(self, block: np.ndarray) -> None:
        flat = _faiss().IndexFlatIP(self.queries.shape[1])
        flat.add(np.ascontiguousarray(block, np.float32))
        s, i = flat.search(self.queries, min(self.k, len(block)))
        s = np.concatenate([self.scores, s], axis=1)
        i = np.concatenate([self.ids, np.where(i >= 0, i + self.seen, -1)], axis=1)
        key = np.where(i >= 0, i, np.iinfo(np.int64).max)
        order = np.stack([np.lexsort((key[r], -s[r]))[:self.k] for r in range(len(s))])
        self.scores = np.take_along_axis(s, order, axis=1)
        self.ids = np.take_along_axis(i, order, axis=1)
        self.seen += len(block)


def exact_top_k(blocks: Iterable[np.ndarray], queries: np.ndarray, k: int
                ) -> tuple[np.ndarray, np.ndarray]:
    """(inner products, ids) of each query's exact top `k` over vectors given in blocks (see
    `RunningTopK`)."""
    top = RunningTopK(queries, k)
    for block in blocks:
        top.add(block)
    return top.scores, top.ids


def search_timed(index: Any, queries: np.ndarray, k: int, nprobe: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """(ids, per-query seconds) with every query searched alone at `nprobe` cells."""
    faiss = _faiss()
    params = faiss.SearchParametersIVF(nprobe=nprobe)
    ids = np.empty((len(queries), k), np.int64)
    seconds = np.empty(len(queries))
    for j in range(len(queries)):
        t0 = time.perf_counter()
        _, found = index.search(queries[j:j + 1], k, params=params)
        seconds[j] = time.perf_counter() - t0
        ids[j] = found[0]
    return ids, seconds


def search_in_fresh_process(folder: str | Path, queries: np.ndarray, k: int,
                            nprobes: tuple[int, ...]) -> dict[str, Any]:
    """Open the on-disk index in `folder` in a new Python process and search `queries` one at
    a time at each of `nprobes`, so that the memory measured is that of opening and searching
    alone: ``{"open_s", "memory_open", "memory_end", "runs": {nprobe: (ids, seconds)}}``
    (memory as `memory_mib`)."""
    import os
    import subprocess
    import sys
    import tempfile

    from ..config import PROJECT_ROOT

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(PROJECT_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    with tempfile.TemporaryDirectory() as tmp:
        np.save(Path(tmp) / "queries.npy", np.ascontiguousarray(queries, np.float32))
        proc = subprocess.run(
            [sys.executable, "-m", "ragkit.scale.ondisk", str(folder), tmp, str(k),
             ",".join(map(str, nprobes))], capture_output=True, text=True, env=env)
        if proc.returncode:
            raise RuntimeError(f"searching the on-disk index in {folder} failed: "
                               f"{proc.stderr.strip()[-500:]}")
        info = json.loads((Path(tmp) / "info.json").read_text(encoding="utf-8"))
        with np.load(Path(tmp) / "runs.npz", allow_pickle=False) as runs:
            info["runs"] = {p: (runs[f"ids_{p}"], runs[f"seconds_{p}"]) for p in nprobes}
    return info


def _search_child(folder: str, tmp: str, k: int, nprobes: tuple[int, ...]) -> None:
    """The fresh process of `search_in_fresh_process`."""
    queries = np.load(Path(tmp) / "queries.npy", allow_pickle=False)
    t0 = time.perf_counter()
    index = open_ondisk(folder)
    info: dict[str, Any] = {"open_s": time.perf_counter() - t0, "memory_open": memory_mib()}
    arrays = {}
    for p in nprobes:
        arrays[f"ids_{p}"], arrays[f"seconds_{p}"] = search_timed(index, queries, k, p)
        info[f"memory_after_{p}"] = memory_mib()
    info["memory_end"] = memory_mib()
    np.savez(Path(tmp) / "runs.npz", **arrays)
    (Path(tmp) / "info.json").write_text(json.dumps(info), encoding="utf-8")


def memory_mib() -> dict[str, float]:
    """This process's memory in MiB from ``/proc/self/status`` (Linux): ``rss``, ``rss_anon``,
    ``rss_file`` and the peak ``hwm``; empty where the file is missing."""
    keys = {"VmRSS": "rss", "RssAnon": "rss_anon", "RssFile": "rss_file", "VmHWM": "hwm"}
    try:
        lines = Path("/proc/self/status").read_text().splitlines()
    except OSError:
        return {}
    out = {}
    for line in lines:
        name, _, value = line.partition(":")
        if name in keys:
            out[keys[name]] = int(value.split()[0]) / 1024
    return out


if __name__ == "__main__":  # the fresh process of `search_in_fresh_process`
    import sys

    _search_child(sys.argv[1], sys.argv[2], int(sys.argv[3]),
                  tuple(int(p) for p in sys.argv[4].split(",")))
