"""Experiments: the course's measurements, each one chunk -> embed -> retrieve -> evaluate.

- `pipeline`: one retrieval experiment end to end (`run_experiment`, returning an `Outcome`),
  and every chunker on every benchmark (`compare`); every number of the course comes from here;
- `contextual`: notebook 04's contextual-retrieval stages (`contextual_table`);
- `late`: notebook 05's naive vs late chunking on the same spans (`naive_vs_late`);
- `byod`: notebook 08's pick on the tune half, compared on the held-out half (`held_out_steps`);
- `prune`: notebook 03's corpus growth and pruning (`grow`, `garble`; ``prune.measure`` and
  ``prune.verdict`` are imported from the module);
- `reproductions`: Chroma's and Anthropic's published baselines re-measured (`chroma_repro`);
- `speed`: chunkers, encoder and reranker timed (`chunk_speed`);
- `preamble_sets`: the chunk sets the committed preamble caches cover (`COURSE_CHUNKER`).

Names load on first use (`ragkit._lazy`).
"""

from .._lazy import surface

_EXPORTS = {  # submodule -> the names it gives this package
    "pipeline": ("Outcome", "compare", "flag_count", "recall_at", "run_experiment",
                 "search_deep"),
    "design": ("Config", "effects", "saved_runs", "stack_steps"),
    "title": ("title_numbers",),
    "contextual": ("CONTEXT_STAGES", "CONTROLS", "LLM_GENERATORS", "contextual_comparison",
                   "contextual_retrieval", "contextual_table"),
    "byod": ("halves", "held_out_steps", "pick_on_tune"),
    "late": ("LATE_METRICS", "late_quality_largest", "late_quality_losses", "late_quality_means",
             "late_quality_sentences",
             "late_quality_table", "late_vs_naive", "naive_vs_late", "windowed_documents"),
    "prune": ("garble", "gold_in_superseded", "grow"),
    "reproductions": ("anthropic_baseline", "anthropic_pass", "chroma_repro"),
    "speed": ("chunk_speed", "encoder_speed", "rerank_speed"),
    "preamble_sets": ("COURSE_CHUNKER", "corpus_and_chunks", "subset_documents"),
}
__all__, __getattr__, __dir__ = surface(__name__, _EXPORTS)
