"""Why a gold chunk ranks where it does: what sits above it, read from the hits alone.

A chunk that holds the gold can still rank low. The usual reason is competition: other
chunks, often from other documents of the same kind (another fee table, an older policy),
score higher for the question. `outranked` states that from the ranking: the gold's first
rank and score, the score range of the top k, the documents they come from, how many of them
are tables, and which of the question's words each one shares with it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

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
