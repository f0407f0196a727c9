"""A faiss inner-product index over unit vectors, with a metadata pre-filter.

The filter runs *before* the vector search: the candidate set is restricted first and the k
nearest are taken among the survivors, so a narrow filter still returns k hits when k exist
(filtering the top-k afterwards would return fewer, or none). On CPU the restriction is a faiss
`IDSelectorBitmap` over the mask of allowed rows; on a GPU index (used automatically when faiss
sees a GPU) the survivors are searched exactly in a temporary flat index.

A filter is a mapping ``{field: value}`` where value is a scalar (equality), a list/set (any
of), or a callable (a predicate on the field's value, e.g. a date range on ``effective_date``);
or any callable on the whole metadata.

`matches` says whether one record passes. Over many records `MetadataColumns` gives the same
answer as a boolean mask without a Python pass over the rows: each field is stored as integer
codes of its distinct values, a field's condition is decided once per distinct value (by the
same rule as `matches`) and spread to the rows with numpy. A per-field callable is therefore
called once per distinct value (it must depend only on the value); a callable on the whole
record is called per record, as before.

    >>> import numpy as np
    >>> ix = VectorIndex(np.eye(3, dtype="float32"), [{"r": "eu"}, {"r": "us"}, {"r": "eu"}])
    >>> ix.search(np.eye(3, dtype="float32")[:1], k=2, where={"r": "us"})[1].tolist()
    [[1, -1]]
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Sequence, Union

import numpy as np

Where = Union[Mapping[str, Any], Callable[[Mapping[str, Any]], bool], None]


def field_matches(have: Any, want: Any) -> bool:
    """Does one field's value pass one condition of a filter (see `matches`)?"""
    if callable(want):
        return bool(want(have))
    if isinstance(want, (list, tuple, set, frozenset)):
        return have in want
    return not have != want


def matches(meta: Mapping[str, Any], where: Where) -> bool:
    """Does one metadata record pass the filter? (`field_matches` for each condition, in
    order, stopping at the first that fails; written out here, as it runs once per record.)"""
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


_ABSENT = -1  # the code of a row without the field (`matches` reads it as None)
_PLAIN = (str, int, bool, type(None))


def _value_key(v: Any) -> tuple:
    """Values with one key share a code, so they must behave alike under any condition: the
    same type and, beyond the plain types, the same repr (-0.0 and 0.0 apart, dicts with
    their keys in another order apart); each NaN object is its own value."""
    t = type(v)
    if t in _PLAIN:
        return (t, v)
    if t is float and v != v:
        return (t, "nan", id(v))
    return (t, repr(v))


