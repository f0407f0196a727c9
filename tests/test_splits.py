"""The tune / held-out split: no gold unit, no gold text and (with enough documents) no document
on both sides, for any input."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragkit.evaluate.splits import (BLOCKS, MIN_DOCUMENTS, SIDES, SPLITS_FILE, grouped_split, leaks,
                           split_of)
from ragkit.evaluate.copies import attach_copies
from ragkit.types import Document, Query, Span

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
    largest one, so its other spans may sit in another block's stretch; no gold unit crosses
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


PASSAGES = [f"Passage {i}: the refund window for plan {i} is {i + 10} days from purchase."
            for i in range(4)]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=2, max_size=40), st.sampled_from([1, 3, 20]),
       st.randoms(use_true_random=False))
def test_identical_gold_text_never_lands_on_both_sides(order, n_docs, rnd):
    """Documents repeat four passages; every question is anchored to one occurrence. Questions
    whose gold texts are identical go to one side, and `leaks` finds none."""
    texts = {f"d{d}": "" for d in range(n_docs)}
    queries = []
    for i, p in enumerate(order):
        d = f"d{rnd.randrange(n_docs)}"
        start = len(texts[d])
        texts[d] += PASSAGES[p] + "\n\n"
        queries.append(Query(f"q{i}", "?", (Span(d, start, start + len(PASSAGES[p])),)))
    docs = [Document(d, t) for d, t in texts.items()]
    queries = attach_copies(queries, docs)
    s = grouped_split("toy", queries, n_docs)
    assert leaks(queries, s.side, n_docs) == []
    for p in set(order):
        same = {s.side[f"q{i}"] for i, x in enumerate(order) if x == p}
        assert len(same) == 1


def test_leaks_finds_identical_gold_text_on_both_sides():
    text = PASSAGES[0] + "\n\n" + PASSAGES[1] + "\n\n" + PASSAGES[0]
    second = text.rfind(PASSAGES[0])
    qs = attach_copies([Query("a", "?", (Span("d", 0, len(PASSAGES[0])),)),
                        Query("b", "?", (Span("d", second, second + len(PASSAGES[0])),))],
                       [Document("d", text)])
    found = leaks(qs, {"a": "tune", "b": "held-out"}, 1)
    assert found and all(x.startswith("gold text of") for x in found)
    assert leaks(qs, {"a": "tune", "b": "tune"}, 1) == []
    s = grouped_split("toy", qs, 1)
    assert s.side["a"] == s.side["b"]


def test_leaks_checks_every_pair_not_only_neighbours():
    # a covers b and c; b and c do not overlap, so c is not a's neighbour in start order
    qs = [Query("a", "?", (Span("d", 0, 100),)), Query("b", "?", (Span("d", 10, 20),)),
          Query("c", "?", (Span("d", 30, 40),))]
    assert leaks(qs, {"a": "tune", "b": "tune", "c": "held-out"}, 1) == \
        ["gold unit d[30:40] in a and c"]


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

    from ragkit.evaluate.sources import BenchmarkUnavailable

    benches = [load(n) for n in ("course", "chroma", "anthropic")]
    try:  # FinanceBench's PDFs, where this machine has them (not in CI)
        benches.append(load("financebench", allow_download=False))
    except BenchmarkUnavailable:
        pass
    fresh = splits_for(benches)
    saved = json.loads(SPLITS_FILE.read_text())
    assert set(saved) == {"course", "chroma", "anthropic", "financebench"}
    assert {n: saved[n] for n in fresh} == {n: s.to_json() for n, s in fresh.items()}
    for b in benches:
        assert leaks(b.queries, fresh[b.name].side, len(b.documents)) == []
        sizes = [len(fresh[b.name].ids(side)) for side in SIDES]
        assert abs(sizes[0] - sizes[1]) <= 0.1 * len(b.queries)
