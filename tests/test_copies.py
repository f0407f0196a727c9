"""Identical text earns the gold's credit (ragkit.evaluate.copies): a corpus that holds a passage
twice, with the gold anchored to the first copy and only the second retrieved, scores as if the
first had been retrieved, in every span metric, at k and at a budget."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragkit.evaluate.benchmarks import Benchmark
from ragkit.evaluate.budget import budget_scores, pack_contexts
from ragkit.evaluate.copies import MIN_COPY_CHARS, attach_copies, onto_gold
from ragkit.evaluate.metrics import evaluate_retrieval, ndcg, query_scores
from ragkit.types import Chunk, Document, Query, Span

PASSAGE = "Refunds for annual plans take fourteen days to reach the card."
FILLER = "The office is closed on public holidays. "
TEXT = FILLER + PASSAGE + "\n\n" + FILLER * 3 + PASSAGE + "\n\n" + FILLER
FIRST = TEXT.find(PASSAGE)
SECOND = TEXT.find(PASSAGE, FIRST + 1)


def _setup(text=TEXT):
    doc = Document("d", text)
    q = Query("q", "How long do annual refunds take?", (Span("d", FIRST, FIRST + len(PASSAGE)),))
    q, = attach_copies([q], [doc])
    return doc, q


def test_two_copy_corpus_credits_the_second_copy_in_every_span_metric():
    doc, q = _setup()
    assert [(c.start, c.end) for c in q.copies] == [(SECOND, SECOND + len(PASSAGE))]
    second = Chunk.make(doc, SECOND, SECOND + len(PASSAGE), "t")
    first = Chunk.make(doc, FIRST, FIRST + len(PASSAGE), "t")
    other = Chunk.make(doc, 0, len(FILLER), "t")
    got = query_scores(q, [second, other], k=2, texts={"d": TEXT})
    want = query_scores(q, [first, other], k=2, texts={"d": TEXT})
    for m in ("recall", "precision", "iou", "pass@k", "hit@k", "precision@k"):
        assert got[m] == want[m], m
    assert got["recall"] == 1.0 and got["pass@k"] == 1.0
    for b, pack in pack_contexts([second, other], (8, 64)).items():
        assert budget_scores(q, pack, {"d": TEXT}) == \
            budget_scores(q, pack_contexts([first, other], (b,))[b], {"d": TEXT})
    assert ndcg(q, [second]) == ndcg(q, [first]) == 1.0


def test_without_the_rule_the_second_copy_scores_zero():
    """The rule is what credits it: the same query with no copies attached scores 0."""
    doc, q = _setup()
    bare = Query(q.id, q.text, q.gold)
    second = Chunk.make(doc, SECOND, SECOND + len(PASSAGE), "t")
    assert query_scores(bare, [second], k=1)["recall"] == 0.0
    assert query_scores(q, [second], k=1)["recall"] == 1.0


def test_gold_and_its_copy_both_retrieved_count_the_gold_once():
    doc, q = _setup()
    both = [Chunk.make(doc, FIRST, FIRST + len(PASSAGE), "t"),
            Chunk.make(doc, SECOND, SECOND + len(PASSAGE), "t")]
    s = query_scores(q, both, k=2)
    assert s["recall"] == 1.0 and s["precision"] == pytest.approx(0.5)
    assert ndcg(q, both) == 1.0  # the second adds nothing


def test_half_a_copy_earns_half_the_gold():
    doc, q = _setup()
    half = len(PASSAGE) // 2
    s = query_scores(q, [Chunk.make(doc, SECOND, SECOND + half, "t")], k=1)
    assert s["recall"] == pytest.approx(half / len(PASSAGE))


def test_a_copy_with_other_whitespace_counts_and_maps_word_for_word():
    spaced = PASSAGE.replace(" annual ", "\n annual\n")
    text = FILLER + PASSAGE + "\n\n" + spaced + "\n"
    doc = Document("d", text)
    start = text.find(spaced)
    q, = attach_copies([Query("q", "?", (Span("d", len(FILLER), len(FILLER) + len(PASSAGE)),))],
                       [doc])
    assert [(c.start, c.end) for c in q.copies] == [(start, start + len(spaced))]
    whole = query_scores(q, [Chunk.make(doc, start, start + len(spaced), "t")], k=1)
    assert whole["recall"] == 1.0
    # "Refunds for" retrieved: exactly the gold's "Refunds for" (and the space after it)
    part = onto_gold([("d", start, start + len("Refunds for"))], q.copies)
    assert [text[s:e] for _, s, e in part] == ["Refunds ", "for"]


def test_short_gold_and_overlapping_places_are_not_copies():
    short = "net income"
    text = f"{short}. {short}. {short}."
    q, = attach_copies([Query("q", "?", (Span("d", 0, len(short)),))], [Document("d", text)])
    assert len(short.replace(" ", "")) < MIN_COPY_CHARS and q.copies == ()
    rep = "abcdefghij" * 5  # a periodic gold: its shifted matches overlap the gold itself
    q, = attach_copies([Query("q", "?", (Span("d", 0, 40),))], [Document("d", rep)])
    assert q.copies == ()


def test_copies_in_another_document_count_and_follow_the_corpus():
    a = Document("a", FILLER + PASSAGE)
    b = Document("b", PASSAGE + " " + FILLER)
    q = Query("q", "?", (Span("a", len(FILLER), len(FILLER) + len(PASSAGE)),))
    bench = Benchmark("toy", [a, b], [q])
    assert [(c.doc_id, c.start) for c in bench.queries[0].copies] == [("b", 0)]
    assert bench.restrict(["a"]).queries[0].copies == ()  # b left the corpus, so did its copy
    chunks = [Chunk.make(b, 0, len(PASSAGE), "t"), Chunk.make(a, 0, len(FILLER), "t")]
    df, means = evaluate_retrieval(bench.queries, {"q": [(c, 1.0) for c in chunks]}, chunks,
                                   k=1, budgets=(64,))
    assert means["recall"] == 1.0 and means["recall@B64"] == 1.0 and means["mrr@k"] == 1.0


@given(st.integers(0, len(PASSAGE)), st.integers(0, len(PASSAGE)))
def test_a_piece_of_the_copy_scores_as_the_same_piece_of_the_gold(a, b):
    a, b = sorted((a, b))
    doc, q = _setup()
    got = query_scores(q, [Chunk.make(doc, SECOND + a, SECOND + b, "t")] if b > a else [], k=1)
    want = query_scores(q, [Chunk.make(doc, FIRST + a, FIRST + b, "t")] if b > a else [], k=1)
    assert got["recall"] == want["recall"] and got["iou"] == want["iou"]