class MetadataColumns:
    """Row metadata as columns of integer codes (one per distinct value of each field), so a
    `where` filter over n rows is a numpy mask, not n calls of `matches`.

    >>> cols = MetadataColumns([{"r": "eu", "y": 2021}, {"r": "us"}, {"r": "eu", "y": 2024}])
    >>> cols.mask({"r": "eu", "y": lambda y: y is not None and y >= 2022}).tolist()
    [False, False, True]
    """

    def __init__(self, records: Iterable[Mapping[str, Any]] | None = None):
        self.n = 0
        self._codes: dict[str, list[int]] = {}    # field -> a code per row (_ABSENT: no field)
        self._values: dict[str, list[Any]] = {}   # field -> its distinct values, by code
        self._lookup: dict[str, dict[tuple, int]] = {}
        self._plain_str: dict[str, bool] = {}     # field -> every value is a str
        self._arrays: dict[str, np.ndarray] = {}  # field -> codes as an array (built lazily)
        self._shifted: dict[str, tuple[np.ndarray, bool]] = {}  # field -> (codes + 1, absent?)
        if records is not None:
            self.extend(records)

    def extend(self, records: Iterable[Mapping[str, Any]]) -> None:
        codes, values, lookup = self._codes, self._values, self._lookup
        for rec in records:
            for key in rec.keys() - codes.keys():
                codes[key], values[key], lookup[key] = [_ABSENT] * self.n, [], {}
                self._plain_str[key] = True
            for key, col in codes.items():
                if key not in rec:
                    col.append(_ABSENT)
                    continue
                v = rec[key]
                vk = _value_key(v)
                code = lookup[key].get(vk)
                if code is None:
                    code = lookup[key][vk] = len(values[key])
                    values[key].append(v)
                    if type(v) is not str:
                        self._plain_str[key] = False
                col.append(code)
            self.n += 1
        self._arrays.clear()
        self._shifted.clear()

    def __len__(self) -> int:
        return self.n

    @property
    def fields(self) -> list[str]:
        return list(self._codes)

    def codes(self, key: str) -> np.ndarray:
        """The codes of one field, an int32 array (``-1`` where a row lacks the field)."""
        if key not in self._arrays:
            self._arrays[key] = np.asarray(self._codes.get(key, [_ABSENT] * self.n), np.int32)
        return self._arrays[key]

    def _index(self, key: str) -> tuple[np.ndarray, bool]:
        """The codes of one field plus one (0: the row lacks it), to index a table by code + 1,
        and whether any row lacks the field."""
        if key not in self._shifted:
            index = self.codes(key) + 1
            self._shifted[key] = (index, bool(self.n) and not index.all())
        return self._shifted[key]

    def record(self, i: int) -> dict[str, Any]:
        return {k: self._values[k][col[i]] for k, col in self._codes.items() if col[i] >= 0}

    def records(self) -> Iterable[dict[str, Any]]:
        """Every row's record, in order (rebuilt from the codes)."""
        fields = [(k, self._values[k]) for k in self._codes]
        for row in zip(*self._codes.values()):
            yield {k: vals[c] for (k, vals), c in zip(fields, row) if c >= 0}

    def column(self, key: str) -> list[Any]:
        """One field's value per row (None where absent)."""
        vals = self._values.get(key, [])
        return [vals[c] if c >= 0 else None for c in self._codes.get(key, [_ABSENT] * self.n)]

    def mask(self, where: Where) -> np.ndarray:
        """Boolean mask of the rows that pass `where`: the rows `matches` passes, and a
        condition is only ever applied to values of rows that passed the conditions before it
        (as `matches` stops at the first failing one)."""
        if where is None:
            return np.ones(self.n, bool)
        if callable(where):  # a predicate on whole records: one call per record
            if not self._codes:
                return np.fromiter((bool(where({})) for _ in range(self.n)), bool, self.n)
            return np.fromiter((bool(where(r)) for r in self.records()), bool, self.n)
        keep = None  # every row, until a condition has run
        for key, want in where.items():
            index, absent = self._index(key)
            values = self._values.get(key, [])
            ok = np.zeros(len(values) + 1, bool)  # by code + 1 (0: the row lacks the field)
            wanted = want if isinstance(want, (list, tuple, set, frozenset)) else [want]
            if (not callable(want) and self._plain_str.get(key, True)
                    and all(type(w) is str or w is None for w in wanted)):
                # a column of strs and str / None wanted: equal means the same str
                found = [self._lookup.get(key, {}).get((str, w)) for w in wanted
                         if w is not None]
                ok[[c + 1 for c in found if c is not None]] = True
                ok[0] = any(w is None for w in wanted)
            else:  # decided for the codes that occur among the rows still kept: with every
                # row kept, each distinct value (a value is stored when a row has it)
                live = (range(0 if absent else 1, len(values) + 1) if keep is None else
                        np.flatnonzero(np.bincount(index[keep], minlength=len(values) + 1)))
                for c in live:
                    ok[c] = field_matches(values[c - 1] if c else None, want)
            passed = ok.take(index)
            keep = passed if keep is None else np.logical_and(keep, passed, out=keep)
        return np.ones(self.n, bool) if keep is None else keep


def _faiss():
    import faiss

    return faiss


def faiss_has_gpu() -> bool:
    try:
        faiss = _faiss()
        return hasattr(faiss, "get_num_gpus") and faiss.get_num_gpus() > 0
    except ImportError:  # pragma: no cover
        return False


# Scores this close are a tie: float32 rounding of one dot product differs between CPUs (the
# SIMD path, the tile a row falls in), and corpora repeat passages word for word (Chroma's
# finance corpus holds the same passage at two offsets), so faiss's order among equal scores
# is the machine's. A tie is settled by corpus position instead.
TIE = 1e-6


