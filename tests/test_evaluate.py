"""Metric tests on cases small enough to compute by hand."""

import pytest
from conftest import needs_benchmarks

from ragkit.evaluate import (calibrate_threshold, evaluate_retrieval, query_scores, refusal_scores,
                             span_scores)
from ragkit.evaluate.spans import precision_omega
from ragkit.types import Chunk, Document, Query, Span

DOC = Document("d", "x" * 100)
OTHER = Document("e", "y" * 100)


def ch(doc, s, e):
    return Chunk.make(doc, s, e, strategy="t")


def test_single_chunk_partial_overlap():
    # gold [10, 30), chunk [20, 50): overlap 10 chars
    m = span_scores([(20, 50)], [(10, 30)])
    assert m["recall"] == pytest.approx(10 / 20)
    assert m["precision"] == pytest.approx(10 / 30)
    assert m["iou"] == pytest.approx(10 / (30 + 10))  # retrieved 30 + 10 gold chars missed


def test_overlapping_chunks_count_twice_in_the_denominator_once_in_the_numerator():
    # chunks [0, 40) and [20, 60) both cover gold [25, 35)
    m = span_scores([(0, 40), (20, 60)], [(25, 35)])
    assert m["recall"] == 1.0
    assert m["precision"] == pytest.approx(10 / 80)  # plain sum 40 + 40, as Chroma does
    assert m["iou"] == pytest.approx(10 / 80)


def test_chunk_that_only_touches_a_span_contributes_nothing():
    m = span_scores([(0, 10)], [(10, 20)])
    assert m == {"recall": 0.0, "precision": 0.0, "iou": 0.0}


def test_multi_span_gold_across_documents():
    q = Query("q", "?", gold=(Span("d", 0, 10), Span("e", 50, 70)))
    top = [ch(DOC, 0, 20), ch(OTHER, 60, 80), ch(DOC, 50, 70)]  # last: right range, wrong doc
    m = query_scores(q, top, k=3)
    assert m["recall"] == pytest.approx((10 + 10) / 30)
    assert m["precision"] == pytest.approx(20 / 60)
    assert m["iou"] == pytest.approx(20 / (60 + 10))
    assert m["pass@k"] == 0.5  # the first unit is inside the top 3, the second only half
    assert m["hit@k"] == 0.0


def test_empty_retrieval_scores_zero():
    q = Query("q", "?", gold=(Span("d", 0, 10),))
    m = query_scores(q, [], k=5)
    assert m["recall"] == 0.0 and m["precision"] == 0.0 and m["iou"] == 0.0
    assert m["pass@k"] == 0.0 and m["hit@k"] == 0.0


def test_only_top_k_are_scored():
    q = Query("q", "?", gold=(Span("d", 0, 10),))
    m = query_scores(q, [ch(DOC, 50, 60), ch(DOC, 0, 10)], k=1)
    assert m["recall"] == 0.0
    assert query_scores(q, [ch(DOC, 50, 60), ch(DOC, 0, 10)], k=2)["hit@k"] == 1.0


def test_precision_omega_is_the_best_this_chunking_allows():
    chunks = {"d": [ch(DOC, 0, 40), ch(DOC, 40, 80), ch(DOC, 80, 100)]}
    # gold [30, 50) touches the first two chunks: union [0, 80) -> 20 / 80
    assert precision_omega(chunks, [Span("d", 30, 50)]) == pytest.approx(20 / 80)


def test_mrr_and_ndcg_through_ranx():
    chunks = [ch(DOC, 0, 10), ch(DOC, 10, 20), ch(DOC, 20, 30)]
    q = Query("q", "?", gold=(Span("d", 12, 18),))
    ranked = {"q": [(chunks[0], 0.9), (chunks[1], 0.8), (chunks[2], 0.7)]}
    _, means = evaluate_retrieval([q], ranked, chunks, k=3)
    assert means["mrr@k"] == pytest.approx(0.5)
    assert means["ndcg@10"] == pytest.approx(0.6309, abs=1e-4)  # 1/log2(3)


def test_refusal_threshold_separates_answerable_from_not():
    assert calibrate_threshold([0.9, 0.8, 0.3, 0.2], [True, True, False, False]) == 0.8
    qs = [Query(f"a{i}", "?", gold=(Span("d", 0, 1),)) for i in range(10)] + \
         [Query(f"r{i}", "?", type="refusal") for i in range(10)]
    top = {q.id: (0.9 if q.gold else 0.1) for q in qs}
    r = refusal_scores(qs, top, split={q.id: ("tune", "held-out")[i % 2]
                                       for i, q in enumerate(qs)})
    assert r["over_refusal"] == 0.0 and r["unsupported_answer"] == 0.0


