"""Metadata filters, applied before the search, and filters read off the question itself.

A question such as "In the EU, what is the daily meal limit?" has one right document among
several that look alike; similarity alone cannot tell the EU policy from the US one. The fix
is to filter by metadata *before* the vector (or BM25) search, so the k results all come from
documents that can be right.

`Catalog` knows the corpus's metadata and builds filters:

- ``region``: the document's region, or ``global``; ``product``: the product, or ``all``;
  ``doc_type``: exact;
- ``as_of`` (a date): documents in force that day — effective on or before it, and not yet
  replaced by the document named in ``superseded_by``; without ``as_of``, superseded documents
  are excluded (``include_superseded=True`` keeps them);
- dates are compared as dates: ``as_of`` and each document's ``effective_date`` (written
  ``YYYY-MM-DD``) are read by `ragkit.types.as_date` / `ragkit.types.effective_date`; an
  undated document is in force whatever the day.

`Catalog.read_question` is self-querying by rules: it looks for the corpus's known regions,
products and years in the question and returns the filter it implies. `Catalog.readings`
handles ambiguity: when the best hits of an unfiltered search come from several documents with
close scores and the question names nothing that separates them, it returns one candidate
reading per document instead of a single guess (the "90-day rule" problem).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..types import Document, as_date, effective_date

REGION_WORDS = {
    "eu": ("eu", "european union", "europe", "european", "eu-hosted", "germany", "france",
           "netherlands", "sepa"),
    "us": ("us", "u.s.", "united states", "usa", "american", "us-issued", "new york",
           "san francisco"),
    "uk": ("uk", "united kingdom", "britain", "british", "england"),
    "apac": ("apac", "asia-pacific", "asia pacific", "singapore", "australia", "japan"),
}
PRODUCT_WORDS = {
    "northwind-pay": ("northwind pay", "pay merchant", "payment processing"),
    "northwind-edge": ("northwind edge", "edge device", "edge gateway", "edge sensor"),
    "northwind-suite": ("northwind suite",),
}


@dataclass
class Filter:
    """A metadata filter; `where` is what `VectorIndex.search` / the retrievers take."""

    region: str | None = None
    product: str | None = None
    doc_type: str | None = None
    as_of: str | None = None
    include_superseded: bool = False
    # doc_id -> the date its successor took effect (None: undated)
    successors: Mapping[str, Any] = field(default_factory=dict)

    def __call__(self, meta: Mapping[str, Any]) -> bool:
        if self.region and meta.get("region") not in (self.region, "global", None):
            return False
        if self.product and meta.get("product") not in (self.product, "all", None):
            return False
        if self.doc_type and meta.get("doc_type") != self.doc_type:
            return False
        replaced_by = meta.get("superseded_by")
        if self.as_of:
            day, date = as_date(self.as_of), effective_date(meta)
            if date and date > day:
                return False  # not yet in force
            successor_date = as_date(self.successors.get(str(meta.get("doc_id"))))
            if replaced_by and successor_date and successor_date <= day:
                return False  # already replaced that day
        elif replaced_by and not self.include_superseded:
            return False
        return True

    def describe(self) -> dict[str, Any]:
        return {k: v for k, v in (("region", self.region), ("product", self.product),
                                  ("doc_type", self.doc_type), ("as_of", self.as_of)) if v}

    def __repr__(self) -> str:  # stable, so identical filters batch together
        return f"Filter({self.describe()}, superseded={self.include_superseded})"


@dataclass
class Reading:
    """One candidate interpretation of an ambiguous question."""

    doc_id: str
    title: str
    score: float
    filter: Filter


class Catalog:
    """The corpus's metadata: builds filters and reads them off questions."""

    def __init__(self, docs: Sequence[Document]):
        self.meta = {d.id: dict(d.metadata) for d in docs}
        dates = {d: effective_date(m) for d, m in self.meta.items()}
        self.successors = {d: dates.get(str(m.get("superseded_by")))
                           for d, m in self.meta.items() if m.get("superseded_by")}
        self.regions = sorted({str(m.get("region")) for m in self.meta.values()
                               if m.get("region") not in (None, "global")})
        self.products = sorted({str(m.get("product")) for m in self.meta.values()
                                if m.get("product") not in (None, "all")})

    def filter(self, region: str | None = None, product: str | None = None,
               doc_type: str | None = None, as_of: str | None = None,
               include_superseded: bool = False) -> Filter:
        return Filter(region, product, doc_type, as_of, include_superseded, self.successors)

    def from_context(self, context: Mapping[str, Any]) -> Filter:
        """The filter a golden question's context asks for (the 'oracle' filter)."""
        return self.filter(context.get("region"), context.get("product"),
                           context.get("doc_type"), context.get("as_of"))

    def read_question(self, question: str) -> Filter:
        """Self-querying by rules: known regions, products and years named in the question."""
        q = " " + question.lower() + " "

        def names(word: str) -> bool:
            if len(word) <= 4 and word.replace(".", "").isalpha():  # US, EU, UK: capitals only,
                return re.search(rf"(?<![\w-]){re.escape(word.upper())}(?![\w])", question) \
                    is not None                                   # so "tell us" is no region
            return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", q) is not None

        region = next((r for r in self.regions for w in REGION_WORDS.get(r, (r,)) if names(w)),
                      None)
        product = next((p for p in self.products for w in PRODUCT_WORDS.get(p, (p,))
                        if w in q), None)
        as_of = None
        year = re.search(r"\b(?:in|during|of|from)\s+(?:mid-|early |late )?(20\d\d)\b", q)
        if year:
            y = year.group(1)
            as_of = f"{y}-06-30" if "mid-" in year.group(0) else f"{y}-12-31"
        return self.filter(region, product, None, as_of)

    def readings(self, question: str, hits: Sequence, margin: float = 0.25,
                 max_readings: int = 5) -> list[Reading]:
        """Candidate readings of a question, from an unfiltered search's ranked hits.

        A question that names a region, product or year has one reading. Otherwise the
        candidates are (1) every document among the hits scoring at least ``(1 - margin)`` of
        the best score, and (2) the variants of the best document — documents with the same
        title for another region — each with a filter that selects it. More than one reading
        means: ask, or answer for each.
        """
        if not hits:
            return []
        named = self.read_question(question)
        best = hits[0].score
        cutoff = best * (1 - margin) if best > 0 else best - margin
        seen: dict[str, Reading] = {}

        def add(doc_id: str, score: float, flt: Filter) -> None:
            if doc_id not in seen and len(seen) < max_readings:
                title = str(self.meta.get(doc_id, {}).get("title", doc_id))
                seen[doc_id] = Reading(doc_id, title, score, flt)

        for h in hits:
            if h.score < cutoff:
                break
            add(h.chunk.doc_id, h.score, named)
        if named.describe():
            return list(seen.values())[:1]
        top = self.meta.get(hits[0].chunk.doc_id, {})
        for doc_id, m in sorted(self.meta.items()):
            if (m.get("title") == top.get("title") and m.get("region") != top.get("region")
                    and not m.get("superseded_by")):
                add(doc_id, float("nan"), self.filter(region=m.get("region")))
        return list(seen.values())


