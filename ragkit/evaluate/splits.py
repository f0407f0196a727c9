"""Tune and held-out halves that do not leak: no gold unit and no gold text on both sides, and
no document where a benchmark has enough documents to group by them.

A setting chosen on some questions (a chunk size, a fusion weight, a design choice) is quoted
on other questions. Splitting by question id alone lets the two halves share evidence: two
questions about one paragraph, or about one file, land on both sides, and what was tuned on
one is then read off the other. Here questions are first *grouped*:

- questions whose gold spans share characters (one gold unit; Anthropic's gold chunks) are
  one group;
- questions whose gold texts are identical are one group: a question joins every question
  whose gold overlaps a copy of its own gold's text (`Query.copies`, `ragkit.evaluate.copies`),
  so a passage the corpus holds twice is never tuned on in one copy and quoted in the other;
- questions that name one group (``Query.metadata["group"]``; FinanceBench: the company, so
  every filing of one company lies on one side) are one group;
- in a benchmark with at least `MIN_DOCUMENTS` documents, questions that touch one document
  are one group (a multi-document question joins its documents' groups);
- in a benchmark with fewer documents (Chroma's five corpora, one document each), each
  document is cut into `BLOCKS` contiguous blocks of questions ordered by where their gold
  lies (a group's place is its largest gold span's start, so a multi-span question goes with
  the block that holds most of its gold), and the blocks alternate between the sides, so
  nearby text stays on one side. Chroma's five documents are therefore on both sides; no gold
  unit and no gold text is.

Groups are then dealt to the side that has fewer questions so far, largest group first and
then in the order of the sha256 of their first question id: deterministic, seed-free, and
close to half and half.
Questions without gold (refusals) are groups of one.

The assignment for the course's four benchmarks is committed in ``results/splits.json``
(`write_splits`, ``ragkit bench splits``); `split_of` reads it, so boards and the README use
the halves the benches tuned on without loading a benchmark.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ..types import Query

SIDES = ("tune", "held-out")
MIN_DOCUMENTS = 20  # below this, a document is too large a share to be one group
BLOCKS = 4  # contiguous blocks per document when documents are not groups
SPLITS_FILE = Path(__file__).resolve().parents[2] / "results" / "splits.json"
RULE = (f"grouped: questions sharing a gold unit (overlapping gold) or a gold text (one's gold "
        f"overlaps a copy of the other's) or a named group (a company) are one group; with >= {MIN_DOCUMENTS} documents, "
        f"questions sharing a document are one group, otherwise each document is cut into "
        f"{BLOCKS} contiguous blocks (a group placed at its largest gold span) that alternate "
        "sides; groups go to the smaller side, largest first, then in sha256 order of their "
        "first question id")


class _Groups:
    """Union-find over question indices."""

    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def join(self, i: int, j: int) -> None:
        a, b = self.find(i), self.find(j)
        if a != b:
            self.parent[max(a, b)] = min(a, b)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _gold_units(queries: Sequence[Query], groups: _Groups) -> None:
    """Join questions whose gold spans share characters (a sweep per document)."""
    spans = sorted((g.doc_id, g.start, g.end, i) for i, q in enumerate(queries) for g in q.gold)
    doc, reach, owner = None, -1, -1
    for d, s, e, i in spans:
        if d == doc and s < reach:
            groups.join(owner, i)
            if e > reach:
                reach, owner = e, i
        else:
            doc, reach, owner = d, e, i


def _gold_texts(queries: Sequence[Query], groups: _Groups) -> None:
    """Join each question with every question whose gold overlaps a copy of its gold's text."""
    spans: dict[str, list[tuple[int, int, int]]] = {}
    for i, q in enumerate(queries):
        for g in q.gold:
            spans.setdefault(g.doc_id, []).append((g.start, g.end, i))
    for i, q in enumerate(queries):
        for cp in q.copies:
            for s, e, j in spans.get(cp.doc_id, ()):
                if s < cp.end and cp.start < e:
                    groups.join(i, j)


