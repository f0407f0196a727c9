"""PDFs to Markdown with their pages, so that they flow through the same block parser as
everything else.

A PDF has no paragraphs, headings or tables, only characters placed on pages. We read each
character's text, box, font size and weight with pypdfium2 (Google's PDFium, Apache-2.0/BSD;
about 80 pages a second here, where pdfplumber read 2.4 and its ruling-line table finder saw
each shaded row of a cash-flow statement as a one-row table), and rebuild what the layout shows:

- a **line** is PDFium's own line of text; inside it, a gap wider than the font size between two
  characters separates two **cells**;
- a **table** is a run of two or more lines whose later cells hold figures (``1,577``,
  ``(370)``, ``$``, ``—``, ``12.5%``); the multi-cell line just above it, when there is one, is
  its header row (else its first row is). Cells go to the columns of the table's widest rows by
  their right edges (figures are right-aligned), and the table becomes a Markdown pipe table,
  so the structure chunker keeps it whole or repeats its header on every piece;
- a **heading** is a short line set clearly larger than the document's body text (``#`` to
  ``###`` by size), or a short line set in bold (``###``);
- everything else is **paragraph** text; a vertical gap larger than one and a half lines
  starts a new paragraph;
- a table that goes on across a page break (the next page opens, past a short running header,
  with a table as wide) gets its header row again on the new page, so each page's part reads
  as the table it is.

The Markdown is the document's text: every offset (blocks, chunks, gold) refers to it, and
``pdf_pages`` gives each page's ``(start, end, page_number)`` in it, so a chunk knows its pages.
A page with no text layer (a scanned image) contributes an empty span and is counted; a PDF with
no text on any page, an encrypted one, or a file PDFium cannot parse is a `PdfError` with a
one-line reason.
"""

from __future__ import annotations

import ctypes
import re
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

# a cell that holds a figure: digits with the punctuation of amounts, a dash for nil
_FIGURE = re.compile(r"^[\s$€£(]*[-−–—]?[\d.,]*\d[\d.,]*\s*%?\)?\s*$|^\s*[-−–—]+\s*$")


# the extraction's version: part of the key of every cached extraction (bump it when the
# Markdown a PDF becomes changes)
PDF_FORMAT = 2


class PdfError(ValueError):
    """A PDF that cannot be turned into text; the message is one line naming the file."""


@dataclass
class Line:
    """One line of a page: its cells (text, left, right), font size, weight and box."""

    cells: list[tuple[str, float, float]]
    size: float
    bold: bool
    top: float
    bottom: float

    @property
    def text(self) -> str:
        return " ".join(c[0] for c in self.cells)

    @property
    def figures(self) -> int:
        return sum(1 for c in self.cells[1:] if _FIGURE.match(c[0]))


@dataclass
class PdfText:
    """A PDF read into Markdown: its text, each page's span, and what was not text."""

    text: str
    pages: list[tuple[int, int, int]]
    pages_without_text: list[int] = field(default_factory=list)
    tables: int = 0
    continued_tables: int = 0  # tables that went on across a page break (header repeated)


def _open(path: Path):
    import pypdfium2 as pdfium

    try:
        return pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as e:
        reason = str(e)
        if "password" in reason.lower():
            raise PdfError(f"{path}:1: encrypted PDF (it needs a password); decrypt it or "
                           "leave it out") from None
        raise PdfError(f"{path}:1: not a readable PDF ({reason.rstrip('.')})") from None


def _page_lines(page) -> list[Line]:
    """The page's lines, in PDFium's reading order, with cells split at wide gaps."""
    import pypdfium2.raw as raw

    tp = page.get_textpage()
    n = tp.count_chars()
    text = tp.get_text_range(0, n) if n else ""
    h = tp.raw
    l_, r_, b_, t_ = (ctypes.c_double() for _ in range(4))
    lines: list[Line] = []
    start = 0
    for m in list(re.finditer(r"\r\n|\n", text)) + [None]:
        end = m.start() if m else len(text)
        chars = []
        for j in range(start, min(end, n)):
            ch = text[j]
            if ch.isspace():
                chars.append((ch, None))
                continue
            raw.FPDFText_GetCharBox(h, j, l_, r_, b_, t_)
            chars.append((ch, (l_.value, r_.value, b_.value, t_.value, j)))
        start = m.end() if m else len(text)
        line = _line(chars, h, raw)
        if line is not None:
            lines.append(line)
    tp.close()
    return lines


