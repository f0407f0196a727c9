"""The failure-story views show the evidence: whole chunks, the cut, the gold, the hits."""

import pytest

from ragkit.chunkers import FixedCharChunker
from ragkit.report import chunk_view, diagnose, hits_text, staged_status
from ragkit.report.explain import gold_pieces
from ragkit.retrieve import Hit
from ragkit.types import Chunk, Document, Query, Span

from conftest import TABLE_TEXT as TEXT
from conftest import table_policy

DOC, GOLD = table_policy()


def test_text_view_shows_each_touching_chunk_whole_with_the_gold_marked():
    chunks = FixedCharChunker(1000, 200).chunk(DOC)
    view = chunk_view(DOC, chunks, GOLD, fmt="text")
    touching = [c for c in chunks if c.start < GOLD.end and GOLD.start < c.end]
    assert view.count("── chunk") == len(touching) >= 1
    for c in touching:  # the whole chunk body is there, not a window around the gold
        assert c.text.replace(TEXT[GOLD.start:GOLD.end], "") in view.replace("⟦", "").replace(
            "⟧", "").replace(TEXT[GOLD.start:GOLD.end], "")
    assert "⟦| Gold | 14 days | 2% |⟧" in view
    assert "holds all the gold" in view


def test_a_split_gold_span_shows_both_pieces():
    cut = GOLD.start + 8
    chunks = [Chunk.make(DOC, 0, cut, "t"), Chunk.make(DOC, cut, len(TEXT), "t")]
    view = chunk_view(DOC, chunks, GOLD, fmt="text")
    assert view.count("holds part of the gold") == 2
    assert view.count("⟦") == 2 and view.count("⟧") == 2


@pytest.mark.parametrize("cuts, pieces, whole", [
    ([(None, 0), (0, None)], 1, True),            # the neighbour ends where the gold starts
    ([(None, 8), (8, None)], 2, False),           # cut once inside the gold
    ([(None, 4), (4, 8), (8, None)], 3, False),   # cut twice
    ([(None, None), (4, None)], 1, True),         # overlapping windows, gold whole in the first
    ([(None, 10), (2, None)], 2, False),          # overlapping windows, neither holds it whole
    ([(None, 3), (2, None), (5, None)], 2, False),  # three touch it, two cover it
])
def test_gold_pieces_counts_the_pieces_not_the_chunks_touching(cuts, pieces, whole):
    """Chunk ends are offsets from the gold's start (None: the document's start or end). An
    overlapping chunk that touches a gold span another chunk holds whole does not make it two
    pieces (q031 and q099 in notebook 01)."""
    def chunk(a, b):
        return Chunk.make(DOC, 0 if a is None else GOLD.start + a,
                          len(TEXT) if b is None else GOLD.start + b, "t")

    chunks = [chunk(a, b) for a, b in cuts]
    assert len(GOLD) > 12
    assert gold_pieces(GOLD, chunks) == pieces
    d = diagnose(Query("q", "?", gold=(GOLD,)), chunks, [], k=3)
    assert (d["gold_pieces"], d["gold_in_one_chunk"]) == (pieces, whole)


def test_html_view_escapes_and_highlights():
    doc = Document("d", "a <b> & gold here, then more")
    chunks = [Chunk.make(doc, 0, len(doc.text), "t")]
    out = chunk_view(doc, chunks, Span("d", 8, 17))
    assert "&lt;b&gt; &amp;" in out and "<b style='color:#b00020'>gold here</b>" in out


def test_view_says_when_no_chunk_holds_the_gold():
    chunks = [Chunk.make(DOC, 0, 10, "t")]
    assert "no chunk holds any of the gold" in chunk_view(DOC, chunks, GOLD, fmt="text")
    with pytest.raises(ValueError, match="fmt"):
        chunk_view(DOC, chunks, GOLD, fmt="markdown")


def test_hits_text_prints_prefix_body_and_gold_in_full():
    c = Chunk.make(DOC, GOLD.start - 20, GOLD.end + 5, "t", prefix="Refund policy > Tiers")
    q = Query("q1", "What is the Gold refund window?", gold=(GOLD,))
    out = hits_text(q, [Hit(c, 0.5)], k=3)
    assert "[prefix] Refund policy > Tiers" in out
    assert "⟦| Gold | 14 days | 2% |⟧" in out and "holds gold" in out
    assert out.replace("⟦", "").replace("⟧", "").endswith(c.text)


