"""Scale: the same pipeline over corpora too big for one process's memory.

- `batches`: the column batches the stages and the shards share, and the runners of a chain of
  stages in this process or under ``datasets.map`` (`Stage`, `run_local`, `run_datasets`);
- `stages`: the pipeline's stages as functions over batches (`ChunkStage`, `EmbedStage`);
- `shards`: chunks and vectors on disk as numbered Parquet shards, a crash costing one shard
  (`build_shards`, `ShardSet`);
- `raydata`: the same shards made by Ray Data on a cluster, Parquet in and out, no row through
  the driver (`build_shards_ray`, `connect`; `run_ray` for a small corpus in memory);
- `index`: approximate faiss indexes built from shards, the metadata pre-filter kept
  (`ScaledIndex`);
- `measure`: throughput per runner, an index sweep, build memory and cost against corpus size;
- `resume`: a shard job killed partway and run again, compared with an uninterrupted run
  (`kill_and_resume`);
- `ondisk`: an IVF index whose lists stay on disk (faiss `OnDiskInvertedLists`), built in
  blocks, searched in a fresh process that reports its memory;
- `static`: a million vectors of real text on two CPUs: MiniLM's input word embeddings averaged
  over sliding windows of the benchmark corpora (`StaticEmbedder`);
- `ann`: exact, IVF-Flat, HNSW and IVF-PQ swept on one set of vectors: recall@10, latency,
  memory, build time, and the rule that picks a default (`choose_index`).

Names load on first use (`ragkit._lazy`).
"""

from .._lazy import surface

_EXPORTS = {  # submodule -> the names it gives this package
    "stages": ("ChunkStage", "EmbedStage", "LateEmbedStage"),
    "raydata": ("build_shards_ray", "connect", "run_ray"),
    "batches": ("Stage", "batch_to_chunks", "documents_to_batch", "run_datasets", "run_local"),
    "shards": ("ShardError", "ShardSet", "ShardWarning", "build_shards", "write_row_shards"),
    "index": ("ScaledIndex",),
    "measure": ("build_peak_memory", "fit_cost", "fit_cost_interval", "index_sweep",
                "ray_reading", "repeat_corpus", "runner_reading", "sweep_reading",
                "synthetic_vectors", "throughput"),
    "resume": ("kill_and_resume", "resume_reading"),
    "static": ("StaticEmbedder",),
    "ann": ("choose_index", "neighbour_structure"),
}
__all__, __getattr__, __dir__ = surface(__name__, _EXPORTS)
