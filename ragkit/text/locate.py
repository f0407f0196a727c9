"""A quote found in a document's text: its character spans, never a guess.

`locate` finds a verbatim quote exactly first, then ignoring differences in whitespace, and
returns every span it occupies (the golden files reject a quote found zero or several times,
`ragkit.evaluate.golden`); `closest` names the nearest candidates for a quote not found.

Unicode: quotes are compared in NFC (`nfc`), so "é" typed as one character or as "e" and a
combining accent is one string. Documents keep their text exactly as read, and `locate` finds
an NFC quote in a document written in NFD by searching an NFC copy of the text whose offsets
map back to the original characters.

    >>> locate("Gold  tier:\\n14 days", "Gold tier: 14 days")
    [(0, 19)]
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from functools import lru_cache


def nfc(value: str) -> str:
    """`value` in Unicode normal form C (one code point for "é", not "e" + U+0301)."""
    return unicodedata.normalize("NFC", value)


def _find(text: str, quote: str) -> list[tuple[int, int]]:
    hits, pos = [], text.find(quote)
    while pos != -1:
        hits.append((pos, pos + len(quote)))
        pos = text.find(quote, pos + 1)
    if hits:
        return hits
    pattern = r"\s+".join(re.escape(w) for w in quote.split())
    return [(m.start(), m.end()) for m in re.finditer(pattern, text)]


@lru_cache(maxsize=8)
def _nfc_view(text: str) -> tuple[str, tuple[int | None, ...]] | None:
    """(NFC copy of `text`, offset in `text` of each boundary of the copy that is a boundary
    of a character sequence normalised on its own, else None). None when the copy cannot be
    built piece by piece (then a quote is only looked up as written)."""
    pieces, starts = [], []  # a piece: a character and the combining marks after it
    for i, ch in enumerate(text):
        if i == 0 or unicodedata.combining(ch) == 0:
            starts.append(i)
    starts.append(len(text))
    where: list[int | None] = []
    for a, b in zip(starts, starts[1:]):
        piece = nfc(text[a:b])
        pieces.append(piece)
        where.extend([a] + [None] * (len(piece) - 1))
    where.append(len(text))
    view = "".join(pieces)
    return (view, tuple(where)) if view == nfc(text) else None


def locate(text: str, quote: str) -> list[tuple[int, int]]:
    """Every span of `text` matching `quote`: exact matches, else whitespace-insensitive ones;
    both compared in NFC, the spans always offsets into `text` as it is."""
    quote = nfc(quote).strip()
    if not quote:
        return []
    if unicodedata.is_normalized("NFC", text):
        return _find(text, quote)
    got = _nfc_view(text)
    if got is None:
        return _find(text, quote)
    view, where = got
    return [(where[s], where[e]) for s, e in _find(view, quote)
            if where[s] is not None and where[e] is not None]


def closest(text: str, quote: str, n: int = 2) -> list[str]:
    """Sentences of `text` most similar to `quote` (for error messages)."""
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", text) if s.strip()]
    return difflib.get_close_matches(quote.strip(), sentences, n=n, cutoff=0.3)
