"""LLM-judged answer metrics: ragas faithfulness and answer relevancy, only with an API key.

ragas' ID-based context precision and recall need no model (notebook 07 runs them offline).
Faithfulness (is every statement of the answer supported by the retrieved passages?) and answer
relevancy (do questions regenerated from the answer resemble the question?) need an LLM judge,
and relevancy an embedding model too. Here the judge is OpenAI's, through langchain-openai, and
only when ``OPENAI_API_KEY`` is set; the key is read from the environment by the client and is
never passed through ragkit, logged or written. Without it `judge_unavailable` says why and the
caller records the metrics as skipped.

    >>> samples = [JudgeSample("How long is the refund window?", "14 days.",   # doctest: +SKIP
    ...                        ["Refunds are accepted within 14 days."])]
    >>> judge(samples).mean()                                                   # doctest: +SKIP

Any LangChain chat model and embeddings can be passed instead (`llm=`, `embeddings=`), which is
how the tests run the ragas machinery offline with scripted models.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Sequence

from ..config import get_settings

METRICS = ("faithfulness", "answer_relevancy")


@dataclass(frozen=True)
class JudgeSample:
    question: str
    answer: str
    contexts: Sequence[str]


def judge_unavailable() -> str | None:
    """None when the judged metrics can run, else the reason they are skipped."""
    if not os.environ.get("OPENAI_API_KEY"):
        return "skipped: no OPENAI_API_KEY for an LLM judge"
    try:
        import langchain_openai  # noqa: F401
    except ImportError:
        return "skipped: langchain-openai is not installed"
    return None


def judge_models() -> tuple[Any, Any, dict[str, str]]:
    """(chat model, embeddings, description) for the OpenAI judge; keys stay in the client."""
    from langchain_openai import ChatOpenAI, OpenAIEmbeddings

    settings = get_settings()
    model, emb = settings.judge_model, settings.judge_embeddings
    return (ChatOpenAI(model=model, temperature=0, seed=0), OpenAIEmbeddings(model=emb),
            {"judge": model, "judge_embeddings": emb})


def judge(samples: Sequence[JudgeSample], llm: Any = None, embeddings: Any = None):
    """A DataFrame with one row per sample: faithfulness and answer_relevancy in [0, 1].

    `llm`/`embeddings` default to `judge_models()` (which needs ``OPENAI_API_KEY``). A sample
    that ragas could not score is NaN and counted by the caller, not dropped.
    """
    import pandas as pd
    from ragas import EvaluationDataset, SingleTurnSample, evaluate
    from ragas.embeddings import LangchainEmbeddingsWrapper
    from ragas.llms import LangchainLLMWrapper
    from ragas.metrics import Faithfulness, ResponseRelevancy

    if llm is None or embeddings is None:
        reason = judge_unavailable()
        if reason:
            raise RuntimeError(reason)
        llm, embeddings, _ = judge_models()
    data = EvaluationDataset([SingleTurnSample(user_input=s.question, response=s.answer,
                                               retrieved_contexts=list(s.contexts))
                              for s in samples])
    result = evaluate(data, metrics=[Faithfulness(), ResponseRelevancy()],
                      llm=LangchainLLMWrapper(llm),
                      embeddings=LangchainEmbeddingsWrapper(embeddings),
                      show_progress=False, raise_exceptions=False)
    df = result.to_pandas()
    return pd.DataFrame({m: df[m].astype(float) for m in METRICS})


def judged_rows(bench, retrievers: dict[str, Any], answerer, *, k: int = 3,
                n_questions: int = 24, max_chars: int = 2500, llm: Any = None,
                embeddings: Any = None):
    """Answer the same questions from each retriever's top k and judge the answers.

    Questions: `bench`'s lookup questions with a reference answer, every m-th to take about
    `n_questions` (deterministic). Each passage is cut to `max_chars` so that k big parents
    fit a small answerer's context; the rows say how many passages were cut. Returns one row
    per (strategy, metric): mean value, samples judged, samples ragas could not score, cut.
    """
    import pandas as pd

    qs = [q for q in bench.queries if q.type == "lookup" and q.answer]
    qs = qs[:: max(1, len(qs) // max(1, n_questions))][:n_questions]
    rows = []
    for label, retriever in retrievers.items():
        hits = retriever.search([q.text for q in qs], k)
        samples, cut = [], 0
        for q, hs in zip(qs, hits):
            passages = [h.chunk.text for h in hs]
            cut += sum(len(p) > max_chars for p in passages)
            passages = [p[:max_chars] for p in passages]
            samples.append(JudgeSample(q.text, answerer.answer(q.text, passages), passages))
        scores = judge(samples, llm=llm, embeddings=embeddings)
        for m in METRICS:
            rows.append({"strategy": label, "metric": m, "value": float(scores[m].mean()),
                         "n": len(samples), "unscored": int(scores[m].isna().sum()),
                         "passages_cut": cut})
    return pd.DataFrame(rows)
