"""The context budget: what reaches the model, at most B tokens of one reference tokenizer.

Budgeted metrics (the course's primary view): what reaches the model is a context of at most
B tokens of one reference tokenizer (cl100k_base, whatever the embedder), filled by `pack_context`
with hits in rank order. Overlapping hits are merged (a parent and its child count once); a
hit's prefix (breadcrumb, preamble) counts against the budget; the last hit is cut at the
budget. On that context, per query (`budget_scores`): recall@B, precision@B, IoU@B (on body
characters, each counted once), pass@B (share of gold units wholly in the context, whitespace
ignored) and hit@B (1 when every gold unit is). For paged documents (PDFs), page_hit@B
(`page_hit`): 1 when the context holds text from a page a gold unit lies on, the right page
found whatever the span. Strategies compare at equal B (`BUDGETS`), not at equal k.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Mapping, Sequence

import numpy as np

from ..text.tokens import count_tokens as _count
from ..types import Chunk, Query, Span
from .spans import Range, _span_scores, covered_fraction, subtract_all, union

BUDGETS = (256, 512, 1024, 2048, 4096)   # cl100k_base tokens
DEFAULT_BUDGET = 1024
REFERENCE_TOKENIZER = "cl100k_base"
BUDGET_METRICS = ("recall", "precision", "iou", "pass", "hit", "tokens")


@dataclass(frozen=True)
class Packed:
    """The context a budget lets through: merged body ranges ``(doc_id, start, end)``, the
    tokens used (bodies and prefixes), how many hits contributed, whether the last one was cut,
    and whether the hits ran out before the budget was full."""

    spans: tuple[tuple[str, int, int], ...]
    tokens: int
    units: int
    cut: bool
    exhausted: bool
    examined: int = 0  # hits looked at (the rest never reached the context)


@lru_cache(maxsize=1)
def _reference():
    from ..text.tokens import get_tokenizer

    return get_tokenizer(REFERENCE_TOKENIZER)


def count_tokens(text: str) -> int:
    """Tokens of `text` in the reference tokenizer (cl100k_base), from the one count cache
    (`ragkit.text.tokens.count_tokens`)."""
    return _count(text, REFERENCE_TOKENIZER)


def _first_tokens(text: str, n: int) -> int:
    """Characters of `text` covered by its first `n` reference tokens."""
    return _reference().first_chars(text, n)


def pack_context(hits: Sequence[Chunk], budget: int,
                 count: Callable[[str], int] = count_tokens) -> Packed:
    """Fill a context of `budget` tokens with `hits` in rank order.

    Each hit adds the part of its body not already in the context (a child of a returned
    parent adds nothing and costs nothing), plus its prefix when it adds anything; the hit that
    does not fit is cut at the budget, prefix first, then its body on a token boundary.

    >>> from ragkit.types import Document
    >>> d = Document("d", "one two three four five six seven eight")
    >>> p = pack_context([Chunk.make(d, 0, 13, "t"), Chunk.make(d, 4, 23, "t")], 4)
    >>> p.spans, p.tokens, p.cut  # "one two three" + the first token of " four five"
    ((('d', 0, 18),), 4, True)
    """
    return pack_contexts(hits, (budget,), count)[budget]


def pack_contexts(hits: Sequence[Chunk], budgets: Sequence[int],
                  count: Callable[[str], int] = count_tokens) -> dict[int, Packed]:
    """`pack_context` at each of `budgets`, from one pass over `hits`: until a hit does not fit
    a budget, its context is the same as every larger budget's, so the hits are measured once
    and each budget's context is closed (its last hit cut) where it fills.

    >>> from ragkit.types import Document
    >>> d = Document("d", "one two three four five six seven eight")
    >>> hits = [Chunk.make(d, 0, 13, "t"), Chunk.make(d, 14, 23, "t")]
    >>> packs = pack_contexts(hits, (2, 4, 99))
    >>> [(b, p.spans, p.tokens, p.cut) for b, p in packs.items()]  # doctest: +NORMALIZE_WHITESPACE
    [(2, (('d', 0, 7),), 2, True), (4, (('d', 0, 13), ('d', 14, 18)), 4, True),
     (99, (('d', 0, 13), ('d', 14, 23)), 5, False)]
    """
    covered: dict[str, list[Range]] = defaultdict(list)
    waiting = sorted(set(budgets))
    out: dict[int, Packed] = {}
    used, units, examined = 0, 0, 0
    for c in hits:
        if not waiting:
            break
        examined += 1
        new = subtract_all([(c.start, c.end)], covered[c.doc_id])
        if not new:
            continue
        pieces = [c.text[s - c.start:e - c.start] for s, e in new]
        cost = [count(p) for p in pieces]
        head = count(c.prefix) if c.prefix else 0
        while waiting and used + head + sum(cost) > waiting[0]:  # this hit fills that budget
            budget = waiting.pop(0)
            out[budget] = _cut_at(budget, covered, used, units, examined, c.doc_id, new,
                                  pieces, cost, head)
        if waiting:
            covered[c.doc_id].extend(new)
            used += head + sum(cost)
            units += 1
    for budget in waiting:
        out[budget] = Packed(_merged(covered), used, units, False, exhausted=used < budget,
                             examined=examined)
    return out


def _merged(covered: Mapping[str, list[Range]]) -> tuple[tuple[str, int, int], ...]:
    return tuple((d, s, e) for d in sorted(covered) for s, e in union(covered[d]))


def _cut_at(budget: int, covered: Mapping[str, list[Range]], used: int, units: int,
            examined: int, doc_id: str, new: list[Range], pieces: list[str], cost: list[int],
            head: int) -> Packed:
    """The context of `budget` closed by a hit that does not fit whole: its new ranges are
    taken while they fit, the first that does not is cut on a token boundary (the prefix
    counted first)."""
    room = budget - used - head
    taken = []
    for (s, e), piece, n in zip(new, pieces, cost):
        if room <= 0:
            break
        if n <= room:
            taken.append((s, e))
            room -= n
        else:
            taken.append((s, s + _first_tokens(piece, room)))
            room = 0
    taken = [(s, e) for s, e in taken if e > s]
    final = {d: list(r) for d, r in covered.items()}
    if taken:
        final.setdefault(doc_id, []).extend(taken)
        units += 1
    return Packed(_merged(final), budget, units, True, exhausted=False, examined=examined)


def budget_scores(query: Query, packed: Packed, texts: Mapping[str, str] | None = None
                  ) -> dict[str, float]:
    """recall / precision / IoU (body characters, each counted once), pass (share of gold
    units wholly in the context, whitespace ignored when `texts` is given), hit (all of them)
    and tokens used, for one answerable query's packed context. A copy of a gold unit's text
    in the context earns that unit's credit (`ragkit.evaluate.copies`)."""
    gold = [(g.doc_id, g.start, g.end) for g in query.gold]
    out = _span_scores(list(packed.spans), gold, query.copies)
    pieces = [Span(d, s, e) for d, s, e in packed.spans]
    whole = [covered_fraction(g, pieces, texts.get(g.doc_id) if texts else None,
                              query.copies) >= 1.0
             for g in query.gold]
    out["pass"] = float(np.mean(whole)) if whole else 0.0
    out["hit"] = float(all(whole)) if whole else 0.0
    out["tokens"] = float(packed.tokens)
    return out


def page_hit(query: Query, packed: Packed, pages: Mapping[str, Sequence[Sequence[int]]]
             ) -> float:
    """1.0 when the context holds a character of a page that a gold unit lies on (an
    evidence page), else 0.0; `pages` maps a document id to its ``(start, end, number)`` page
    spans. Copies of the gold's text count too (`ragkit.evaluate.copies`).

    >>> q = Query("q", "?", (Span("d", 12, 14),))
    >>> pages = {"d": [(0, 10, 1), (11, 20, 2)]}
    >>> page_hit(q, Packed((("d", 15, 18),), 3, 1, False, False), pages)
    1.0
    >>> page_hit(q, Packed((("d", 0, 9),), 3, 1, False, False), pages)
    0.0
    """
    wanted = [(g.doc_id, g.start, g.end) for g in query.gold]
    wanted += [(c.doc_id, c.start, c.end) for c in query.copies]
    evidence = {(d, s, e) for d, gs, ge in wanted for s, e, _ in pages.get(d, ())
                if s < ge and gs < e or (gs == ge and s <= gs < e)}
    return float(any(d == pd and s < pe and ps < e
                     for d, s, e in packed.spans for pd, ps, pe in evidence))
