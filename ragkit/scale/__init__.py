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
- `ondisk`: an IVF index whose lists stay on disk (faiss `OnDiskInvertedLists`), built in
  blocks, searched in a fresh process that reports its memory;
- `static`: a million vectors of real text on two CPUs: MiniLM's input word embeddings averaged
  over sliding windows of the benchmark corpora (`StaticEmbedder`);
- `ann`: exact, IVF-Flat, HNSW and IVF-PQ swept on one set of vectors: recall@10, latency,
  memory, build time, and the rule that picks a default (`choose_index`).

Names load on first use (`ragkit._lazy`).
"""

from .._lazy import surface

_EXPORTS = {
    "ChunkStage": "stages",
    "EmbedStage": "stages",
    "LateEmbedStage": "stages",
    "build_shards_ray": "raydata",
    "connect": "raydata",
    "run_ray": "raydata",
    "Stage": "batches",
    "batch_to_chunks": "batches",
    "documents_to_batch": "batches",
    "run_datasets": "batches",
    "run_local": "batches",
    "ShardError": "shards",
    "ShardSet": "shards",
    "ShardWarning": "shards",
    "build_shards": "shards",
    "write_row_shards": "shards",
    "ScaledIndex": "index",
    "build_peak_memory": "measure",
    "fit_cost": "measure",
    "index_sweep": "measure",
    "repeat_corpus": "measure",
    "runner_reading": "measure",
    "sweep_reading": "measure",
    "synthetic_vectors": "measure",
    "throughput": "measure",
    "StaticEmbedder": "static",
    "choose_index": "ann",
    "neighbour_structure": "ann",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = surface(__name__, _EXPORTS)
