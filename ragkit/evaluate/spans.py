"""Character spans: their arithmetic (`union`, `intersect`, `subtract`) and the span metrics
of one query (`span_scores`, `precision_omega`, `covered_fraction`), as `ragkit.evaluate.metrics`
defines them.

    >>> span_scores([(0, 10)], [(5, 15)])["recall"]
    0.5
"""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable, Mapping, Sequence

from ..types import Chunk, Copy, Span, merge_gold
from .copies import copy_spans, onto_gold

Range = tuple[int, int]


def union(ranges: Iterable[Range]) -> list[Range]:
    """Merge overlapping or touching ranges. ``union([(0,2),(1,4),(6,7)]) -> [(0,4),(6,7)]``"""
    out: list[list[int]] = []
    for s, e in sorted(ranges):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def total(ranges: Iterable[Range]) -> int:
    return sum(e - s for s, e in ranges)


def intersect(a: Range, b: Range) -> Range | None:
    s, e = max(a[0], b[0]), min(a[1], b[1])
    return (s, e) if s < e else None


def subtract(ranges: Iterable[Range], cut: Range) -> list[Range]:
    out = []
    for s, e in ranges:
        if cut[1] <= s or cut[0] >= e:
            out.append((s, e))
            continue
        if s < cut[0]:
            out.append((s, cut[0]))
        if cut[1] < e:
            out.append((cut[1], e))
    return out


def span_scores(retrieved: Sequence[Range], gold: Sequence[Range]) -> dict[str, float]:
    """Chroma's per-query recall, precision and IoU for one document's ranges.

    (Use `query_span_scores` for chunks and gold spread over several documents.)"""
    return _span_scores([("d", s, e) for s, e in retrieved], [("d", s, e) for s, e in gold])


def _span_scores(retrieved: Sequence[tuple[str, int, int]], gold: Sequence[tuple[str, int, int]],
                 copies: Sequence[Copy] = ()) -> dict[str, float]:
    """recall / precision / IoU; with `copies` (`ragkit.evaluate.copies`), a retrieved copy of
    a gold unit supplies its gold characters (each gold character counted once), while the
    retrieved length stays what was retrieved."""
    gold = [(g.doc_id, g.start, g.end) for g in merge_gold([Span(*g) for g in gold])]
    hits: dict[str, list[Range]] = defaultdict(list)
    unused: dict[str, list[Range]] = defaultdict(list)
    for d, s, e in gold:
        unused[d].append((s, e))
    for d, cs, ce in list(retrieved) + onto_gold(retrieved, copies):
        for gd, gs, ge in gold:
            if gd != d:
                continue
            x = intersect((cs, ce), (gs, ge))
            if x:
                hits[d].append(x)
                unused[d] = subtract(unused[d], x)
    numerator = sum(total(union(v)) for v in hits.values())
    gold_len = sum(e - s for _, s, e in gold)
    retrieved_len = sum(e - s for _, s, e in retrieved)
    missed = sum(total(v) for v in unused.values())
    return {
        "recall": numerator / gold_len if gold_len else 0.0,
        "precision": numerator / retrieved_len if retrieved_len else 0.0,
        "iou": numerator / (retrieved_len + missed) if (retrieved_len + missed) else 0.0,
    }