def _named_groups(queries: Sequence[Query], groups: _Groups) -> None:
    """Join questions that name the same ``metadata["group"]`` (FinanceBench's company)."""
    first: dict[str, int] = {}
    for i, q in enumerate(queries):
        name = q.metadata.get("group")
        if name is not None:
            groups.join(first.setdefault(str(name), i), i)


def _place(queries: Sequence[Query], members: Sequence[int]) -> tuple[str, int]:
    """Where a group lies: the start of its largest gold span (the earliest among equals)."""
    spans = [g for i in members for g in queries[i].gold]
    big = min(spans, key=lambda g: (-len(g), g.doc_id, g.start))
    return big.doc_id, big.start


def _blocks(queries: Sequence[Query], groups: _Groups) -> list[list[int]]:
    """Contiguous blocks of each document: its groups in order of place (`_place`), cut into
    `BLOCKS` runs of about equal question counts (a group is never cut)."""
    members: dict[int, list[int]] = {}
    for i in range(len(queries)):
        members.setdefault(groups.find(i), []).append(i)
    first = {root: _place(queries, m) for root, m in members.items()
             if any(queries[i].gold for i in m)}
    by_doc: dict[str, list[int]] = {}
    for root, (doc, _start) in sorted(first.items(), key=lambda kv: kv[1]):
        by_doc.setdefault(doc, []).append(root)
    out = []
    for doc in sorted(by_doc):
        roots = by_doc[doc]
        total = sum(len(members[r]) for r in roots)
        cut, seen = [[] for _ in range(BLOCKS)], 0
        for r in roots:
            block = min(BLOCKS - 1, seen * BLOCKS // max(total, 1))
            cut[block] += members[r]
            seen += len(members[r])
        out += [b for b in cut if b]
    return out


@dataclass(frozen=True)
class Split:
    """Which side each question is on, with the rule and the group count."""

    benchmark: str
    side: Mapping[str, str]
    groups: int
    rule: str = RULE

    def ids(self, side: str) -> list[str]:
        return [q for q, s in self.side.items() if s == side]

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "groups": self.groups,
                **{s: sorted(self.ids(s)) for s in SIDES}}


def grouped_split(benchmark: str, queries: Sequence[Query], n_documents: int) -> Split:
    """The split of one benchmark's questions (see the module docstring).

    >>> from ragkit.types import Span
    >>> qs = [Query("a", "?", (Span("d", 0, 10),)), Query("b", "?", (Span("d", 5, 20),)),
    ...       Query("c", "?", (Span("e", 0, 5),)), Query("r", "?")]
    >>> s = grouped_split("toy", qs, n_documents=30)
    >>> s.side["a"] == s.side["b"], s.groups
    (True, 3)
    """
    queries = list(queries)
    ids = [q.id for q in queries]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{benchmark}: question ids repeat; a split needs unique ids")
    groups = _Groups(len(queries))
    _gold_units(queries, groups)
    _gold_texts(queries, groups)
    _named_groups(queries, groups)
    side: dict[str, str] = {}
    if n_documents >= MIN_DOCUMENTS:
        owner: dict[str, int] = {}
        for i, q in enumerate(queries):
            for g in q.gold:
                groups.join(owner.setdefault(g.doc_id, i), i)
        units: dict[int, list[int]] = {}
        for i in range(len(queries)):
            units.setdefault(groups.find(i), []).append(i)
        counts = dict.fromkeys(SIDES, 0)
        for members in sorted(units.values(), key=lambda m: (-len(m), _sha(ids[m[0]]))):
            to = min(SIDES, key=lambda s: (counts[s], SIDES.index(s)))
            counts[to] += len(members)
            side.update((ids[i], to) for i in members)
        n_groups = len(units)
    else:
        blocks = _blocks(queries, groups)
        for b, members in enumerate(blocks):
            side.update((ids[i], SIDES[b % 2]) for i in members)
        loose = [i for i, q in enumerate(queries) if not q.gold]
        counts = {s: sum(1 for v in side.values() if v == s) for s in SIDES}
        for i in sorted(loose, key=lambda i: _sha(ids[i])):
            to = min(SIDES, key=lambda s: (counts[s], SIDES.index(s)))
            counts[to] += 1
            side[ids[i]] = to
        n_groups = len(blocks) + len(loose)
    return Split(benchmark, {q: side[q] for q in ids}, n_groups)


