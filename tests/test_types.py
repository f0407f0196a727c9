import pytest

from ragkit.types import Chunk, Document, check_chunks


def test_chunk_text_must_match_span_length():
    with pytest.raises(ValueError, match="span"):
        Chunk(doc_id="d", start=0, end=5, text="abc", strategy="s")


def test_chunk_ids_are_deterministic_and_depend_on_settings():
    doc = Document("d", "alpha beta gamma")
    a = Chunk.make(doc, 0, 5, strategy="x")
    b = Chunk.make(doc, 0, 5, strategy="x")
    c = Chunk.make(doc, 0, 5, strategy="y")
    assert a.id == b.id and a.id != c.id
    assert a.with_prefix("[Doc]").id != a.id


def test_prefix_kept_apart_from_body():
    doc = Document("d", "Gold | 14 days")
    c = Chunk.make(doc, 0, 14, strategy="s", prefix="[Fees > Tiers]")
    assert c.text == "Gold | 14 days"
    assert c.embedding_text() == "[Fees > Tiers]\n\nGold | 14 days"
    assert c.embedding_text("after") == "Gold | 14 days\n\n[Fees > Tiers]"


def test_check_chunks_catches_a_wrong_span():
    doc = Document("d", "abcdef")
    bad = Chunk(doc_id="d", start=1, end=3, text="xy", strategy="s")
    with pytest.raises(ValueError, match="differs"):
        check_chunks(doc, [bad])


def test_make_rejects_span_past_end():
    with pytest.raises(ValueError, match="past the document end"):
        Chunk.make(Document("d", "abc"), 0, 10, strategy="s")


def test_document_line_numbers_count_front_matter():
    doc = Document("d", "one\ntwo\nthree", path="f.md", line_offset=4)
    assert doc.where(doc.text.index("three")) == "f.md:7"


def test_dates_are_parsed_by_one_rule():
    import datetime as dt

    from ragkit.types import as_date, effective_date

    assert as_date("2024-03-01") == as_date(" 2024-03-01 ") == dt.date(2024, 3, 1)
    assert as_date(dt.datetime(2024, 3, 1, 12, 30)) == dt.date(2024, 3, 1)
    assert as_date(None) is None
    assert effective_date({}) is None and effective_date({"effective_date": ""}) is None
    assert effective_date({"effective_date": "2024-02-29"}) == dt.date(2024, 2, 29)
    with pytest.raises(ValueError, match="is not a valid date"):
        as_date("2023-02-29")
    with pytest.raises(ValueError, match="written YYYY-MM-DD, got 'March 2024'"):
        as_date("March 2024")
    with pytest.raises(ValueError, match="written YYYY-MM-DD, got 2024"):
        as_date(2024)
