"""Report: what was measured, said from this run's numbers, never typed.

- `results`: every number as rows of one schema, written and read back (`Recorder`,
  `load_results`, `load_scores`);
- `prose`: formatted numbers and findings with their intervals (`pct`, `ci`, `finding`);
- `leaderboard`: every configuration compared at an equal context budget;
- `guide`: the decision guide, which strategy at which budget on which corpus;
- `claims`: the seeds' and anchors' claims, declared with the rules that decide them before
  any number; `claim_check`: each checked against a run (`check_claims`);
- `closing`: the closing findings of notebooks 06-08;
- `answers`: which local model may answer (read from ``ragkit bench answer-floor``) and a
  refusal threshold's held-out balanced accuracy, as sentences;
- `explain`: one question looked into: where the gold sits, how it was cut, what came back;
- `tables`, `plots`: plain-text tables and the course's figures;
- `published`: the published numbers the course re-measures;
- `course`: the course map drawn by notebook 00 (`STAGES`).

Names load on first use (`ragkit._lazy`); ``leaderboard`` and ``guide`` are used as modules
(``from ragkit.report import leaderboard as lb``).
"""

from .._lazy import surface

_EXPORTS = {
    "Recorder": "results",
    "ResultsFileError": "results",
    "append_rows": "results",
    "comparable": "results",
    "load_hits": "results",
    "load_results": "results",
    "load_scores": "results",
    "read_rows": "results",
    "show_figure": "results",
    "write_rows": "results",
    "ci": "prose",
    "finding": "prose",
    "mean_ci": "prose",
    "pct": "prose",
    "percent_table": "prose",
    "quiet_cells": "prose",
    "speed_sentence": "prose",
    "verdict": "prose",
    "what_we_measured": "prose",
    "diff_ci": "prose",
    "Decision": "decisions",
    "ranked_closing": "decisions",
    "effect_decisions": "decisions",
    "check_claims": "claim_check",
    "claim_sentences": "claim_check",
    "claims_for": "claim_check",
    "show": "claim_check",
    "answer_floor_choice": "answers",
    "answer_floor_rows": "answers",
    "answer_floor_table": "answers",
    "refusal_line": "answers",
    "after_colon": "closing",
    "claims_finding": "closing",
    "guide_findings": "closing",
    "rerank_findings": "closing",
    "rerank_pairs": "closing",
    "step_display": "closing",
    "step_findings": "closing",
    "step_table": "closing",
    "chunk_view": "explain",
    "diagnose": "explain",
    "gold_ranks": "explain",
    "encoder_overflow": "explain",
    "hits_text": "explain",
    "score_views": "explain",
    "staged_case_html": "explain",
    "staged_status": "explain",
    "text_table": "tables",
    "bars": "plots",
    "lines": "plots",
    "pipeline_diagram": "plots",
    "ranked_intervals": "plots",
    "ANTHROPIC_PUBLISHED": "published",
    "CHROMA_PUBLISHED": "published",
    "chroma_best": "published",
    "STAGES": "course",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = surface(__name__, _EXPORTS)
