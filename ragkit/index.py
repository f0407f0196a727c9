"""A faiss inner-product index over unit vectors, with a metadata pre-filter.

The filter runs *before* the vector search: the candidate set is restricted first and the k
nearest are taken among the survivors, so a narrow filter still returns k hits when k exist
(filtering the top-k afterwards would return fewer, or none). On CPU the restriction is a faiss
`IDSelectorBatch`; on a GPU index (used automatically when faiss sees a GPU) the survivors are
searched exactly in a temporary flat index.

A filter is a mapping ``{field: value}`` where value is a scalar (equality), a list/set (any
of), or a callable (a predicate on the field's value); or any callable on the whole metadata.

    >>> import numpy as np
    >>> ix = VectorIndex(np.eye(3, dtype="float32"), [{"r": "eu"}, {"r": "us"}, {"r": "eu"}])
    >>> ix.search(np.eye(3, dtype="float32")[:1], k=2, where={"r": "us"})[1].tolist()
    [[1, -1]]
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence, Union

import numpy as np

Where = Union[Mapping[str, Any], Callable[[Mapping[str, Any]], bool], None]


def matches(meta: Mapping[str, Any], where: Where) -> bool:
    """Does one metadata record pass the filter?"""
    if where is None:
        return True
    if callable(where):
        return bool(where(meta))
    for key, want in where.items():
        have = meta.get(key)
        if callable(want):
            if not want(have):
                return False
        elif isinstance(want, (list, tuple, set, frozenset)):
            if have not in want:
                return False
        elif have != want:
            return False
    return True


def _faiss():
    import faiss

    return faiss


def faiss_has_gpu() -> bool:
    try:
        faiss = _faiss()
        return hasattr(faiss, "get_num_gpus") and faiss.get_num_gpus() > 0
    except ImportError:  # pragma: no cover
        return False


class VectorIndex:
    """Exact inner-product search (`IndexFlatIP`) with metadata pre-filtering."""

    def __init__(self, vectors: np.ndarray, metadata: Sequence[Mapping[str, Any]] | None = None,
                 use_gpu: bool | None = None):
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.ndim != 2:
            raise ValueError(f"vectors must be 2-D, got shape {vectors.shape}")
        if metadata is not None and len(metadata) != len(vectors):
            raise ValueError(f"{len(metadata)} metadata records for {len(vectors)} vectors")
        self.vectors = vectors
        self.metadata = list(metadata) if metadata is not None else [{}] * len(vectors)
        faiss = _faiss()
        self._cpu = faiss.IndexFlatIP(vectors.shape[1])
        if len(vectors):
            self._cpu.add(vectors)
        self.gpu = faiss_has_gpu() if use_gpu is None else use_gpu
        self._index = self._cpu
        if self.gpu:  # pragma: no cover - exercised on the GPU machine
            res = faiss.StandardGpuResources()
            self._index = faiss.index_cpu_to_gpu(res, 0, self._cpu)

    def __len__(self) -> int:
        return len(self.vectors)

    def allowed(self, where: Where) -> np.ndarray:
        """Positions of the records that pass the filter."""
        return np.array([i for i, m in enumerate(self.metadata) if matches(m, where)],
                        dtype=np.int64)

    def search(self, queries: np.ndarray, k: int, where: Where = None
               ) -> tuple[np.ndarray, np.ndarray]:
        """(scores, positions), each (n_queries, k); missing hits are -inf / -1."""
        faiss = _faiss()
        queries = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.float32)
        n = len(queries)
        if len(self) == 0 or k <= 0:
            return np.full((n, max(k, 0)), -np.inf, np.float32), np.full((n, max(k, 0)), -1)
        if where is None:
            scores, ids = self._index.search(queries, k)
        else:
            keep = self.allowed(where)
            if len(keep) == 0:
                return np.full((n, k), -np.inf, np.float32), np.full((n, k), -1, np.int64)
            if self.gpu:  # pragma: no cover
                sub = faiss.IndexFlatIP(self.vectors.shape[1])
                sub.add(self.vectors[keep])
                scores, local = sub.search(queries, k)
                ids = np.where(local >= 0, keep[np.clip(local, 0, None)], -1)
            else:
                params = faiss.SearchParameters(sel=faiss.IDSelectorBatch(keep))
                scores, ids = self._cpu.search(queries, k, params=params)
        scores = np.where(ids >= 0, scores, -np.inf).astype(np.float32)
        return scores, ids.astype(np.int64)
