"""`staged_answers` (notebook 02): which context each staged case is answered from, and the
answer cache key (model, prompt and passages)."""

from types import SimpleNamespace

import pandas as pd

from ragkit.evaluate import LocalAnswerer, staged_answers
from ragkit.report import staged_status
from ragkit.types import Chunk, Document, Query


class Echo:
    """A stand-in model: answers with its passages joined (so the context decides)."""

    def __init__(self):
        self.calls = []

    def answer(self, question, passages):
        self.calls.append(list(passages))
        return " | ".join(passages)


def _outcome(doc, spans, prefix=""):
    chunks = [Chunk.make(doc, s, e, "s", prefix=prefix) for s, e in spans]
    return SimpleNamespace(hits={q: [SimpleNamespace(chunk=c) for c in chunks]
                                 for q in ("qa", "qb", "qc")})


def test_staged_answers_picks_the_fixing_context_and_reports_the_rest():
    doc = Document("d", "Gold tier refunds take 14 days. Silver tier refunds take 7 days.")
    naive = _outcome(doc, [(32, 63)])                        # the Silver sentence
    outcomes = {"structure": _outcome(doc, [(0, 31)], "Refunds"),  # the Gold sentence
                "router": _outcome(doc, [(32, 63)])}
    verdicts = {"a": {"naive": "split", "structure": "ok", "router": "ok"},
                "b": {"naive": "missed", "structure": "split", "router": "partial"},
                "c": {"naive": "ok", "structure": "ok", "router": "ok"}}
    status = staged_status(verdicts, naive="naive", order=["naive", "structure", "router"])
    cases = [{"name": n, "question_id": q} for n, q in (("a", "qa"), ("b", "qb"), ("c", "qc"))]
    queries = {q: Query(q, "How long do Gold refunds take?", answer="14 days")
               for q in ("qa", "qb", "qc")}
    model = Echo()
    t = staged_answers(cases, queries, naive, outcomes, status, model, k=1).set_index("case")
    assert t.loc["a", "fixed by"] == "structure"               # the first that fixes it
    assert t.loc["a", "fixed answer"] == "Refunds\nGold tier refunds take 14 days."
    assert bool(t.loc["a", "key fact in fixed answer"])
    assert not t.loc["a", "key fact in naive answer"]
    assert t.loc["b", "status"] == "not fixed"
    assert t.loc["b", "fixed by"] == "not fixed (best: router, partial)"
    assert t.loc["c", "status"] == "does not fail naively"
    assert t.loc["c", "fixed answer"] == "—" and pd.isna(t.loc["c", "key fact in fixed answer"])
    assert len(model.calls) == 5                               # c is asked once, naive only
    assert t.loc["a", "key fact"] == "14"


def test_answer_cache_key_covers_model_prompt_and_passages(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGKIT_DATA_DIR", str(tmp_path))
    from ragkit import config
    if hasattr(config.get_settings, "cache_clear"):
        config.get_settings.cache_clear()
    weights = tmp_path / "m.gguf"
    weights.write_bytes(b"model one")
    calls = []

    class FakeLlama:
        def create_chat_completion(self, messages, **kw):
            calls.append(messages[0]["content"])
            return {"choices": [{"message": {"content": f"answer {len(calls)}"}}]}

    def answerer(path):
        a = LocalAnswerer(model_path=path, regenerate=False)
        a._llm = FakeLlama()
        return a

    a = answerer(weights)
    first = a.answer("Q?", ["p1"])
    assert a.answer("Q?", ["p1"]) == first and len(calls) == 1      # cached
    a.answer("Q?", ["p2"])                                           # other passages
    a.answer("Other Q?", ["p1"])                                     # other prompt
    assert len(calls) == 3
    other = tmp_path / "m2.gguf"
    other.write_bytes(b"model two")
    b = answerer(other)
    b.answer("Q?", ["p1"])                                           # other model file
    assert len(calls) == 4
    assert answerer(weights).answer("Q?", ["p1"]) == first           # read back from disk
    if hasattr(config.get_settings, "cache_clear"):
        config.get_settings.cache_clear()
