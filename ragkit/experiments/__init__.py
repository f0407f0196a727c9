"""Experiments: the course's measurements, each one chunk -> embed -> retrieve -> evaluate.

- `pipeline`: one retrieval experiment end to end (`run_experiment`, returning an `Outcome`),
  and every chunker on every benchmark (`compare`); every number of the course comes from here;
- `contextual`: notebook 04's contextual-retrieval stages (`contextual_table`);
- `late`: notebook 05's naive vs late chunking on the same spans (`naive_vs_late`);
- `prune`: notebook 03's corpus growth and pruning (`grow`, `garble`; ``prune.measure`` and
  ``prune.verdict`` are imported from the module);
- `reproductions`: Chroma's and Anthropic's published baselines re-measured (`chroma_repro`);
- `speed`: chunkers, encoder and reranker timed (`chunk_speed`);
- `preamble_sets`: the chunk sets the committed preamble caches cover (`COURSE_CHUNKER`).

Names load on first use (`ragkit._lazy`).
"""

from .._lazy import surface

_EXPORTS = {
    "Outcome": "pipeline",
    "Config": "design",
    "effects": "design",
    "saved_runs": "design",
    "stack_steps": "design",
    "title_numbers": "design",
    "compare": "pipeline",
    "recall_at": "pipeline",
    "run_experiment": "pipeline",
    "search_deep": "pipeline",
    "CONTEXT_STAGES": "contextual",
    "CONTROLS": "contextual",
    "LLM_GENERATORS": "contextual",
    "contextual_comparison": "contextual",
    "contextual_retrieval": "contextual",
    "contextual_table": "contextual",
    "LATE_METRICS": "late",
    "late_quality_sentences": "late",
    "late_quality_table": "late",
    "late_vs_naive": "late",
    "naive_vs_late": "late",
    "windowed_documents": "late",
    "garble": "prune",
    "gold_in_superseded": "prune",
    "grow": "prune",
    "anthropic_baseline": "reproductions",
    "anthropic_pass": "reproductions",
    "chroma_repro": "reproductions",
    "chunk_speed": "speed",
    "encoder_speed": "speed",
    "rerank_speed": "speed",
    "COURSE_CHUNKER": "preamble_sets",
    "corpus_and_chunks": "preamble_sets",
    "subset_documents": "preamble_sets",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = surface(__name__, _EXPORTS)
