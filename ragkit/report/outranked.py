"""Why a gold chunk ranks where it does: what sits above it, read from the hits alone.

A chunk that holds the gold can still rank low. The usual reason is competition: other
chunks, often from other documents of the same kind (another fee table, an older policy),
score higher for the question. `outranked` states that from the ranking: the gold's first
rank and score, the score range of the top k, the documents they come from, how many of them
are tables, and which of the question's words each one shares with it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ..evaluate.spans import overlaps

_WORD = re.compile(r"[a-z0-9][a-z0-9-]{2,}")
_COMMON = frozenset(
    "the and for are was were does did how what which who whom when where why with from that "
    "this these those into onto over under than then their there they them have has had can "
    "could would should will shall may might must not any all each per its our your you about "
    "after before within without much many get got long".split())


def question_words(text: str) -> set[str]:
    """The question's content words: lower-cased, three or more letters, common words out.

    >>> sorted(question_words("How much did the Gold tier get back in 2022?"))
    ['2022', 'back', 'gold', 'tier']
    """
    return {w for w in _WORD.findall(text.lower()) if w not in _COMMON}


def _is_table(text: str) -> bool:
    return sum(line.lstrip().startswith("|") for line in text.splitlines()) >= 2


def outranked(query, hits: Sequence, k: int = 5) -> str:
    """One paragraph: where the first chunk holding `query`'s gold (or an identical copy)
    ranks in `hits` and with what score, against the top `k` above it — their scores, their
    documents, how many are tables, and the question's words each shares."""
    words = question_words(query.text)
    rank = next((i + 1 for i, h in enumerate(hits)
                 if overlaps(h.chunk, query.gold, getattr(query, "copies", ()))), None)
    top = hits[:k]
    if not top:
        return f"{query.id}: nothing was retrieved."
    lines = []
    for i, h in enumerate(top, 1):
        shared = sorted(words & question_words(h.chunk.prefix + " " + h.chunk.text))
        lines.append(f"  #{i} {h.chunk.doc_id} (score {h.score:.3f}"
                     + (", a table" if _is_table(h.chunk.text) else "")
                     + f"): shares {', '.join(shared) if shared else 'none of its words'}")
    docs = sorted({h.chunk.doc_id for h in top})
    gold_docs = {g.doc_id for g in query.gold}
    if rank is None:
        head = f"No retrieved chunk holds the gold of {query.id}."
    elif rank <= k:
        head = f"The first chunk holding the gold of {query.id} ranks {rank}, inside the top {k}."
    else:
        g = hits[rank - 1]
        shared = sorted(words & question_words(g.chunk.prefix + " " + g.chunk.text))
        head = (f"The first chunk holding the gold of {query.id} ranks {rank} with score "
                f"{g.score:.3f}; the top {k} score {top[-1].score:.3f} to {top[0].score:.3f}. "
                f"It shares {', '.join(shared) if shared else 'none'} of the question's words "
                f"({', '.join(sorted(words))}).")
    tail = (f"The top {k} come from {len(docs)} document(s), "
            f"{sum(d not in gold_docs for d in docs)} of them not the gold's; "
            f"{sum(_is_table(h.chunk.text) for h in top)} of the {k} chunks are tables:")
    return "\n".join([head, tail, *lines])


_YEAR = re.compile(r"\b(?:19|20)\d{2}\b")


def preamble_note(query, chunk) -> str:
    """What a chunk's prefix (its preamble) adds for `query`: the question's words that the
    prefix holds and the body lacks, and any year it names that the question does not ask
    about (a date that can pull the chunk toward other questions, or away from this one)."""
    words = question_words(query.text)
    body, prefix = question_words(chunk.text), question_words(chunk.prefix)
    adds = sorted((words & prefix) - body)
    asked = set(_YEAR.findall(query.text))
    named = sorted(set(_YEAR.findall(chunk.prefix)) - asked)
    note = ("the preamble adds " + (", ".join(adds) if adds else "none")
            + " of the question's words that the chunk's body lacks")
    if asked and named:
        note += (f"; it names {', '.join(named)} while the question asks about "
                 f"{', '.join(sorted(asked))}")
    return note


