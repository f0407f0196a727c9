"""Identical text earns the gold's credit: the one rule for passages a corpus holds twice.

Corpora repeat passages word for word (Chroma's finance corpus holds some two to six times),
and a golden set anchors each answer to one of the copies. A retriever that returns another
copy hands the model the same words, so every span metric credits it as the gold:

- **identical** means the same words in the same order with only whitespace between them
  (`ragkit.text.locate`'s rule: each run of whitespace may differ, the words may not), in any
  document of the corpus, at a place that does not overlap the gold itself;
- a gold unit is looked for only when it holds at least `MIN_COPY_CHARS` non-whitespace
  characters, so a short phrase ("net income") does not match everywhere;
- a retrieved character inside a copy is mapped onto the gold character it repeats
  (`onto_gold`), and the metrics count gold characters once, whichever copy supplied them:
  recall, pass, hit and IoU at a budget and at k, precision's numerator, precision@k, MRR and
  nDCG. precision_Ω (the best precision the chunking allows) and doc_hit@k (a document-level
  metric) read the gold's own place only.

`attach_copies` fills `Query.copies` for a corpus; `ragkit.evaluate.benchmarks.Benchmark` calls
it for every benchmark, so no loader can forget it.

    >>> from ragkit.types import Document, Query, Span
    >>> docs = [Document("d", "Refunds take 14 days to arrive.  Refunds take 14 days\\nto arrive.")]
    >>> q, = attach_copies([Query("q", "?", (Span("d", 0, 31),))], docs)
    >>> [(c.start, c.end, len(c.runs)) for c in q.copies]  # one newline where the gold has a space
    [(33, 64, 6)]
    >>> from ragkit.evaluate.spans import union
    >>> union((s, e) for _, s, e in onto_gold([("d", 33, 64)], q.copies))  # the whole gold
    [(0, 31)]
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Iterable, Mapping, Sequence

from ..types import Copy, Document, Query, Span

MIN_COPY_CHARS = 20  # non-whitespace characters a gold unit needs before its copies count
RULE = (f"a retrieved place holding a gold unit's words in order, with only whitespace between "
        f"them (any run of whitespace), earns that unit's credit; gold units of at least "
        f"{MIN_COPY_CHARS} non-whitespace characters")

Triple = tuple[str, int, int]


def _words(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in re.finditer(r"\S+", text)]


def _runs(gold: Span, gold_text: str, start: int, copy_text: str
          ) -> tuple[tuple[int, int, int, int], ...]:
    """The character runs pairing a copy at `start` with the gold (see `Copy`)."""
    if copy_text == gold_text:
        return ((start, start + len(copy_text), gold.start, gold.end),)
    g, c = _words(gold_text), _words(copy_text)
    ends_g = [s for s, _ in g[1:]] + [len(gold_text)]
    ends_c = [s for s, _ in c[1:]] + [len(copy_text)]
    return tuple((start + cs, start + ce, gold.start + gs, gold.start + ge)
                 for (cs, _), ce, (gs, _), ge in zip(c, ends_c, g, ends_g))


def find_copies(gold: Span, texts: Mapping[str, str]) -> list[Copy]:
    """Every other place in `texts` (doc id -> text) holding `gold`'s words (module doc)."""
    gold_text = texts[gold.doc_id][gold.start:gold.end]
    words = gold_text.split()
    if sum(map(len, words)) < MIN_COPY_CHARS:
        return []
    pattern = None
    out = []
    for doc_id in sorted(texts):
        text = texts[doc_id]
        if words[0] not in text or words[-1] not in text:
            continue
        if pattern is None:
            pattern = re.compile(r"\s+".join(map(re.escape, words)))
        for m in pattern.finditer(text):
            s, e = m.span()
            if doc_id == gold.doc_id and s < gold.end and gold.start < e:
                continue  # the gold itself
            out.append(Copy(gold, doc_id, s, e, _runs(gold, gold_text, s, m.group())))
    return out


def attach_copies(queries: Iterable[Query], documents: Sequence[Document]) -> list[Query]:
    """`queries` with `Query.copies` found in `documents` (replacing any they had: a copy in a
    document no longer in the corpus does not count)."""
    texts = {d.id: d.text for d in documents}
    memo: dict[Span, list[Copy]] = {}
    out = []
    for q in queries:
        copies = []
        for g in q.gold:
            if g.doc_id in texts:
                if g not in memo:
                    memo[g] = find_copies(g, texts)
                copies += memo[g]
        out.append(q if not copies and not q.copies else replace(q, copies=tuple(copies)))
    return out


def onto_gold(ranges: Iterable[Triple], copies: Sequence[Copy]) -> list[Triple]:
    """The gold characters that `ranges` (doc id, start, end) supply through `copies`: each
    retrieved character inside a copy mapped onto the gold character it repeats (a whole run
    onto its whole gold run, so the whitespace between two credited words is credited too)."""
    out: list[Triple] = []
    if not copies:
        return out
    for d, s, e in ranges:
        for cp in copies:
            if cp.doc_id != d or e <= cp.start or cp.end <= s:
                continue
            for cs, ce, gs, ge in cp.runs:
                a, b = max(s, cs), min(e, ce)
                if a >= b:
                    continue
                if a == cs and b == ce:
                    out.append((cp.gold.doc_id, gs, ge))
                else:
                    x, y = min(ge, gs + a - cs), min(ge, gs + b - cs)
                    if x < y:
                        out.append((cp.gold.doc_id, x, y))
    return out


def copy_spans(copies: Sequence[Copy]) -> list[Span]:
    """The copies' own places, as spans (what a unit must overlap to be relevant)."""
    return [Span(c.doc_id, c.start, c.end) for c in copies]
