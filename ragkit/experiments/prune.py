"""Pruning the corpus: grow an index with distractors, then drop what can never be right.

Seed 002 says that superseded memos, out-of-date transcripts and badly extracted tables are
noise, and that more documents do not monotonically improve retrieval. This module measures
that on the course questions:

- `garble` makes a bad table extraction by code: the document's text with table pipes and
  separator rows removed and every line break collapsed, so cells run together (what a poor
  PDF extractor produces). It keeps the source's metadata under a new doc id.
- `grow` builds the corpus sizes: the course alone; plus the garbled copy; plus the first
  1, 3, 5 … of Chroma's corpora as distractor documents.
- The prune rules work on chunks: `superseded` (metadata says a later document replaced it,
  or it took effect before a cutoff; the rule of `ragkit.retrieve.filters.Filter`), `looks_garbled`
  (a long chunk with no line break and no pipe but many digits: a flattened table) or empty
  (whitespace only, as the linter's ``empty`` check), and `dedupe` (the same text after
  whitespace normalisation: the newest document's copy by ``effective_date`` is kept).
- `measure` runs `ragkit.experiments.run_experiment` on each corpus size, pruned and not, and
  returns a tidy table plus the per-query recall at a fixed budget for paired comparisons;
  `measure_rules` applies each rule alone to one index, so each rule is decided on its own.

Gold text in a pruned document is still scored: pruning removes chunks from the index, not
documents from the benchmark, so a question whose gold lies in a superseded document loses
its recall (pruning has a cost, and the measurement shows it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..retrieve.filters import Catalog
from ..types import Chunk, Document, as_date, effective_date

_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$", re.M)


def garble(doc: Document, new_id: str | None = None) -> Document:
    """A badly extracted copy of `doc`: table separator rows and pipes removed, all whitespace
    (line breaks included) collapsed to single spaces. Same metadata, new doc id
    (``<id>-extracted`` by default)."""
    new_id = new_id or f"{doc.id}-extracted"
    text = _SEPARATOR.sub(" ", doc.text).replace("|", " ")
    text = re.sub(r"\s+", " ", text).strip()
    meta = dict(doc.metadata)
    if "doc_id" in meta:
        meta["doc_id"] = new_id
    return Document(id=new_id, text=text, metadata=meta)


def grow(course: Sequence[Document], distractors: Sequence[Document],
         garbled: Document | None = None, n_distractors: Sequence[int] = (1, 3, 5)
         ) -> dict[str, list[Document]]:
    """Corpus sizes, smallest first: ``course``; ``+ garbled table`` (when given); then
    ``+ N distractors`` for each N (the first N of `distractors`, on top of the garbled copy).
    """
    sizes = {"course": list(course)}
    base = list(course) + ([garbled] if garbled is not None else [])
    if garbled is not None:
        sizes["+ garbled table"] = base
    for n in n_distractors:
        if n <= len(distractors):
            name = f"+ {n} distractor {'corpus' if n == 1 else 'corpora'}"
            sizes[name] = base + list(distractors[:n])
    return sizes


def superseded(meta: Mapping[str, Any], catalog: Catalog, before: str | None = None) -> bool:
    """True when the metadata says the document is replaced (``superseded_by``, as
    `Catalog.filter()` reads it) or, with `before` (ISO date), took effect before it."""
    if not catalog.filter()(meta):
        return True
    date, day = effective_date(meta), as_date(before or None)
    return bool(day and date and date < day)


def looks_garbled(text: str, min_chars: int = 300, min_digit_share: float = 0.03) -> bool:
    """A flattened table: at least `min_chars` characters with no line break and no pipe,
    of which at least `min_digit_share` are digits. Also True for an empty chunk."""
    body = text.strip()
    if not body:
        return True
    if len(body) < min_chars or "\n" in body or "|" in body:
        return False
    return sum(ch.isdigit() for ch in body) / len(body) >= min_digit_share


def _newer(a, b) -> bool:
    """Whether date `a` is newer than date `b` (None: undated, older than any date)."""
    return a is not None and (b is None or a > b)


def _normal(text: str) -> str:
    return " ".join(text.split())


def dedupe(chunks: Sequence[Chunk], dates: Mapping[str, Any]) -> list[Chunk]:
    """Drop chunks whose whitespace-normalised text repeats another's; of each group the
    chunk of the newest document (`dates`: doc id -> ``effective_date``, a date or as
    written; an undated document is older than any dated one) is kept, the first one on a
    tie. Order is preserved."""
    day = {d: as_date(v or None) for d, v in dates.items()}
    best: dict[str, Chunk] = {}
    for c in chunks:
        key = _normal(c.text)
        kept = best.get(key)
        if kept is None or _newer(day.get(c.doc_id), day.get(kept.doc_id)):
            best[key] = c
    keep = {id(c) for c in best.values()}
    return [c for c in chunks if id(c) in keep]


@dataclass
class Pruned:
    """The chunks kept and how many each rule dropped."""

    chunks: list[Chunk]
    dropped: dict[str, int] = field(default_factory=dict)


RULES = ("superseded", "garbled or empty", "duplicate")  # in the order `prune` applies them


def prune(chunks: Sequence[Chunk], docs: Sequence[Document], before: str | None = None,
          rules: Sequence[str] = RULES) -> Pruned:
    """Apply the `rules` (all three by default) in `RULES` order: superseded / out-of-date
    documents, garbled or empty chunks, duplicate text. `dropped` counts each rule applied."""
    unknown = set(rules) - set(RULES)
    if unknown:
        raise ValueError(f"unknown prune rule(s) {sorted(unknown)}; the rules are {RULES}")
    catalog = Catalog(docs)
    meta = {d.id: {**d.metadata, "doc_id": d.id} for d in docs}
    steps = {"superseded": lambda cs: [c for c in cs if not superseded(
                 meta.get(c.doc_id, {}), catalog, before)],
             "garbled or empty": lambda cs: [c for c in cs if not looks_garbled(c.text)],
             "duplicate": lambda cs: dedupe(cs, {d: effective_date(m) for d, m in meta.items()})}
    kept, dropped = list(chunks), {}
    for rule in RULES:
        if rule in rules:
            after = steps[rule](kept)
            dropped[rule], kept = len(kept) - len(after), after
    return Pruned(kept, dropped)


@dataclass
class PruningResult:
    """`table`: one row per corpus size and pruning (size, pruned, n_docs, n_chunks, chunks
    dropped by rule, mean recall@B<budget>); `values[(size, pruned)]`: the per-query values,
    in the same query order for every run."""

    table: Any  # pandas DataFrame
    values: dict[tuple[str, bool], Any]
    outcomes: dict[tuple[str, bool], Any]
    budget: int

    def versus(self, a: tuple[str, bool], b: tuple[str, bool], on=None):
        """`ragkit.evaluate.versus` of run `a` against run `b` (same queries; only the
        query ids `on` when given)."""
        from ..evaluate.runs import versus

        return versus(self.values[a], self.values[b], on=on)


def measure(sizes: Mapping[str, Sequence[Document]], queries: Sequence, chunker, embedder,
            budget: int = 1024, before: str | None = None) -> PruningResult:
    """Recall@B`budget` of `queries` (those with gold) on each corpus size, unpruned and
    pruned. Chunks are made once per document and shared between sizes."""
    import pandas as pd

    from ..evaluate.benchmarks import Benchmark
    from .pipeline import run_experiment

    answerable = [q for q in queries if q.gold]
    made: dict[str, list[Chunk]] = {}
    rows, values, outcomes = [], {}, {}
    for label, docs in sizes.items():
        for d in docs:
            if d.id not in made:
                made[d.id] = chunker.chunk_all([d])
        chunks = [c for d in docs for c in made[d.id]]
        bench = Benchmark("course", list(docs), answerable)
        for pruned in (False, True):
            p = prune(chunks, docs, before) if pruned else Pruned(chunks, {})
            out = run_experiment(bench, chunker, embedder, k=5, chunks=p.chunks,
                                 budgets=(budget,), label=chunker.label)
            vals = out.values("recall", budget).reindex([q.id for q in answerable])
            values[label, pruned], outcomes[label, pruned] = vals, out
            rows.append({"size": label, "pruned": pruned, "n_docs": len(docs),
                         "n_chunks": len(p.chunks), **{f"dropped: {k}": v
                                                       for k, v in p.dropped.items()},
                         f"recall@B{budget}": float(vals.mean())})
    return PruningResult(pd.DataFrame(rows).fillna(0), values, outcomes, budget)


def measure_rules(docs: Sequence[Document], queries: Sequence, chunker, embedder,
                  budget: int = 1024, before: str | None = None) -> dict[str, tuple[Any, int]]:
    """Each prune rule applied alone to the index of `docs`: rule -> (per-query recall@B
    `budget`, in `queries` order as `measure`'s values, chunks the rule drops). Compare each
    with `measure`'s unpruned values at the same size to read one rule at a time."""
    from ..evaluate.benchmarks import Benchmark
    from .pipeline import run_experiment

    answerable = [q for q in queries if q.gold]
    chunks = chunker.chunk_all(list(docs))
    bench = Benchmark("course", list(docs), answerable)
    out = {}
    for rule in RULES:
        p = prune(chunks, docs, before, rules=(rule,))
        run = run_experiment(bench, chunker, embedder, k=5, chunks=p.chunks,
                             budgets=(budget,), label=chunker.label)
        out[rule] = (run.values("recall", budget).reindex([q.id for q in answerable]),
                     p.dropped[rule])
    return out


def gold_in_superseded(queries: Sequence, docs: Sequence[Document], before: str | None = None
                       ) -> set[str]:
    """Ids of the questions with a gold span in a document the `superseded` rule drops: the
    questions pruning by metadata cannot serve any more."""
    catalog = Catalog(docs)
    gone = {d.id for d in docs if superseded({**d.metadata, "doc_id": d.id}, catalog, before)}
    return {q.id for q in queries if any(g.doc_id in gone for g in q.gold)}


def verdict(more_vs_fewer) -> str:
    """The seed's claim that more documents can hurt retrieval, judged from a paired
    comparison of the largest corpus against the smallest: "held" when the largest is
    measurably worse, "not held" when measurably better, else "no measurable difference"."""
    if more_vs_fewer.high < 0:
        return "held"
    if more_vs_fewer.low > 0:
        return "not held"
    return "no measurable difference"