def sentence_after(doc, span) -> tuple[str, int]:
    """The sentence right after `span` in `doc` (whitespace collapsed) and the offset where it
    ends: the text a span metric does not count, though an answer may lean on it (the caveat
    after a rule). The sentence ends at the first full stop after the span's end.

    >>> from ragkit.types import Document, Span
    >>> d = Document("d", "Refunds within 14 days. Unused services only. Tax is extra.")
    >>> sentence_after(d, Span("d", 0, 23))
    ('Unused services only.', 45)
    """
    end = doc.text.find(".", span.end + 1) + 1 or len(doc.text)
    return " ".join(doc.text[span.end:end].split()), end


def first_hit_holds(hits: Sequence, doc_id: str, start: int, end: int) -> bool:
    """Whether the first hit is a chunk of `doc_id` that holds all of [start, end)."""
    from ..types import Span

    return holding_rank(hits[:1], Span(doc_id, start, end)) == 1


def holding_rank(hits: Sequence, span) -> int | None:
    """The 1-based rank of the first hit whose chunk holds all of `span`; None when none does."""
    return next((i for i, h in enumerate(hits, 1) if h.chunk.doc_id == span.doc_id
                 and h.chunk.start <= span.start and span.end <= h.chunk.end), None)


def first_holding_rank(query, hits: Sequence) -> int | None:
    """The 1-based rank of the first hit that holds a whole gold unit of `query`; None when
    no hit does."""
    ranks = [r for g in query.gold if (r := holding_rank(hits, g)) is not None]
    return min(ranks) if ranks else None


def score_shift(query, before: Sequence, after: Sequence, k: int = 3, tokens=None):
    """How one change moved each chunk for `query`: the top `k` of `after` and the first chunk
    holding a whole gold unit, each with its rank and score in both rankings (the same chunk
    body, matched by document and offsets) and the change in score. `tokens` (a function from
    a chunk to the encoder tokens it is embedded with, prefix included) adds that column for
    the `after` side.

    >>> from types import SimpleNamespace as NS
    >>> from ragkit.types import Span
    >>> c = lambda s, e: NS(doc_id="d", start=s, end=e, prefix="", text="x")
    >>> q = NS(gold=[Span("d", 0, 5)], copies=())
    >>> t = score_shift(q, [NS(chunk=c(0, 9), score=0.6), NS(chunk=c(9, 20), score=0.5)],
    ...                 [NS(chunk=c(9, 20), score=0.55), NS(chunk=c(0, 9), score=0.4)], k=1)
    >>> t[["chunk", "rank before", "rank after", "score change"]].values.tolist()
    [['d[9:20]', 2, 1, 0.05], ['d[0:9]', 1, 2, -0.2]]
    """
    import pandas as pd

    def where(hits):
        return {(h.chunk.doc_id, h.chunk.start, h.chunk.end): (i, h) for i, h in
                enumerate(hits, 1)}

    was, now = where(before), where(after)
    keys = [(h.chunk.doc_id, h.chunk.start, h.chunk.end) for h in after[:k]]
    holding = first_holding_rank(query, after)
    if holding is not None and holding > k:
        h = after[holding - 1].chunk
        keys.append((h.doc_id, h.start, h.end))
    rows = []
    for key in keys:
        rank_a, hit_a = now[key]
        rank_b, hit_b = was.get(key, (None, None))
        row = {"chunk": f"{key[0]}[{key[1]}:{key[2]}]",
               "holds gold": "yes" if holding == rank_a else "",
               "rank before": rank_b, "score before": None if hit_b is None else round(hit_b.score, 3),
               "rank after": rank_a, "score after": round(hit_a.score, 3),
               "score change": None if hit_b is None else round(hit_a.score - hit_b.score, 3)}
        if tokens is not None:
            row["tokens embedded after"] = tokens(hit_a.chunk)
        rows.append(row)
    return pd.DataFrame(rows)


