"""Approximate faiss indexes built from shards, with the metadata pre-filter kept.

The course searches exactly (`ragkit.retrieve.VectorIndex`): every query is compared with every
chunk vector, which is right at 10^4 vectors and slow at 10^6. `ScaledIndex` builds one of
faiss's approximate indexes from a folder of shards (`ragkit.scale.shards`), streaming them, so
the vectors are never held twice:

- ``ivf_flat``: k-means cells (``nlist``, default ~ 4 sqrt(n)); a query scans the ``nprobe``
  nearest cells exactly (default 64: `ragkit bench ann`'s choice, see `DEFAULT_NPROBE`). Same
  memory as exact search, far fewer comparisons.
- ``ivf_pq``: the same cells, vectors stored as ``m`` one-byte codes (product quantisation):
  ~ 8x-16x less memory, scores approximate.
- ``hnsw``: a navigable small-world graph (``M`` links per vector, search width ``ef``).

Training takes an evenly spaced sample of rows across the shards (deterministic; faiss's
k-means is seeded), then every shard is added in turn. The ids are the shards' ``row``
column, so a hit maps straight back to its chunk.

The filter still runs *before* the search. The metadata of the rows (the shards' ``doc_id``
and ``metadata`` JSON, as columns) picks the allowed ids, and faiss is told to consider only
those (an ``IDSelectorBitmap`` in the search parameters), so an approximate search returns the
nearest *allowed* vectors among the cells it scans. A narrow filter would leave few allowed
vectors in those cells; when at most ``exact_below`` rows pass, they are searched exactly
instead (their vectors are reconstructed from the index: exact for ``ivf_flat`` and ``hnsw``,
decoded codes for ``ivf_pq``), and `last_mode` says which path ran.

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(2000, 16)).astype("float32")
    >>> x /= np.linalg.norm(x, axis=1, keepdims=True)
    >>> ix = ScaledIndex.from_vectors(x, [{"r": i % 3} for i in range(2000)], nlist=16)
    >>> _, ids = ix.search(x[:2], k=3, where={"r": 1})
    >>> sorted({i % 3 for i in ids.ravel().tolist()})
    [1]
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from .. import jsonio
from ..retrieve.index import MetadataColumns, Where

KINDS = ("ivf_flat", "ivf_pq", "hnsw")


def _faiss():
    try:
        import faiss
    except ImportError as e:  # pragma: no cover - a core extra
        raise ImportError("approximate indexes need faiss: pip install 'ragkit[cpu]'") from e
    return faiss


# The default follows `ragkit bench ann`'s curve on 1M vectors of real text (results/
# bench_ann.jsonl): the fastest setting with recall@10 >= 0.95 was IVF-Flat with about
# 4 sqrt(n) cells (4,096) probed 64 at a time (recall@10 0.965); about sqrt(n) cells probed 16
# at a time, the default before, reached 0.88.
DEFAULT_NPROBE = 64


def default_nlist(n: int) -> int:
    """About 4 sqrt(n) cells (the power of two nearest it), with >= 39 vectors a cell (faiss's
    k-means wants that many): the cell count of `ragkit bench ann`'s choice at 1M vectors.

    >>> default_nlist(1_000_000), default_nlist(100_000), default_nlist(10_000), default_nlist(50)
    (4096, 1024, 256, 1)
    """
    if n < 78:
        return 1
    cap = 1 << int(math.log2(n // 39))
    return min(1 << max(0, round(math.log2(4 * math.sqrt(n)))), cap)


class ScaledIndex:
    """An approximate inner-product faiss index over unit vectors, ids = row numbers."""

    def __init__(self, index: Any, metadata: MetadataColumns, kind: str,
                 params: Mapping[str, Any], exact_below: int = 20_000):
        self.index, self.metadata, self.kind = index, metadata, kind
        self.params = dict(params)
        self.exact_below = exact_below
        self.last_mode = ""

    # -- building ---------------------------------------------------------------------------
    @staticmethod
    def empty(dim: int, n: int, kind: str = "ivf_flat", nlist: int | None = None,
              m: int | None = None, hnsw_m: int = 32) -> tuple[Any, dict[str, Any]]:
        """An untrained faiss index for `n` vectors of size `dim`, and its settings."""
        faiss = _faiss()
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
        ip = faiss.METRIC_INNER_PRODUCT
        if kind == "hnsw":
            index = faiss.IndexHNSWFlat(dim, hnsw_m, ip)
            return faiss.IndexIDMap2(index), {"kind": kind, "M": hnsw_m}
        nlist = nlist or default_nlist(n)
        quantizer = faiss.IndexFlatIP(dim)
        if kind == "ivf_flat":
            index = faiss.IndexIVFFlat(quantizer, dim, nlist, ip)
            params = {"kind": kind, "nlist": nlist}
        else:
            m = m or max(d for d in (64, 48, 32, 24, 16, 12, 8, 4, 2, 1) if dim % d == 0)
            index = faiss.IndexIVFPQ(quantizer, dim, nlist, m, 8, ip)
            params = {"kind": kind, "nlist": nlist, "m": m, "bits": 8}
        index.cp.seed = 13
        index.own_fields = True
        quantizer.this.disown()
        return index, params

    @classmethod
    def from_vectors(cls, vectors: np.ndarray, metadata: Sequence[Mapping[str, Any]] | None = None,
                     kind: str = "ivf_flat", **kw: Any) -> "ScaledIndex":
        """Build from vectors in memory (tests, small corpora)."""
        vectors = np.ascontiguousarray(vectors, np.float32)
        exact_below = kw.pop("exact_below", 20_000)
        index, params = cls.empty(vectors.shape[1], len(vectors), kind, **kw)
        if not index.is_trained:
            index.train(vectors)
        index.add_with_ids(vectors, np.arange(len(vectors), dtype=np.int64))
        meta = MetadataColumns(metadata if metadata is not None else [{}] * len(vectors))
        return cls(index, meta, kind, {**params, "n": len(vectors)}, exact_below)

    @classmethod
    def from_shards(cls, folder: str | Path, kind: str = "ivf_flat", train_size: int | None = None,
                    metadata: bool = True, progress: bool = False, **kw: Any) -> "ScaledIndex":
        """Build from a shard folder, one shard in memory at a time (plus the index)."""
        from .shards import ShardSet, vector_block

        shards = ShardSet(folder)
        n, dim = len(shards), shards.dim
        exact_below = kw.pop("exact_below", 20_000)
        index, params = cls.empty(dim, n, kind, **kw)
        if not index.is_trained:
            want = train_size or min(n, max(64 * params.get("nlist", 1), 40_000))
            step = max(1, n // want)
            sample = [vector_block(t)[(-int(t.column("row")[0].as_py())) % step::step]
                      for t in shards.tables(["row", "vector"]) if t.num_rows]
            index.train(np.ascontiguousarray(np.concatenate(sample)[:want]))
            params["train"] = int(min(want, sum(len(s) for s in sample)))
            del sample
        meta = MetadataColumns()
        tables = shards.tables(["row", "vector", "doc_id", "metadata"] if metadata
                               else ["row", "vector"])
        if progress:
            from tqdm.auto import tqdm

            tables = tqdm(tables, total=len(shards.shards), desc="indexing shards")
        for table in tables:
            rows = table.column("row").to_numpy()
            index.add_with_ids(np.ascontiguousarray(vector_block(table)), rows)
            if metadata:
                meta.extend({**json.loads(m), "doc_id": d} for d, m in
                            zip(table.column("doc_id").to_pylist(),
                                table.column("metadata").to_pylist()))
            else:
                meta.extend({} for _ in range(len(rows)))
        return cls(index, meta, kind, {**params, "n": n}, exact_below)

    # -- searching --------------------------------------------------------------------------
    def __len__(self) -> int:
        return int(self.index.ntotal)

    def allowed(self, where: Where) -> np.ndarray:
        """Row ids that pass the filter."""
        return np.flatnonzero(self.metadata.mask(where)).astype(np.int64)

    def _search_params(self, sel: Any, nprobe: int | None, ef: int | None) -> Any:
        faiss = _faiss()
        kw: dict[str, Any] = {} if sel is None else {"sel": sel}
        if self.kind == "hnsw":
            return faiss.SearchParametersHNSW(efSearch=ef or 64, **kw)
        return faiss.SearchParametersIVF(
            nprobe=nprobe or self.params.get("nprobe", DEFAULT_NPROBE), **kw)

    def search(self, queries: np.ndarray, k: int, where: Where = None, nprobe: int | None = None,
               ef: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(scores, row ids), each (n_queries, k); missing hits are -inf / -1. ``nprobe`` (IVF)
        and ``ef`` (HNSW) trade speed for recall."""
        faiss = _faiss()
        queries = np.ascontiguousarray(np.atleast_2d(queries), np.float32)
        nq = len(queries)
        if len(self) == 0 or k <= 0:
            return np.full((nq, max(k, 0)), -np.inf, np.float32), np.full((nq, max(k, 0)), -1)
        sel = bitmap = None
        if where is not None:
            mask = self.metadata.mask(where)
            keep = np.flatnonzero(mask)
            if len(keep) == 0:
                self.last_mode = "filtered:none"
                return np.full((nq, k), -np.inf, np.float32), np.full((nq, k), -1, np.int64)
            if len(keep) <= self.exact_below:
                self.last_mode = "filtered:exact"
                return self._exact(queries, k, keep.astype(np.int64))
            bitmap = np.packbits(mask, bitorder="little")
            sel = faiss.IDSelectorBitmap(len(mask), faiss.swig_ptr(bitmap))
            self.last_mode = "filtered:approximate"
        else:
            self.last_mode = "approximate"
        scores, ids = self.index.search(queries, k, params=self._search_params(sel, nprobe, ef))
        del bitmap  # kept alive until the search is done (faiss holds a raw pointer)
        scores = np.where(ids >= 0, scores, -np.inf).astype(np.float32)
        return scores, ids.astype(np.int64)

    def reconstruct(self, ids: np.ndarray) -> np.ndarray:
        """The stored vectors of `ids` (decoded codes for ivf_pq)."""
        index = self.index
        if hasattr(index, "set_direct_map_type") and not getattr(self, "_direct", False):
            index.set_direct_map_type(_faiss().DirectMap.Hashtable)  # ids are any int64
            self._direct = True
        return index.reconstruct_batch(np.asarray(ids, np.int64))

    def _exact(self, queries: np.ndarray, k: int, keep: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
        faiss = _faiss()
        sub = faiss.IndexFlatIP(queries.shape[1])
        sub.add(np.ascontiguousarray(self.reconstruct(keep), np.float32))
        scores, local = sub.search(queries, min(k, len(keep)))
        ids = np.where(local >= 0, keep[np.clip(local, 0, None)], -1)
        if ids.shape[1] < k:
            pad = k - ids.shape[1]
            ids = np.pad(ids, ((0, 0), (0, pad)), constant_values=-1)
            scores = np.pad(scores, ((0, 0), (0, pad)), constant_values=-np.inf)
        return np.where(ids >= 0, scores, -np.inf).astype(np.float32), ids.astype(np.int64)

    # -- on disk ----------------------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        """Write the faiss index (``.faiss``) and its settings (``.json``); the metadata is
        read again from the shards by `load`."""
        faiss = _faiss()
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        faiss.write_index(self.index, str(path.with_suffix(".faiss")))
        path.with_suffix(".json").write_text(json.dumps(
            {"kind": self.kind, "params": self.params, "exact_below": self.exact_below},
            indent=1, sort_keys=True), encoding="utf-8")
        return path.with_suffix(".faiss")

    @classmethod
    def load(cls, path: str | Path, shards: str | Path) -> "ScaledIndex":
        """An index written by `save`, with its metadata read from the shard folder."""
        from .shards import ShardSet

        faiss = _faiss()
        path = Path(path)
        try:
            info = jsonio.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise ValueError(f"{path.with_suffix('.json')}: not readable JSON ({e})") from None
        try:
            index = faiss.read_index(str(path.with_suffix(".faiss")))
        except RuntimeError as e:  # a truncated or foreign file: faiss's "read error"
            reason = " ".join(str(e).split())
            reason = reason.split("Error: ")[-1][:160] if "Error: " in reason else reason[:160]
            raise ValueError(f"{path.with_suffix('.faiss')}: not a faiss index ragkit can read "
                             f"({reason}); rebuild it with `ragkit index`") from None
        meta = MetadataColumns()
        for t in ShardSet(shards).tables(["doc_id", "metadata"]):
            meta.extend({**json.loads(m), "doc_id": d} for d, m in
                        zip(t.column("doc_id").to_pylist(), t.column("metadata").to_pylist()))
        if len(meta) != index.ntotal:
            raise ValueError(f"{path}: the index holds {index.ntotal} vectors but {shards} "
                             f"holds {len(meta)} rows; rebuild the index")
        return cls(index, meta, info["kind"], info["params"], info["exact_below"])
