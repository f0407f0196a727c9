"""FinanceBench's loader (`ragkit.evaluate.financebench`) on a folder built in the test: two
companies' filings made with reportlab and a questions file in FinanceBench's format, with the
pinned checksums replaced by the test files' own.

- evidence written as FinanceBench writes it (cells on lines of their own) anchors to the text,
  on its page; evidence the extraction does not hold anchors to its whole page; both counted;
- a question whose filing is missing is dropped and counted; a changed file is a checksum error;
- every company lies on one side of the split, and a sample takes whole companies.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

pytest.importorskip("pypdfium2")
pytest.importorskip("reportlab")
from reportlab.pdfgen import canvas  # noqa: E402

import ragkit.evaluate.financebench as F  # noqa: E402
from ragkit.evaluate.sources import ChecksumError  # noqa: E402
from ragkit.evaluate.splits import grouped_split, leaks  # noqa: E402


def _filing(path: Path, company: str) -> None:
    c = canvas.Canvas(str(path))
    c.setFont("Helvetica", 10)
    c.drawString(72, 740, f"{company} annual report. Our business grew this year.")
    c.showPage()
    c.setFont("Helvetica", 10)
    c.drawString(72, 740, "Consolidated Statement of Cash Flows")
    for i, (label, a, b) in enumerate([("(Millions)", "2023", "2022"),
                                       ("Purchases of property and equipment", "(1,577)",
                                        "(1,373)"),
                                       ("Dividends paid", "(3,193)", "(2,803)")]):
        c.drawString(72, 712 - 14 * i, label)
        c.drawRightString(420, 712 - 14 * i, a)
        c.drawRightString(500, 712 - 14 * i, b)
    c.showPage()
    c.setFont("Helvetica", 10)
    c.drawString(72, 740, f"Risk factors of {company} are described here in plain words.")
    c.showPage()
    c.save()


def _blob(path: Path) -> str:
    data = path.read_bytes()
    return hashlib.sha1(f"blob {len(data)}\0".encode() + data).hexdigest()


@pytest.fixture()
def folder(tmp_path, monkeypatch):
    root = tmp_path / "bench" / "financebench"
    (root / "pdfs").mkdir(parents=True)
    (root / "data").mkdir()
    blobs = {}
    for name, company in (("ACME_2023_10K", "Acme"), ("ZETA_2023_10K", "Zeta")):
        _filing(root / "pdfs" / f"{name}.pdf", company)
        blobs[name] = _blob(root / "pdfs" / f"{name}.pdf")
    blobs["GONE_2023_10K"] = "0" * 40  # listed, but its PDF is not in the folder
    rows = [
        # FinanceBench's evidence: each cell on a line of its own, spaces around
        ("Acme", "ACME_2023_10K", "What did Acme spend on property?",
         "Purchases of property and equipment\n \n(1,577) \n \n(1,373)", 1),
        ("Acme", "ACME_2023_10K", "What are Acme's risks?",
         "Risk factors of Acme are described here in words that differ.", 2),
        ("Zeta", "ZETA_2023_10K", "How did Zeta's business do?",
         "Zeta annual report.\nOur business grew\nthis year.", 0),
        ("Gone", "GONE_2023_10K", "A question about a missing filing?", "anything", 0),
    ]
    lines = [json.dumps({"financebench_id": f"fb_{i}", "company": co, "doc_name": doc,
                         "question": q, "answer": "a", "question_type": "metrics-generated",
                         "evidence": [{"evidence_text": ev, "doc_name": doc,
                                       "evidence_page_num": page}]})
             for i, (co, doc, q, ev, page) in enumerate(rows)]
    qfile = root / "data" / "financebench_open_source.jsonl"
    qfile.write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.setattr(F, "PDF_BLOBS", blobs)
    monkeypatch.setattr(F, "QUESTIONS_SHA256", hashlib.sha256(qfile.read_bytes()).hexdigest())
    monkeypatch.setenv("RAGKIT_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "bench"


def test_evidence_anchors_to_the_text_on_its_page_or_to_the_page(folder):
    bench = F.load_financebench(folder, allow_download=False)
    docs = bench.docs_by_id()
    by_text = {q.text: q for q in bench.queries}
    spend = by_text["What did Acme spend on property?"]
    (g,) = spend.gold
    doc = docs[g.doc_id]
    assert spend.metadata["anchored"] == ["text"]
    assert doc.text[g.start:g.end].startswith("Purchases of property and equipment")
    assert doc.text[g.start:g.end].endswith("(1,373)")
    s, e, number = doc.metadata["pages"][1]
    assert s <= g.start < g.end <= e and number == 2  # evidence_page_num is 0-based
    risks = by_text["What are Acme's risks?"]
    (g,) = risks.gold
    assert risks.metadata["anchored"] == ["page"]
    assert (g.start, g.end) == tuple(doc.metadata["pages"][2][:2])
    assert bench.info["anchored_text"] == 2 and bench.info["anchored_page"] == 1
    assert bench.info["filings_missing"] == ["GONE_2023_10K"]
    assert bench.info["questions_dropped"] == {"filing missing": 1, "evidence page missing": 0}
    assert {q.metadata["group"] for q in bench.queries} == {"Acme", "Zeta"}


def test_a_changed_pdf_is_a_checksum_error(folder):
    pdf = folder / "financebench" / "pdfs" / "ZETA_2023_10K.pdf"
    pdf.write_bytes(pdf.read_bytes() + b"\n% changed\n")
    with pytest.raises(ChecksumError, match="differs"):
        F.load_financebench(folder, allow_download=False)


def test_the_extraction_is_cached_as_json_and_read_back(folder, tmp_path):
    first = F.load_financebench(folder, allow_download=False)
    cached = sorted((tmp_path / "cache" / "pdf_text").glob("*.json"))
    assert len(cached) == 2
    assert json.loads(cached[0].read_text())["pages"]
    again = F.load_financebench(folder, allow_download=False)
    assert [d.text for d in again.documents] == [d.text for d in first.documents]


def test_a_company_is_one_group_and_a_sample_takes_whole_companies(folder):
    bench = F.load_financebench(folder, allow_download=False)
    split = grouped_split("financebench", bench.queries, len(bench.documents))
    acme = {split.side[q.id] for q in bench.queries if q.metadata["company"] == "Acme"}
    assert len(acme) == 1
    two_sides = {q.id: side for q, side in zip(bench.queries, ["tune", "held-out", "tune"])}
    assert "group Acme on both sides" in leaks(bench.queries, two_sides, len(bench.documents))
    one = F.company_sample(bench, max(len(d.text) for d in bench.documents))
    assert len(one.documents) == 1
    companies = {q.metadata["company"] for q in one.queries}
    assert len(companies) == 1 and one.info["sample_companies"] == sorted(companies)
    assert F.company_sample(bench, 10).queries == []
