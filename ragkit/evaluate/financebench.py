"""FinanceBench (Patronus AI): questions over public 10-K and 10-Q filings, read from the PDFs.

The open-source set has 150 questions over 84 filings, each question with its evidence text
and the evidence's page number (0-based in the data, 1-based here). Each filing is read with
`ragkit.text.pdf` into Markdown with its pages, and its gold is anchored to that text:

- **text**: the evidence text's letters and digits, in order, are found in the filing's
  letters and digits (spaces, table pipes, escapes and line breaks do not count), and the gold
  is the span from the first to the last character found, with the punctuation that opens and
  closes the evidence (``(1,373)``) where the filing has it too; where the evidence occurs more
  than once, the occurrence nearest its page is taken;
- **page**: where the extraction differs (another reading order, a word split differently),
  the gold is the whole evidence page's span.

Every question says which (``metadata["anchored"]``), and `Benchmark.info` counts both. A filing
whose PDF is neither in the local folder nor downloadable (a snapshot of the repository may
lack its largest files) is left out with its questions, and `Benchmark.info` names them.
Questions carry their company (``metadata["group"]``), so the tune/held-out split puts every
filing of one company on one side (`ragkit.evaluate.splits`).

Files: ``financebench/data/financebench_open_source.jsonl`` and ``financebench/pdfs/*.pdf``
under ``RAGKIT_BENCHMARKS_DIR`` (or the download cache), else downloaded from the pinned commit
and checked against `ragkit.evaluate.financebench_pins`.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from ..cache import atomic_write_text
from ..config import get_settings
from ..text.documents import data_lines
from ..text.locate import Letters
from ..types import Document, Query, Span
from .financebench_pins import FINANCEBENCH_COMMIT, PDF_BLOBS, QUESTIONS_SHA256
from .sources import Benchmark, BenchmarkUnavailable, fetch

_URL = f"https://raw.githubusercontent.com/patronus-ai/financebench/{FINANCEBENCH_COMMIT}/"
QUESTIONS = "financebench/data/financebench_open_source.jsonl"


def anchor(doc: Document, letters: Letters, evidence: str, page: int
           ) -> tuple[Span, str] | None:
    """(gold span, "text" or "page") for one evidence item on 0-based `page`, or None when the
    text is not found and the page does not exist."""
    pages = doc.metadata["pages"]
    found = letters.find_all(evidence, doc.text)
    if found:
        if 0 <= page < len(pages):
            mid = (pages[page][0] + pages[page][1]) / 2
            found.sort(key=lambda se: abs((se[0] + se[1]) / 2 - mid))
        return Span(doc.id, *found[0]), "text"
    if 0 <= page < len(pages) and pages[page][1] > pages[page][0]:
        return Span(doc.id, pages[page][0], pages[page][1]), "page"
    return None


def _read_filing(name: str, path: Path) -> Document:
    """The filing's Document, its extraction cached as JSON under its git blob id and the
    extractor's version (`ragkit.text.pdf.PDF_FORMAT`)."""
    from importlib.metadata import version

    from ..text.pdf import PDF_FORMAT, pdf_to_markdown

    key = f"{PDF_BLOBS[name]}-{PDF_FORMAT}-pypdfium2-{version('pypdfium2')}"
    cached = get_settings().cache_dir / "pdf_text" / f"{key}.json"
    got = None
    if cached.exists():
        try:
            got = json.loads(cached.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            got = None  # a damaged cache file is read again from the PDF
    if not isinstance(got, dict) or not {"text", "pages", "tables"} <= set(got):
        t0 = time.perf_counter()
        pdf = pdf_to_markdown(path)
        got = {"text": pdf.text, "pages": pdf.pages, "tables": pdf.tables,
               "continued_tables": pdf.continued_tables,
               "pages_without_text": pdf.pages_without_text,
               "seconds": round(time.perf_counter() - t0, 3)}
        atomic_write_text(cached, json.dumps(got))
    meta = {"title": name.replace("_", " "), "doc_type": "filing", "format": "markdown",
            "source_format": "pdf", "pages": [list(p) for p in got["pages"]],
            "tables": got["tables"], "continued_tables": got.get("continued_tables", 0),
            "pages_without_text": got.get("pages_without_text", []),
            "extract_seconds": got.get("seconds")}
    return Document(id=name, text=got["text"], metadata=meta, path=str(path))


def load_financebench(folder: str | Path | None = None, allow_download: bool = True
                      ) -> Benchmark:
    """The filings whose PDFs are available and their questions (see the module docstring)."""
    qpath = fetch(QUESTIONS, folder, allow_download, pinned=(_URL + "data/" + Path(
        QUESTIONS).name, QUESTIONS_SHA256))
    rows = [json.loads(line) for line in data_lines(qpath.read_text(encoding="utf-8"))
            if line.strip()]
    names = sorted({e["doc_name"] for r in rows for e in r["evidence"]} |
                   {r["doc_name"] for r in rows})
    docs: dict[str, Document] = {}
    missing: list[str] = []
    for name in names:
        if name not in PDF_BLOBS:
            missing.append(name)
            continue
        try:
            path = fetch(f"financebench/pdfs/{name}.pdf", folder, allow_download,
                         pinned=(f"{_URL}pdfs/{name}.pdf", "git-blob:" + PDF_BLOBS[name]))
        except BenchmarkUnavailable:
            missing.append(name)
            continue
        docs[name] = _read_filing(name, path)
    queries, how, dropped = _questions(rows, docs)
    info: dict[str, Any] = {
        "commit": FINANCEBENCH_COMMIT, "questions_in_set": len(rows),
        "filings_missing": missing, "questions_dropped": dropped,
        "anchored_text": how.count("text"), "anchored_page": how.count("page"),
        "pages": sum(len(d.metadata["pages"]) for d in docs.values()),
        "extract_seconds": round(sum(d.metadata["extract_seconds"] or 0
                                     for d in docs.values()), 1)}
    return Benchmark("financebench", list(docs.values()), queries, info=info)


def company_sample(bench: Benchmark, max_chars: int) -> Benchmark:
    """The filings of whole companies, taken in the order of the sha256 of the company's name
    (seed-free, blind to the results) while their text fits in `max_chars` characters, with
    their questions: a smaller FinanceBench for a machine that cannot encode 34 M characters.
    Every company lies on one side of the split, so a sample keeps the split clean."""
    import hashlib

    by_company: dict[str, set[str]] = {}
    for q in bench.queries:
        by_company.setdefault(q.metadata["company"], set()).update(g.doc_id for g in q.gold)
    size = {d.id: len(d.text) for d in bench.documents}
    keep: list[str] = []
    total = 0
    for company in sorted(by_company, key=lambda c: hashlib.sha256(c.encode()).hexdigest()):
        chars = sum(size[d] for d in by_company[company])
        if total + chars <= max_chars:
            keep += sorted(by_company[company])
            total += chars
    out = bench.restrict(keep)
    out.info.update(sample_chars=max_chars, sample_companies=sorted(
        {q.metadata["company"] for q in out.queries}), sample_text_chars=total)
    return out


def _questions(rows: list[dict], docs: dict[str, Document]
               ) -> tuple[list[Query], list[str], dict[str, int]]:
    """The questions whose filings are all there, each evidence item anchored; (queries, how
    each gold was anchored, questions dropped by reason)."""
    letters = {name: Letters(d.text) for name, d in docs.items()}
    queries, how = [], []
    dropped = {"filing missing": 0, "evidence page missing": 0}
    for i, row in enumerate(rows):
        names = [e["doc_name"] for e in row["evidence"]] or [row["doc_name"]]
        if any(n not in docs for n in names):
            dropped["filing missing"] += 1
            continue
        gold, kinds = [], []
        for e in row["evidence"]:
            got = anchor(docs[e["doc_name"]], letters[e["doc_name"]], e["evidence_text"],
                         int(e["evidence_page_num"]))
            if got is None:
                break
            if got[0] not in gold:
                gold.append(got[0])
                kinds.append(got[1])
        else:
            how.extend(kinds)
            queries.append(Query(
                id=f"financebench-{i:03d}", text=row["question"], gold=tuple(gold),
                answer=str(row.get("answer") or ""),
                metadata={"group": row["company"], "company": row["company"],
                          "doc_name": row["doc_name"], "anchored": sorted(set(kinds)),
                          "question_type": row.get("question_type", ""),
                          "source_id": row["financebench_id"]}))
            continue
        dropped["evidence page missing"] += 1
    return queries, how, dropped
