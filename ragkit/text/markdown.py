"""Markdown parsed into typed blocks with exact character offsets.

Parsing is done by markdown-it-py (CommonMark + tables), which reports each top-level block's
line range; we turn line ranges into character offsets of the original text (CRLF included),
trim surrounding whitespace, and check the invariant ``text[start:end] == block.text``. Any
non-blank text the parser did not claim (e.g. link reference definitions) becomes a paragraph
block flagged ``meta["unparsed"]``, so nothing is dropped. Code and plain text become
paragraphs separated by blank lines (`blocks_for`, `plain_blocks`).

    >>> [(b.kind, b.text) for b in parse_markdown("# Fees\\n\\nGold pays 2%.\\n")]
    [('heading', '# Fees'), ('paragraph', 'Gold pays 2%.')]
"""

from __future__ import annotations

import bisect
import re
from functools import lru_cache
from typing import Any

from ..types import Block, Document, trim_span

_NEWLINE = re.compile(r"\r\n?|\n")


@lru_cache(maxsize=1)
def _markdown_parser():
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": True}).enable("table")


def _line_starts(text: str) -> list[int]:
    """Character offset where each line starts, with line breaks as markdown-it sees them."""
    starts = [0]
    starts.extend(m.end() for m in _NEWLINE.finditer(text))
    return starts


def parse_markdown(text: str) -> list[Block]:
    """Top-level blocks of a Markdown text, in order, with exact offsets into `text`."""
    tokens = _markdown_parser().parse(text)
    starts = _line_starts(text)
    n_lines = len(starts)

    def span(line_map: list[int]) -> tuple[int, int]:
        a, b = line_map
        s = starts[a] if a < n_lines else len(text)
        e = starts[b] if b < n_lines else len(text)
        return trim_span(text, s, e)

    blocks: list[Block] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.level != 0 or tok.map is None or tok.nesting == -1:
            i += 1
            continue
        s, e = span(tok.map)
        meta: dict[str, Any] = {}
        level = 0
        t = tok.type
        if t == "heading_open":
            kind, level = "heading", int(tok.tag[1])
            meta["title"] = tokens[i + 1].content.strip()
        elif t == "paragraph_open":
            kind = "paragraph"
        elif t == "table_open":
            kind = "table"
            rows = []
            j = i + 1
            while tokens[j].type != "table_close":
                if tokens[j].type == "tr_open" and tokens[j].map:
                    rows.append(span(tokens[j].map))
                j += 1
            meta["rows"] = rows  # header row first; the delimiter row belongs to the header gap
        elif t in ("bullet_list_open", "ordered_list_open"):
            kind = "list"
            items, depth, j = [], 0, i + 1
            close = t.replace("_open", "_close")
            while not (tokens[j].type == close and tokens[j].level == 0):
                if tokens[j].type == "list_item_open":
                    if tokens[j].level == 1 and tokens[j].map:
                        items.append(span(tokens[j].map))
                    depth = max(depth, tokens[j].level // 2 + 1)
                j += 1
            meta["items"], level = items, depth
        elif t in ("fence", "code_block"):
            kind = "code"
            meta["info"] = tok.info.strip()
        elif t == "html_block":
            kind = "html"
        elif t == "blockquote_open":
            kind = "quote"
        elif t == "hr":
            kind = "rule"
        else:
            kind = "paragraph"
        if e > s:
            blocks.append(Block(kind=kind, start=s, end=e, text=text[s:e], level=level, meta=meta))
        i += 1
    return _fill_gaps(text, blocks)


def _fill_gaps(text: str, blocks: list[Block]) -> list[Block]:
    """Turn any non-blank text between parsed blocks into `unparsed` paragraph blocks."""
    out: list[Block] = []
    pos = 0
    for b in sorted(blocks, key=lambda b: b.start):
        if b.start < pos:  # markdown-it line ranges never overlap; guard anyway
            raise AssertionError(f"overlapping blocks at offset {b.start}")
        out.extend(_gap_blocks(text, pos, b.start))
        out.append(b)
        pos = b.end
    out.extend(_gap_blocks(text, pos, len(text)))
    return out


def _gap_blocks(text: str, start: int, end: int) -> list[Block]:
    s, e = trim_span(text, start, end)
    if e <= s:
        return []
    return [Block(kind="paragraph", start=s, end=e, text=text[s:e], meta={"unparsed": True})]


def blocks_for(doc: Document) -> list[Block]:
    """Blocks of any document: Markdown is parsed; code and plain text become paragraphs
    separated by blank lines (code files are handled by the code chunker)."""
    if doc.metadata.get("format", "markdown") == "markdown":
        return parse_markdown(doc.text)
    return plain_blocks(doc.text)


def plain_blocks(text: str) -> list[Block]:
    """Paragraph blocks separated by blank lines, with offsets."""
    out, pos = [], 0
    for m in re.finditer(r"(?:\r?\n[ \t]*){2,}", text):
        out.extend(_gap_blocks(text, pos, m.start()))
        pos = m.end()
    out.extend(_gap_blocks(text, pos, len(text)))
    return out


def offset_to_line(text: str, offset: int) -> int:
    """1-based line of a character offset (helper for messages)."""
    return bisect.bisect_right(_line_starts(text), offset)
