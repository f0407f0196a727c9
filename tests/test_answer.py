import pytest

from ragkit.evaluate import key_fact, lost_in_the_middle
from ragkit.evaluate.answer import contains_fact
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
    from ragkit.evaluate import LocalAnswerer

    a = LocalAnswerer(max_tokens=16, cache=False)
    out = a.answer("How many days is the Gold refund window?", ["Gold tier: 14 days."])
    assert isinstance(out, str) and out
    assert a.answer("How many days is the Gold refund window?", ["Gold tier: 14 days."]) == out


class Scripted:
    """Counts chat completions and answers with a fixed string."""

    def __init__(self):
        self.calls = []

    def create_chat_completion(self, messages, **kw):
        self.calls.append(messages[0]["content"])
        return {"choices": [{"message": {"content": f" answer {len(self.calls)} "}}]}


def test_answers_are_cached_by_prompt_and_settings(tmp_path, monkeypatch):
    from ragkit.evaluate import LocalAnswerer
    from ragkit.evaluate.answer import answer_cache_path

    monkeypatch.setenv("RAGKIT_DATA_DIR", str(tmp_path))
    model = tmp_path / "m.gguf"
    model.write_bytes(b"not really a model")
    first = LocalAnswerer(model_path=model)
    first._llm = Scripted()
    assert first.answer("How long?", ["Gold: 14 days."]) == "answer 1"
    assert first.answer("How long?", ["Silver: 7 days."]) == "answer 2"  # new passage, new key
    assert first.stats == {"cache_hits": 0, "generated": 2}
    assert answer_cache_path().exists()

    again = LocalAnswerer(model_path=model)  # a new process: no model is loaded
    assert again.answer("How long?", ["Gold: 14 days."]) == "answer 1"
    assert again.stats == {"cache_hits": 1, "generated": 0} and again._llm is None

    other = LocalAnswerer(model_path=model, max_tokens=8)  # other settings: not a hit
    other._llm = Scripted()
    assert other.answer("How long?", ["Gold: 14 days."]) == "answer 1"
    assert other.stats["generated"] == 1

    monkeypatch.setenv("RAGKIT_REGENERATE_ANSWERS", "1")
    fresh = LocalAnswerer(model_path=model)
    fresh._llm = Scripted()
    fresh.answer("How long?", ["Gold: 14 days."])
    assert fresh.stats == {"cache_hits": 0, "generated": 1}
