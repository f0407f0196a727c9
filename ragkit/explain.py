"""Look inside one question: where the gold sits, how the chunker cut it, what came back.

These helpers make the course's failure stories computed rather than told:

- `diagnose` says, from the spans alone, why a query failed: the gold was *split* across chunks
  (no single chunk holds it), *missed* (nothing in the top k touches it), *partial* (the top k
  hold only part of it) or *ok*;
- `chunk_view` renders the text around a gold span as HTML with the chunk boundaries drawn in
  and the gold highlighted, so a reader sees the cut;
- `hits_table` lists what a retriever returned, marking the chunks that overlap the gold.
"""

from __future__ import annotations

import html
from typing import Sequence

from .evaluate import covered_fraction, intersect, overlaps
from .retrieve import Hit
from .types import Chunk, Document, Query, Span


def chunks_touching(span: Span, chunks: Sequence[Chunk]) -> list[Chunk]:
    return [c for c in chunks if c.doc_id == span.doc_id and intersect(c.span, (span.start,
                                                                                 span.end))]


def diagnose(query: Query, chunks: Sequence[Chunk], hits: Sequence[Hit], k: int) -> dict:
    """Why did this query succeed or fail? Computed from spans, per the module docstring."""
    top = [h.chunk for h in hits[:k]]
    pieces = [len(chunks_touching(g, chunks)) for g in query.gold]
    whole = all(any(c.start <= g.start and g.end <= c.end for c in chunks_touching(g, chunks))
                for g in query.gold)
    ranks = [i + 1 for i, h in enumerate(hits) if overlaps(h.chunk, query.gold)]
    coverage = (sum(covered_fraction(g, top) * len(g) for g in query.gold)
                / max(1, sum(len(g) for g in query.gold)))
    if coverage >= 1.0:
        verdict = "ok"
    elif not whole:
        verdict = "split"
    elif not ranks or ranks[0] > k:
        verdict = "missed"
    else:
        verdict = "partial"
    return {"query_id": query.id, "gold_pieces": max(pieces) if pieces else 0,
            "gold_in_one_chunk": whole, "first_relevant_rank": ranks[0] if ranks else None,
            "top_k_coverage": round(coverage, 3), "verdict": verdict}


def hits_table(query: Query, hits: Sequence[Hit], k: int = 3, width: int = 90):
    """A DataFrame of the top k: rank, doc, score, overlaps gold, and the start of the text."""
    import pandas as pd

    rows = []
    for i, h in enumerate(hits[:k]):
        snippet = " ".join(h.chunk.text.split())
        rows.append({"rank": i + 1, "doc_id": h.chunk.doc_id, "score": round(h.score, 3),
                     "has_gold": overlaps(h.chunk, query.gold),
                     "text": snippet[:width] + ("…" if len(snippet) > width else "")})
    return pd.DataFrame(rows)


_COLORS = ("#e8f0fe", "#fef3e0")


def chunk_view(doc: Document, chunks: Sequence[Chunk], span: Span, context: int = 400) -> str:
    """HTML: the text around `span`, chunk boundaries as coloured bands, gold in bold red.

    Overlapping chunks (e.g. 1000/200) are drawn as their own rows so every cut is visible.
    """
    lo, hi = max(0, span.start - context), min(len(doc.text), span.end + context)
    near = [c for c in chunks if c.doc_id == doc.id and c.end > lo and c.start < hi]
    rows = []
    for n, c in enumerate(sorted(near, key=lambda c: c.start)):
        s, e = max(lo, c.start), min(hi, c.end)
        pre = html.escape(doc.text[lo:s])
        body = _mark(doc.text, s, e, span)
        gold_inside = c.start <= span.start and span.end <= c.end
        label = (f"chunk {n + 1}: chars {c.start}–{c.end}"
                 + (" · holds all the gold" if gold_inside else ""))
        rows.append(
            f"<div style='margin:4px 0'><div style='font:11px sans-serif;color:#555'>{label}"
            f"</div><pre style='white-space:pre-wrap;margin:0;font-size:12px'>"
            f"<span style='color:#bbb'>{pre}</span><span style='background:"
            f"{_COLORS[n % 2]}'>{body}</span></pre></div>")
    return "".join(rows)


def _mark(text: str, s: int, e: int, span: Span) -> str:
    a, b = max(s, span.start), min(e, span.end)
    if a >= b:
        return html.escape(text[s:e])
    return (html.escape(text[s:a]) + "<b style='color:#b00020'>" + html.escape(text[a:b])
            + "</b>" + html.escape(text[b:e]))
