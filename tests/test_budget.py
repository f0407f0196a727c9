"""Budgeted retrieval: what reaches the model, counted once, in cl100k tokens."""

import pytest
from hypothesis import given, settings, strategies as st

from ragkit.evaluate import budget_scores, count_tokens, pack_context, query_scores
from ragkit.evaluate.metrics import ndcg
from ragkit.evaluate.spans import union
from ragkit.types import Chunk, Document, Query, Span

TEXT = ("Refunds are available within fourteen days. Gold customers need sign-off. "
        "Platinum customers get thirty days. Fees are two percent. Bank transfers take longer. "
        "Cards take five to ten business days. Disputes go to the account manager first.")
DOC = Document("d", TEXT)


def ch(s, e, prefix="", doc=DOC):
    return Chunk.make(doc, s, e, strategy="t", prefix=prefix)


def test_overlapping_parent_and_child_are_counted_once():
    parent, child = ch(0, 120), ch(44, 75)
    alone = pack_context([parent], 10_000)
    both = pack_context([parent, child], 10_000)
    assert both.spans == alone.spans == (("d", 0, 120),)
    assert both.tokens == alone.tokens == count_tokens(TEXT[0:120])
    assert both.units == 1  # the child added nothing, so it cost nothing


def test_a_partly_new_unit_adds_only_its_new_part():
    p = pack_context([ch(0, 60), ch(40, 100)], 10_000)
    assert p.spans == (("d", 0, 100),)
    assert p.tokens == count_tokens(TEXT[0:60]) + count_tokens(TEXT[60:100])


def test_prefix_tokens_are_counted():
    plain = pack_context([ch(0, 44)], 10_000)
    crumb = pack_context([ch(0, 44, prefix="[Refund policy > Windows]")], 10_000)
    assert crumb.tokens == plain.tokens + count_tokens("[Refund policy > Windows]")


def test_last_unit_is_cut_at_the_budget_on_a_token_boundary():
    first = ch(0, 44)
    n = count_tokens(first.text)
    p = pack_context([first, ch(44, 120)], n + 3)
    assert p.cut and p.tokens == n + 3
    (doc, s, e), = p.spans
    assert s == 0 and 44 < e < 120
    assert count_tokens(TEXT[44:e]) == 3


def test_a_prefix_longer_than_the_room_left_adds_no_body():
    first = ch(0, 44)
    n = count_tokens(first.text)
    p = pack_context([first, ch(44, 120, prefix="a long breadcrumb " * 10)], n + 5)
    assert p.spans == (("d", 0, 44),) and p.cut and p.tokens == n + 5


def test_a_budget_larger_than_everything_retrieved():
    p = pack_context([ch(0, 44), ch(75, 120)], 100_000)
    assert not p.cut and p.exhausted
    assert p.tokens == count_tokens(TEXT[0:44]) + count_tokens(TEXT[75:120])
    assert p.spans == (("d", 0, 44), ("d", 75, 120))


def test_budget_scores_on_a_packed_context():
    q = Query("q", "?", gold=(Span("d", 44, 75), Span("d", 110, 150)))
    s = budget_scores(q, pack_context([ch(30, 80), ch(0, 20)], 10_000), {"d": TEXT})
    assert s["recall"] == pytest.approx(31 / 71)
    assert s["precision"] == pytest.approx(31 / 70)      # 50 + 20 characters, counted once
    assert s["iou"] == pytest.approx(31 / (70 + 40))
    assert s["pass"] == 0.5 and s["hit"] == 0.0


def test_small_units_win_at_equal_budget_when_they_are_precise():
    """At equal k, big units look better; at an equal budget, the precise small unit wins."""
    q = Query("q", "?", gold=(Span("d", 44, 75),))
    big = [ch(0, len(TEXT))]
    small = [ch(44, 75)]
    assert query_scores(q, big, 1)["recall"] == query_scores(q, small, 1)["recall"] == 1.0
    b = count_tokens(TEXT[44:75])
    assert budget_scores(q, pack_context(small, b))["recall"] == 1.0
    assert budget_scores(q, pack_context(big, b))["recall"] == 0.0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(TEXT)), st.integers(0, 80)), min_size=1,
                max_size=8), st.integers(1, 120))
def test_packing_invariants(spans, budget):
    hits = [ch(s, min(len(TEXT), s + n)) for s, n in spans]
    p = pack_context(hits, budget)
    assert p.tokens <= budget
    merged = [(s, e) for _, s, e in p.spans]
    assert merged == sorted(merged) and all(a[1] < b[0] for a, b in zip(merged, merged[1:]))
    reachable = union((h.start, h.end) for h in hits)  # nothing outside the hits gets in
    assert all(any(a <= s and e <= b for a, b in reachable) for s, e in merged)
    covered = sum(e - s for s, e in merged)
    assert covered <= len(TEXT)
    # more budget never loses context
    bigger = pack_context(hits, budget + 50)
    for _, s, e in p.spans:
        assert any(bs <= s and e <= be for _, bs, be in bigger.spans)


