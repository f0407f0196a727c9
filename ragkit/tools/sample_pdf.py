"""``python -m ragkit.tools.sample_pdf [PATH]``: write the course's sample filing as a PDF.

Notebook 10 shows the PDF path on a filing it can read anywhere, CI included (FinanceBench's
PDFs are large and not everywhere): four pages of an annual report of Northwind Cloud, the
company of the course corpus, written for this course. Its statement of operations runs across
the page break from page 1 to page 2, below a running header, as statements in real filings
do; page 3 holds a balance sheet of thirty rows, page 4 a segment table and a note. The figures are invented. The file is committed as
``data/pdfs/northwind-annual-report-2023.pdf``; this script made it (reportlab, a dev
dependency), so it can be made again.
"""

from __future__ import annotations

import sys
from pathlib import Path

DEFAULT = Path(__file__).resolve().parents[2] / "data" / "pdfs" / \
    "northwind-annual-report-2023.pdf"

HEADER = ("(In millions, except per-share data)", "2023", "2022", "2021")
OPERATIONS = [
    ("Subscription revenue", "402.7", "338.1", "279.4"),
    ("Professional services revenue", "41.3", "36.9", "32.2"),
    ("Edge hardware revenue", "24.2", "20.5", "19.4"),
    ("Total revenue", "468.2", "395.5", "331.0"),
    ("Cost of subscription revenue", "88.6", "77.8", "67.1"),
    ("Cost of professional services", "33.9", "31.0", "28.3"),
    ("Cost of edge hardware", "17.4", "15.2", "14.9"),
    ("Total cost of revenue", "139.9", "124.0", "110.3"),
    ("Gross profit", "328.3", "271.5", "220.7"),
    ("Research and development", "112.4", "98.7", "86.0"),
    ("Sales and marketing", "141.9", "126.3", "112.8"),
    ("General and administrative", "46.8", "44.1", "40.7"),
    ("Total operating expenses", "301.1", "269.1", "239.5"),
    ("Operating income (loss)", "27.2", "2.4", "(18.8)"),
    ("Interest income", "9.6", "3.1", "0.8"),
    ("Interest expense", "(4.2)", "(4.4)", "(4.6)"),
    ("Other income (expense), net", "(1.3)", "0.7", "(0.9)"),
    ("Income (loss) before income taxes", "31.3", "1.8", "(23.5)"),
    ("Provision for income taxes", "6.9", "1.1", "0.6"),
    ("Net income (loss)", "24.4", "0.7", "(24.1)"),
    ("Net income (loss) per share, basic", "0.31", "0.01", "(0.32)"),
    ("Net income (loss) per share, diluted", "0.29", "0.01", "(0.32)"),
    ("Shares used in computing basic per-share amounts", "78.6", "76.2", "74.9"),
    ("Shares used in computing diluted per-share amounts", "83.1", "79.0", "74.9"),
]
BALANCE_HEADER = ("(In millions)", "December 31, 2023", "December 31, 2022")
BALANCE = [
    ("Cash and cash equivalents", "212.4", "168.9"),
    ("Marketable securities", "141.0", "122.6"),
    ("Accounts receivable, net", "88.3", "74.1"),
    ("Inventories", "9.7", "11.2"),
    ("Deferred commissions, current", "14.6", "12.3"),
    ("Prepaid expenses and other current assets", "21.8", "19.4"),
    ("Total current assets", "487.8", "408.5"),
    ("Property and equipment, net", "64.2", "58.7"),
    ("Operating lease right-of-use assets", "38.5", "42.9"),
    ("Deferred commissions, non-current", "27.3", "23.8"),
    ("Intangible assets, net", "18.9", "24.6"),
    ("Goodwill", "96.4", "96.4"),
    ("Other assets", "12.1", "10.8"),
    ("Total assets", "745.2", "665.7"),
    ("Accounts payable", "17.6", "15.9"),
    ("Accrued compensation", "31.2", "27.5"),
    ("Accrued expenses and other current liabilities", "24.8", "22.1"),
    ("Deferred revenue, current", "164.3", "139.8"),
    ("Operating lease liabilities, current", "9.9", "9.4"),
    ("Total current liabilities", "247.8", "214.7"),
    ("Deferred revenue, non-current", "21.7", "18.2"),
    ("Operating lease liabilities, non-current", "33.6", "38.8"),
    ("Convertible senior notes, net", "172.5", "171.1"),
    ("Other liabilities", "6.4", "5.9"),
    ("Total liabilities", "482.0", "448.7"),
    ("Common stock and additional paid-in capital", "512.7", "471.9"),
    ("Accumulated other comprehensive loss", "(3.1)", "(4.5)"),
    ("Accumulated deficit", "(246.4)", "(250.4)"),
    ("Total stockholders' equity", "263.2", "217.0"),
    ("Total liabilities and stockholders' equity", "745.2", "665.7"),
]
SEGMENTS_HEADER = ("Segment", "Revenue", "Operating income", "Customers")
SEGMENTS = [("Northwind Pay", "231.5", "38.4", "4,870"),
            ("Northwind Sync", "188.9", "21.7", "6,120"),
            ("Northwind Edge", "47.8", "(4.1)", "910")]