def test_id_based_numbers_agree_with_ragas():
    """When chunks are the gold units, pass@k / precision@k are ragas' ID-based metrics."""
    import random

    from ragas import SingleTurnSample
    from ragas.metrics import IDBasedContextPrecision, IDBasedContextRecall

    doc = Document("d", "z" * 1000)
    chunks = [ch(doc, i, i + 50) for i in range(0, 1000, 50)]
    rng = random.Random(3)
    for _ in range(25):
        gold_chunks = rng.sample(chunks, rng.randint(1, 4))
        top = rng.sample(chunks, 5)
        q = Query("q", "?", gold=tuple(Span("d", c.start, c.end) for c in gold_chunks))
        ours = query_scores(q, top, k=5)
        sample = SingleTurnSample(retrieved_context_ids=[c.id for c in top],
                                  reference_context_ids=[c.id for c in gold_chunks])
        assert ours["pass@k"] == pytest.approx(IDBasedContextRecall().single_turn_score(sample))
        assert ours["precision@k"] == pytest.approx(
            IDBasedContextPrecision().single_turn_score(sample))


def test_units_made_at_query_time_are_judged_by_rank_metrics():
    """A sentence window is not among the indexed chunks; it must still count as relevant."""
    sentences = [ch(DOC, 0, 10), ch(DOC, 10, 20), ch(DOC, 20, 30)]
    window = ch(DOC, 0, 30)  # built at query time around a hit
    q = Query("q", "?", gold=(Span("d", 12, 18),))
    _, means = evaluate_retrieval([q], {"q": [(window, 0.9)]}, sentences, k=3)
    assert means["mrr@k"] == pytest.approx(1.0)


def test_a_unit_spanning_a_blank_line_is_whole_when_both_trimmed_chunks_are_there():
    from ragkit.evaluate import covered_fraction, query_scores
    from ragkit.types import Chunk, Document, Query, Span

    text = "First paragraph here.\n\nSecond paragraph there."
    doc = Document("d", text)
    a = Chunk.make(doc, 0, 21, "t")            # trimmed: the blank line is in no chunk
    b = Chunk.make(doc, 23, len(text), "t")
    unit = Span("d", 6, 40)
    assert covered_fraction(unit, [a, b]) < 1.0                  # every character counts
    assert covered_fraction(unit, [a, b], text) == 1.0           # whitespace left out
    assert covered_fraction(unit, [a], text) < 1.0               # half is still half
    q = Query("q", "?", (unit,))
    assert query_scores(q, [a, b], 2, texts={"d": text})["pass@k"] == 1.0
    assert query_scores(q, [a], 2, texts={"d": text})["pass@k"] == 0.0


@needs_benchmarks()
def test_on_anthropics_chunks_their_exact_rule_differs_from_spans_only_on_copies():
    """Anthropic's Pass@k counts a gold chunk when a retrieved chunk has its content; ragkit's
    span rule when the top k cover its place. Their chunks do not overlap, so a span pass is
    always an exact pass, and the two differ only when a chunk with the same text from another
    place is retrieved (their set repeats a few, licence headers among them). Random rankings
    of each question's own documents' chunks, with random others."""
    import random

    from ragkit.evaluate import covered_fraction, exact_pass, load

    bench = load("anthropic")
    texts = {d.id: d.text for d in bench.documents}
    by_doc: dict[str, list] = {}
    for c in bench.chunks:
        by_doc.setdefault(c.doc_id, []).append(c)
    rng, passed, differ = random.Random(0), 0, 0
    for q in bench.queries:
        if not q.gold:
            continue
        pool = [c for g in q.gold for c in by_doc[g.doc_id]] + rng.sample(bench.chunks, 20)
        for _ in range(4):
            top = rng.sample(pool, min(20, len(pool)))[:rng.choice((5, 10, 20))]
            span = sum(covered_fraction(g, top, texts[g.doc_id]) >= 1.0
                       for g in q.gold) / len(q.gold)
            exact = exact_pass(q.gold, top, texts)
            assert span <= exact, q.id
            if span < exact:
                differ += 1
                assert any(texts[g.doc_id][g.start:g.end] == c.text
                           and (c.doc_id, *c.span) != (g.doc_id, g.start, g.end)
                           for g in q.gold for c in top), q.id
            passed += span > 0
    assert passed > 100  # the rankings did hold gold chunks


def test_doc_hit_is_the_right_document_in_the_top_k():
    """Seed 002's retrieval precision@K: did a document holding gold evidence appear in the
    top k (whatever the chunk's range)."""
    q = Query("q", "?", gold=(Span("d", 0, 10),))
    top = [ch(OTHER, 0, 5), ch(DOC, 40, 45)]  # the gold's document, not its range, at rank 2
    assert query_scores(q, top, k=2)["doc_hit@k"] == 1.0
    assert query_scores(q, top, k=2)["precision@k"] == 0.0
    assert query_scores(q, top, k=1)["doc_hit@k"] == 0.0
    both = Query("q", "?", gold=(Span("d", 0, 10), Span("e", 50, 70)))
    assert query_scores(both, top, k=1)["doc_hit@k"] == 1.0  # any gold document counts
    assert query_scores(q, [], k=5)["doc_hit@k"] == 0.0