def test_hits_text_with_lines_keeps_the_gold_and_says_how_much_it_shows():
    """Issue 50 (no walls of output): `lines` clips each body to its gold and the lines
    nearest it; a hit without gold keeps its first lines; the header counts what is shown."""
    c = Chunk.make(DOC, 0, len(DOC.text), "t")
    q = Query("q1", "What is the Gold refund window?", gold=(GOLD,))
    full = hits_text(q, [Hit(c, 0.5)], k=1)
    out = hits_text(q, [Hit(c, 0.5)], k=1, lines=2)
    body = [line for line in full.splitlines()[1:] if line.strip()]
    assert len(body) > 2 and f"· 2 of {len(body)} lines shown" in out.splitlines()[0]
    assert "⟦| Gold | 14 days | 2% |⟧" in out and len(out.splitlines()) <= 1 + 2 + 1
    assert hits_text(q, [Hit(c, 0.5)], k=1, lines=len(body)) == full.replace("\n\n", "\n")
    other = Query("q2", "?", gold=(Span("elsewhere", 0, 5),))
    first = hits_text(other, [Hit(c, 0.5)], k=1, lines=1).splitlines()
    assert first[0].endswith("no gold · 1 of %d lines shown" % len(body))
    assert first[1:] == body[:1]


def test_clip_lines_keeps_focus_lines_and_marks_gaps():
    from ragkit.report import clip_lines

    text = "\n".join(["# Title", "", "intro", "| Plan | days |", "|---|---|", "| Basic | 7 |",
                     "| Gold | 10 |", "| Platinum | 21 |", "outro"])
    kept, shown, total = clip_lines(text, 3, focus=r"Gold|\| Plan")
    assert (shown, total) == (3, 8)  # the third line: the nearest, after a focus line first
    assert kept.splitlines() == ["| Plan | days |", "|---|---|", "…", "| Gold | 10 |"]
    assert clip_lines(text, 3) == ("# Title\nintro\n| Plan | days |", 3, 8)
    many = "⟦" + "\n".join(f"g{i}" for i in range(10)) + "⟧"
    assert clip_lines(many, 4)[0].splitlines() == ["⟦g0", "g1", "…", "g8", "g9⟧"]


def test_staged_status_names_what_fixes_each_case():
    rows = staged_status({"table": {"naive": "split", "structure": "ok", "router": "ok"},
                          "memo": {"naive": "missed", "structure": "partial"},
                          "easy": {"naive": "ok", "structure": "ok"}},
                         naive="naive", order=["router", "structure"])
    status = {r["case"]: r["status"] for r in rows}
    assert status == {"table": "fixed by router, structure", "memo": "not fixed",
                      "easy": "does not fail naively"}
    with pytest.raises(KeyError, match="naive"):
        staged_status({"x": {"structure": "ok"}}, naive="naive")


def test_score_views_scores_one_ranking_at_k_and_at_budgets():
    from ragkit.report import score_views

    chunks = FixedCharChunker(250, 0).chunk(DOC)
    gold_chunks = [c for c in chunks if c.start < GOLD.end and GOLD.start < c.end]
    others = [c for c in chunks if c not in gold_chunks]
    q = Query("q1", "Gold window?", gold=(GOLD,))
    hits = [Hit(c, 1.0) for c in gold_chunks + others]
    views = score_views(q, hits, k=len(gold_chunks), budgets=(8, 4096))
    assert views.view.tolist() == [f"top {len(gold_chunks)} chunks", "8 tokens", "4096 tokens"]
    top, tiny, big = views.to_dict("records")
    assert top["recall"] == 1.0 and top["pass"] == 1.0
    assert tiny["cl100k tokens"] == 8 and tiny["recall"] < 1.0      # the budget cuts the evidence
    assert big["recall"] == 1.0 and big["precision"] < top["precision"]  # more text, diluted