def _row(c, y: float, cells, bold: bool = False, xs=(400, 470, 540)) -> None:
    c.setFont("Helvetica-Bold" if bold else "Helvetica", 9)
    c.drawString(60, y, cells[0])
    for x, v in zip(xs, cells[1:]):
        c.drawRightString(x, y, v)


def _lines(c, y: float, lines, size: int = 10) -> float:
    c.setFont("Helvetica", size)
    for line in lines:
        c.drawString(60, y, line)
        y -= size + 3
    return y


def _table(c, y: float, header, rows, xs=(400, 470, 540)) -> float:
    """A header row in bold and its rows below it; the y of the last row."""
    _row(c, y, header, bold=True, xs=xs)
    for cells in rows:
        y -= 14
        _row(c, y, cells, xs=xs)
    return y


def _turn(c, number: str, title: str | None = None) -> None:
    """Close the page with its number; open the next with the running header (and a title)."""
    c.setFont("Helvetica", 9)
    c.drawString(300, 40, number)
    c.showPage()
    c.setFont("Helvetica", 8)
    c.drawString(60, 760, "Northwind Cloud, Inc. 2023 Annual Report")
    if title:
        c.setFont("Helvetica-Bold", 13)
        c.drawString(60, 730, title)


def write_sample_filing(path: str | Path = DEFAULT) -> Path:
    """Write the four-page sample filing to `path` and return it."""
    from reportlab.lib.pagesizes import letter
    from reportlab.pdfgen import canvas

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    c = canvas.Canvas(str(path), pagesize=letter, invariant=1)  # invariant: same bytes each run
    c.setTitle("Northwind Cloud, Inc. 2023 Annual Report (excerpt)")
    c.setFont("Helvetica-Bold", 16)
    c.drawString(60, 740, "Northwind Cloud, Inc.")
    c.setFont("Helvetica-Bold", 13)
    c.drawString(60, 716, "Management's Discussion of Results")
    y = _lines(c, 694, [
        "Total revenue grew 18% to $468.2 million in fiscal 2023, led by subscription revenue",
        "from Northwind Pay and Northwind Sync. Operating income turned positive for the first",
        "full year. The statement below sets out each line for the last three fiscal years.",
    ])
    c.setFont("Helvetica-Bold", 13)
    c.drawString(60, y - 14, "Consolidated Statements of Operations")
    _table(c, y - 40, HEADER, OPERATIONS[:14])
    _turn(c, "41")  # the statement goes on below the running header, without its header row
    y = 730
    for cells in OPERATIONS[14:]:
        _row(c, y, cells)
        y -= 14
    _lines(c, y - 16, [
        "Per-share amounts are computed on the weighted-average shares outstanding during each",
        "year. The accompanying notes are an integral part of these statements.",
    ])
    _turn(c, "42", "Consolidated Balance Sheets")
    _table(c, 700, BALANCE_HEADER, BALANCE, xs=(430, 540))
    _turn(c, "43", "Note 14. Segment Information")
    y = _lines(c, 708, [
        "The company reports three segments, one per product line. Segment operating income",
        "excludes stock-based compensation and amortization of acquired intangibles.",
    ])
    y = _table(c, y - 20, SEGMENTS_HEADER, SEGMENTS, xs=(330, 450, 540))
    _lines(c, y - 30, [
        "Northwind Edge includes the gateway hardware sold under the 2021 and 2024 warranty",
        "terms; its customers count every site with at least one active gateway.",
    ])
    c.setFont("Helvetica", 9)
    c.drawString(300, 40, "87")
    c.showPage()
    c.save()
    return path


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    print(write_sample_filing(args[0] if args else DEFAULT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