@pytest.mark.long
def test_ndcg_at_10_equals_ranx_on_a_ten_hit_run():
    """One gold span per document, units that are whole gold spans or misses: our nDCG@10 is
    ranx's with relevance = gold length."""
    from ranx import Qrels, Run, evaluate

    docs = [Document(f"d{i}", "w" * 200) for i in range(12)]
    lengths = {0: 40, 3: 20, 7: 80, 11: 10}
    gold = tuple(Span(f"d{i}", 10, 10 + n) for i, n in lengths.items())
    q = Query("q", "?", gold=gold)
    order = [5, 3, 0, 9, 1, 11, 2, 4, 6, 8]  # ten hits; d7's gold is never retrieved
    hits = [Chunk.make(docs[i], 10, 10 + lengths[i], "t") if i in lengths
            else Chunk.make(docs[i], 100, 150, "t") for i in order]
    ours = ndcg(q, hits, 10)
    qrels = Qrels({"q": {f"d{i}": n for i, n in lengths.items()}})
    run = Run({"q": {f"d{i}": float(10 - r) for r, i in enumerate(order)}})
    theirs = evaluate(qrels, run, "ndcg@10")
    assert ours == pytest.approx(theirs, abs=1e-9)
    assert 0 < ours < 1


def test_ndcg_a_rank_one_hit_holding_all_gold_scores_one_whatever_its_size():
    q = Query("q", "?", gold=(Span("d", 44, 75), Span("d", 100, 130)))
    assert ndcg(q, [ch(0, len(TEXT))]) == 1.0
    assert ndcg(q, [ch(44, 75), ch(100, 130)]) < 1.0
    assert ndcg(q, [ch(0, 10)] * 10 + [ch(0, len(TEXT))]) == 0.0  # rank 11 is not in the top 10


def _pack_one_budget(hits, budget, count):
    """pack_context as it was written before `pack_contexts` (one pass per budget): the
    reference the one-pass packer must equal."""
    from collections import defaultdict

    from ragkit.evaluate.budget import Packed, _first_tokens
    from ragkit.evaluate.spans import subtract_all, union

    covered = defaultdict(list)
    used, units, cut, examined = 0, 0, False, 0
    for c in hits:
        examined += 1
        new = subtract_all([(c.start, c.end)], covered[c.doc_id])
        if not new:
            continue
        pieces = [c.text[s - c.start:e - c.start] for s, e in new]
        cost = [count(p) for p in pieces]
        head = count(c.prefix) if c.prefix else 0
        if used + head + sum(cost) <= budget:
            covered[c.doc_id].extend(new)
            used += head + sum(cost)
            units += 1
            continue
        room = budget - used - head
        taken = []
        for (s, e), piece, n in zip(new, pieces, cost):
            if room <= 0:
                break
            if n <= room:
                taken.append((s, e))
                room -= n
            else:
                taken.append((s, s + _first_tokens(piece, room)))
                room = 0
        taken = [(s, e) for s, e in taken if e > s]
        if taken:
            covered[c.doc_id].extend(taken)
            units += 1
        used, cut = budget, True
        break
    spans = tuple((d, s, e) for d in sorted(covered) for s, e in union(covered[d]))
    return Packed(spans, used, units, cut, exhausted=used < budget, examined=examined)


def test_one_pass_packing_equals_one_pass_per_budget_on_random_hit_lists():
    import random

    from ragkit.evaluate.budget import count_tokens, pack_contexts
    from ragkit.types import Document

    rng = random.Random(11)
    words = "refund within 14 days Größe 🙂 unused services only rate limits per key".split()
    docs = [Document(f"d{i}", " ".join(rng.choice(words) for _ in range(400))) for i in range(3)]
    budgets = (0, 1, 7, 30, 64, 256, 1024)
    for _ in range(150):
        hits = []
        for _ in range(rng.randrange(0, 25)):
            d = rng.choice(docs)
            s = rng.randrange(0, len(d.text) - 1)
            e = min(len(d.text), s + rng.randrange(1, 400))
            prefix = rng.choice(["", "", "Title > Section", "a longer structural preamble " * 3])
            hits.append(Chunk.make(d, s, e, "t", prefix=prefix))
        packs = pack_contexts(hits, budgets)
        assert sorted(packs) == sorted(budgets)
        for b in budgets:
            assert packs[b] == _pack_one_budget(hits, b, count_tokens), (b, hits)
