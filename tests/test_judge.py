"""ragas' LLM-judged metrics, run offline with a scripted chat model and fake embeddings."""

import json

import pytest

pytest.importorskip("ragas")

from langchain_core.embeddings.fake import DeterministicFakeEmbedding  # noqa: E402
from langchain_core.language_models.chat_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402

from ragkit.evaluate import judge_unavailable, judged_rows  # noqa: E402
from ragkit.evaluate.judge import JudgeSample, judge  # noqa: E402


class Scripted(BaseChatModel):
    """Answers ragas' three prompts: statement extraction, NLI verdicts, question generation."""

    supported: int = 1

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(self, messages, stop=None, run_manager=None, **kw):
        prompt = messages[-1].content
        if "verdict" in prompt:
            out = {"statements": [{"statement": "The window is 14 days.", "reason": "-",
                                   "verdict": self.supported}]}
        elif "noncommittal" in prompt:
            out = {"question": "How long is the refund window?", "noncommittal": 0}
        else:
            out = {"statements": ["The window is 14 days."]}
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=json.dumps(out)))])


SAMPLE = JudgeSample("How long is the refund window?", "14 days.",
                     ["Refunds are accepted within 14 days."])


@pytest.mark.parametrize("supported", [1, 0])
def test_faithfulness_follows_the_judges_verdicts(supported):
    scores = judge([SAMPLE], llm=Scripted(supported=supported),
                   embeddings=DeterministicFakeEmbedding(size=16))
    assert scores.faithfulness.iloc[0] == float(supported)
    # the regenerated question is the question itself: identical fake embeddings, cosine 1
    assert scores.answer_relevancy.iloc[0] == pytest.approx(1.0)


def test_without_a_key_the_judge_is_skipped_with_a_reason(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert "OPENAI_API_KEY" in judge_unavailable()
    with pytest.raises(RuntimeError, match="OPENAI_API_KEY"):
        judge([SAMPLE])


def test_judged_rows_answer_each_strategys_passages():
    from ragkit.evaluate import load
    from ragkit.types import Chunk

    course = load("course")
    docs = course.docs_by_id()
    seen = []

    class Fixed:  # a retriever returning one whole document, and one returning its first line
        def __init__(self, cut):
            self.cut = cut

        def search(self, queries, k, where=None):
            from ragkit.retrieve import Hit

            doc = next(iter(docs.values()))
            end = doc.text.index("\n") if self.cut else len(doc.text)
            return [[Hit(Chunk.make(doc, 0, end, "fixed"), 1.0)] for _ in queries]

    class Echo:
        def answer(self, question, passages):
            seen.append(passages)
            return "14 days."

    rows = judged_rows(course, {"whole": Fixed(False), "line": Fixed(True)}, Echo(),
                       n_questions=4, max_chars=300, llm=Scripted(),
                       embeddings=DeterministicFakeEmbedding(size=16))
    assert set(rows.strategy) == {"whole", "line"} and set(rows.metric) == {
        "faithfulness", "answer_relevancy"}
    assert (rows.n == 4).all() and (rows.unscored == 0).all()
    whole = rows[rows.strategy == "whole"].iloc[0]
    assert whole.passages_cut == 4 and all(len(p[0]) <= 300 for p in seen)
