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
- `pdf_lesson`: notebook 10's table question per chunker and FinanceBench's board;
- `tables`, `plots`: plain-text tables and the course's figures;
- `published`: the published numbers the course re-measures;
- `course`: the course map drawn by notebook 00 (`STAGES`).

Names load on first use (`ragkit._lazy`); ``leaderboard`` and ``guide`` are used as modules
(``from ragkit.report import leaderboard as lb``).
"""

from .._lazy import surface

_EXPORTS = {  # submodule -> the names it gives this package
    "results": ("Recorder", "ResultsFileError", "append_rows", "comparable", "load_hits",
                "load_results", "load_scores", "read_rows", "saved_hits", "show_figure",
                "write_rows"),
    "prose": ("ci", "finding", "mean_ci", "pct", "percent_table", "quiet_cells", "speed_sentence",
              "verdict", "what_we_measured", "diff_ci", "percent_frame", "text_frame"),
    "decisions": ("Decision", "ranked_closing", "effect_decisions"),
    "claim_check": ("check_claims", "claim_sentences", "claims_for", "show"),
    "answers": ("answer_floor_choice", "answer_floor_rows", "answer_floor_table", "refusal_line"),
    "closing": ("after_colon", "claims_finding", "guide_findings", "metric_agreement",
                "rerank_findings", "rerank_pairs", "step_display", "step_findings",
                "step_table"),
    "explain": ("DIAGNOSIS", "chunk_view", "clip_lines", "diagnose", "gold_ranks",
                "encoder_overflow", "hits_table", "hits_text", "order_flips", "score_views",
                "staged_case_html", "staged_status", "view_orders", "views_differ",
                "views_reason"),
    "outranked": ("budget_reading", "first_hit_holds", "first_holding_rank", "holding_rank",
                  "largest_loss", "outranked", "score_shift",
                  "prefix_reading",
                  "preamble_note", "question_words", "sentence_after"),
    "tables": ("markdown_table", "save_page", "save_table", "shown_path", "text_table"),
    "plots": ("bars", "cost_fit", "lines", "pipeline_diagram", "ranked_intervals"),
    "stack_lesson": ("fusion_table", "pick", "ranked_within", "stack_parts", "walkthrough",
                     "walkthrough_text"),
    "pdf_lesson": ("board", "chunk_sizes", "contrast", "header_row", "hit_text", "table_cuts"),
    "published": ("ANTHROPIC_PUBLISHED", "CHROMA_PUBLISHED", "chroma_best"),
    "course": ("STAGES",),
}
__all__, __getattr__, __dir__ = surface(__name__, _EXPORTS)
