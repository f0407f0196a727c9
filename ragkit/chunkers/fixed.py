"""Fixed-size chunking: the naive baseline of notebook 01.

- `FixedCharChunker(size, overlap)`: windows of `size` characters advancing by
  `size - overlap` (a sliding window, as a naive splitter does: it cuts words, table rows and
  sentences wherever the count runs out);
- `FixedTokenChunker(size, overlap, tokenizer)`: the same over tokens, like langchain's
  TokenTextSplitter / Chroma's FixedTokenChunker. The document is tokenised once; each window's
  character span runs from its first token's start to the start of the token after its last
  (whitespace trimmed), so no character falls between windows;
- `PageChunker()`: one chunk per page of a paged document (a PDF, `ragkit.text.pdf`), the
  page-level baseline NVIDIA's chunking study found best on FinanceBench. A document without
  pages is one chunk, and `flags` says how many were.

    >>> from ragkit.types import Document
    >>> [c.text for c in FixedCharChunker(4, 1).chunk(Document("d", "abcdefghij"))]
    ['abcd', 'defg', 'ghij']
"""

from __future__ import annotations

from ..text.tokens import get_tokenizer
from ..types import Document
from .base import Chunker, trim_span, windows


class FixedCharChunker(Chunker):
    name = "fixed_chars"

    def __init__(self, size: int = 1000, overlap: int = 200):
        windows(1, size, overlap)  # validates
        self.size, self.overlap = size, overlap

    @property
    def label(self) -> str:
        return f"fixed_chars({self.size}/{self.overlap})"

    def spans(self, doc: Document) -> list[tuple[int, int]]:
        return windows(len(doc.text), self.size, self.overlap)


class FixedTokenChunker(Chunker):
    name = "fixed_tokens"

    def __init__(self, size: int = 512, overlap: int = 64, tokenizer: str = "cl100k_base"):
        windows(1, size, overlap)
        self.size, self.overlap, self.tokenizer = size, overlap, tokenizer

    @property
    def label(self) -> str:
        return f"fixed_tokens({self.size}/{self.overlap},{self.tokenizer})"

    def spans(self, doc: Document) -> list[tuple[int, int]]:
        text = doc.text
        toks = get_tokenizer(self.tokenizer).spans(text)
        # Cut at token starts, so characters a tokenizer skips (control characters, odd
        # whitespace) stay with the token before them instead of being lost between windows.
        cuts = [0] + [s for s, _ in toks[1:]] + [len(text)]
        out = [trim_span(text, cuts[a], cuts[b]) for a, b in windows(len(toks), self.size,
                                                                      self.overlap)]
        if not toks and text.strip():
            out = [trim_span(text, 0, len(text))]
        return [(s, e) for s, e in out if e > s]


class PageChunker(Chunker):
    name = "pages"

    def __init__(self) -> None:
        self.unpaged = 0

    def params(self) -> dict:
        return {}

    @property
    def label(self) -> str:
        return "pages"

    @property
    def flags(self) -> list[str]:
        return ([f"pages: {self.unpaged} document(s) without pages, each one chunk"]
                if self.unpaged else [])

    def spans(self, doc: Document) -> list[tuple[int, int]]:
        pages = doc.metadata.get("pages")
        if not pages:
            self.unpaged += 1
            return [trim_span(doc.text, 0, len(doc.text))]
        return [trim_span(doc.text, s, e) for s, e, _ in pages]
