"""Evaluate: retrieved chunks scored against gold character spans, with intervals.

- `metrics`: every metric of a run's queries: span metrics (recall, precision, IoU,
  precision_Ω), rank metrics (recall@k, MRR, nDCG@10), budgeted metrics and refusal
  (`evaluate_retrieval`, `query_scores`); `spans`: the character-span arithmetic they stand on
  (`span_scores`, `covered_fraction`); `budget`: the context packed at a token budget
  (`pack_context`, `BUDGETS`);
- `stats`: paired bootstrap intervals over queries (`paired`, `interval`, `Comparison`) and
  Wilson's interval of a proportion (`wilson`);
- `runs`: one configuration's per-query scores and two of them compared, the one way: typed
  metric keys (`Metric`), `Run`, one run's values out of a long table (`per_query`), the paired
  comparison on the questions both scored (`versus`) and the tune-half choice
  (`choose_on_tune`);
- `splits`: the grouped tune / held-out halves (`split_of`, `grouped_split`, `leaks`);
- `golden`: golden sets authored as quotes and stored as spans (`build_golden`, `read_golden`),
  from questions files read line by line (`questions`);
- `benchmarks`: the course corpus, Chroma's and Anthropic's sets, loaded into the same types
  (`load`, `Benchmark`);
- `answer`: answers from a small local model and their check (`LocalAnswerer`, `key_fact`,
  `answer_floor`);
- `judge`: ragas' LLM-judged answer metrics, only with an API key (`judged_rows`).

This stage imports neither the embedder, the retrievers nor the chunkers
(`tests/test_layers.py`). Names load on first use (`ragkit._lazy`).
"""

from .._lazy import surface

_EXPORTS = {
    "calibrate_threshold": "metrics",
    "evaluate_retrieval": "metrics",
    "query_scores": "metrics",
    "refusal_scores": "metrics",
    "BUDGETS": "budget",
    "BUDGET_METRICS": "budget",
    "DEFAULT_BUDGET": "budget",
    "budget_scores": "budget",
    "count_tokens": "budget",
    "pack_context": "budget",
    "covered_fraction": "spans",
    "exact_pass": "spans",
    "overlaps": "spans",
    "span_scores": "spans",
    "Comparison": "stats",
    "interval": "stats",
    "paired": "stats",
    "wilson": "stats",
    "ratio_effect": "stats",
    "Metric": "runs",
    "Run": "runs",
    "choose_on_tune": "runs",
    "common": "runs",
    "per_query": "runs",
    "versus": "runs",
    "split_of": "splits",
    "grouped_split": "splits",
    "leaks": "splits",
    "GoldenError": "questions",
    "GoldenWarning": "golden",
    "build_golden": "golden",
    "check_questions": "golden",
    "read_golden": "golden",
    "validate_golden": "golden",
    "Benchmark": "benchmarks",
    "BenchmarkUnavailable": "benchmarks",
    "ChecksumError": "benchmarks",
    "load": "benchmarks",
    "load_anthropic": "benchmarks",
    "load_chroma": "benchmarks",
    "load_course": "benchmarks",
    "load_folder": "benchmarks",
    "ANSWER_MODELS": "answer",
    "LocalAnswerer": "answer",
    "answer_floor": "answer",
    "gold_passages": "answer",
    "key_fact": "answer",
    "judge_unavailable": "judge",
    "judged_rows": "judge",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = surface(__name__, _EXPORTS)
