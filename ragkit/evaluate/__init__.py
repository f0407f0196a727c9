"""Evaluate: retrieved chunks scored against gold character spans, with intervals.

- `metrics`: every metric of a run's queries: span metrics (recall, precision, IoU,
  precision_Ω), rank metrics (pass@k, MRR, nDCG@10), budgeted metrics and refusal
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

_EXPORTS = {  # submodule -> the names it gives this package
    "metrics": ("calibrate_threshold", "evaluate_retrieval", "query_scores", "refusal_scores"),
    "budget": ("BUDGETS", "BUDGET_METRICS", "DEFAULT_BUDGET", "budget_scores", "count_tokens",
               "pack_context"),
    "spans": ("covered_fraction", "exact_pass", "overlaps", "span_scores"),
    "stats": ("Comparison", "interval", "paired", "wilson", "ratio_effect"),
    "runs": ("Metric", "Run", "choose_on_tune", "common", "per_query", "versus"),
    "splits": ("split_of", "grouped_split", "leaks"),
    "questions": ("GoldenError",),
    "golden": ("GoldenWarning", "build_golden", "check_questions", "read_golden",
               "validate_golden"),
    "benchmarks": ("Benchmark", "BenchmarkUnavailable", "ChecksumError", "load", "load_anthropic",
                   "load_chroma", "load_course", "load_folder"),
    "answer": ("ANSWER_MODELS", "LocalAnswerer", "answer_floor", "gold_passages", "key_fact"),
    "judge": ("judge_unavailable", "judged_rows"),
}
__all__, __getattr__, __dir__ = surface(__name__, _EXPORTS)