def precision_omega(chunks_by_doc: Mapping[str, Sequence[Chunk]], gold: Sequence[Span]) -> float:
    """Chroma's precision_Ω: the best precision this chunking allows for this query.

    As upstream computes it, a chunk that merely *touches* a gold span (its end is the span's
    start, or its start the span's end) counts as intersecting it: its characters join the
    denominator although it adds nothing to the numerator (upstream's range intersection
    accepts an empty overlap).

    >>> c = [Chunk("d", 0, 5, "abcde", "x"), Chunk("d", 5, 10, "fghij", "x")]
    >>> precision_omega({"d": c}, [Span("d", 0, 5)])  # the second chunk touches the gold
    0.5
    """
    hits: dict[str, list[Range]] = defaultdict(list)
    touched: dict[str, list[Range]] = defaultdict(list)
    unused: dict[str, list[Range]] = defaultdict(list)
    for g in gold:
        unused[g.doc_id].append((g.start, g.end))
    for doc_id in {g.doc_id for g in gold}:
        for c in chunks_by_doc.get(doc_id, ()):
            for g in gold:
                if g.doc_id != doc_id:
                    continue
                if c.end < g.start or g.end < c.start:
                    continue
                touched[doc_id].append((c.start, c.end))  # touching counts (upstream's rule)
                x = intersect((c.start, c.end), (g.start, g.end))
                if x:
                    hits[doc_id].append(x)
                    unused[doc_id] = subtract(unused[doc_id], x)
    num = sum(total(union(v)) for v in hits.values())
    den = sum(total(union(touched[d] + unused[d])) for d in set(touched) | set(unused))
    return num / den if num and den else 0.0


def overlaps(chunk: Chunk, gold: Sequence[Span], copies: Sequence[Copy] = ()) -> bool:
    """Whether `chunk`'s body shares characters with a gold span or with one of its `copies`."""
    return any(g.doc_id == chunk.doc_id and intersect(chunk.span, (g.start, g.end))
               for g in list(gold) + copy_spans(copies))


def _ink(text: str) -> int:
    """Non-whitespace characters in `text`."""
    return len("".join(text.split()))


def covered_fraction(unit: Span, chunks: Sequence[Chunk], text: str | None = None,
                     copies: Sequence[Copy] = ()) -> float:
    """The fraction of a gold unit inside the union of `chunks` (and, through `copies`, of
    the gold characters their copies supply: `ragkit.evaluate.copies`).

    With the document's `text`, whitespace is left out of both counts: chunkers trim the blank
    lines between chunks, and a unit spanning two paragraphs is whole when both chunks are
    there, whatever happened to the blank line between them. Without it, every character counts.
    """
    spans = [(c.doc_id, *c.span) for c in chunks]
    spans += onto_gold(spans, [cp for cp in copies if cp.gold == unit])
    parts = union([x for d, s, e in spans if d == unit.doc_id
                   for x in [intersect((s, e), (unit.start, unit.end))] if x])
    if text is not None:
        need = _ink(text[unit.start:unit.end])
        if need:
            return sum(_ink(text[a:b]) for a, b in parts) / need
    return total(parts) / len(unit) if len(unit) else 0.0


def exact_pass(units: Sequence[Span], chunks: Sequence[Chunk], texts: Mapping[str, str]) -> float:
    """Anthropic's Pass@k rule for one question: the share of its gold units whose text equals
    the text of one of `chunks` (the top k). ragkit's rule (`covered_fraction` of the union of
    the top k, whitespace aside) agrees with it wherever the retrieved units are the gold's own
    non-overlapping chunks, as on Anthropic's set; on other chunks only the span rule applies.

    >>> from ragkit.types import Document
    >>> d = "alpha beta gamma"
    >>> g = [Span("d", 0, 10)]
    >>> exact_pass(g, [Chunk.make(Document("d", d), 0, 10, "t")], {"d": d})
    1.0
    >>> exact_pass(g, [Chunk.make(Document("d", d), 0, 16, "t")], {"d": d})  # holds it, not it
    0.0
    """
    got = {c.text for c in chunks}
    return sum(texts[u.doc_id][u.start:u.end] in got for u in units) / len(units) if units \
        else 0.0


def subtract_all(ranges: Iterable[Range], cuts: Iterable[Range]) -> list[Range]:
    """`ranges` minus every range of `cuts`. ``subtract_all([(0, 10)], [(2, 4)]) -> [(0, 2), (4, 10)]``"""
    out = [r for r in ranges if r[1] > r[0]]
    for cut in cuts:
        out = subtract(out, cut)
    return [r for r in out if r[1] > r[0]]