def test_hits_table_shows_scores_on_request_and_only_the_top_k_without_budgets():
    from ragkit.report import hits_table

    chunks = FixedCharChunker(250, 0).chunk(DOC)
    q = Query("q1", "Gold window?", gold=(GOLD,))
    hits = [Hit(c, 1.0 - i / 8) for i, c in enumerate(chunks)]
    plain = hits_table(q, hits, k=2, budgets=())
    assert list(plain.columns) == ["rank", "chunk", "cl100k tokens", "gold chars held", "in top 2"]
    assert len(plain) == 2
    scored = hits_table(q, hits, k=2, budgets=(4096,), scores=True)
    assert list(scored.columns)[2] == "score" and scored.score.tolist()[:2] == [1.0, 0.875]
    assert len(scored) == len(chunks)  # the budget's context reads every hit
    assert scored["gold chars held"].sum() == GOLD.end - GOLD.start

def test_encoder_overflow_counts_bodies_that_fill_the_input_alone():
    """A preamble placed after a body that fills the encoder's input is never read: the count
    uses the body alone, with the encoder's own token counts (special tokens included)."""
    from ragkit.report import encoder_overflow

    class Words:  # one token per word, plus [CLS] and [SEP]
        max_tokens = 6

        def count_tokens(self, texts, kind="document"):
            return [len(t.split()) + 2 for t in texts]

    doc = Document("d", "one two three\nfour five six seven")
    chunks = [Chunk.make(doc, 0, 13, "t", prefix="a very long prefix that is not the body"),
              Chunk.make(doc, 14, len(doc.text), "t")]
    assert encoder_overflow(chunks, Words()) == {"chunks": 2, "over": 1, "limit": 6}
    assert encoder_overflow([], Words()) == {"chunks": 0, "over": 0, "limit": 6}


def test_views_differ_and_save_page(tmp_path, monkeypatch):
    """Two views disagree when the top k hold gold the budget's context cuts off; a page of
    HTML parts is written under results/tables with a rule between them."""
    from ragkit.report import save_page, views_differ
    from ragkit.retrieve import Hit
    from ragkit.types import Chunk, Document, Query, Span

    doc = Document("d", "filler words " * 60 + "the gold sentence is here.")
    gold = Query("q", "?", (Span("d", len(doc.text) - 26, len(doc.text)),))
    first = Chunk.make(doc, 0, 13 * 60, "t")                   # ~120 tokens, no gold
    second = Chunk.make(doc, 13 * 60, len(doc.text), "t")      # the gold
    assert views_differ(gold, [Hit(first, 1.0), Hit(second, 0.5)], k=2, budget=64)
    assert not views_differ(gold, [Hit(second, 1.0), Hit(first, 0.5)], k=2, budget=64)
    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(tmp_path))
    shown = save_page(["<p>a</p>", "<p>b</p>"], "cases")
    text = (tmp_path / "tables" / "cases.html").read_text(encoding="utf-8")
    assert shown.endswith("cases.html") and "<p>a</p>\n<hr>\n<p>b</p>" in text



def test_views_reason_says_which_rank_holds_the_gold_and_where_the_budget_stops():
    """The top k hold gold the budget never reaches: the reason names the gold's rank, how far
    the context reaches and the tokens above the gold; with many small chunks the context reads
    past rank k instead, and the reason says that the budget holds more."""
    from ragkit.evaluate.budget import count_tokens
    from ragkit.report import views_reason
    from ragkit.retrieve import Hit
    from ragkit.types import Chunk, Document, Query, Span

    doc = Document("d", "filler words " * 60 + "the gold sentence is here.")
    gold = Query("q", "?", (Span("d", len(doc.text) - 26, len(doc.text)),))
    first = Chunk.make(doc, 0, 13 * 60, "t")                   # no gold
    second = Chunk.make(doc, 13 * 60, len(doc.text), "t")      # the gold
    above = count_tokens(first.text)
    why = views_reason(gold, [Hit(first, 1.0), Hit(second, 0.5)], k=2, budget=64)
    assert why.startswith("Span recall 100% in the top 2, 0% in 64 tokens")
    assert "gold characters lie in the hits at rank 2" in why
    assert "reaches rank 1 and cuts that hit" in why
    assert f"the hits above rank 2 take {above} tokens, more than 64" in why
    assert why.endswith("so they hold more.")
    small = [Chunk.make(doc, i, i + 13, "t") for i in range(0, 13 * 4, 13)]
    why = views_reason(gold, [Hit(c, 1.0) for c in small] + [Hit(second, 0.5)], k=2,
                       budget=512)
    assert why.startswith("Span recall 0% in the top 2, 100% in 512 tokens")
    assert "reads past rank 2 to the gold at rank 5, and holds more." in why