def leaks(queries: Sequence[Query], side: Mapping[str, str], n_documents: int
          ) -> list[str]:
    """What the two halves share: gold units (any two overlapping gold spans on both sides),
    gold texts (a question's gold overlapping a copy of another's gold on the other side), named
    groups (``metadata["group"]``) and,
    with at least `MIN_DOCUMENTS` documents, documents. Empty for a clean split."""
    out = []
    spans = sorted((g.doc_id, g.start, g.end, q.id) for q in queries for g in q.gold)
    for n, (d1, s1, e1, q1) in enumerate(spans):  # every pair, not only neighbours
        for d2, s2, e2, q2 in spans[n + 1:]:
            if d2 != d1 or s2 >= e1:
                break
            if side[q1] != side[q2]:
                out.append(f"gold unit {d1}[{s2}:{min(e1, e2)}] in {q1} and {q2}")
    by_doc: dict[str, list[tuple[int, int, str]]] = {}
    for d, s, e, qid in spans:
        by_doc.setdefault(d, []).append((s, e, qid))
    for q in queries:
        for cp in q.copies:
            out += [f"gold text of {q.id} at {cp.doc_id}[{cp.start}:{cp.end}], gold of {other}"
                    for s, e, other in by_doc.get(cp.doc_id, ())
                    if s < cp.end and cp.start < e and side[other] != side[q.id]]
    named: dict[str, set[str]] = {}
    for q in queries:
        if q.metadata.get("group") is not None:
            named.setdefault(str(q.metadata["group"]), set()).add(side[q.id])
    out += [f"group {g} on both sides" for g, s in sorted(named.items()) if len(s) > 1]
    if n_documents >= MIN_DOCUMENTS:
        where: dict[str, set[str]] = {}
        for q in queries:
            for g in q.gold:
                where.setdefault(g.doc_id, set()).add(side[q.id])
        out += [f"document {d} on both sides" for d, s in sorted(where.items()) if len(s) > 1]
    return out


def splits_for(benchmarks: Iterable[Any]) -> dict[str, Split]:
    """`grouped_split` of each loaded `ragkit.benchmarks.Benchmark`, by name."""
    return {b.name: grouped_split(b.name, b.queries, len(b.documents)) for b in benchmarks}


def write_splits(splits: Mapping[str, Split], path: Path = SPLITS_FILE,
                 keep: Iterable[str] = ()) -> Path:
    """Write `splits` to `path`; the benchmarks named in `keep` keep their entries there."""
    import json

    from ..cache import atomic_write_bytes

    kept = set(keep)
    saved = json.loads(path.read_text(encoding="utf-8")) if kept and path.exists() else {}
    data = {name: v for name, v in saved.items() if name in kept}
    data.update({name: s.to_json() for name, s in sorted(splits.items())})
    data = dict(sorted(data.items()))
    atomic_write_bytes(path, (json.dumps(data, indent=1, sort_keys=True) + "\n").encode())
    load_splits.cache_clear()
    return path


@lru_cache(maxsize=4)
def load_splits(path: Path = SPLITS_FILE) -> dict[str, str]:
    """query id -> side, for every benchmark in the committed splits file."""
    from ..jsonio import loads

    if not path.exists():
        raise FileNotFoundError(f"{path}: no splits file; run `ragkit bench splits`")
    data = loads(path.read_text(encoding="utf-8"))
    out: dict[str, str] = {}
    for name, entry in data.items():
        for s in SIDES:
            for q in entry.get(s, []):
                out[q] = s
    return out


def split_of(query_id: str, path: Path = SPLITS_FILE) -> str:
    """'tune' or 'held-out' for a question of the course corpus, Chroma's, Anthropic's or
    FinanceBench's set, from the committed grouped split.

    >>> split_of("chroma-000") in SIDES
    True
    """
    side = load_splits(path).get(query_id)
    if side is None:
        raise KeyError(f"{query_id}: not in {path}; splits cover the course corpus, Chroma's, "
                       "Anthropic's and FinanceBench's questions (ragkit bench splits)")
    return side
