"""HTML pages to Markdown, so that they flow through the same block parser as everything else.

A reader's corpus often holds exported web pages. Rather than keep a second parser, we turn a
page into Markdown text — headings to ``#``, paragraphs, list items to ``-``, tables to pipe
tables, ``<pre>`` to fenced code — and that Markdown becomes the document's text; all offsets
(blocks, chunks, gold) refer to it. Scripts, styles and comments are dropped; everything else
that is text is kept.

    >>> html_to_markdown("<h2>Fees</h2><p>Gold: <b>14</b> days</p>")
    '## Fees\\n\\nGold: 14 days\\n'
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

_BLOCK = {"p", "div", "section", "article", "header", "footer", "main", "blockquote", "br",
          "hr", "ul", "ol", "dl", "figure", "nav", "aside"}
_SKIP = {"script", "style", "head", "noscript", "template"}


class _Converter(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.line: list[str] = []
        self.skip = 0
        self.pre = 0
        self.table: list[list[str]] | None = None
        self.cell: list[str] | None = None
        self.list_depth = 0

    # -- helpers -----------------------------------------------------------------------
    def flush(self) -> None:
        text = "".join(self.line)
        if not self.pre:
            text = re.sub(r"[ \t\r\n]+", " ", text).strip()
        if text:
            self.out.append(text)
        self.line = []

    def handle_starttag(self, tag, attrs):
        if tag in _SKIP:
            self.skip += 1
        elif self.skip:
            return
        elif re.fullmatch(r"h[1-6]", tag):
            self.flush()
            self.line.append("#" * int(tag[1]) + " ")
        elif tag == "li":
            self.flush()
            self.line.append("  " * max(0, self.list_depth - 1) + "- ")
        elif tag in ("ul", "ol"):
            self.flush()
            self.list_depth += 1
        elif tag == "pre":
            self.flush()
            self.pre += 1
            self.line.append("```\n")
        elif tag == "table":
            self.flush()
            self.table = []
        elif tag == "tr" and self.table is not None:
            self.table.append([])
        elif tag in ("td", "th") and self.table is not None:
            self.cell = []
        elif tag in _BLOCK:
            self.flush()

    def handle_endtag(self, tag):
        if tag in _SKIP:
            self.skip = max(0, self.skip - 1)
        elif self.skip:
            return
        elif tag in ("td", "th") and self.table is not None and self.cell is not None:
            if not self.table:
                self.table.append([])
            self.table[-1].append(re.sub(r"\s+", " ", "".join(self.cell)).strip()
                                  .replace("|", "\\|"))
            self.cell = None
        elif tag == "table" and self.table is not None:
            rows = [r for r in self.table if r]
            if rows:
                width = max(len(r) for r in rows)
                rows = [r + [""] * (width - len(r)) for r in rows]
                lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * width]
                lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
                self.out.append("\n".join(lines))
            self.table = None
        elif tag == "pre":
            self.line.append("\n```")
            self.flush()
            self.pre = max(0, self.pre - 1)
        elif tag in ("ul", "ol"):
            self.flush()
            self.list_depth = max(0, self.list_depth - 1)
        elif re.fullmatch(r"h[1-6]", tag) or tag == "li" or tag in _BLOCK:
            self.flush()

    def handle_data(self, data):
        if self.skip:
            return
        if self.cell is not None:
            self.cell.append(data)
        elif self.table is None:
            self.line.append(data)


def html_to_markdown(page: str, path: str = "<html>") -> str:
    """Markdown text of an HTML page (see the module docstring)."""
    conv = _Converter()
    conv.feed(page)
    conv.close()
    conv.flush()
    blocks = [b for b in conv.out if b.strip()]
    return "\n\n".join(_tight_lists(blocks)) + ("\n" if blocks else "")


def _tight_lists(blocks: list[str]) -> list[str]:
    """Join consecutive list items into one block so they parse as one list."""
    out: list[str] = []
    for b in blocks:
        if out and b.lstrip().startswith("- ") and out[-1].lstrip().startswith("- "):
            out[-1] += "\n" + b
        else:
            out.append(b)
    return out