def largest_loss(before: Mapping[str, float], after: Mapping[str, float], queries: Mapping,
                 hits_before: Mapping[str, Sequence], hits_after: Mapping[str, Sequence]):
    """The question a change hurts most: the largest drop from `before` to `after` (a metric
    per question id), ties broken by how far its gold-holding chunk falls (`first_holding_rank`, a
    chunk never found counting as below every rank), then by id. None when no question drops.

    >>> from types import SimpleNamespace as NS
    >>> from ragkit.types import Span
    >>> hit = lambda s, e: NS(chunk=NS(doc_id="d", start=s, end=e))
    >>> qs = {i: NS(gold=[Span("d", 0, 5)]) for i in ("a", "b")}
    >>> largest_loss({"a": 1.0, "b": 1.0}, {"a": 0.0, "b": 0.0}, qs,
    ...              {"a": [hit(0, 9)], "b": [hit(0, 9)]},
    ...              {"a": [hit(9, 20), hit(0, 9)], "b": [hit(9, 20)] * 3 + [hit(0, 9)]})
    'b'
    >>> import pandas as pd  # per-question Series, as `Outcome.values` gives them
    >>> largest_loss(pd.Series({"a": 1.0, "b": 0.5}), pd.Series({"a": 0.0, "b": 0.0}), qs,
    ...              {}, {})
    'a'
    """
    far = 10 ** 9
    drops = {q: after[q] - before[q] for q in before.keys()
             if q in after.keys() and after[q] < before[q]}
    if not drops:
        return None
    fall = {q: (first_holding_rank(queries[q], hits_after.get(q, ())) or far)
            - (first_holding_rank(queries[q], hits_before.get(q, ())) or far) for q in drops}
    return min(drops, key=lambda q: (drops[q], -fall[q], q))


def prefix_reading(with_prefix: Sequence, without: Sequence, span) -> str:
    """What a chunk prefix (breadcrumb, repeated table header) does to the rank of the chunk
    that holds `span`: the same chunks searched with their prefixes and without, as a sentence.

    >>> from types import SimpleNamespace as NS
    >>> from ragkit.types import Span
    >>> g = Span("d", 10, 20)
    >>> hit = lambda s, e: NS(chunk=NS(doc_id="d", start=s, end=e))
    >>> prefix_reading([hit(0, 5), hit(10, 30)], [hit(0, 5), hit(30, 40), hit(10, 30)], g)
    'With its prefix the chunk holding the gold ranks 2 of 2; with the prefix removed, 3 of 3: the prefix moves it up 1 place.'
    """
    a, b = holding_rank(with_prefix, span), holding_rank(without, span)
    if a is None or b is None:
        return ("No chunk holds the whole gold " + ("with its prefix" if a is None else
                                                   "without its prefix") + ".")
    move = ("does not move it" if a == b else
            f"moves it {'up' if a < b else 'down'} {abs(a - b)} place{'s' if abs(a - b) > 1 else ''}")
    return (f"With its prefix the chunk holding the gold ranks {a} of {len(with_prefix)}; with "
            f"the prefix removed, {b} of {len(without)}: the prefix {move}.")


def budget_reading(table, budget: int) -> str:
    """Where the first unit holding gold sits in a `hits_table` (its rank, the tokens of the
    units above it) and whether the `budget`-token context holds it whole, cuts it, or never
    reaches it, as a clause.

    >>> import pandas as pd
    >>> t = pd.DataFrame({"rank": [1, 2], "cl100k tokens": [414, 914], "gold chars held": [0, 120],
    ...                   "in 1024 tokens": ["yes", "cut"]})
    >>> budget_reading(t, 1024)
    'the first unit holding gold is at rank 2, after 414 tokens of units above it, and the 1,024-token context ends inside it'
    """
    gold = table[table["gold chars held"] > 0]
    if gold.empty:
        return "no unit it reads holds gold"
    first = gold.iloc[0]
    above = int(table[table["rank"] < first["rank"]]["cl100k tokens"].sum())
    state = {"yes": "holds it whole", "cut": "ends inside it",
             "no": "ends before it"}[first[f"in {budget} tokens"]]
    return (f"the first unit holding gold is at rank {int(first['rank'])}, after {above:,} "
            f"tokens of units above it, and the {budget:,}-token context {state}")
