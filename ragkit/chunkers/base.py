"""What every chunker is: a named, parametrised function from a `Document` to `Chunk`s.

A chunker never searches for its chunks in the text: it computes spans while it splits and
slices the document with them (`Chunk.make`). `Chunker.chunk` also enforces the invariants on
the way out (each chunk's text is its span; chunks are sorted by position), so a buggy chunker
fails loudly instead of producing unscoreable chunks.
"""

from __future__ import annotations

import bisect
from abc import ABC
from dataclasses import replace
from typing import Any, Iterable, Sequence

from ..types import (Chunk, Document, check_chunks, doc_metadata, stable_hash,  # noqa: F401
                     trim_span)


class Chunker(ABC):
    """Subclasses set `name` and implement `spans` (or override `chunk` for prefixes)."""

    name: str = "chunker"

    def params(self) -> dict[str, Any]:
        """The settings that decide the output (part of every chunk's metadata and id)."""
        return {k: v for k, v in vars(self).items() if not k.startswith("_")}

    @property
    def label(self) -> str:
        """A readable name for tables, e.g. ``fixed_chars(1000/200)``."""
        return self.name

    @property
    def flags(self) -> list[str]:
        """What a results row must carry about the chunks made since the last `chunk_all`
        (e.g. a third-party splitter's unlocated chunks); a read-only property, as a
        retriever's `flags`. None by default."""
        return []

    def spans(self, doc: Document) -> list[tuple[int, int]]:
        raise NotImplementedError

    def chunk(self, doc: Document) -> list[Chunk]:
        chunks = [self.make(doc, s, e) for s, e in self.spans(doc) if e > s]
        return self.finish(doc, chunks)

    def make(self, doc: Document, start: int, end: int, prefix: str = "", **meta: Any) -> Chunk:
        settings = stable_hash(self.name, self.params(), n=8)
        return Chunk.make(doc, start, end, strategy=self.label, prefix=prefix,
                          metadata={**doc_metadata(doc), **meta, "settings": settings})

    def finish(self, doc: Document, chunks: list[Chunk]) -> list[Chunk]:
        check_chunks(doc, chunks)
        return with_pages(doc, sorted(chunks, key=lambda c: (c.start, c.end)))

    def chunk_all(self, docs: Iterable[Document], progress: bool = False) -> list[Chunk]:
        """Chunks of every document, in document order. Counters behind `flags` (e.g. a
        third-party splitter's unlocated chunks) restart, so they describe this corpus."""
        docs = list(docs)
        for counter in ("unlocated", "relocated", "unpaged"):
            if isinstance(getattr(self, counter, None), int):
                setattr(self, counter, 0)
        if progress and len(docs) > 1:
            from tqdm.auto import tqdm

            docs = tqdm(docs, desc=f"chunking ({self.label})", leave=False)
        return [c for d in docs for c in self.chunk(d)]


def page_range(pages: Sequence[Sequence[int]], start: int, end: int) -> list[int]:
    """[first, last] page numbers of the pages that `[start, end)` overlaps, from a document's
    ``metadata["pages"]`` (``(start, end, number)`` each, in order); the page that holds
    `start` for an empty span or one that falls between two pages.

    >>> page_range([(0, 10, 1), (12, 20, 2)], 5, 15), page_range([(0, 10, 1), (12, 20, 2)], 11, 11)
    ([1, 2], [2, 2])
    """
    ends = [p[1] for p in pages]
    first = min(bisect.bisect_right(ends, start), len(pages) - 1)
    last = first
    while last + 1 < len(pages) and pages[last + 1][0] < end:
        last += 1
    return [pages[first][2], pages[last][2]]


def with_pages(doc: Document, chunks: list[Chunk]) -> list[Chunk]:
    """`chunks` with ``metadata["pages"]`` (first and last page) when `doc` came from a paged
    source (a PDF: ``doc.metadata["pages"]``); unchanged otherwise."""
    pages = doc.metadata.get("pages")
    if not pages:
        return chunks
    return [replace(c, metadata={**c.metadata, "pages": page_range(pages, c.start, c.end)})
            for c in chunks]


def windows(n: int, size: int, overlap: int) -> list[tuple[int, int]]:
    """Index windows of `size` advancing by `size - overlap` until the end is covered.

    >>> windows(10, 4, 1)
    [(0, 4), (3, 7), (6, 10)]
    """
    if size <= 0 or not 0 <= overlap < size:
        raise ValueError(f"need size > 0 and 0 <= overlap < size, got {size}/{overlap}")
    out, s = [], 0
    while s < n:
        out.append((s, min(s + size, n)))
        if s + size >= n:
            break
        s += size - overlap
    return out


def covering(spans: Sequence[tuple[int, int]]) -> int:
    """Total characters covered by the union of spans."""
    total, last = 0, -1
    for s, e in sorted(spans):
        s = max(s, last)
        if e > s:
            total += e - s
            last = e
    return total
