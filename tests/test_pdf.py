"""PDFs read as documents (`ragkit.text.pdf`): the tests build their PDFs with reportlab.

- a filing-like PDF: a heading, paragraphs, and a table that goes on across a page break;
  its text is Markdown, every chunk's text is its span, every chunk knows its pages, the
  table's header heads every piece of it (on the page after the break too), and the page
  chunker's chunks are the pages;
- bad PDFs: encrypted, image-only, corrupt, empty file, each a one-line reason naming the file,
  counted in a folder's summary beside the good one; a 2,000-page PDF is read whole.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

pytest.importorskip("pypdfium2")
reportlab = pytest.importorskip("reportlab")
from reportlab.lib.pagesizes import letter  # noqa: E402
from reportlab.pdfgen import canvas  # noqa: E402

from ragkit.chunkers import PageChunker, Router, StructureChunker  # noqa: E402
from ragkit.text.corpus import load_corpus  # noqa: E402
from ragkit.text.documents import DocumentError, load_document  # noqa: E402
from ragkit.types import check_chunks  # noqa: E402

ROWS = [(f"Line item number {i} of the statement", 1000 + 37 * i, 900 + 29 * i, 800 + 11 * i)
        for i in range(1, 41)]
HEADER = ("(Millions)", "2023", "2022", "2021")


def _row(c: canvas.Canvas, y: float, cells, bold: bool = False) -> None:
    c.setFont("Helvetica-Bold" if bold else "Helvetica", 9)
    c.drawString(72, y, str(cells[0]))
    for x, v in zip((380, 450, 520), cells[1:]):
        c.drawRightString(x, y, f"{v:,}" if isinstance(v, int) else str(v))


def filing(path: Path) -> Path:
    """Two pages: a heading, two paragraphs, a statement table of 40 rows whose last 15 rows
    sit on page 2 (past a running header), and a closing paragraph."""
    c = canvas.Canvas(str(path), pagesize=letter)
    c.setFont("Helvetica-Bold", 18)
    c.drawString(72, 740, "Annual Report 2023")
    c.setFont("Helvetica", 9)
    y = 712
    for line in ("Revenue grew in every segment during the year, led by industrial sales.",
                 "Margins held steady while the company invested in two new plants."):
        c.drawString(72, y, line)
        y -= 12
    y -= 18
    _row(c, y, HEADER, bold=True)
    for cells in ROWS[:25]:
        y -= 12
        _row(c, y, cells)
    c.setFont("Helvetica", 9)
    c.drawString(300, 40, "12")  # the page number
    c.showPage()
    c.setFont("Helvetica", 9)
    c.drawString(72, 760, "Table of Contents")
    y = 730
    for cells in ROWS[25:]:
        _row(c, y, cells)
        y -= 12
    c.setFont("Helvetica", 9)
    c.drawString(72, y - 24, "The accompanying notes are an integral part of this statement.")
    c.showPage()
    c.save()
    return path


@pytest.fixture(scope="module")
def doc(tmp_path_factory):
    return load_document(filing(tmp_path_factory.mktemp("pdf") / "report.pdf"))


def test_a_pdf_becomes_markdown_with_its_pages_heading_and_table(doc):
    assert doc.metadata["source_format"] == "pdf" and doc.metadata["format"] == "markdown"
    assert [p[2] for p in doc.metadata["pages"]] == [1, 2]
    (s1, e1, _), (s2, e2, _) = doc.metadata["pages"]
    assert 0 <= s1 < e1 < s2 < e2 <= len(doc.text)
    assert "# Annual Report 2023" in doc.text[s1:e1]
    assert "| (Millions) | 2023 | 2022 | 2021 |" in doc.text[s1:e1]
    assert "| Line item number 1 of the statement | 1,037 | 929 | 811 |" in doc.text[s1:e1]
    assert "| Line item number 26 of the statement |" in doc.text[s2:e2]
    assert "Revenue grew in every segment" in doc.text[s1:e1]
    assert doc.metadata["pages_without_text"] == [] and doc.metadata["tables"] == 2


def test_a_table_across_the_page_break_repeats_its_header_on_the_new_page(doc):
    s2, e2, _ = doc.metadata["pages"][1]
    page2 = doc.text[s2:e2]
    table = page2[page2.index("| (Millions)"):]
    lines = table.split("\n")
    assert lines[0] == "| (Millions) | 2023 | 2022 | 2021 |" and lines[1] == "|---|---|---|---|"
    assert lines[2].startswith("| Line item number 26 of the statement |")  # a body row
    assert doc.metadata["continued_tables"] == 1


@pytest.mark.parametrize("chunker", [StructureChunker(soft=60, hard=80), Router(soft=60, hard=80),
                                     PageChunker()], ids=lambda c: c.name)
def test_every_chunk_is_its_span_and_carries_its_pages(doc, chunker):
    chunks = chunker.chunk(doc)
    check_chunks(doc, chunks, complete=True)
    pages = doc.metadata["pages"]
    for c in chunks:
        assert doc.text[c.start:c.end] == c.text
        first, last = c.metadata["pages"]
        on = [n for s, e, n in pages if s < c.end and c.start < e]
        assert [first, last] == [min(on), max(on)]


def test_the_tables_header_heads_every_piece_of_it(doc):
    chunks = StructureChunker(soft=60, hard=80).chunk(doc)
    pieces = [c for c in chunks if "| Line item number" in c.text]
    assert len(pieces) >= 4  # the 40-row table does not fit in one chunk
    for c in pieces:
        head = c.text if c.text.startswith("| (Millions)") else c.prefix
        assert "| (Millions) | 2023 | 2022 | 2021 |\n|---|---|---|---|" in head, c
        assert not re.search(r"\| Line item number \d+ of the$", c.text)  # never mid-row
    numbers = sorted({int(n) for c in pieces for n in re.findall(r"number (\d+) of", c.text)})
    assert numbers == list(range(1, 41))
    assert {tuple(c.metadata["pages"]) for c in pieces} >= {(1, 1), (2, 2)}


def test_page_chunks_are_the_pages(doc):
    chunks = PageChunker().chunk(doc)
    assert [(c.start, c.end) for c in chunks] == [(s, e) for s, e, _ in doc.metadata["pages"]]
    assert [c.metadata["pages"] for c in chunks] == [[1, 1], [2, 2]]


def test_page_chunks_of_a_document_without_pages_are_flagged():
    from ragkit.types import Document

    chunker = PageChunker()
    chunks = chunker.chunk_all([Document("a", "One text.\n\nNo pages.")])
    assert [c.text for c in chunks] == ["One text.\n\nNo pages."]
    assert chunker.flags == ["pages: 1 document(s) without pages, each one chunk"]


def _encrypted(path: Path) -> Path:
    c = canvas.Canvas(str(path), encrypt="secret")
    c.drawString(72, 700, "Locked text.")
    c.save()
    return path


def _image_only(path: Path) -> Path:
    from PIL import Image
    from reportlab.lib.utils import ImageReader

    img = Image.new("RGB", (200, 80), "white")
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    c = canvas.Canvas(str(path))
    c.drawImage(ImageReader(io.BytesIO(buf.getvalue())), 72, 600, 200, 80)
    c.showPage()
    c.save()
    return path


BAD = {
    "encrypted.pdf": (_encrypted, r"encrypted\.pdf:1: encrypted PDF \(it needs a password\)"),
    "scan.pdf": (_image_only, r"scan\.pdf:1: no text layer on any of its 1 pages"),
    "corrupt.pdf": (lambda p: (p.write_bytes(b"%PDF-1.7\n1 0 obj <<\x00\xff garbage"), p)[1],
                    r"corrupt\.pdf:1: not a readable PDF"),
    "empty.pdf": (lambda p: (p.write_bytes(b""), p)[1], r"empty\.pdf:1: not a readable PDF"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_bad_pdf_is_one_line_naming_the_file(tmp_path, name):
    make, message = BAD[name]
    with pytest.raises(DocumentError) as err:
        load_document(make(tmp_path / name))
    text = str(err.value)
    assert "\n" not in text and re.search(message, text), text


def test_a_folder_of_pdfs_loads_the_good_one_and_counts_each_bad_one(tmp_path):
    filing(tmp_path / "report.pdf")
    for name, (make, _) in BAD.items():
        make(tmp_path / name)
    corpus = load_corpus(tmp_path, strict=False)
    assert [d.id for d in corpus.documents] == ["report"]
    assert sorted(Path(e.split(":", 1)[0]).name for e in corpus.errors) == sorted(BAD)
    with pytest.raises(DocumentError) as err:
        load_corpus(tmp_path)
    assert all(name in str(err.value) for name in BAD)


def test_a_page_without_text_is_counted_and_a_long_pdf_is_read_whole(tmp_path):
    path = tmp_path / "long.pdf"
    c = canvas.Canvas(str(path))
    for i in range(1, 2001):
        if i != 7:  # page 7 is blank: a scanned page among text pages
            c.setFont("Helvetica", 9)
            c.drawString(72, 700, f"Page {i} says one thing.")
        c.showPage()
    c.save()
    doc = load_document(path)
    assert len(doc.metadata["pages"]) == 2000 and doc.metadata["pages_without_text"] == [7]
    s, e, n = doc.metadata["pages"][1999]
    assert (doc.text[s:e], n) == ("Page 2000 says one thing.", 2000)
    assert [c.metadata["pages"] for c in PageChunker().chunk(doc)][-1] == [2000, 2000]


def test_a_quote_of_a_table_row_as_the_page_shows_it_anchors_in_a_pdf(doc, tmp_path):
    """A reader quotes a row's cells with spaces between them; the PDF's Markdown has pipes."""
    from ragkit.evaluate.golden import check_questions

    golden = tmp_path / "q.jsonl"
    golden.write_text(
        '{"id": "q1", "question": "Line 27 in 2022?", "evidence": [{"doc_id": "report", '
        '"quote": "Line item number 27 of the statement 1,999 1,683 1,097"}]}\n'
        '{"id": "q2", "question": "Nowhere?", "evidence": [{"doc_id": "report", '
        '"quote": "Line item number 27 of the statement 9,999"}]}\n', encoding="utf-8")
    records, problems = check_questions(golden, {"report": doc})
    assert [r["id"] for r in records] == ["q1"]
    (g,) = records[0]["evidence"]
    assert doc.text[g["start"]:g["end"]] == ("Line item number 27 of the statement | 1,999 | "
                                             "1,683 | 1,097")
    assert len(problems) == 1 and "quote not found" in str(problems[0])
