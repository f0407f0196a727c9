"""The tune / held-out split: no document and no gold unit on both sides, for any input."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragkit.evaluate.splits import (BLOCKS, MIN_DOCUMENTS, SIDES, SPLITS_FILE, grouped_split, leaks,
                           split_of)
from ragkit.types import Query, Span

from conftest import needs_benchmarks


@st.composite
def benchmarks(draw, one_document_each=False, one_span=False):
    n_docs = draw(st.sampled_from([1, 3, 5, MIN_DOCUMENTS, 40]))
    queries = []
    for i in range(draw(st.integers(1, 60))):
        gold = []
        own = draw(st.integers(0, n_docs - 1))
        for _ in range(draw(st.integers(0, 1 if one_span else 3))):
            d = own if one_document_each else draw(st.integers(0, n_docs - 1))
            s = draw(st.integers(0, 500))
            gold.append(Span(f"d{d}", s, s + draw(st.integers(1, 80))))
        queries.append(Query(f"q{i}", "?", tuple(gold)))
    return queries, n_docs


@settings(max_examples=150, deadline=None)
@given(benchmarks())
def test_no_document_or_gold_unit_is_on_both_sides(bench):
    queries, n_docs = bench
    s = grouped_split("toy", queries, n_docs)
    assert set(s.side) == {q.id for q in queries} and set(s.side.values()) <= set(SIDES)
    assert leaks(queries, s.side, n_docs) == []
    assert grouped_split("toy", queries, n_docs) == s  # deterministic


@settings(max_examples=100, deadline=None)
@given(benchmarks(one_document_each=True, one_span=True))
def test_few_documents_split_into_contiguous_blocks(bench):
    """Questions with one gold span each: along a document, the sides change at most
    `BLOCKS` - 1 times. (A question with several spans far apart belongs to the block of its
    first one, so its later spans may sit in another block's stretch; no gold unit crosses
    sides either way, which the test above checks.)"""
    queries, n_docs = bench
    if n_docs >= MIN_DOCUMENTS:
        return
    s = grouped_split("toy", queries, n_docs)
    for d in range(n_docs):
        # questions of one document in order of where their gold starts
        firsts = sorted((min(g.start for g in q.gold), q.id) for q in queries
                        if q.gold and q.gold[0].doc_id == f"d{d}")
        sides = [s.side[q] for _, q in firsts]
        changes = sum(a != b for a, b in zip(sides, sides[1:]))
        assert changes <= BLOCKS - 1


def test_many_documents_split_by_document_and_balance():
    qs = [Query(f"q{i}", "?", (Span(f"d{i % 30}", 0, 5),)) for i in range(300)]
    s = grouped_split("toy", qs, 30)
    assert leaks(qs, s.side, 30) == [] and s.groups == 30
    assert len(s.ids("tune")) == len(s.ids("held-out")) == 150


def test_leaks_names_what_a_parity_split_shares():
    qs = [Query("a", "?", (Span("d", 0, 10),)), Query("b", "?", (Span("d", 5, 20),))]
    found = leaks(qs, {"a": "tune", "b": "held-out"}, 1)
    assert found == ["gold unit d[5:10] in a and b"]
    many = [Query(f"q{i}", "?", (Span(f"d{i // 2}", 10 * i, 10 * i + 5),)) for i in range(40)]
    parity = {q.id: SIDES[i % 2] for i, q in enumerate(many)}
    assert any(x.startswith("document d0") for x in leaks(many, parity, 20))


def test_repeated_ids_are_refused():
    with pytest.raises(ValueError, match="repeat"):
        grouped_split("toy", [Query("a", "?"), Query("a", "?")], 1)


def test_unknown_question_is_a_clear_error():
    with pytest.raises(KeyError, match="not in"):
        split_of("my-own-question-1")


@needs_benchmarks()
def test_committed_split_is_the_rule_applied_to_the_benchmarks():
    from ragkit.evaluate.benchmarks import load
    from ragkit.evaluate.splits import splits_for

    benches = [load(n) for n in ("course", "chroma", "anthropic")]
    fresh = splits_for(benches)
    assert json.loads(SPLITS_FILE.read_text()) == {n: s.to_json() for n, s in fresh.items()}
    for b in benches:
        assert leaks(b.queries, fresh[b.name].side, len(b.documents)) == []
        sizes = [len(fresh[b.name].ids(side)) for side in SIDES]
        assert abs(sizes[0] - sizes[1]) <= 0.1 * len(b.queries)
