"""Scale: the same pipeline over corpora too big for one process's memory.

- `stages`: the stages as functions over column batches, run in this process, under
  ``datasets.map`` or Ray Data (`ChunkStage`, `EmbedStage`, `run_local`, `run_ray`);
- `shards`: chunks and vectors on disk as numbered Parquet shards, a crash costing one shard
  (`build_shards`, `ShardSet`);
- `index`: approximate faiss indexes built from shards, the metadata pre-filter kept
  (`ScaledIndex`);
- `measure`: throughput per runner, an index sweep, build memory and cost against corpus size.

Names load on first use (`ragkit._lazy`).
"""

from .._lazy import surface

_EXPORTS = {
    "ChunkStage": "stages",
    "EmbedStage": "stages",
    "LateEmbedStage": "stages",
    "batch_to_chunks": "stages",
    "documents_to_batch": "stages",
    "run_datasets": "stages",
    "run_local": "stages",
    "run_ray": "stages",
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
    "sweep_reading": "measure",
    "synthetic_vectors": "measure",
    "throughput": "measure",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = surface(__name__, _EXPORTS)
