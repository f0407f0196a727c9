"""Tests for ragkit.experiments.prune: distractors, the three prune rules, and the measurement."""

import pytest

from ragkit.chunkers import FixedCharChunker
from ragkit.experiments import garble, gold_in_superseded, grow
from ragkit.experiments.prune import dedupe, looks_garbled, measure, prune, superseded, verdict
from ragkit.retrieve import Catalog
from ragkit.types import Chunk, Document, Query, Span

TABLE = """# Fees

Prices below.

| Plan | Price | Seats |
|---|---|---|
| Team | $15 | 3 |
| Business | $29 | 10 |
"""


def _doc(id_, text, **meta):
    return Document(id=id_, text=text, metadata={"doc_id": id_, **meta})


def test_garble_flattens_tables_and_keeps_metadata():
    doc = _doc("fees", TABLE, effective_date="2024-01-01", region="global")
    g = garble(doc)
    assert g.id == "fees-extracted" and g.metadata["doc_id"] == "fees-extracted"
    assert g.metadata["effective_date"] == "2024-01-01"
    assert "|" not in g.text and "\n" not in g.text and "---" not in g.text
    assert "Team $15 3 Business $29 10" in g.text


def test_grow_adds_garbled_then_distractors():
    course = [_doc("a", "x"), _doc("b", "y")]
    dist = [_doc(f"d{i}", "z") for i in range(5)]
    sizes = grow(course, dist, garbled=_doc("g", "w"), n_distractors=(1, 3, 9))
    assert list(sizes) == ["course", "+ garbled table", "+ 1 distractor corpus",
                           "+ 3 distractor corpora"]
    assert [d.id for d in sizes["+ 1 distractor corpus"]] == ["a", "b", "g", "d0"]
    assert len(grow(course, dist)["+ 3 distractor corpora"]) == 5  # no garbled copy


def test_superseded_reads_metadata_and_cutoff():
    docs = [_doc("old", "x", superseded_by="new", effective_date="2021-01-01"),
            _doc("new", "y", effective_date="2024-01-01"),
            _doc("call", "z", effective_date="2019-05-01")]
    cat = Catalog(docs)
    assert superseded(docs[0].metadata, cat)
    assert not superseded(docs[1].metadata, cat)
    assert not superseded(docs[2].metadata, cat)
    assert superseded(docs[2].metadata, cat, before="2020-01-01")


def test_looks_garbled():
    flat = "Plan Price Seats Team $15 3 Business $29 10 Enterprise 50 " * 10
    assert looks_garbled(flat)
    assert looks_garbled("   \n ")  # empty
    assert not looks_garbled(flat[:100])  # too short to judge
    assert not looks_garbled(flat.replace("Business", "Business\n"))  # has line breaks
    assert not looks_garbled("words without digits at all " * 20)


def test_dedupe_keeps_newest_copy():
    a, b = _doc("a", "same  text\nhere"), _doc("b", "same text here")
    ca, cb = Chunk.make(a, 0, len(a.text), strategy="x"), Chunk.make(b, 0, len(b.text), "x")
    kept = dedupe([ca, cb], {"a": "2021-01-01", "b": "2024-01-01"})
    assert [c.doc_id for c in kept] == ["b"]
    assert [c.doc_id for c in dedupe([ca, cb], {})] == ["a"]  # tie: first kept


def _one_per_rule():
    """Four documents, one chunk each: one for each prune rule to drop, one to keep."""
    flat = "Plan Price Seats Team $15 3 Business $29 10 Enterprise 50 " * 10
    docs = [_doc("old", "old text", superseded_by="new", effective_date="2021-01-01"),
            _doc("new", "new text", effective_date="2024-01-01"),
            _doc("copy", "new text", effective_date="2023-01-01"),
            _doc("flat", flat, effective_date="2024-01-01")]
    return docs, [Chunk.make(d, 0, len(d.text), strategy="x") for d in docs]