def test_doc_hits_from_saved_hits_match_query_scores():
    """The value derived from a saved ranking (query_id, rank, doc_id) equals the one
    `query_scores` records for the same ranking, for every k."""
    import numpy as np
    import pandas as pd

    from ragkit.evaluate.metrics import doc_hits

    rng = np.random.default_rng(3)
    docs = {"d": DOC, "e": OTHER}
    queries, rows = [], []
    for i in range(40):
        gold_doc = "d" if i % 2 else "e"
        q = Query(f"q{i}", "?", gold=(Span(gold_doc, 0, 10),))
        ranking = [ch(docs[rng.choice(["d", "e"], p=[0.3, 0.7])], 0, 5) for _ in range(8)]
        queries.append((q, ranking))
        rows += [{"query_id": q.id, "rank": r, "doc_id": c.doc_id, "start": c.start,
                  "end": c.end} for r, c in enumerate(ranking)]
    hits = pd.DataFrame(rows).sample(frac=1.0, random_state=0)  # order must not matter
    gold = {q.id: [g.doc_id for g in q.gold] for q, _ in queries}
    for k in (1, 3, 5):
        derived = doc_hits(hits, gold, k)
        for q, ranking in queries:
            assert derived[q.id] == query_scores(q, ranking, k)["doc_hit@k"], (q.id, k)


# ------------------------------------------------- issue 36: overlapping evidence in one question

def test_the_same_quote_twice_is_one_gold_unit_and_can_reach_full_recall():
    """Gold lengths used to be summed while covered characters were merged, so a question with
    its quote twice could never score above 0.5."""
    q = Query("q", "?", gold=(Span("d", 10, 20), Span("d", 10, 20)))
    assert q.gold == (Span("d", 10, 20),)
    m = query_scores(q, [ch(DOC, 0, 30)], k=1)
    assert m["recall"] == 1.0 and m["hit@k"] == 1.0 and m["pass@k"] == 1.0
    assert span_scores([(0, 30)], [(10, 20), (10, 20)])["recall"] == 1.0


def test_overlapping_evidence_becomes_one_unit_and_touching_evidence_stays_two():
    q = Query("q", "?", gold=(Span("d", 40, 60), Span("d", 10, 30), Span("d", 20, 45),
                              Span("e", 0, 5), Span("d", 60, 70)))
    # [10, 30), [20, 45) and [40, 60) share characters: one unit [10, 60), at the place of the
    # first; [60, 70) only touches it and stays its own unit; order otherwise kept
    assert q.gold == (Span("d", 10, 60), Span("e", 0, 5), Span("d", 60, 70))
    m = query_scores(q, [ch(DOC, 10, 60), ch(OTHER, 0, 5)], k=2)
    assert m["recall"] == pytest.approx(55 / 65)
    assert m["pass@k"] == pytest.approx(2 / 3)  # two of the three units wholly retrieved


def test_gold_without_overlaps_is_kept_as_given():
    gold = (Span("e", 5, 9), Span("d", 30, 40), Span("d", 0, 10), Span("d", 10, 20))
    assert Query("q", "?", gold=gold).gold == gold


def test_reciprocal_rank_equals_ranx_on_random_runs_with_repeated_ids():
    """MRR@k left ranx for speed; on random runs (ids repeated, as merged units can be, and
    runs shorter than k) every per-query value is ranx's, bit for bit."""
    import random

    from ranx import Qrels, Run, evaluate

    from ragkit.evaluate.metrics import reciprocal_rank

    rng = random.Random(7)
    qrels, run, ours = {}, {}, {}
    for i in range(300):
        ids = [f"c{rng.randrange(12)}" for _ in range(rng.randrange(0, 15))]
        rel = {f"c{j}" for j in rng.sample(range(12), rng.randrange(1, 4))}
        qrels[f"q{i}"] = {c: 1 for c in rel}
        run[f"q{i}"] = {c: float(len(ids) - r) for r, c in enumerate(ids)} or {"∅": 0.0}
        ours[f"q{i}"] = reciprocal_rank(ids, rel, 5)
    res = evaluate(Qrels(qrels), Run(run), ["mrr@5"], return_mean=False, make_comparable=True)
    theirs = dict(zip(Qrels(qrels).keys(), res))
    assert any(0 < v < 1 for v in ours.values()) and any(v == 0 for v in ours.values())
    assert all(ours[q] == float(theirs[q]) for q in qrels)


def test_units_overlapping_the_gold_are_the_ones_overlaps_accepts():
    """rank_metrics' array test of the relevant units agrees with `overlaps` unit by unit,
    empty and touching spans included."""
    import random

    from ragkit.evaluate.metrics import _UnitsByDoc
    from ragkit.evaluate.spans import overlaps

    rng = random.Random(5)
    for _ in range(200):
        chunks = []
        for i in range(rng.randrange(0, 30)):
            s = rng.randrange(0, 100)
            e = s + rng.choice([0, 1, 3, 10, 40])
            chunks.append(Chunk(f"d{rng.randrange(3)}", s, e, "x" * (e - s), "t"))
        gold = [Span(f"d{rng.randrange(4)}", s, s + rng.choice([1, 5, 20]))
                for s in rng.sample(range(100), rng.randrange(1, 4))]
        want = {c.id for c in chunks if overlaps(c, gold)}
        assert _UnitsByDoc(chunks).overlapping(gold) == want
