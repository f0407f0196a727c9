"""Recursive splitting on a list of separators, with offsets carried through every step.

This is the algorithm of langchain's RecursiveCharacterTextSplitter (and of Chroma's
RecursiveTokenChunker, which copies it) with ``keep_separator=True``: split on the first
separator that occurs, keep each separator at the start of the piece that follows it, merge
consecutive pieces while the summed length stays within `size`, keep up to `overlap` of the
tail as the start of the next chunk, recurse with the next separator into any piece that is
still too long, and strip whitespace from each chunk. Lengths are measured by a tokenizer
(``cl100k_base`` as in Chroma's report, the embedder's own, or ``chars``).

The difference from the original is that every piece is a ``(start, end)`` span of the
document, so the chunks' offsets are exact by construction; a test checks that the chunk texts
equal langchain's output for the same settings.
"""

from __future__ import annotations

from typing import Sequence

from ..text.tokens import count_tokens
from ..types import Document
from .base import Chunker, trim_span

CHROMA_SEPARATORS = ("\n\n", "\n", ".", "?", "!", " ", "")
MARKDOWN_SEPARATORS = ("\n#", "\n\n", "\n", ". ", "? ", "! ", "; ", ", ", " ", "")


def split_keep_start(text: str, lo: int, hi: int, sep: str) -> list[tuple[int, int]]:
    """Split text[lo:hi] at each occurrence of `sep`, the separator starting the next piece.

    >>> split_keep_start("a.b.c", 0, 5, ".")
    [(0, 1), (1, 3), (3, 5)]
    """
    if sep == "":
        return [(i, i + 1) for i in range(lo, hi)]
    cuts, pos = [], text.find(sep, lo, hi)
    while pos != -1:
        cuts.append(pos)
        pos = text.find(sep, pos + len(sep), hi)
    bounds = [lo, *cuts, hi]
    return [(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]


class RecursiveChunker(Chunker):
    name = "recursive"

    def __init__(self, size: int = 250, overlap: int = 0, tokenizer: str = "cl100k_base",
                 separators: Sequence[str] = CHROMA_SEPARATORS):
        if size <= 0 or not 0 <= overlap < size:
            raise ValueError(f"need size > 0 and 0 <= overlap < size, got {size}/{overlap}")
        self.size, self.overlap, self.tokenizer = size, overlap, tokenizer
        self.separators = list(separators)

    @property
    def label(self) -> str:
        return f"recursive({self.size}/{self.overlap},{self.tokenizer})"

    def spans(self, doc: Document) -> list[tuple[int, int]]:
        text = doc.text
        tokenizer = self.tokenizer

        def length(span: tuple[int, int]) -> int:
            return count_tokens(text[span[0]:span[1]], tokenizer)

        def merge(pieces: list[tuple[int, int]]) -> list[tuple[int, int]]:
            out: list[tuple[int, int]] = []
            current: list[tuple[int, int]] = []
            total = 0
            for piece in pieces:
                n = length(piece)
                if total + n > self.size and current:
                    out.append((current[0][0], current[-1][1]))
                    while total > self.overlap or (total + n > self.size and total > 0):
                        total -= length(current.pop(0))
                current.append(piece)
                total += n
            if current:
                out.append((current[0][0], current[-1][1]))
            return out

        def split(lo: int, hi: int, separators: list[str]) -> list[tuple[int, int]]:
            sep, rest = separators[-1], []
            for i, s in enumerate(separators):
                if s == "":
                    sep = s
                    break
                if text.find(s, lo, hi) != -1:
                    sep, rest = s, separators[i + 1:]
                    break
            final: list[tuple[int, int]] = []
            good: list[tuple[int, int]] = []
            for piece in split_keep_start(text, lo, hi, sep):
                if length(piece) < self.size:
                    good.append(piece)
                    continue
                if good:
                    final.extend(merge(good))
                    good = []
                final.extend(split(*piece, rest) if rest else [piece])
            if good:
                final.extend(merge(good))
            return final

        out = []
        for s, e in split(0, len(text), self.separators):
            s, e = trim_span(text, s, e)
            if e > s:
                out.append((s, e))
        return out
