"""Embed small, return big: parent-child retrieval, auto-merging and sentence windows.

Small chunks match a question precisely; big chunks carry the context an answer needs. These
retrievers search small units and hand back bigger ones:

- **small-to-big** (`ParentChildRetriever`): parents are sections (the structure chunker with a
  large budget), children are groups of whole sentences inside each parent (``parent_id`` set).
  Search `child_k` children, collapse them to their distinct parents in rank order, return
  `parent_k` parents. `last_collapse` reports how many children fell into each parent.
- **auto-merging** (``mode="auto_merge"``, as llama_index's AutoMergingRetriever): keep the
  retrieved children, but when at least `merge_ratio` of a parent's children were retrieved,
  replace them by the parent.
- **sentence window** (`SentenceWindowRetriever`): index single sentences; return each hit
  widened to `window` sentences either side (overlapping windows merged).

Parents live in a `ParentStore`, a JSONL file on disk (written atomically), so an index of
children can be rebuilt or reloaded without re-chunking the parents. Everything returned is a
`Chunk` with exact offsets, so the usual span metrics score parents on their own spans.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Callable, Literal, Sequence

from ..cache import atomic_write_text
from ..text.sentences import pack_sentences, sentence_spans
from ..text.tokens import counter
from ..types import Chunk, Document, doc_metadata
from .base import Retriever
from .retrievers import DenseRetriever, Hit, _per_query


def make_children(doc: Document, parent: Chunk, max_tokens: int = 160,
                  tokenizer: str = "minilm") -> list[Chunk]:
    """Groups of consecutive sentences inside `parent`, each up to `max_tokens` (a sentence
    longer than that is a child of its own), carrying ``parent_id``."""
    count = counter(tokenizer)
    return [Chunk.make(doc, s, e, strategy="child", prefix=parent.prefix, parent_id=parent.id,
                       metadata={**parent.metadata, "role": "child"})
            for s, e in pack_sentences(doc.text, parent.start, parent.end, max_tokens, count)]


class ParentStore:
    """Parents by id, persisted as sorted JSONL (``save`` / ``ParentStore.load``)."""

    def __init__(self, parents: Sequence[Chunk] = ()):
        self.parents = {p.id: p for p in parents}

    def __getitem__(self, parent_id: str) -> Chunk:
        return self.parents[parent_id]

    def __len__(self) -> int:
        return len(self.parents)

    def save(self, path: str | Path) -> Path:
        rows = [{"id": p.id, "doc_id": p.doc_id, "start": p.start, "end": p.end, "text": p.text,
                 "prefix": p.prefix, "strategy": p.strategy, "parent_id": p.parent_id,
                 "metadata": dict(p.metadata)} for p in self.parents.values()]
        rows.sort(key=lambda r: (r["doc_id"], r["start"], r["id"]))
        atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n"
                                        for r in rows))
        return Path(path)

    @classmethod
    def load(cls, path: str | Path, docs: dict[str, Document] | None = None) -> "ParentStore":
        """Read a saved store; with `docs`, check every parent is still its span."""
        parents = []
        # split on "\n" only: a chunk's text may hold U+2028/U+2029/U+0085 (str.splitlines)
        for n, line in enumerate(Path(path).read_text(encoding="utf-8").split("\n"), 1):
            if not line.strip():
                continue
            r = json.loads(line)
            c = Chunk(doc_id=r["doc_id"], start=r["start"], end=r["end"], text=r["text"],
                      strategy=r["strategy"], prefix=r["prefix"], parent_id=r["parent_id"],
                      metadata=r["metadata"], id=r["id"])
            if docs is not None and docs[c.doc_id].text[c.start:c.end] != c.text:
                raise ValueError(f"{path}:{n}: parent {c.id} no longer matches {c.doc_id}")
            parents.append(c)
        return cls(parents)


class ParentChildRetriever(Retriever):
    """Search children, return parents (small-to-big) or merge children (auto-merging)."""

    def __init__(self, docs: Sequence[Document], parent_chunker, embedder, child_tokens: int = 160,
                 child_k: int = 20, mode: Literal["parents", "auto_merge"] = "parents",
                 merge_ratio: float = 0.5, store: ParentStore | None = None):
        by_id = {d.id: d for d in docs}
        self.store = store or ParentStore(parent_chunker.chunk_all(docs))
        self.children = [c for p in self.store.parents.values()
                         for c in make_children(by_id[p.doc_id], p, child_tokens)]
        self.n_children = Counter(c.parent_id for c in self.children)
        self.dense = DenseRetriever(self.children, embedder)
        self.n_indexed = len(self.children)  # what it embeds, whatever it returns
        self.child_k, self.mode, self.merge_ratio = child_k, mode, merge_ratio
        self.last_collapse: list[dict[str, int]] = []

    @property
    def flags(self) -> list[str]:
        return self.dense.flags

    def describe(self) -> str:
        back = "their parents" if self.mode == "parents" else (
            f"themselves, or their parent when {self.merge_ratio:.0%} of its children are found")
        return (f"parent-child ({self.mode}): {len(self.children)} children of "
                f"{len(self.store.parents)} parents searched densely ({self.dense.describe()}), "
                f"returned as {back}")

    def search(self, queries: Sequence[str], k: int, where=None) -> list[list[Hit]]:
        collapse: list[dict[str, int]] = [{} for _ in queries]

        def units(i: int, hits: list[Hit]) -> list[Hit]:
            counts = Counter(h.chunk.parent_id for h in hits)
            collapse[i] = dict(counts)
            return (self._collapse(hits, k) if self.mode == "parents"
                    else self._merge(hits, counts, k))

        out = widen_until_k(self.dense, queries, k, max(self.child_k, k), where, units)
        self.last_collapse = collapse
        return out

    def _collapse(self, hits: list[Hit], k: int) -> list[Hit]:
        seen: dict[str, Hit] = {}
        for h in hits:  # rank order: a parent takes the score of its best child
            if h.chunk.parent_id not in seen:
                seen[h.chunk.parent_id] = Hit(self.store[h.chunk.parent_id], h.score)
        return list(seen.values())[:k]

    def _merge(self, hits: list[Hit], counts: Counter, k: int) -> list[Hit]:
        merged = {pid for pid, n in counts.items()
                  if n / self.n_children[pid] >= self.merge_ratio and self.n_children[pid] > 1}
        out: list[Hit] = []
        placed: set[str] = set()
        for h in hits:
            pid = h.chunk.parent_id
            if pid in merged:
                if pid not in placed:
                    out.append(Hit(self.store[pid], h.score))
                    placed.add(pid)
            else:
                out.append(h)
        return out[:k]


class SentenceWindowRetriever(Retriever):
    """Index single sentences; return each hit widened by `window` sentences on both sides."""

    def __init__(self, docs: Sequence[Document], embedder, window: int = 2, candidates: int = 20):
        self.docs = {d.id: d for d in docs}
        self.sentences: list[Chunk] = []
        self._pos: dict[str, tuple[str, int]] = {}
        self._spans: dict[str, list[tuple[int, int]]] = {}
        for d in docs:
            spans = sentence_spans(d.text)
            self._spans[d.id] = spans
            for i, (s, e) in enumerate(spans):
                c = Chunk.make(d, s, e, strategy="sentence", metadata=doc_metadata(d))
                self.sentences.append(c)
                self._pos[c.id] = (d.id, i)
        self.dense = DenseRetriever(self.sentences, embedder)
        self.n_indexed = len(self.sentences)
        self.window, self.candidates = window, candidates

    @property
    def flags(self) -> list[str]:
        return self.dense.flags

    def describe(self) -> str:
        return (f"sentence window: {len(self.sentences)} sentences searched densely "
                f"({self.dense.describe()}), each hit widened by {self.window} sentences "
                "either side")

    def search(self, queries: Sequence[str], k: int, where=None) -> list[list[Hit]]:
        return widen_until_k(self.dense, queries, k, max(self.candidates, k), where,
                             lambda i, hits: self._windows(hits, k))

    def _windows(self, hits: list[Hit], k: int) -> list[Hit]:
        """Each sentence hit widened to its window, best first; a window that overlaps a
        better-ranked one is left out."""
        windows: list[Hit] = []
        for h in hits:
            doc_id, i = self._pos[h.chunk.id]
            spans = self._spans[doc_id]
            lo, hi = max(0, i - self.window), min(len(spans) - 1, i + self.window)
            s, e = spans[lo][0], spans[hi][1]
            if any(w.chunk.doc_id == doc_id and w.chunk.start < e and s < w.chunk.end
                   for w in windows):
                continue  # overlaps a better-ranked window already returned
            windows.append(Hit(Chunk.make(self.docs[doc_id], s, e, strategy="sentence_window",
                                          metadata={**h.chunk.metadata,
                                                    "window": self.window}), h.score))
            if len(windows) == k:
                break
        return windows


def widen_until_k(dense, queries: Sequence[str], k: int, pool: int, where,
                  units: Callable[[int, list[Hit]], list[Hit]]) -> list[list[Hit]]:
    """Search `pool` small units per query and turn them into at most `k` returned units
    (``units(query index, hits)``: parents, merged spans, sentence windows); for a query whose
    units fall short of `k` while `dense` still had more to give, search again with twice the
    pool. Several small hits collapse into one returned unit, so a fixed pool can give fewer
    than `k` units even when more exist, and `ragkit.experiments.search_deep` reads fewer than
    asked as "nothing more" (the `Retriever` contract)."""
    wheres = _per_query(where, len(queries))
    out: list[list[Hit]] = [[] for _ in queries]
    todo, n = list(range(len(queries))), max(pool, k)
    while todo:
        found = dense.search([queries[i] for i in todo], n, [wheres[i] for i in todo])
        short = []
        for i, hits in zip(todo, found):
            out[i] = units(i, hits)
            if len(out[i]) < k and len(hits) >= n:
                short.append(i)
        todo, n = short, 2 * n
    return out


def comparison_strategies(bench, embedder, parents, child_tokens: int = 160, child_k: int = 20,
                          window: int = 2) -> tuple[dict[str, dict], "ParentChildRetriever"]:
    """Notebook 06's five strategies on one benchmark, as `run_experiment` keyword sets:
    the children alone, the parents alone, small-to-big, auto-merging (sharing one parent
    store) and a sentence window; also returns the small-to-big retriever (its children and
    its collapse counts)."""
    pc = ParentChildRetriever(bench.documents, parents, embedder, child_tokens=child_tokens,
                              child_k=child_k)
    merge = ParentChildRetriever(bench.documents, parents, embedder, child_tokens=child_tokens,
                                 child_k=child_k, mode="auto_merge", store=pc.store)
    sentences = SentenceWindowRetriever(bench.documents, embedder, window=window)
    big = list(pc.store.parents.values())
    return {
        "small (children)": dict(chunks=pc.children, retriever="dense"),
        "big (parents)": dict(chunks=big, retriever="dense"),
        "small-to-big": dict(chunks=big, retriever=pc),
        "auto-merging": dict(chunks=big + pc.children, retriever=merge),
        "sentence window": dict(chunks=sentences.sentences, retriever=sentences, omega=False),
    }, pc
