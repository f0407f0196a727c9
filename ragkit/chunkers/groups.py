"""Sentence groups: consecutive whole sentences packed up to a token budget.

The simplest chunker that never cuts a sentence: split the document into sentences
(`ragkit.chunkers.sentences`), then pack them greedily, starting a new chunk when the next
sentence would pass `size` tokens. A sentence longer than `size` becomes a chunk of its own
(the linter reports it if it passes the encoder's limit). Notebooks 05 and 06 use it as the
"sentence-group" chunking.

    >>> from ragkit.types import Document
    >>> doc = Document("d", "One rule. Two rules here. Three.")
    >>> [c.text for c in SentenceGroupChunker(size=4, tokenizer="chars").chunk(doc)]
    ['One rule.', 'Two rules here.', 'Three.']
"""

from __future__ import annotations

from ..tokens import get_tokenizer
from ..types import Document
from .base import Chunker
from .sentences import pack_sentences


class SentenceGroupChunker(Chunker):
    name = "sentences"

    def __init__(self, size: int = 128, tokenizer: str = "minilm"):
        if size <= 0:
            raise ValueError(f"size must be positive, got {size}")
        self.size, self.tokenizer = size, tokenizer

    @property
    def label(self) -> str:
        name = str(self.tokenizer).rstrip("/").rsplit("/", 1)[-1]  # a folder: its name only
        return f"sentences({self.size},{name})"

    def spans(self, doc: Document) -> list[tuple[int, int]]:
        count = get_tokenizer(self.tokenizer).count
        return pack_sentences(doc.text, 0, len(doc.text), self.size, count)