def test_gold_ranks_and_hits_text_count_an_identical_copy_of_the_gold():
    from ragkit.evaluate.copies import attach_copies
    from ragkit.report import gold_ranks

    passage = "Refunds are available within fourteen days of purchase for unused add-ons."
    doc = Document("d", f"{passage}\n\nOther text sits here.\n\n{passage}\n")
    q, = attach_copies([Query("q", "?", (Span("d", 0, len(passage)),))], [doc])
    assert q.copies  # the second place holds the same words
    second = doc.text.rindex(passage)
    other = Chunk.make(doc, len(passage) + 2, second - 2, "t")
    copy = Chunk.make(doc, second, second + len(passage), "t")
    hits = [Hit(other, 0.9), Hit(copy, 0.8)]
    assert gold_ranks([q], [hits]).tolist() == [2.0]
    assert "holds gold" in hits_text(q, hits, k=2).splitlines()[-2]


def test_hits_text_prints_chosen_ranks_under_their_own_numbers():
    from ragkit.report import hits_text

    chunks = FixedCharChunker(250, 0).chunk(DOC)
    q = Query("q1", "Gold window?", gold=(GOLD,))
    hits = [Hit(c, 1.0 - i / 8) for i, c in enumerate(chunks)]
    last = len(hits)
    text = hits_text(q, hits, ranks=[2, last, last + 5])
    headers = [line for line in text.splitlines() if line.startswith("── #")]
    assert [h.split()[1] for h in headers] == ["#2", f"#{last}"]  # a rank past the end is skipped
    assert hits_text(q, hits, k=2) == hits_text(q, hits, ranks=[1, 2])


def test_order_flips_finds_a_question_whose_leader_changes_between_the_views():
    from types import SimpleNamespace

    from ragkit.report import order_flips

    chunks = FixedCharChunker(250, 0).chunk(DOC)
    gold = [c for c in chunks if c.start < GOLD.end and GOLD.start < c.end]
    others = [c for c in chunks if c not in gold]
    q = Query("q1", "Gold window?", gold=(GOLD,))
    texts = {DOC.id: DOC.text}
    # a: the gold at rank 1; b: the gold below two other chunks
    a = SimpleNamespace(hits={"q1": [Hit(c, 1.0) for c in gold + others]}, texts=texts)
    b = SimpleNamespace(hits={"q1": [Hit(c, 1.0) for c in others[:2] + gold + others[2:]]},
                        texts=texts)
    assert order_flips([q], a, b, k=1, budget=4096) == []  # a leads at k, both hold all at B
    assert order_flips([q], a, a, k=1, budget=8) == []
    wide = SimpleNamespace(hits={"q1": [Hit(c, 1.0) for c in others[:1] + gold + others[1:]]},
                           texts=texts)
    # at k = 1, a holds the gold and `wide` none; at a budget that reaches rank 2 both hold it:
    # a tie at B is not a flip either
    assert order_flips([q], a, wide, k=1, budget=4096) == []
    # a flip: one big chunk ending in the gold leads at k = 1, but an 8-token budget keeps only
    # its opening words; a chunk holding the first half of the gold leads there
    big = Chunk.make(DOC, max(0, GOLD.start - 600), GOLD.end, "t")
    at_gold = Chunk.make(DOC, GOLD.start, GOLD.start + 12, "t")  # half the gold
    ends = SimpleNamespace(hits={"q1": [Hit(big, 1.0)]}, texts=texts)
    starts = SimpleNamespace(hits={"q1": [Hit(at_gold, 1.0)]}, texts=texts)
    (flip,) = order_flips([q], ends, starts, k=1, budget=8)
    assert flip[0] == "q1" and flip[1] > 0 > flip[2]
    from ragkit.report import view_orders

    d = view_orders([q, Query("q2", "none", gold=())], ends, starts, k=1, budget=8)
    assert d.query_id.tolist() == ["q1"] and d.at_k[0] == flip[1] and d.at_budget[0] == flip[2]