def settle_ties(search: Callable[[int], tuple[np.ndarray, np.ndarray]], k: int, allowed: int,
                margin: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """The top `k` of ``search(depth)`` (scores and positions, best first, -1 for none) with
    ties settled by position: hits whose scores are within `TIE` of the next better one form one
    group, ordered by position; the search deepens (from k + `margin`, doubling, up to the
    `allowed` rows) until the group at the k-th place is wholly in, so which of the tied hits
    make the cut does not depend on faiss's order either.

    >>> s = np.array([[0.9, 0.5, 0.5, 0.5]], np.float32)
    >>> settle_ties(lambda d: (s[:, :d], np.array([[7, 4, 9, 2]])[:, :d]), 2, 4)[1].tolist()
    [[7, 2]]
    """
    depth = min(k + margin, allowed) if k < allowed else k
    while True:
        scores, ids = search(depth)
        if depth >= allowed or depth <= k:
            break
        last, kth = scores[:, depth - 1], scores[:, k - 1]
        if not np.any((ids[:, depth - 1] >= 0) & (last >= kth - TIE)):
            break
        depth = min(2 * depth, allowed)
    order = np.argsort(-scores, axis=1, kind="stable")
    scores, ids = np.take_along_axis(scores, order, 1), np.take_along_axis(ids, order, 1)
    with np.errstate(invalid="ignore"):  # -inf - -inf: missing hits, one group at the end
        gap = np.diff(scores, axis=1, prepend=scores[:, :1]) < -TIE  # a new group starts here
    group = np.cumsum(gap, axis=1)
    position = np.where(ids >= 0, ids, np.iinfo(np.int64).max)
    order = np.lexsort((position, group), axis=1)[:, :k]
    return np.take_along_axis(scores, order, 1), np.take_along_axis(ids, order, 1)


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
        self._columns: MetadataColumns | None = None  # built on the first filtered search
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

    def mask(self, where: Where) -> np.ndarray:
        """Boolean mask of the records that pass the filter (`MetadataColumns.mask`; a
        callable on whole records is called on each stored record)."""
        if where is not None and callable(where):
            return np.fromiter((matches(m, where) for m in self.metadata), bool, len(self))
        if self._columns is None:
            self._columns = MetadataColumns(self.metadata)
        return self._columns.mask(where)

    def allowed(self, where: Where) -> np.ndarray:
        """Positions of the records that pass the filter."""
        return np.flatnonzero(self.mask(where)).astype(np.int64)

    def search(self, queries: np.ndarray, k: int, where: Where = None
               ) -> tuple[np.ndarray, np.ndarray]:
        """(scores, positions), each (n_queries, k); missing hits are -inf / -1. Hits whose
        scores tie (within `TIE`) come in corpus order, and a tie at the k-th place keeps the
        earliest positions (`settle_ties`), so the ranking does not depend on the CPU."""
        queries = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.float32)
        n = len(queries)
        if len(self) == 0 or k <= 0:
            return np.full((n, max(k, 0)), -np.inf, np.float32), np.full((n, max(k, 0)), -1)
        mask = None if where is None else self.mask(where)
        allowed = len(self) if mask is None else int(mask.sum())
        if allowed == 0:
            return np.full((n, k), -np.inf, np.float32), np.full((n, k), -1, np.int64)
        return settle_ties(lambda depth: self._search(queries, depth, mask), k, allowed)

    def _search(self, queries: np.ndarray, k: int, mask: np.ndarray | None
                ) -> tuple[np.ndarray, np.ndarray]:
        """faiss's top `k` among the rows `mask` allows (all when None), as faiss orders them."""
        faiss = _faiss()
        if mask is None:
            scores, ids = self._index.search(queries, k)
        elif self.gpu:  # pragma: no cover
            keep = np.flatnonzero(mask)
            sub = faiss.IndexFlatIP(self.vectors.shape[1])
            sub.add(self.vectors[keep])
            scores, local = sub.search(queries, k)
            ids = np.where(local >= 0, keep[np.clip(local, 0, None)], -1)
        else:  # faiss reads the mask as a bitmap: no id set to build
            bitmap = np.packbits(mask, bitorder="little")
            sel = faiss.IDSelectorBitmap(len(mask), faiss.swig_ptr(bitmap))
            scores, ids = self._cpu.search(queries, k, params=faiss.SearchParameters(sel=sel))
            del bitmap  # alive until the search is done (faiss holds a raw pointer)
        scores = np.where(ids >= 0, scores, -np.inf).astype(np.float32)
        return scores, ids.astype(np.int64)