def readings_report(queries: Sequence, hits_by_query: Mapping[str, Sequence], catalog: Catalog,
                    margin: float = 0.25):
    """Per question: the readings found, and how many of the gold documents they name.

    For ambiguous questions we want several readings covering every gold document; for the
    others one reading (or at least the gold document among them)."""
    import pandas as pd

    rows = []
    for q in queries:
        readings = catalog.readings(q.text, hits_by_query[q.id], margin)
        gold_docs = {g.doc_id for g in q.gold}
        found = {r.doc_id for r in readings}
        rows.append({"query_id": q.id, "type": q.type, "readings": len(readings),
                     "gold_docs": len(gold_docs),
                     "gold_docs_named": len(gold_docs & found) / len(gold_docs) if gold_docs
                     else float("nan"),
                     "flagged_ambiguous": len(readings) > 1,
                     "documents": ", ".join(sorted(found))})
    return pd.DataFrame(rows)


def filter_flips(queries: Sequence, catalog: Catalog, before, after,
                 read: Any = None, metric: str = "pass@k"):
    """The questions whose per-query `metric` differs between two runs of the same questions
    (`ragkit.experiments.Outcome`: `before` without a filter, `after` with one), one row each:
    the question in full, the filter the golden set needs, the filter `read(query)` returned
    (``Catalog.read_question`` by default), whether that filter keeps every gold document
    (``gold kept``: False means the right document was never searched), both values and
    ``change``: ``fixed`` (the filter raised the metric) or ``broken`` (it lowered it).
    Fixed questions first, then broken ones, each in question order."""
    import pandas as pd

    read = read or (lambda q: catalog.read_question(q.text))
    a, b = before.values(metric), after.values(metric)
    rows = []
    for q in queries:
        if q.id not in a.index or q.id not in b.index or abs(b[q.id] - a[q.id]) < 1e-12:
            continue
        flt = read(q)
        gold_docs = sorted({g.doc_id for g in q.gold})
        kept = all(flt({**catalog.meta.get(d, {}), "doc_id": d}) for d in gold_docs)
        rows.append({"query_id": q.id, "question": q.text, "needs": dict(q.context),
                     "read": flt.describe(), "gold_docs": ", ".join(gold_docs),
                     "gold kept": kept, "before": float(a[q.id]), "after": float(b[q.id]),
                     "change": "fixed" if b[q.id] > a[q.id] else "broken"})
    columns = ["query_id", "question", "needs", "read", "gold_docs", "gold kept", "before",
               "after", "change"]
    out = pd.DataFrame(rows, columns=columns)
    return out.sort_values("change", key=lambda s: s.map({"fixed": 0, "broken": 1}),
                           kind="stable").reset_index(drop=True)


