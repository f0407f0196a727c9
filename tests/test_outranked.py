"""Why a gold chunk ranks low: what sits above it, read from the hits."""

from ragkit.report import outranked
from ragkit.retrieve import Hit
from ragkit.types import Chunk, Document, Query, Span

TABLE = "| Tier | Refund |\n|---|---|\n| Gold | 14 days |\n"
OTHER = "| Item | Fee |\n|---|---|\n| Refund processing | $5 |\n"
PROSE = "Refunds for the Gold plan are handled by billing within a week."


def _setup():
    gold_doc, other, prose = (Document("policy", TABLE), Document("fees", OTHER),
                              Document("memo", PROSE))
    gold = Span("policy", TABLE.index("| Gold"), len(TABLE))
    q = Query("q1", "What refund does the Gold tier get?", gold=(gold,))
    chunks = [Chunk.make(d, 0, len(d.text), "t") for d in (other, prose, gold_doc)]
    return q, chunks


def test_a_low_gold_rank_names_what_outranks_it():
    q, (fees, memo, policy) = _setup()
    text = outranked(q, [Hit(fees, 0.8), Hit(memo, 0.7), Hit(policy, 0.6)], k=2)
    lines = text.splitlines()
    assert lines[0] == ("The first chunk holding the gold of q1 ranks 3 with score 0.600; the "
                        "top 2 score 0.700 to 0.800. It shares gold, refund, tier of the "
                        "question's words (gold, refund, tier).")
    assert lines[1] == ("The top 2 come from 2 document(s), 2 of them not the gold's; 1 of the "
                        "2 chunks are tables:")
    assert lines[2] == "  #1 fees (score 0.800, a table): shares refund"
    assert lines[3] == "  #2 memo (score 0.700): shares gold"


def test_a_gold_inside_the_top_k_or_missing_says_so():
    q, (fees, memo, policy) = _setup()
    assert outranked(q, [Hit(policy, 0.9), Hit(fees, 0.8)], k=2).startswith(
        "The first chunk holding the gold of q1 ranks 1, inside the top 2.")
    assert outranked(q, [Hit(fees, 0.9)], k=2).startswith("No retrieved chunk holds the gold")
    assert outranked(q, [], k=2) == "q1: nothing was retrieved."


def test_a_preamble_note_names_the_words_it_adds_and_a_year_the_question_does_not_ask():
    from dataclasses import replace

    from ragkit.report import preamble_note

    doc = Document("fees", "| Item | Price |\n|---|---|\n| Priority support | $9 |\n")
    chunk = Chunk.make(doc, 0, len(doc.text), "t")
    dated = replace(chunk, prefix="Fee Schedule > Add-on prices. Effective 1 April 2021.")
    q = Query("q024", "In 2022, how much did the Priority support add-on cost?", gold=())
    assert preamble_note(q, dated) == ("the preamble adds add-on of the question's words "
                                       "that the chunk's body lacks; it names 2021 while the "
                                       "question asks about 2022")
    assert preamble_note(q, chunk) == ("the preamble adds none of the question's words that "
                                       "the chunk's body lacks")
