"""An approximate-nearest-neighbour sweep on one set of vectors: exact search as the truth, then
IVF-Flat, HNSW and IVF-PQ (with and without exact re-ranking) at several settings, each measured
for what it costs (build seconds, index bytes, single-query latency) and what it returns
(recall@k against exact search).

- `Grid`: the settings swept (`Grid.default` for a number of vectors: nlist about sqrt(N) and
  4 sqrt(N), powers of two; nprobe 1-64; HNSW M 16 and 32 x efSearch 16-256, efConstruction
  80; IVF-PQ with 48 one-byte sub-quantizers, refined exactly from k_factor x k candidates);
- `neighbour_structure`: whether the vectors say anything about recall at all: how many are
  distinct (bytes, and rounded to 1e-4), and the percentiles of the exact top-1 and top-k
  inner products over the queries beside those of random pairs;
- `sweep`: one row a setting (see `METRICS`); queries are searched one at a time, so latency
  is what one user waits, under faiss's thread setting (``faiss.omp_get_max_threads()``);
- `recall_at_k`: the ann-benchmarks definition: a returned vector counts when its true inner
  product with the query is at least the k-th exact one (ties and duplicate vectors count
  as found); `recall@k_ids` (id overlap) is kept beside it;
- `choose_index`: the rule a default follows from: the fastest setting (by p50 latency) whose
  recall@k reaches the target.

Training samples are drawn with a seeded generator and faiss's k-means is seeded: two runs
build the same indexes. Nothing here reads or writes results (the tool does).
"""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

FAMILIES = ("flat", "ivf_flat", "hnsw", "ivf_pq", "ivf_pq_refine")
LABELS = {"flat": "Flat (exact)", "ivf_flat": "IVF-Flat", "hnsw": "HNSW", "ivf_pq": "IVF-PQ",
          "ivf_pq_refine": "IVF-PQ + exact refine"}
METRICS = ("recall@10", "recall@10_ids", "p50_ms", "p95_ms", "mean_ms", "build_s",
           "memory_bytes")
SEED = 13


def pow2(x: float) -> int:
    """The power of two nearest `x` (in log scale), at least 1.

    >>> pow2(1000), pow2(4000), pow2(316), pow2(0.3)
    (1024, 4096, 256, 1)
    """
    return 1 << max(0, round(math.log2(max(x, 1.0))))


