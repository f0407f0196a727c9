"""The stack lesson's arithmetic: the fusion table's sums and ranks are `fuse`'s own, the gold
rank reads copies too, and `pick` finds the case a step was built for."""

from ragkit.report.stack_lesson import fusion_table, gold_rank, pick
from ragkit.retrieve import Hit
from ragkit.retrieve.retrievers import fuse
from ragkit.types import Chunk, Document, Query, Span

DOC = Document("d", "".join(f"passage {i:02d} " + "x" * 20 + "\n" for i in range(12)))
CHUNKS = [Chunk.make(DOC, 31 * i, 31 * i + 30, "t") for i in range(12)]
GOLD = Query("q", "?", (Span("d", 31 * 7, 31 * 7 + 30),))


def hits(order):
    return [Hit(CHUNKS[i], 1.0 - 0.01 * r) for r, i in enumerate(order)]


def test_the_fusion_table_is_the_fusion_written_out():
    dense, bm25 = hits([3, 1, 4, 0, 5, 9, 2, 7]), hits([7, 6, 1, 8, 2, 11])
    table = fusion_table(GOLD, dense, bm25, ("dense", "bm25"), (0.5, 0.5), 0.0, k=5)
    fused = fuse([dense, bm25], (0.5, 0.5), 20, 0.0)
    score = {h.chunk.id: h.score for h in fused}
    rank = {h.chunk.id: i for i, h in enumerate(fused, 1)}
    by_label = {f"d[{c.start}:{c.end}]": c for c in CHUNKS}
    shown = {c.id for c in [h.chunk for h in dense[:5] + bm25[:5]]}
    assert {by_label[x].id for x in table.chunk} == shown  # either list's top 5, no more
    for r in table.itertuples(index=False):
        c = by_label[r.chunk]
        assert abs(r.sum - round(score[c.id], 4)) < 1e-9 and r[-1] == rank[c.id]
    gold = table[table["holds gold"] == "yes"].iloc[0]
    # chunk 7: rank 8 in dense (outside its top 5, still counted), rank 1 in BM25
    assert gold["rank, dense"] == 8 and gold["rank, bm25"] == 1
    assert abs(gold["sum"] - round(0.5 / 8 + 0.5 / 1, 4)) < 1e-9
    assert "dense: 0.5 / rank" in table.columns


def test_gold_rank_reads_copies_and_pick_finds_the_built_for_case():
    assert gold_rank(GOLD, hits([0, 7])) == 2 and gold_rank(GOLD, hits([0, 1])) is None
    q2 = Query("r", "?", (Span("d", 0, 30),))
    assert pick([q2, GOLD], {"r": 1, "q": 9}, {"r": 1, "q": 1}) == GOLD
    assert pick([q2, GOLD], {"r": 1, "q": None}, {"r": 1, "q": 2}) is None
    assert pick([GOLD], {"q": None}, {"q": 1}) == GOLD  # not found at all before


def test_ranked_within_finds_the_first_question_in_the_range():
    from ragkit.report.stack_lesson import ranked_within

    q2 = Query("r", "?", (Span("d", 0, 30),))
    assert ranked_within([q2, GOLD], {"r": 1, "q": 4}, 2, 5) == GOLD
    assert ranked_within([q2, GOLD], {"r": None, "q": 7}, 2, 5) is None
