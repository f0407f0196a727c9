"""A quote found in a document's text: its character spans, never a guess.

`locate` is ragkit's one search for text in a document: the golden files anchor a quote with it
(they reject a quote found zero or several times, `ragkit.evaluate.golden`), and the baseline
chunkers whose third-party splitters do not report offsets find their pieces with it, in order
(`ragkit.chunkers.baselines`). It finds the quote exactly first, then ignoring differences in
whitespace: one rule, with one documented switch (`dropped_spaces`) for splitters that re-join
their text and drop the whitespace between two words. `closest` names the nearest candidates
for a quote not found. `locate_letters` is the looser search for text a converter wrote (a PDF's
Markdown, `ragkit.text.pdf`): the quote's letters and digits in order, whatever lies between.

Unicode: quotes are compared in NFC (`nfc`), so "é" typed as one character or as "e" and a
combining accent is one string. Documents keep their text exactly as read, and `locate` finds
an NFC quote in a document written in NFD by searching an NFC copy of the text whose offsets
map back to the original characters.

    >>> locate("Gold  tier:\\n14 days", "Gold tier: 14 days")
    [(0, 19)]
    >>> locate("a b, a b", "a b", start=1), locate("ab", "a b", dropped_spaces=True)
    ([(5, 8)], [(0, 2)])
"""

from __future__ import annotations

import bisect
import difflib
import re
import unicodedata
from functools import lru_cache
from itertools import islice
from typing import Iterator


def nfc(value: str) -> str:
    """`value` in Unicode normal form C (one code point for "é", not "e" + U+0301)."""
    return unicodedata.normalize("NFC", value)


def _find(text: str, quote: str, start: int, dropped_spaces: bool
          ) -> Iterator[tuple[int, int]]:
    """Every exact occurrence of `quote` at or after `start` (overlapping ones too); when
    there is none, every match of its words with whitespace between them (``\\s+``; with
    `dropped_spaces`, ``\\s*``: whitespace or none), left to right."""
    pos, exact = text.find(quote, start), False
    while pos != -1:
        exact = True
        yield pos, pos + len(quote)
        pos = text.find(quote, pos + 1)
    if exact:
        return
    gap = r"\s*" if dropped_spaces else r"\s+"
    pattern = re.compile(gap.join(re.escape(w) for w in quote.split()))
    yield from ((m.start(), m.end()) for m in pattern.finditer(text, start))


@lru_cache(maxsize=8)
def _is_nfc(text: str) -> bool:
    return unicodedata.is_normalized("NFC", text)


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


def _spans(text: str, quote: str, start: int, dropped_spaces: bool
           ) -> Iterator[tuple[int, int]]:
    if _is_nfc(text):
        yield from _find(text, quote, start, dropped_spaces)
        return
    got = _nfc_view(text)
    if got is None:
        yield from _find(text, quote, start, dropped_spaces)
        return
    view, where = got
    at = next((i for i, w in enumerate(where) if w is not None and w >= start), len(view)) \
        if start else 0
    yield from ((where[s], where[e]) for s, e in _find(view, quote, at, dropped_spaces)
                if where[s] is not None and where[e] is not None)


def locate(text: str, quote: str, start: int = 0, *, dropped_spaces: bool = False,
           limit: int | None = None) -> list[tuple[int, int]]:
    """Every span of `text` at or after `start` matching `quote` (stripped): its exact
    occurrences, else (none there) the places that hold its words with any whitespace between
    them, in order. Both are compared in NFC; the spans are always offsets into `text` as it is.

    `dropped_spaces` also accepts two words with no whitespace at all between them: for
    the pieces of a splitter that re-joins its text and may drop it (chonkie, on some code),
    never for a quote a person wrote (it would find "in voice" in "invoice"). `limit` stops
    after that many spans (``limit=1``: the first one, as a splitter's pieces are located)."""
    quote = nfc(quote).strip()
    if not quote:
        return []
    return list(islice(_spans(text, quote, start, dropped_spaces), limit))


def closest(text: str, quote: str, n: int = 2) -> list[str]:
    """Sentences of `text` most similar to `quote` (for error messages)."""
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", text) if s.strip()]
    return difflib.get_close_matches(quote.strip(), sentences, n=n, cutoff=0.3)


_WORD = re.compile(r"[^\W_]+")


class Letters:
    """A text's letters and digits, lower-cased, in one string, with a map back to offsets."""

    def __init__(self, text: str) -> None:
        runs = [(m.start(), m.group().lower()) for m in _WORD.finditer(text)]
        self.stream = "".join(r for _, r in runs)
        self.run_at = [0]
        for _, r in runs:
            self.run_at.append(self.run_at[-1] + len(r))
        self.starts = [s for s, _ in runs]

    def offset(self, i: int) -> int:
        """Offset in the text of the stream's i-th character."""
        k = bisect.bisect_right(self.run_at, i) - 1
        return self.starts[k] + (i - self.run_at[k])

    def find_all(self, quote: str, text: str) -> list[tuple[int, int]]:
        """Every span of `text` (the text this was built from) whose letters and digits are
        `quote`'s, widened over the punctuation that opens and closes the quote (``(1,373)``,
        ``$ 5``, ``12.5%``) where the text has it too."""
        words = list(_WORD.finditer(quote))
        if not words:
            return []
        want = "".join(m.group().lower() for m in words)
        lead = re.sub(r"\s+", "", quote[:words[0].start()])
        tail = re.sub(r"\s+", "", quote[words[-1].end():])
        out, at = [], self.stream.find(want)
        while at != -1:
            start, end = self.offset(at), self.offset(at + len(want) - 1) + 1
            if lead and text[max(0, start - len(lead)):start] == lead:
                start -= len(lead)
            if tail and text[end:end + len(tail)] == tail:
                end += len(tail)
            out.append((start, end))
            at = self.stream.find(want, at + 1)
        return out


@lru_cache(maxsize=16)
def _letters(text: str) -> Letters:
    return Letters(text)


def locate_letters(text: str, quote: str) -> list[tuple[int, int]]:
    """Every span of `text` whose letters and digits are `quote`'s, in order (`Letters`): for
    text that a converter wrote (a PDF's Markdown, whose table cells sit between pipes), where
    a reader quotes what the page shows. The index of a text is built once for many quotes."""
    return _letters(text).find_all(quote, text)