def _line(chars, h, raw) -> Line | None:
    boxes = [b for _, b in chars if b is not None]
    if not boxes:
        return None
    sizes = [raw.FPDFText_GetFontSize(h, b[4]) for b in boxes[:: max(1, len(boxes) // 8)]]
    size = statistics.median(sizes) or 10.0
    bold = raw.FPDFText_GetFontWeight(h, boxes[0][4]) >= 600
    cells: list[tuple[str, float, float]] = []
    cur, left, right, prev_r = [], None, None, None
    for ch, box in chars:
        if box is None:
            cur.append(ch)
            continue
        if prev_r is not None and box[0] - prev_r > size * 1.0 and "".join(cur).strip():
            cells.append(("".join(cur).strip(), left, right))
            cur, left = [], None
        if left is None:
            left = box[0]
        cur.append(ch)
        right = prev_r = box[1]
    if "".join(cur).strip():
        cells.append(("".join(cur).strip(), left, right))
    cells = [(re.sub(r"\s+", " ", t), a, b) for t, a, b in cells]
    return Line(cells, size, bold, max(b[3] for b in boxes), min(b[2] for b in boxes))


# a line that Markdown would read as structure even inside a paragraph (a heading, a quote, a
# bullet, a list that starts at 1, a fence, a setext underline or a rule), and at a paragraph's
# start any numbered item
_INTERRUPTS = re.compile(r"^(\s*)(#{1,6}(?=\s|$)|>|[-*+](?=\s|$)|1[.)](?=\s|$)|`{3}|~{3}"
                         r"|[=-]+\s*$|_{3,}|\*{3,}|\|)")
_STARTS = re.compile(r"^(\s*)(\d+[.)](?=\s|$))")


def _escape(text: str, first: bool) -> str:
    """A line of running text that Markdown would read as structure, escaped."""
    for pattern in (_INTERRUPTS, _STARTS) if first else (_INTERRUPTS,):
        if pattern.match(text):
            return pattern.sub(lambda m: m.group(1) + "\\" + m.group(2), text, count=1)
    return text


def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|")


_CURRENCY = {"$", "€", "£", "US$"}


def _merge_currency(line: Line) -> list[tuple[str, float, float]]:
    """The line's cells with a currency sign that stands alone, or closes a cell, joined to the
    figure after it."""
    out: list[tuple[str, float, float]] = []
    carry = ""
    for text, left, right in line.cells:
        if carry:  # the sign that closed the cell before opens this one
            text, carry = f"{carry} {text}", ""
        sign = text.rsplit(" ", 1)[-1] if " " in text else ""
        if sign in _CURRENCY:
            text, carry = text[:-len(sign)].rstrip(), sign
        if out and out[-1][0] in _CURRENCY:
            sign, sleft, _ = out.pop()
            out.append((f"{sign} {text}", sleft, right))
        else:
            out.append((text, left, right))
    return out


def _table_markdown(rows: list[Line]) -> str:
    """Rows as a pipe table, the first row its header, with as many columns as most of the
    rows with figures have cells; each cell goes to the column whose right edge is nearest."""
    cells = [_merge_currency(r) for r in rows]
    counts = [len(c) for c, r in zip(cells, rows) if r.figures]
    width = max(2, statistics.mode(counts) if counts else max(len(c) for c in cells))
    wide = [c for c in cells if len(c) == width] or [max(cells, key=len)]
    width = len(wide[0])
    rights = [statistics.median(c[i][2] for c in wide) for i in range(width)]

    def place(row: list[tuple[str, float, float]]) -> list[str]:
        if len(row) == width:
            return [c[0] for c in row]
        out = [""] * width
        rest = row
        if not _FIGURE.match(row[0][0]):
            out[0], rest, col = row[0][0], row[1:], 1
        else:
            col = 0
        for text, _, right in rest:
            best = min(range(col, width), key=lambda i: abs(rights[i] - right), default=None)
            if best is None:  # more cells than columns are left: join them to the last
                out[-1] = (out[-1] + " " + text).strip()
                continue
            out[best] = text
            col = best + 1
        return out

    md = ["| " + " | ".join(_cell(c) for c in place(cells[0])) + " |", "|" + "---|" * width]
    md += ["| " + " | ".join(_cell(c) for c in place(r)) + " |" for r in cells[1:]]
    return "\n".join(md)


def _is_header(line: Line, first: Line) -> bool:
    """A line just above a table that names its columns: two or more cells, no figures, and
    no more cells than the table's first row has."""
    return 2 <= len(line.cells) <= max(2, len(first.cells)) and not line.figures \
        and not _FIGURE.match(line.cells[0][0])


def _is_row(line: Line) -> bool:
    return len(line.cells) >= 2 and line.figures > 0


def _table_end(lines: list[Line], i: int) -> int:
    """The end of the table that starts at line `i` (`i` itself when none does): rows with
    figures, and the short labels between them (a section name, a label that wraps), up to the
    last row with figures. A table holds at least two such rows."""
    j, last, rows = i, i, 0
    while j < len(lines):
        if _is_row(lines[j]):
            rows, last = rows + 1, j + 1
        elif not (rows and len(lines[j].text.split()) <= 16
                  and any(_is_row(x) for x in lines[j + 1:j + 3])):
            break
        j += 1
    return last if rows >= 2 else i


def _blocks(lines: list[Line], body_size: float, heading_sizes: list[float]) -> list[str]:
    """One page's lines as Markdown blocks (headings, tables, paragraphs)."""
    out: list[str] = []
    para: list[Line] = []

    def flush() -> None:
        if para:
            out.append("\n".join(_escape(x.text, k == 0) for k, x in enumerate(para)))
            para.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        end = _table_end(lines, i)
        if end > i:
            rows = lines[i:end]
            if para and _is_header(para[-1], rows[0]):  # column names without figures
                rows = [para.pop(), *rows]
            flush()
            out.append(_table_markdown(rows))
            i = end
            continue
        words = len(line.text.split())
        sentence = line.text.endswith(".") and words > 4  # "Acme, Inc." is a title
        if words <= 14 and line.size >= body_size * 1.15 and not sentence:
            level = 1 + min(2, next((k for k, s in enumerate(heading_sizes)
                                     if line.size >= s - 0.01), 2))
            flush()
            out.append("#" * level + " " + _escape(line.text, True).lstrip("#").strip())
        elif words <= 12 and line.bold and not line.text.endswith((".", ",", ";")) \
                and len(line.cells) == 1 and any(c.isalpha() for c in line.text):
            flush()
            out.append("### " + _escape(line.text, True).lstrip("#").strip())
        else:
            if para and para[-1].bottom - line.top > 1.5 * max(line.size, 1.0):
                flush()
            para.append(line)
        i += 1
    flush()
    return [b for b in out if b.strip()]


def plain_pages(path: str | Path) -> list[str]:
    """Each page's text as PDFium lays it out, one line per line and nothing more: what an
    ingestion pipeline that only "extracts the text" hands on (no table, no heading). The
    course sets it beside `pdf_to_markdown`'s reading of the same pages."""
    pdf = _open(Path(path))
    try:
        out = []
        for i in range(len(pdf)):
            tp = pdf[i].get_textpage()
            out.append(tp.get_text_range().replace("\r\n", "\n"))
            tp.close()
        return out
    finally:
        pdf.close()


def _is_table(block: str) -> bool:
    lines = block.split("\n", 2)
    return len(lines) > 1 and lines[0].startswith("| ") and lines[1].startswith("|---")


def _short(block: str) -> bool:
    """A block that a page's running header or footer could be (a page number, a title)."""
    return not _is_table(block) and len(block.split()) <= 8


def _continue_table(before: list[str], blocks: list[str]) -> bool:
    """When the page `blocks` opens (past a short running header) with a table as wide as the
    one that closed the page `before` (past a short footer), give it that table's header row:
    the table went on across the page break, and its first row here is a body row. True when
    it did."""
    last = next((k for k in range(len(before) - 1, max(-1, len(before) - 4), -1)
                 if not _short(before[k])), None)
    first = next((k for k in range(min(3, len(blocks))) if not _short(blocks[k])), None)
    if last is None or first is None or not (_is_table(before[last])
                                             and _is_table(blocks[first])):
        return False
    head, delim, _ = before[last].split("\n", 2)
    top, top_delim, rest = (blocks[first] + "\n").split("\n", 2)
    if top_delim != delim or top == head:
        return False
    blocks[first] = "\n".join([head, delim, top, rest]).rstrip("\n")
    return True


def pdf_to_markdown(path: str | Path) -> PdfText:
    """The PDF at `path` as Markdown text with each page's span; `PdfError` for a PDF that is
    encrypted, unreadable or has no text layer at all."""
    path = Path(path)
    pdf = _open(path)
    try:
        pages = [_page_lines(pdf[i]) for i in range(len(pdf))]
    finally:
        pdf.close()
    if not pages:
        raise PdfError(f"{path}:1: the PDF has no pages")
    sizes: Counter = Counter()  # font size -> characters set in it
    for page in pages:
        for ln in page:
            sizes[round(ln.size, 1)] += len(ln.text)
    if not sizes:
        raise PdfError(f"{path}:1: no text layer on any of its {len(pages)} pages (scanned "
                       "images?); run OCR on it first")
    body = sizes.most_common(1)[0][0]  # the body text's size: the most characters
    big = sorted({round(ln.size, 1) for page in pages for ln in page
                  if ln.size >= body * 1.15}, reverse=True)
    parts: list[str] = []
    spans: list[tuple[int, int, int]] = []
    empty: list[int] = []
    pos = 0
    tables = continued = 0
    before: list[str] = []
    for number, lines in enumerate(pages, 1):
        blocks = _blocks(lines, body, big)
        continued += _continue_table(before, blocks)
        before = blocks or before
        tables += sum(1 for b in blocks if _is_table(b))
        page = "\n\n".join(blocks)
        if not page:
            empty.append(number)
        sep = "\n\n" if parts else ""
        spans.append((pos + len(sep), pos + len(sep) + len(page), number))
        parts.append(sep + page)
        pos += len(sep) + len(page)
    return PdfText("".join(parts) + "\n", spans, empty, tables, continued)
