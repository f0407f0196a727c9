"""Evaluate: retrieved chunks scored against gold character spans, with intervals.

- `metrics`: span metrics (recall, precision, IoU, precision_Ω), rank metrics (recall@k, MRR,
  nDCG@10), refusal, and context packing at a token budget (`evaluate_retrieval`,
  `pack_context`, `BUDGETS`);
- `stats`: paired bootstrap intervals over queries (`paired`, `interval`, `Comparison`);
- `golden`: golden sets authored as quotes and stored as spans (`build_golden`, `read_golden`);
- `benchmarks`: the course corpus, Chroma's and Anthropic's sets, loaded into the same types
  (`load`, `Benchmark`);
- `answer`: answers from a small local model and their check (`lost_in_the_middle`);
- `judge`: ragas' LLM-judged answer metrics, only with an API key (`judged_rows`).

This stage imports neither the embedder, the retrievers nor the chunkers
(`tests/test_layers.py`). Names load on first use (`ragkit._lazy`).
"""

from .._lazy import surface

_EXPORTS = {
    "BUDGETS": "metrics",
    "BUDGET_METRICS": "metrics",
    "DEFAULT_BUDGET": "metrics",
    "budget_scores": "metrics",
    "calibrate_threshold": "metrics",
    "count_tokens": "metrics",
    "covered_fraction": "metrics",
    "evaluate_retrieval": "metrics",
    "exact_pass": "metrics",
    "overlaps": "metrics",
    "pack_context": "metrics",
    "query_scores": "metrics",
    "refusal_scores": "metrics",
    "Comparison": "stats",
    "interval": "stats",
    "paired": "stats",
    "ratio_effect": "stats",
    "split_of": "stats",
    "GoldenError": "golden",
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
    "LocalAnswerer": "answer",
    "key_fact": "answer",
    "lost_in_the_middle": "answer",
    "staged_answers": "answer",
    "judge_unavailable": "judge",
    "judged_rows": "judge",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = surface(__name__, _EXPORTS)
