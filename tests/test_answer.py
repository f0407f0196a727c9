import pytest

from ragkit.answer import contains_fact, key_fact, lost_in_the_middle
from ragkit.types import Chunk, Document, Query, Span


def test_key_fact_skips_numbers_the_question_has():
    assert key_fact("$750 on hire, then $250 a year") == "750"
    assert key_fact("Within 4 hours.", "What is the Severity 1 response time?") == "4"
    assert key_fact("No number here") is None
    assert contains_fact("It is 1,200 dollars", "1200") and not contains_fact("12", "1200")


class Echo:
    """A stand-in model that answers with the first passage (so position decides)."""

    def answer(self, question, passages):
        return passages[0]


def test_positions_put_the_gold_first_middle_last():
    doc = Document("d", "Gold has 14 days. Silver has 7 days. Data kept 30 days. Logs 90 days.")
    gold = Chunk.make(doc, 0, 17, "s")
    others = [Chunk.make(doc, 18, 36, "s"), Chunk.make(doc, 37, 55, "s")]
    q = Query("q", "How long for Gold?", gold=(Span("d", 0, 17),), answer="14 days")
    res = lost_in_the_middle([q], {"q": gold}, {"q": others}, Echo())
    assert [(r.position, r.correct) for r in res] == [("first", True), ("middle", False),
                                                      ("last", False)]


def test_local_model_answers_for_real():
    pytest.importorskip("llama_cpp")
    from ragkit.answer import LocalAnswerer

    a = LocalAnswerer(max_tokens=16)
    out = a.answer("How many days is the Gold refund window?", ["Gold tier: 14 days."])
    assert isinstance(out, str) and out
    assert a.answer("How many days is the Gold refund window?", ["Gold tier: 14 days."]) == out
