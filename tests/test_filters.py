import datetime as dt

import pytest

from ragkit.chunkers import FixedCharChunker
from ragkit.evaluate import load_course
from ragkit.retrieve import BM25Retriever, Catalog, DenseRetriever, Hit, newest_first
from ragkit.types import Chunk, Document


@pytest.fixture(scope="module")
def course():
    return load_course()


@pytest.fixture(scope="module")
def chunks(course):
    return FixedCharChunker(500, 0).chunk_all(course.documents)


@pytest.mark.long
def test_superseded_documents_never_appear_by_default(course, chunks, embedder):
    cat = Catalog(course.documents)
    superseded = {d.id for d in course.documents if d.metadata.get("superseded_by")}
    assert superseded >= {"fee-schedule-2021", "refund-policy-2022"}
    queries = ["How much did the Priority support add-on cost?", "Gold refund window"]
    for r in (DenseRetriever(chunks, embedder), BM25Retriever(chunks)):
        for hits in r.search(queries, k=50, where=cat.filter()):
            assert hits and not {h.chunk.doc_id for h in hits} & superseded


def test_narrow_filter_still_returns_k_results(course, chunks, embedder):
    cat = Catalog(course.documents)
    f = cat.filter(product="northwind-pay")  # leaves the Pay documents (+ product 'all' ones)
    allowed = {c.doc_id for c in chunks if f({**c.metadata, "doc_id": c.doc_id})}
    only3 = lambda m: m["doc_id"] in sorted(allowed)[:3]  # noqa: E731
    n3 = sum(only3({"doc_id": c.doc_id}) for c in chunks)
    assert n3 >= 5
    for r in (DenseRetriever(chunks, embedder), BM25Retriever(chunks)):
        hits = r.search(["What is the fee for an online card payment?"], k=5, where=only3)[0]
        assert len(hits) == 5 and {h.chunk.doc_id for h in hits} <= set(sorted(allowed)[:3])


def test_as_of_selects_the_document_in_force(course):
    cat = Catalog(course.documents)
    meta = {d.id: {**d.metadata, "doc_id": d.id} for d in course.documents}
    in_2022 = cat.filter(as_of="2022-06-30")
    assert in_2022(meta["fee-schedule-2021"]) and not in_2022(meta["fee-schedule-2024"])
    now = cat.filter(as_of="2025-01-01")
    assert now(meta["fee-schedule-2024"]) and not now(meta["fee-schedule-2021"])


def test_read_question_finds_region_product_and_year(course):
    cat = Catalog(course.documents)
    assert cat.read_question("In the EU, what is the daily meal limit?").region == "eu"
    assert cat.read_question("What does Northwind Pay charge a US merchant?").describe() == {
        "region": "us", "product": "northwind-pay"}
    assert cat.read_question("In 2022, how much did Priority support cost?").as_of == "2022-12-31"
    assert cat.read_question("What is the 90-day rule?").describe() == {}
    # 'us' the pronoun is not the region
    assert cat.read_question("Can you tell us the refund window?").region is None


def test_exact_ties_go_to_the_newer_document():
    old = Document("old", "Same words.", {"effective_date": "2021-01-01"})
    new = Document("new", "Same words.", {"effective_date": "2024-01-01"})
    a = Chunk.make(old, 0, 11, "s", metadata={"effective_date": "2021-01-01"})
    b = Chunk.make(new, 0, 11, "s", metadata={"effective_date": "2024-01-01"})
    assert [h.chunk.doc_id for h in newest_first([Hit(a, 0.5), Hit(b, 0.5)])] == ["new", "old"]
    assert [h.chunk.doc_id for h in newest_first([Hit(a, 0.6), Hit(b, 0.5)])] == ["old", "new"]


def test_dates_are_compared_as_dates_and_the_undated_stay_where_they_were():
    """Issue 33: ``effective_date`` is parsed once (`ragkit.types.as_date`) and compared as a
    date; an undated chunk ranks after the dated ones on a tie, and an undated document is in
    force on any day, as when the dates were compared as strings."""
    from ragkit.experiments.prune import dedupe, superseded

    docs = [Document("old", "x", {"effective_date": "2021-01-01", "superseded_by": "new"}),
            Document("new", "x", {"effective_date": "2024-01-01"}),
            Document("undated", "x")]
    chunks = [Chunk.make(d, 0, 1, "s", metadata=dict(d.metadata)) for d in docs]
    ranked = newest_first([Hit(c, 0.5) for c in reversed(chunks)])
    assert [h.chunk.doc_id for h in ranked] == ["new", "old", "undated"]
    cat = Catalog(docs)
    assert cat.successors == {"old": dt.date(2024, 1, 1)}
    metas = [{**d.metadata, "doc_id": d.id} for d in docs]
    in_force = {day: [d.id for d, m in zip(docs, metas) if cat.filter(as_of=day)(m)]
                for day in ("2020-12-31", "2021-01-01", "2023-12-31", "2024-01-01")}
    assert in_force == {"2020-12-31": ["undated"], "2021-01-01": ["old", "undated"],
                        "2023-12-31": ["old", "undated"], "2024-01-01": ["new", "undated"]}
    assert cat.filter(as_of=dt.date(2024, 1, 1))(metas[1])  # a date object reads the same
    assert superseded(metas[1], cat, before="2024-01-02") and not superseded(metas[2], cat,
                                                                            before="2030-01-01")
    kept = dedupe(chunks, {"old": "2021-01-01", "new": dt.date(2024, 1, 1), "undated": None})
    assert [c.doc_id for c in kept] == ["new"]
    assert [c.doc_id for c in dedupe([chunks[2], chunks[0]], {"old": "2021-01-01"})] == ["old"]


def test_ambiguous_questions_get_several_readings(course, chunks):
    cat = Catalog(course.documents)
    bm25 = BM25Retriever(chunks)
    q = "What is the 90-day rule?"
    readings = cat.readings(q, bm25.search([q], k=20, where=cat.filter())[0])
    assert {"access-control-policy", "expense-policy-us"} <= {r.doc_id for r in readings}
    # a regional variant of the best document is a reading of its own, with its filter
    q = "What is the daily meal limit when travelling for work?"
    readings = cat.readings(q, bm25.search([q], k=20, where=cat.filter())[0], margin=0.0)
    assert {r.doc_id for r in readings} == {"expense-policy-eu", "expense-policy-us"}
    by_doc = {r.doc_id: r for r in readings}
    assert by_doc["expense-policy-us"].filter.region == "us"  # the variant, with its filter
    named = "In the EU, what is the daily meal limit while travelling?"
    assert len(cat.readings(named, bm25.search([named], k=20)[0])) == 1
