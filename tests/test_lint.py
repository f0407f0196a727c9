"""ragkit.chunkers.lint: each check on a small case made to trip it, and the corpus summary."""

import pytest

from ragkit.chunkers import FixedCharChunker, RecursiveChunker, StructureChunker, lint_corpus
from ragkit.chunkers.lint import Finding, lint, summary
from ragkit.types import Chunk, Document

TABLE_DOC = Document("t", "# Fees\n\nIntro line.\n\n| Plan | Price |\n|---|---|\n" + "\n".join(
    f"| Plan {i} | ${i} |" for i in range(40)))


def checks(findings):
    return sorted(f.check for f in findings)


def test_clean_chunking_has_no_findings():
    chunks = StructureChunker(40, 64, "minilm").chunk(TABLE_DOC)
    assert lint(TABLE_DOC, chunks, max_tokens=64, tokenizer="minilm") == []


def test_lost_text_is_an_error_with_its_place_and_amount():
    doc = Document("d", "Alpha beta.\n\nGamma delta.\n\nEpsilon.")
    chunks = [Chunk.make(doc, 0, 11, strategy="x"), Chunk.make(doc, 27, 35, strategy="x")]
    [f] = lint(doc, chunks)
    assert (f.check, f.level, f.amount, f.start, f.end) == ("lost_text", "error", 11, 13, 25)
    assert "d:3" in f.message and "Gamma delta." in f.message


def test_overlap_is_a_warning_that_counts_the_duplicated_characters():
    doc = Document("d", "abcdefghij")
    chunks = FixedCharChunker(4, 1).chunk(doc)  # abcd, defg, ghij
    [f] = lint(doc, chunks)
    assert (f.check, f.level, f.amount) == ("duplicated_text", "warning", 2)


def test_table_rows_without_their_header_are_reported():
    chunks = FixedCharChunker(120, 0).chunk(TABLE_DOC)
    bad = [f for f in lint(TABLE_DOC, chunks) if f.check == "table_without_header"]
    assert len(bad) >= 3 and all(f.level == "error" for f in bad)
    # the same rows with the header in the prefix are fine
    fixed = [c.with_prefix("| Plan | Price |\n|---|---|") for c in chunks]
    assert not [f for f in lint(TABLE_DOC, fixed) if f.check == "table_without_header"]


def test_heading_only_chunk_is_a_warning():
    doc = Document("d", "# Title\n\n## Section\n\nBody text.")
    chunks = [Chunk.make(doc, 0, 7, strategy="x"), Chunk.make(doc, 9, len(doc.text), strategy="x")]
    [f] = lint(doc, chunks)
    assert (f.check, f.level, f.start) == ("heading_only", "warning", 0)


def test_over_limit_counts_the_prefix():
    doc = Document("d", " ".join(["word"] * 50))
    chunk = Chunk.make(doc, 0, len(doc.text), strategy="x")
    assert lint(doc, [chunk], max_tokens=50, tokenizer="minilm") == []
    [f] = lint(doc, [chunk.with_prefix("[a prefix]")], max_tokens=50, tokenizer="minilm")
    assert (f.check, f.level) == ("over_limit", "error") and f.amount > 50
    assert lint(doc, [chunk], tokenizer="minilm") == []  # no limit given: not checked


def test_over_limit_with_an_embedder_uses_its_own_count_and_limit(embedder):
    limit = embedder.max_tokens
    body = " ".join(["word"] * (limit - 1))  # fits without special tokens, not with them
    doc = Document("d", body)
    [f] = lint(doc, [Chunk.make(doc, 0, len(body), strategy="x")], tokenizer=embedder)
    assert f.check == "over_limit" and f.amount == limit + 1


def test_empty_and_bad_span_chunks():
    doc = Document("d", "Alpha.   Beta.")
    empty = Chunk.make(doc, 6, 9, strategy="x")
    forged = Chunk(doc_id="d", start=0, end=6, text="Gamma.", strategy="x")
    found = lint(doc, [Chunk.make(doc, 0, 6, strategy="x"), empty,
                       Chunk.make(doc, 9, 14, strategy="x"), forged])
    assert checks(found) == ["bad_span", "duplicated_text", "empty"]


def test_summary_totals():
    findings = [Finding("lost_text", "d", "m", amount=5), Finding("lost_text", "d", "m", amount=2),
                Finding("duplicated_text", "d", "m", amount=7), Finding("over_limit", "d", "m"),
                Finding("heading_only", "d", "m"), Finding("table_without_header", "d", "m")]
    s = summary(findings)
    assert s["lost_chars"] == 7 and s["duplicated_chars"] == 7
    assert s["errors"] == 4 and s["warnings"] == 2
    assert s["over_limit"] == s["heading_only"] == s["tables_without_header"] == 1


def test_lint_corpus_gives_one_row_per_strategy():
    docs = [TABLE_DOC, Document("p", "# Prose\n\n" + "A sentence about refunds. " * 80)]
    frame = lint_corpus(docs, {"structure": StructureChunker(40, 64, "minilm"),
                               "naive": FixedCharChunker(200, 50)},
                        max_tokens=64, tokenizer="minilm")
    rows = frame.set_index("strategy")
    assert list(rows.index) == ["structure", "naive"]
    assert rows.loc["structure", "errors"] == 0 and rows.loc["structure", "duplicated_pct"] == 0
    assert rows.loc["naive", "tables_without_header"] > 0
    assert rows.loc["naive", "duplicated_pct"] > 0
    assert set(frame.columns) >= {"docs", "chunks", "lost_pct", "over_limit", "warnings"}
    single = lint_corpus(docs, RecursiveChunker(100, 0))
    assert list(single["strategy"]) == [RecursiveChunker(100, 0).label]


@pytest.mark.parametrize("doc", [Document("d", ""), Document("d", "   \n")])
def test_empty_documents(doc):
    assert lint(doc, []) == []


def test_over_cap_reports_chunks_over_their_own_chunkers_cap():
    from ragkit.chunkers.lint import cap_findings, chunk_cap

    doc = Document("d", " ".join(["word"] * 300))
    chunker = StructureChunker(40, 64, "minilm")
    assert chunk_cap(chunker, doc) == ("minilm", 64, True)
    assert cap_findings(doc, chunker.chunk(doc), chunker) == []
    whole = [Chunk.make(doc, 0, len(doc.text), strategy="x")]
    [f] = cap_findings(doc, whole, chunker)
    assert (f.check, f.level, f.amount) == ("over_cap", "error", 300)
    row = Document("t", "| a | b |\n|---|---|\n| " + "cell " * 100 + "| x |\n| 1 | 2 |\n")
    chunks = chunker.chunk(row)
    found = cap_findings(row, chunks, chunker)
    assert found and "one table row, which is never cut" in found[0].message
    table = lint_corpus([doc], [chunker])
    assert table.loc[0, "over_cap"] == 0
