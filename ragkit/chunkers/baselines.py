"""The splitters readers would otherwise pick, wrapped so the harness can score them.

- `LangchainMarkdownRecursive`: langchain's MarkdownHeaderTextSplitter (headers kept) followed
  by RecursiveCharacterTextSplitter, sized in the embedder's tokens;
- `ChonkieRecursive`: chonkie's RecursiveChunker with the same tokenizer.

Third-party splitters do not all report where their chunks came from. chonkie does
(``start_index``/``end_index``; we check each one against the text). langchain's Markdown
splitter does not, and it rewrites whitespace, so its chunks are located in the document in
order, from a cursor that only moves forward, by `ragkit.text.locate.locate` (the golden files'
search): exactly if possible, else ignoring differences in whitespace, here also whitespace
dropped between two words (``dropped_spaces``: chonkie re-joins some code without it). A chunk
that cannot be found either way is dropped and *counted* in ``unlocated`` (and in the results
row's flags) — never guessed. ragkit's own chunkers carry their offsets.
"""

from __future__ import annotations

from ..text.locate import locate
from ..types import Document
from .base import Chunker, trim_span


def first_span(text: str, piece: str, cursor: int = 0) -> tuple[int, int] | None:
    """The first span at or after `cursor` holding `piece` (`locate`, whitespace between two
    words possibly dropped); None when it is not found."""
    found = locate(text, piece, cursor, dropped_spaces=True, limit=1)
    return found[0] if found else None


def locate_in_order(text: str, pieces: list[str]) -> tuple[list[tuple[int, int]], int]:
    """Spans of `pieces` found in order in `text` (cursor never moves back); (spans, missed)."""
    spans, missed, cursor = [], 0, 0
    for piece in pieces:
        if not piece.strip():
            continue
        span = first_span(text, piece, cursor)
        if span is None:
            missed += 1
            continue
        spans.append(span)
        cursor = span[0] + 1
    return spans, missed


class _Located(Chunker):
    """Base: subclasses return chunk texts; spans are located in order."""

    def __init__(self) -> None:
        self.unlocated = 0

    def texts(self, doc: Document) -> list[str]:
        raise NotImplementedError

    def spans(self, doc: Document) -> list[tuple[int, int]]:
        spans, missed = locate_in_order(doc.text, self.texts(doc))
        self.unlocated += missed
        return [trim_span(doc.text, s, e) for s, e in spans]

    def params(self) -> dict:
        return {k: v for k, v in super().params().items() if k != "unlocated"}

    @property
    def flags(self) -> list[str]:
        return [f"unlocated_chunks:{self.unlocated}"] if self.unlocated else []


class LangchainMarkdownRecursive(_Located):
    """MarkdownHeaderTextSplitter(#, ##, ###; headers kept) then RecursiveCharacterTextSplitter
    with `size` tokens of the embedder's tokenizer."""

    name = "langchain_md_recursive"

    def __init__(self, size: int = 254, overlap: int = 0, tokenizer: str = "minilm"):
        super().__init__()
        self.size, self.overlap, self.tokenizer = size, overlap, tokenizer

    @property
    def label(self) -> str:
        return f"langchain markdown+recursive({self.size}/{self.overlap},{self.tokenizer})"

    def texts(self, doc: Document) -> list[str]:
        from langchain_text_splitters import (MarkdownHeaderTextSplitter,
                                              RecursiveCharacterTextSplitter)

        from ..text.tokens import counter

        headers = [("#", "h1"), ("##", "h2"), ("###", "h3")]
        sections = MarkdownHeaderTextSplitter(headers, strip_headers=False).split_text(doc.text)
        rec = RecursiveCharacterTextSplitter(chunk_size=self.size, chunk_overlap=self.overlap,
                                             length_function=counter(self.tokenizer))
        return [t for s in sections for t in rec.split_text(s.page_content)]


class ChonkieRecursive(Chunker):
    """chonkie's RecursiveChunker, budgeting the embedder's tokens.

    chonkie reports ``start_index``/``end_index`` for each chunk, and they are used when
    ``source[start:end]`` is the chunk's text. On some inputs (chonkie 1.7.0, e.g. indented
    byte-string tables in code) a chunk's text is re-joined with different whitespace and the
    offsets after it drift (they overlap or run backwards). Such a chunk is located like
    langchain's, in order from the previous chunk (`first_span`), counted in ``relocated`` (or in
    ``unlocated`` and dropped if not found), warned about and flagged in the results row.
    """

    name = "chonkie_recursive"

    def __init__(self, size: int = 254):
        self.size = size
        self.relocated = 0
        self.unlocated = 0

    @property
    def label(self) -> str:
        return f"chonkie recursive({self.size},minilm)"

    def params(self) -> dict:
        return {k: v for k, v in super().params().items()
                if k not in ("relocated", "unlocated")}

    @property
    def flags(self) -> list[str]:
        return ([f"chonkie_relocated:{self.relocated}"] * bool(self.relocated)
                + [f"unlocated_chunks:{self.unlocated}"] * bool(self.unlocated))

    def spans(self, doc: Document) -> list[tuple[int, int]]:
        import warnings

        from chonkie import RecursiveChunker
        from tokenizers import Tokenizer

        from ..models import bundled_minilm

        tok = Tokenizer.from_file(str(bundled_minilm() / "tokenizer.json"))
        tok.no_truncation()
        tok.no_padding()
        out, moved, lost, cursor = [], 0, 0, 0
        for c in RecursiveChunker(tokenizer=tok, chunk_size=self.size).chunk(doc.text):
            if c.start_index >= cursor and doc.text[c.start_index:c.end_index] == c.text:
                span = (c.start_index, c.end_index)
            else:
                span = first_span(doc.text, c.text, cursor)
                moved += span is not None
                lost += span is None and bool(c.text.strip())
            if span is not None:
                out.append(trim_span(doc.text, *span))
                cursor = span[1]
        if moved or lost:
            self.relocated += moved
            self.unlocated += lost
            warnings.warn(f"{doc.id}: {moved + lost} chonkie chunks' text differs from the "
                          f"source at their offsets; {moved} located in order, {lost} not "
                          "found (dropped, counted)", stacklevel=2)
        return out