@dataclass(frozen=True)
class Grid:
    """The settings one sweep measures."""

    nlists: tuple[int, ...]
    nprobes: tuple[int, ...] = (1, 4, 16, 64)
    hnsw_ms: tuple[int, ...] = (16, 32)
    ef_searches: tuple[int, ...] = (16, 64, 256)
    ef_construction: int = 80
    pq_m: int = 48
    pq_bits: int = 8
    pq_nlist: int | None = None   # None: the first of `nlists`
    k_factor: int = 4
    train_per_cell: int = 64      # k-means training sample: this many vectors a cell

    @classmethod
    def default(cls, n: int, smoke: bool = False) -> "Grid":
        """nlist about sqrt(n) and 4 sqrt(n) (powers of two, >= 39 vectors a cell); the smoke
        grid is smaller (nprobe 1, 4, 16; HNSW M 16 at efSearch 16, 64)."""
        cap = max(1, n // 39)
        nlists = tuple(sorted({min(pow2(math.sqrt(n)), cap), min(pow2(4 * math.sqrt(n)), cap)}))
        if smoke:
            return cls(nlists, nprobes=(1, 4, 16), hnsw_ms=(16,), ef_searches=(16, 64))
        return cls(nlists)


def _faiss():
    import faiss

    return faiss


def training_sample(vectors: np.ndarray, size: int, seed: int = SEED) -> np.ndarray:
    """`size` rows drawn without replacement by a seeded generator (all rows when fewer), in
    row order."""
    if size >= len(vectors):
        return vectors
    pick = np.sort(np.random.default_rng(seed).choice(len(vectors), size, replace=False))
    return np.ascontiguousarray(vectors[pick])


def index_bytes(index: Any) -> int:
    """The size of the index as faiss serialises it (vectors, codes, ids, graph, centroids)."""
    return int(_faiss().serialize_index(index).nbytes)


def distinct_rows(vectors: np.ndarray, decimals: int | None = None) -> int:
    """How many distinct rows (by a 128-bit hash of their bytes), after rounding to
    `decimals` when given.

    >>> v = np.array([[0.1, 0.2], [0.1, 0.2], [0.10001, 0.2]], np.float32)
    >>> distinct_rows(v), distinct_rows(v, 4)
    (2, 1)
    """
    seen = set()
    for start in range(0, len(vectors), 65_536):
        block = np.asarray(vectors[start:start + 65_536])
        if decimals is not None:
            block = np.rint(block.astype(np.float64) * 10 ** decimals).astype(np.int64)
        seen.update(hashlib.blake2b(row.tobytes(), digest_size=16).digest() for row in block)
    return len(seen)


def exact_neighbours(vectors: np.ndarray, queries: np.ndarray, k: int
                     ) -> tuple[np.ndarray, np.ndarray]:
    """(inner products, ids) of each query's exact top-k (one batched flat search)."""
    faiss = _faiss()
    flat = faiss.IndexFlatIP(vectors.shape[1])
    flat.add(vectors)
    return flat.search(queries, k)


PERCENTILES = (1, 10, 50, 90, 99)


def neighbour_structure(vectors: np.ndarray, queries: np.ndarray, exact_scores: np.ndarray,
                        pairs: int = 1000) -> dict[str, Any]:
    """Distinct vectors and the exact inner-product distribution (see the module docstring):
    ``{"n", "distinct", "distinct_1e-4", "top1": {pct: ip}, "top{k}": ..., "random": ...}``,
    "random" being the inner products of each query with `pairs` rows drawn by a seeded
    generator (the floor the neighbours stand out from)."""
    k = exact_scores.shape[1]
    rows = np.random.default_rng(SEED).integers(0, len(vectors), min(pairs, len(vectors)))
    random_ip = (queries @ vectors[rows].T).ravel()
    def pct(a: np.ndarray) -> dict[int, float]:
        return {p: float(np.percentile(a, p)) for p in PERCENTILES}

    return {"n": len(vectors), "distinct": distinct_rows(vectors),
            "distinct_1e-4": distinct_rows(vectors, 4), "top1": pct(exact_scores[:, 0]),
            f"top{k}": pct(exact_scores[:, k - 1]), "random": pct(random_ip)}


def recall_at_k(ids: np.ndarray, vectors: np.ndarray, queries: np.ndarray,
                exact_scores: np.ndarray, eps: float = 1e-5) -> float:
    """Mean over queries of the share of the k returned ids whose true inner product is at
    least the k-th exact one (less `eps`): a tie with the k-th neighbour, or a duplicate of a
    neighbour, counts as found. Missing ids (-1) are misses."""
    k = exact_scores.shape[1]
    ids = ids[:, :k]
    found = np.einsum("qkd,qd->qk", vectors[np.clip(ids, 0, None)], queries,
                      dtype=np.float64)
    hit = (found >= exact_scores[:, -1:] - eps) & (ids >= 0)
    return float(hit.sum(axis=1).mean() / k)


def recall_ids(ids: np.ndarray, exact_ids: np.ndarray) -> float:
    """Mean share of each query's exact top-k ids that the approximate top-k holds.

    >>> recall_ids(np.array([[1, 2, 3]]), np.array([[3, 2, 9]]))
    0.6666666666666666
    """
    k = exact_ids.shape[1]
    return float(np.mean([len(set(a[:k].tolist()) & set(e.tolist())) / k
                          for a, e in zip(ids, exact_ids)]))


def one_at_a_time(index: Any, queries: np.ndarray, k: int, params: Any = None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(ids, per-query seconds): every query searched alone, as one user's request is."""
    ids = np.empty((len(queries), k), np.int64)
    seconds = np.empty(len(queries))
    clock = time.perf_counter
    for i in range(len(queries)):
        q = queries[i:i + 1]
        t0 = clock()
        _, found = index.search(q, k, params=params)
        seconds[i] = clock() - t0
        ids[i] = found[0]
    return ids, seconds


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def _ivf(vectors: np.ndarray, nlist: int, grid: Grid, pq: bool) -> Any:
    """A trained and filled IVF-Flat (or IVF-PQ) index, inner product."""
    faiss = _faiss()
    d = vectors.shape[1]
    quantizer = faiss.IndexFlatIP(d)
    if pq:
        index = faiss.IndexIVFPQ(quantizer, d, nlist, grid.pq_m, grid.pq_bits,
                                 faiss.METRIC_INNER_PRODUCT)
        index.pq.cp.seed = SEED
    else:
        index = faiss.IndexIVFFlat(quantizer, d, nlist, faiss.METRIC_INNER_PRODUCT)
    index.cp.seed = SEED
    index.own_fields = True
    quantizer.this.disown()
    index.train(training_sample(vectors, max(grid.train_per_cell * nlist, 256 * 64)))
    index.add(vectors)
    return index


def _hnsw(vectors: np.ndarray, m: int, grid: Grid) -> Any:
    faiss = _faiss()
    index = faiss.IndexHNSWFlat(vectors.shape[1], m, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = grid.ef_construction
    index.add(vectors)
    return index


def builds(vectors: np.ndarray, grid: Grid) -> Iterator[tuple[str, dict, float, Any, list]]:
    """(family, build settings, build seconds, index, [(search settings, faiss search
    parameters)]) for every index of the grid, one at a time (each is dropped before the next
    is built, so memory holds one index beside the vectors)."""
    faiss = _faiss()
    seconds, flat = _timed(lambda: exact_index(vectors))
    yield "flat", {}, seconds, flat, [({}, None)]
    del flat
    for nlist in grid.nlists:
        seconds, ivf = _timed(lambda: _ivf(vectors, nlist, grid, pq=False))
        yield "ivf_flat", {"nlist": nlist}, seconds, ivf, [
            ({"nprobe": p}, faiss.SearchParametersIVF(nprobe=p)) for p in grid.nprobes]
        del ivf
    for m in grid.hnsw_ms:
        seconds, hnsw = _timed(lambda: _hnsw(vectors, m, grid))
        yield "hnsw", {"M": m, "efConstruction": grid.ef_construction}, seconds, hnsw, [
            ({"efSearch": ef}, faiss.SearchParametersHNSW(efSearch=ef))
            for ef in grid.ef_searches]
        del hnsw
    nlist = grid.pq_nlist or grid.nlists[0]
    pq_build = {"nlist": nlist, "m": grid.pq_m, "bits": grid.pq_bits}
    seconds, pq = _timed(lambda: _ivf(vectors, nlist, grid, pq=True))
    yield "ivf_pq", pq_build, seconds, pq, [
        ({"nprobe": p}, faiss.SearchParametersIVF(nprobe=p)) for p in grid.nprobes]
    t0 = time.perf_counter()
    refined = faiss.IndexRefineFlat(pq, faiss.swig_ptr(vectors))  # pq stays the base
    extra = time.perf_counter() - t0
    yield "ivf_pq_refine", {**pq_build, "k_factor": grid.k_factor}, seconds + extra, refined, [
        ({"nprobe": p}, faiss.IndexRefineSearchParameters(
            k_factor=grid.k_factor, base_index_params=faiss.SearchParametersIVF(nprobe=p)))
        for p in grid.nprobes]
    del refined, pq


def exact_index(vectors: np.ndarray) -> Any:
    faiss = _faiss()
    flat = faiss.IndexFlatIP(vectors.shape[1])
    flat.add(vectors)
    return flat


def setting_name(family: str, build: Mapping[str, Any], search: Mapping[str, Any]) -> str:
    """``IVF-Flat nlist=1024 nprobe=16`` and the like (k_factor, bits and efConstruction
    left to the row's params).

    >>> setting_name("hnsw", {"M": 16, "efConstruction": 80}, {"efSearch": 64})
    'HNSW M=16 efSearch=64'
    """
    shown = {k: v for k, v in {**build, **search}.items()
             if k not in ("k_factor", "bits", "efConstruction")}
    return " ".join([LABELS[family]] + [f"{k}={v}" for k, v in shown.items()])


def sweep(vectors: np.ndarray, queries: np.ndarray, grid: Grid, k: int = 10,
          exact: tuple[np.ndarray, np.ndarray] | None = None,
          progress: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """One row a setting of `grid` over `vectors` (see the module docstring): ``family``,
    ``name``, ``params`` (build and search settings) and every metric of `METRICS`
    (``recall@k`` and ``recall@k_ids`` for the `k` given). `exact` is the
    (scores, ids) of `exact_neighbours`, computed here when not given."""
    vectors = np.ascontiguousarray(vectors, np.float32)
    queries = np.ascontiguousarray(queries, np.float32)
    scores, truth = exact if exact is not None else exact_neighbours(vectors, queries, k)
    rows = []
    for family, build, seconds, index, searches in builds(vectors, grid):
        size = index_bytes(index)
        for search, params in searches:
            ids, times = one_at_a_time(index, queries, k, params)
            ms = 1000 * times
            rows.append({
                "family": family, "name": setting_name(family, build, search),
                "params": {**build, **search},
                f"recall@{k}": recall_at_k(ids, vectors, queries, scores),
                f"recall@{k}_ids": recall_ids(ids, truth),
                "p50_ms": float(np.percentile(ms, 50)), "p95_ms": float(np.percentile(ms, 95)),
                "mean_ms": float(ms.mean()), "build_s": seconds, "memory_bytes": size})
            if progress:
                progress(rows[-1]["name"])
        del index
    return rows


def choose_index(rows: Sequence[Mapping[str, Any]], target: float = 0.95,
                 metric: str = "recall@10") -> tuple[Mapping[str, Any] | None, str]:
    """(the fastest row by p50 latency whose `metric` is at least `target`, or None; one line
    saying the rule and what it picked, or that no setting reached the target and the best
    recall seen).

    >>> rows = [{"name": "a", "recall@10": 0.99, "p50_ms": 5.0},
    ...         {"name": "b", "recall@10": 0.96, "p50_ms": 1.0},
    ...         {"name": "c", "recall@10": 0.90, "p50_ms": 0.1}]
    >>> choose_index(rows)[0]["name"], choose_index(rows, 0.999)[0]
    ('b', None)
    """
    rule = f"the fastest setting by p50 latency with {metric} >= {target:.2f}"
    ok = [r for r in rows if r[metric] >= target]
    if not ok:
        best = max(rows, key=lambda r: r[metric], default=None)
        seen = (f"; the best is {best['name']} at {best[metric]:.3f}" if best else
                "; there are no rows")
        return None, f"rule: {rule}. No setting reaches {target:.2f}{seen}."
    pick = min(ok, key=lambda r: (r["p50_ms"], -r[metric]))
    return pick, (f"rule: {rule}. Choice: {pick['name']} ({metric} {pick[metric]:.3f}, "
                  f"p50 {pick['p50_ms']:.3f} ms, of {len(ok)} settings that reach it).")