def test_prune_counts_each_rule():
    docs, chunks = _one_per_rule()
    p = prune(chunks, docs)
    assert [c.doc_id for c in p.chunks] == ["new"]
    assert p.dropped == {"superseded": 1, "garbled or empty": 1, "duplicate": 1}


def test_measure_table_and_paired_values(embedder):
    text = ("Annual plans can be cancelled within 30 days of purchase for a full refund. "
            "Monthly plans are never refunded.\n") * 3
    course = [_doc("refund", text, effective_date="2024-01-01"),
              _doc("refund-old", text.replace("30", "14"), superseded_by="refund",
                   effective_date="2022-01-01")]
    s = text.index("Annual")
    q = Query("q1", "How long is the refund window for annual plans?",
              (Span("refund", s, s + 75),))
    sizes = grow(course, [_doc("noise", "Weather report: sunny and warm.\n" * 40)],
                 n_distractors=(1,))
    res = measure(sizes, [q, Query("q2", "refuse me")], FixedCharChunker(200, 50), embedder,
                  budget=256)
    t = res.table
    assert list(t["size"]) == ["course"] * 2 + ["+ 1 distractor corpus"] * 2
    assert list(t["pruned"]) == [False, True, False, True]
    assert {"n_docs", "n_chunks", "recall@B256", "dropped: superseded"} <= set(t.columns)
    assert (t[t.pruned]["n_chunks"].to_numpy() < t[~t.pruned]["n_chunks"].to_numpy()).all()
    assert list(res.values["course", False].index) == ["q1"]  # refusals left out
    c = res.versus(("+ 1 distractor corpus", True), ("course", False))
    assert c.n == 1


def test_gold_in_superseded_and_verdict():
    from ragkit.evaluate import paired

    docs = [_doc("old", "old text", superseded_by="new"), _doc("new", "new text")]
    qs = [Query("a", "?", (Span("old", 0, 3),)), Query("b", "?", (Span("new", 0, 3),))]
    assert gold_in_superseded(qs, docs) == {"a"}
    assert verdict(paired([0.0] * 20, [1.0] * 20)) == "held"
    assert verdict(paired([1.0] * 20, [0.0] * 20)) == "not held"
    assert verdict(paired([1.0, 0.0] * 10, [0.0, 1.0] * 10)) == "no measurable difference"


def test_prune_rules_apply_one_at_a_time():
    docs, chunks = _one_per_rule()
    only = {r: prune(chunks, docs, rules=(r,)) for r in ("superseded", "garbled or empty",
                                                          "duplicate")}
    assert [c.doc_id for c in only["superseded"].chunks] == ["new", "copy", "flat"]
    assert [c.doc_id for c in only["garbled or empty"].chunks] == ["old", "new", "copy"]
    assert [c.doc_id for c in only["duplicate"].chunks] == ["old", "new", "flat"]
    assert only["duplicate"].dropped == {"duplicate": 1}
    with pytest.raises(ValueError, match="unknown prune rule"):
        prune(chunks, docs, rules=("typo",))


def test_measure_rules_reads_each_rule_alone(embedder):
    from ragkit.experiments.prune import measure_rules

    text = "Annual plans can be cancelled within 30 days of purchase for a full refund.\n" * 3
    docs = [_doc("refund", text, effective_date="2024-01-01"),
            _doc("refund-old", text.replace("30", "14"), superseded_by="refund",
                 effective_date="2022-01-01")]
    s = text.index("Annual")
    q = Query("q1", "How long is the refund window?", (Span("refund-old", s, s + 60),))
    res = measure_rules(docs, [q], FixedCharChunker(200, 50), embedder, budget=256)
    assert set(res) == {"superseded", "garbled or empty", "duplicate"}
    values, dropped = res["superseded"]
    assert list(values.index) == ["q1"] and dropped > 0
    assert values["q1"] < 1.0  # its gold document is pruned away (only a copy can earn credit)
    assert res["garbled or empty"][1] == 0
