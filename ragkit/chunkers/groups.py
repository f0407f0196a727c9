"""Sentence groups: consecutive whole sentences packed up to a token budget.

The simplest chunker that never cuts a sentence: split the document into sentences
(`ragkit.text.sentences`), then pack them greedily, starting a new chunk when the next
sentence would pass `size` tokens. A sentence longer than `size` becomes a chunk of its own
(the linter reports it if it passes the encoder's limit). Notebooks 05 and 06 use it as the
"sentence-group" chunking.

    >>> from ragkit.types import Document
    >>> doc = Document("d", "One rule. Two rules here. Three.")
    >>> [c.text for c in SentenceGroupChunker(size=4, tokenizer="chars").chunk(doc)]
    ['One rule.', 'Two rules here.', 'Three.']
"""

from __future__ import annotations

from ..text.headings import breadcrumb_text, heading_path_at
from ..text.markdown import blocks_for
from ..text.sentences import TokenIndex, pack_sentences
from ..text.tokens import count_tokens, counter, get_tokenizer
from ..types import Chunk, Document
from .base import Chunker


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
        count = counter(self.tokenizer)
        return pack_sentences(doc.text, 0, len(doc.text), self.size, count)


class ProseChunker(SentenceGroupChunker):
    """Prose with little or no markup (reports, transcripts, narrative with only chapter
    headings): sentence groups of up to `size` tokens inside each heading's section — a group
    never crosses a heading — with the heading path as the prefix. A sentence that does not fit
    in `hard` tokens with its prefix is cut at token starts, so the encoder reads all of it.
    Measured on Chroma's corpora by ``ragkit bench prose``; the router's ``prose`` class.

        >>> doc = Document("d", "# Storms\\n\\nRain fell. Wind rose.\\n\\n# Calm\\n\\nSun.")
        >>> [(c.prefix, c.text) for c in ProseChunker(size=6, tokenizer="minilm").chunk(doc)]
        [('', '# Storms\\n\\nRain fell.'), ('[Storms]', 'Wind rose.'), ('', '# Calm\\n\\nSun.')]
    """

    name = "prose"

    def __init__(self, size: int = 128, tokenizer: str = "minilm", hard: int = 254):
        super().__init__(size, tokenizer)
        if hard < size:
            raise ValueError(f"hard ({hard}) must be at least size ({size})")
        self.hard = hard

    @property
    def label(self) -> str:
        name = str(self.tokenizer).rstrip("/").rsplit("/", 1)[-1]
        return f"prose({self.size}/{self.hard},{name})"

    def spans(self, doc: Document) -> list[tuple[int, int]]:
        return [(s, e) for s, e, _ in self._pieces(doc)]

    def chunk(self, doc: Document) -> list[Chunk]:
        chunks = [self.make(doc, s, e, prefix=p) for s, e, p in self._pieces(doc) if e > s]
        return self.finish(doc, chunks)

    def _pieces(self, doc: Document) -> list[tuple[int, int, str]]:
        tok = get_tokenizer(self.tokenizer)
        blocks = blocks_for(doc)
        text = doc.text
        heads = {b.start for b in blocks if b.kind == "heading"}
        starts = sorted({0, *heads})
        out: list[tuple[int, int, str]] = []
        for lo, hi in zip(starts, [*starts[1:], len(text)]):
            index = TokenIndex(text, lo, hi, tok)
            for s, e in pack_sentences(text, lo, hi, self.size, counter(tok)):
                path = heading_path_at(blocks, s + 1)
                if s == lo and lo in heads:  # it opens with the heading: no crumb of it
                    path = path[:-1]
                prefix = breadcrumb_text("path", path)
                room = max(1, self.hard - count_tokens(prefix, tok))
                cuts = [s, *index.cuts(s, e, room), e] if index.count(s, e) > room else [s, e]
                out += [(a, b, prefix) for a, b in zip(cuts, cuts[1:]) if b > a]
        return out
