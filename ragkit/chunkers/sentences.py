"""Cut points inside a span of text: sentences, lines, blank lines and tokens, as offsets.

Chunkers that must split a block (a paragraph longer than the hard cap, a code block, a long
chat message) ask for *cut points*, never for strings: every function here takes the document
text and a span ``[lo, hi)`` and returns positions in that text, so the pieces between cuts are
exact spans by construction and nothing can fall between them. `pieces` turns cuts into
whitespace-trimmed spans.

The sentence rule is deliberately simple (no model): a sentence ends after ``.``, ``!``, ``?``
or ``…`` (and any closing quotes or brackets) when whitespace follows and the next word does not
start with a lowercase letter, unless the word before the full stop is a common abbreviation.

    >>> t = "Fees apply, e.g. late fees. Gold pays 2%. See Mr. Smith."
    >>> [t[s:e] for s, e in pieces(t, 0, len(t), sentence_cuts(t, 0, len(t)))]
    ['Fees apply, e.g. late fees.', 'Gold pays 2%.', 'See Mr. Smith.']
"""

from __future__ import annotations

import bisect
import re
from typing import Callable

from ..tokens import Tokenizer
from ..types import trim_span

ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof sr jr st vs etc e.g i.e cf al fig figs no nos vol pp approx inc ltd co "
    "corp dept est jan feb mar apr jun jul aug sep sept oct nov dec u.s".split())

_SENTENCE_END = re.compile(r"[.!?…]+[\"'”’)\]]*(?=\s)")
_BLANK_LINES = re.compile(r"\n[ \t]*(?:\r?\n[ \t]*)+")
_NEWLINE = re.compile(r"\r\n?|\n")

Cutter = Callable[[str, int, int], list[int]]


def sentence_cuts(text: str, lo: int, hi: int) -> list[int]:
    """Offsets in [lo, hi) where a new sentence starts (after the whitespace that ends one)."""
    cuts = []
    for m in _SENTENCE_END.finditer(text, lo, hi):
        nxt = m.end()
        while nxt < hi and text[nxt].isspace():
            nxt += 1
        if nxt >= hi or text[nxt].islower():
            continue
        if text[m.start()] == ".":
            w = m.start()
            while w > lo and not text[w - 1].isspace():
                w -= 1
            word = text[w:m.start()].lstrip("([\"'").lower()
            if word in ABBREVIATIONS or (len(word) == 1 and word.isalpha()) or (
                    word.isdigit() and len(word) <= 2):  # an initial, a list number "1."
                continue
        cuts.append(nxt)
    return cuts


def blank_line_cuts(text: str, lo: int, hi: int) -> list[int]:
    """Offsets where a paragraph starts after one or more blank lines."""
    return [m.end() for m in _BLANK_LINES.finditer(text, lo, hi) if m.end() < hi]


def line_cuts(text: str, lo: int, hi: int) -> list[int]:
    """Offsets where each line after the first starts."""
    return [m.end() for m in _NEWLINE.finditer(text, lo, hi) if m.end() < hi]


trim = trim_span  # [start, end) without leading and trailing whitespace


def pieces(text: str, lo: int, hi: int, cuts: list[int]) -> list[tuple[int, int]]:
    """Trimmed, non-empty spans between consecutive cuts (lo and hi included as bounds).

    >>> pieces("ab  cd ", 0, 7, [4])
    [(0, 2), (4, 6)]
    """
    bounds = [lo, *cuts, hi]
    out = []
    for a, b in zip(bounds, bounds[1:]):
        s, e = trim(text, a, b)
        if e > s:
            out.append((s, e))
    return out


class TokenIndex:
    """One tokenisation of text[lo:hi], answering "how many tokens in [a, b)?" by bisection.

    A token is counted in the span that holds its first character, so counts of adjacent
    spans add up to the count of their union, and nothing is tokenised twice.
    """

    def __init__(self, text: str, lo: int, hi: int, tokenizer: Tokenizer):
        self.chars = tokenizer.name == "chars"
        self.starts = [] if self.chars else [lo + s for s, _ in tokenizer.spans(text[lo:hi])]

    def count(self, a: int, b: int) -> int:
        if self.chars:
            return b - a
        return bisect.bisect_left(self.starts, b) - bisect.bisect_left(self.starts, a)

    def cuts(self, a: int, b: int, size: int) -> list[int]:
        """Cut points in (a, b) every `size` tokens, at token starts."""
        if self.chars:
            return list(range(a + size, b, size))
        i, j = bisect.bisect_left(self.starts, a), bisect.bisect_left(self.starts, b)
        return [self.starts[k] for k in range(i + size, j, size) if self.starts[k] > a]