def readings_summary(report) -> dict[str, float]:
    """The three numbers of a `readings_report`: the share of ambiguous questions flagged as
    ambiguous, the share of their gold documents the readings name, and the share of the
    other questions wrongly flagged (with how many questions each share is over)."""
    amb = report[report.type == "ambiguous"]
    other = report[report.type != "ambiguous"]
    nan = float("nan")
    return {"ambiguous_flagged": float(amb.flagged_ambiguous.mean()) if len(amb) else nan,
            "ambiguous_gold_docs_named": float(amb.gold_docs_named.mean()) if len(amb) else nan,
            "unambiguous_flagged": float(other.flagged_ambiguous.mean()) if len(other) else nan,
            "n_ambiguous": float(len(amb)), "n_unambiguous": float(len(other))}


def flip_reason(query, read: Filter, gold_kept: bool, change: str) -> str:
    """Why a filter fixed or broke one question (a row of `filter_flips`), in a sentence,
    from what the filter read and whether it kept the gold document."""
    if not gold_kept:
        missed = ("the date" if "as_of" in query.context and not read.as_of else
                  "the region" if "region" in query.context and not read.region else
                  "the constraint")
        return (f"Why it {'broke' if change == 'broken' else 'changed'}: the rules did not read "
                f"{missed} the question needs, so the filter fell back to its default (current "
                "documents only, superseded ones excluded) and removed the gold document from "
                "the search. The rules read a year only after \"in\", \"during\", \"of\" or "
                "\"from\". A filter is only as good as its reading of the question.")
    if change == "fixed":
        return ("Why it was fixed: the filter removed chunks of other documents that outranked "
                "the gold, and kept the gold document.")
    return ("Why it broke: the gold document was still searched, but among the filtered chunks "
            "it ranked lower than before.")
