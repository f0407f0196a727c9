"""Ray Data's runner: the stages on a Ray cluster (or a Ray started here), Parquet shards in and
Parquet shards out, no chunk row passing through the driver.

`connect` joins the cluster ``RAY_ADDRESS`` names (``ray.init(address=...)``: the cluster's
resources are its own, so no CPU count is passed), or starts Ray on this machine with
``num_cpus`` when the variable is unset.

`build_shards_ray` writes the same folder as `ragkit.scale.shards.build_shards` (shard k holds
the chunks of documents ``k * shard_docs`` to ``(k + 1) * shard_docs - 1``, the same manifest,
journal and settings, so either runner resumes the other's folder):

1. the driver streams the documents, one shard at a time, into ``FOLDER/.ray-documents`` as
   Parquet (``doc_id``, ``text``, ``metadata``, with the shard and the position of each
   document in it), skipping shards the manifest or its journal already records (their
   documents must hash as recorded; a recorded shard whose file is missing or changed is made
   again, with a `ShardWarning`);
2. Ray Data reads them (``ray.data.read_parquet``) and runs the stages: a stage that holds an
   encoder as a pool of actors, each with ``num_gpus=1`` when the cluster has GPUs (as many
   actors as GPUs, ``GPU_ROWS`` rows a batch and ``GPU_ENCODER_BATCH`` texts an encoder
   batch), else ``concurrency`` CPU actors and ``batch_size`` rows; the others as tasks. The
   chunk rows are written by the workers, partitioned by shard, to ``FOLDER/.ray-staging``
   (``Dataset.write_parquet``);
3. one Ray task per shard reads its staged rows, puts them in the single-process order
   (document, then chunk), numbers them from the shard's first row (the counts before it come
   from the Parquet footers) and writes ``shard-0000k.parquet`` with the same writer; the
   driver appends the entry each task returns (counts, sha256) to the journal as it arrives.
   A job killed at any point re-runs only the shards the journal does not hold.

FOLDER must be at the same path on every node (a shared filesystem); on one machine it is.

The output is the single-process run's: the same chunk rows, ids, row numbers and manifest
entries (but ``sha256``); the vectors agree to float rounding (``atol=1e-5``: an encoder's
vector for a text moves by ~1e-7 with the other texts of its padded batch, and Ray's batches
are not the single-process ones), so shard files with vectors differ in their bytes, and
chunk-only shards do not.

`run_ray` is the convenience for a small corpus in memory: `build_shards_ray` into a temporary
folder, and the rows read back (what `ragkit.scale.throughput` times). Ray is installed by
``make setup`` (or ``pip install -e '.[scale]'`` in the ragkit folder).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from ..types import Document
from .batches import Stage, _column, documents_to_batch
from .shards import (ShardSet, _append_entry, _batches, docs_digest, finish_folder, open_folder,
                     shard_name, stage_settings, still_good, vector_block, write_shard)
from .stages import EmbedStage, LateEmbedStage

INSTALL = "make setup, or pip install -e '.[scale]' in the ragkit folder"
DOCUMENTS, STAGING = ".ray-documents", ".ray-staging"
SHARD, DOC, SEQ = "ragkit_shard", "ragkit_doc", "ragkit_seq"  # where each row comes from
TAGS = (SHARD, DOC, SEQ)
GPU_ROWS, GPU_ENCODER_BATCH = 1024, 256
_TYPES = {"chunk_id": "string", "doc_id": "string", "text": "string", "prefix": "string",
          "strategy": "string", "metadata": "string", "start": "int64", "end": "int64",
          "tokens": "int64", "truncated": "bool", SHARD: "int64", DOC: "int64", SEQ: "int64"}


def _ray() -> Any:
    try:
        import ray
        import ray.data  # noqa: F401 - the extra, not only the core
    except ImportError as e:
        raise ImportError(f"Ray Data is not installed: {INSTALL}") from e
    return ray


def connect(num_cpus: int | None = None, runtime_env: dict[str, Any] | None = None) -> Any:
    """The `ray` module, initialised: already, or on the cluster at ``RAY_ADDRESS`` (no
    resources passed: a cluster has its own), or a new Ray started here with `num_cpus`
    logical CPUs (``address="local"``: not another ``ray start`` instance of this machine).
    `runtime_env` goes to ``ray.init`` (e.g. ``{"py_modules": [ragkit]}`` to ship this code
    to nodes that lack it)."""
    ray = _ray()
    if ray.is_initialized():
        return ray
    os.environ.setdefault("RAY_raylet_start_wait_time_s", "120")  # a loaded machine is slow
    kw: dict[str, Any] = {"log_to_driver": False, "configure_logging": False,
                          "runtime_env": runtime_env}
    address = os.environ.get("RAY_ADDRESS")
    if address:
        ray.init(address=address, **kw)
    else:
        ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, **kw)
    return ray


def holds_encoder(stage: Stage) -> bool:
    return isinstance(stage, (EmbedStage, LateEmbedStage))


def actor_options(gpus: float, concurrency: int | None, batch_size: int) -> dict[str, Any]:
    """``map_batches`` options of a stage that holds an encoder, chosen by device.

    >>> actor_options(4, None, 64)
    {'num_gpus': 1, 'concurrency': 4, 'batch_size': 1024}
    >>> actor_options(0, 2, 64)
    {'num_cpus': 1, 'concurrency': 2, 'batch_size': 64}
    """
    if gpus >= 1:
        return {"num_gpus": 1, "concurrency": concurrency or int(gpus),
                "batch_size": max(batch_size, GPU_ROWS)}
    return {"num_cpus": 1, "concurrency": concurrency or 2, "batch_size": batch_size}


def _segments(doc_ids: list) -> list[tuple[int, int]]:
    """Runs of a batch's documents with no id twice in one run (one run, but for a corpus
    whose ids repeat), so each chunk's document is known by its id."""
    out, seen, lo = [], set(), 0
    for i, d in enumerate(doc_ids):
        if d in seen:
            out.append((lo, i))
            seen, lo = set(), i
        seen.add(d)
    return out + [(lo, len(doc_ids))]


def _chunk_tags(doc_ids: list, tags: Mapping[str, np.ndarray], chunk_docs: list
                ) -> dict[str, list[int]]:
    """Each chunk row's shard, document position and place among its document's chunks, for a
    stage that turns documents (`doc_ids`, each once) into chunks."""
    where = {d: i for i, d in enumerate(doc_ids)}
    out: dict[str, list[int]] = {SHARD: [], DOC: [], SEQ: []}
    seen: dict[int, int] = {}
    for d in chunk_docs:
        i = where[d]
        out[SHARD].append(int(tags[SHARD][i]))
        out[DOC].append(int(tags[DOC][i]))
        out[SEQ].append(seen.get(i, 0))
        seen[i] = out[SEQ][-1] + 1
    return out


def _arrow(cols: Mapping[str, Any]) -> Any:
    """A batch as a pyarrow Table: the vectors a fixed-size list of float32."""
    import pyarrow as pa

    out = {}
    for name, values in cols.items():
        if name == "vector":
            v = np.asarray(values, np.float32)
            if v.ndim != 2:  # no rows, or rows of lists
                v = v.reshape(len(v), -1) if v.size else np.zeros((len(v), 0), np.float32)
            out[name] = pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), v.shape[1])
        else:
            out[name] = pa.array(_column(cols, name), _type(name))
    return pa.table(out)


def _type(name: str) -> Any:
    import pyarrow as pa

    return pa.type_for_alias(_TYPES[name]) if name in _TYPES else None


def _tagged(batch: Mapping[str, Any], stage: Stage) -> Any:
    """`stage` over a Ray batch, the rows keeping where they come from (``TAGS``)."""
    import pyarrow as pa

    plain = {k: v for k, v in batch.items() if k not in TAGS}
    if "chunk_id" in plain:  # chunks -> the same chunks (embedding): the tags carry over
        out = dict(stage(plain))
        if len(out.get("chunk_id", [])) != len(plain["chunk_id"]):
            raise ValueError(f"{type(stage).__name__} changed the number of chunk rows")
        return _arrow({**out, **{t: np.asarray(batch[t]).tolist() for t in TAGS}})
    ids, parts = _column(plain, "doc_id"), []
    for lo, hi in _segments(ids):  # documents -> chunks
        out = dict(stage({k: v[lo:hi] for k, v in plain.items()}))
        tags = _chunk_tags(ids[lo:hi], {t: np.asarray(batch[t])[lo:hi] for t in (SHARD, DOC)},
                           _column(out, "doc_id") if out else [])
        parts.append(_arrow({**out, **tags}))
    full = [t for t in parts if t.num_rows]
    return pa.concat_tables(full) if full else parts[0]


class _Actor:
    """A Ray Data actor holding one stage (its encoder loaded once per actor; on a GPU, with
    GPU-sized encoder batches)."""

    def __init__(self, stage: Stage):
        self.stage = stage
        if isinstance(stage, EmbedStage) and _cuda():
            stage.batch_size = max(stage.batch_size, GPU_ENCODER_BATCH)

    def __call__(self, batch: Mapping[str, Any]) -> Any:
        return _tagged(batch, self.stage)


def _cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def _plan(docs: Iterable[Document], folder: Path, done: dict[str, dict], shard_docs: int
          ) -> tuple[list[str], dict[int, dict[str, Any]]]:
    """(every shard's name in order, {k: entry info} of the shards to make), the documents
    of those written to ``FOLDER/.ray-documents``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    inputs = folder / DOCUMENTS
    shutil.rmtree(inputs, ignore_errors=True)
    inputs.mkdir()
    order, todo = [], {}
    for k, batch in enumerate(_batches(docs, shard_docs)):
        name, digest = shard_name(k), docs_digest(batch)
        order.append(name)
        if name in done and still_good(folder, done[name], k, digest):
            continue
        done.pop(name, None)
        cols = {**documents_to_batch(batch), SHARD: [k] * len(batch), DOC: range(len(batch))}
        pq.write_table(pa.table({c: pa.array(list(v), _type(c)) for c, v in cols.items()}),
                       inputs / f"docs-{k:05d}.parquet")
        todo[k] = {"docs": len(batch), "docs_sha256": digest,
                   "chars": sum(len(d.text) for d in batch)}
    return order, todo


def _run_stages(ray: Any, files: list[str], stages: Sequence[Stage], out: Path,
                concurrency: int | None, batch_size: int, progress: bool) -> None:
    """Ray Data: documents read from `files`, `stages` run, chunk rows written to `out`
    partitioned by shard, all on the workers."""
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = progress
    if not progress:
        logging.getLogger("ray.data").setLevel(logging.WARNING)
    gpus = ray.cluster_resources().get("GPU", 0)
    ds = ray.data.read_parquet(files)
    for stage in stages:
        if holds_encoder(stage):
            ds = ds.map_batches(_Actor, fn_constructor_args=(stage,), batch_format="numpy",
                                **actor_options(gpus, concurrency, batch_size))
        else:
            ds = ds.map_batches(_tagged, fn_args=(stage,), batch_size=batch_size,
                                batch_format="numpy")
    ds.write_parquet(str(out), partition_cols=[SHARD])


def _staged(out: Path, k: int) -> list[Path]:
    return sorted((out / f"{SHARD}={k}").glob("*.parquet"))


def _finish_shard(files: list[str], path: str, first_row: int, info: dict[str, Any]
                  ) -> dict[str, Any]:
    """(A Ray task.) One shard's staged rows in the single-process order, numbered from
    `first_row`, written as the shard file; its manifest entry."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows: dict[str, Any] = {}
    if files:
        table = pa.concat_tables([pq.read_table(f) for f in files], promote_options="default")
        table = table.take(np.lexsort((table.column(SEQ).to_numpy(),
                                       table.column(DOC).to_numpy())))
        rows = {c: table.column(c).to_pylist() for c in table.column_names
                if c not in TAGS and c != "vector"}
        if "vector" in table.column_names:
            rows["vector"] = vector_block(table)
    return write_shard(rows, Path(path), first_row, **info)


def _record(ray: Any, jobs: dict[Any, int], folder: Path, done: dict[str, dict],
            after_shard: Callable[[int], None] | None) -> None:
    """Journal each shard's entry as its task returns. When one fails (or `after_shard`
    raises), the others are waited for, not recorded: the next run makes them again, and no
    task of this run is still writing then. (Not ``ray.cancel``: cancelling a task as it
    finishes can abort the driver in Ray 2.47, "Tried to complete task that was not
    pending".)"""
    try:
        while jobs:
            ready, _ = ray.wait(list(jobs), num_returns=1)
            k = jobs.pop(ready[0])
            entry = ray.get(ready[0])
            _append_entry(folder, entry)
            done[entry["name"]] = entry
            if after_shard is not None:
                after_shard(k)
    finally:
        if jobs:
            ray.wait(list(jobs), num_returns=len(jobs), timeout=600)


def build_shards_ray(docs: Iterable[Document], folder: str | Path, stages: Sequence[Stage], *,
                     shard_docs: int = 1000, batch_size: int = 64,
                     concurrency: int | None = None, num_cpus: int | None = None,
                     runtime_env: dict[str, Any] | None = None, progress: bool = False,
                     after_shard: Callable[[int], None] | None = None) -> ShardSet:
    """`stages` over `docs` into shards in `folder` under Ray Data (see the module docstring),
    resuming what a run of either runner with the same settings recorded. `concurrency`:
    encoder actors (default: one a GPU, or 2); `num_cpus`: for a Ray started here (default
    ``concurrency + 1``: the actors and the other stages' tasks). `after_shard(k)` is called
    as each shard made by this run is recorded (in the order they finish)."""
    folder = Path(folder)
    man, done = open_folder(folder, stage_settings(stages, shard_docs, batch_size))
    order, todo = _plan(docs, folder, done, shard_docs)
    staging = folder / STAGING
    shutil.rmtree(staging, ignore_errors=True)
    if todo:
        ray = connect(num_cpus or (concurrency or 2) + 1, runtime_env)
        files = [str(folder / DOCUMENTS / f"docs-{k:05d}.parquet") for k in sorted(todo)]
        _run_stages(ray, files, stages, staging, concurrency, batch_size, progress)
        import pyarrow.parquet as pq

        finish = ray.remote(num_cpus=1)(_finish_shard)
        jobs, next_row = {}, 0
        for k, name in enumerate(order):
            if k in todo:
                staged = _staged(staging, k)
                ref = finish.remote([str(f) for f in staged], str(folder / name), next_row,
                                    todo[k])
                jobs[ref] = k
                next_row += sum(pq.read_metadata(f).num_rows for f in staged)
            else:
                next_row = done[name]["first_row"] + done[name]["rows"]
        _record(ray, jobs, folder, done, after_shard)
    finish_folder(folder, man, [done[name] for name in order])
    shutil.rmtree(staging, ignore_errors=True)
    shutil.rmtree(folder / DOCUMENTS, ignore_errors=True)
    return ShardSet(folder)


def shard_rows(shards: ShardSet) -> dict[str, Any]:
    """Every row of a (small) shard folder in this process, as a stage chain's output: the
    columns of the chunk batches, ``vector`` stacked (``tokens`` and ``truncated`` only with
    vectors, as the stages give them)."""
    import pyarrow as pa

    tables = list(shards.tables())
    if not tables or not sum(t.num_rows for t in tables):
        return {}
    table = pa.concat_tables(tables)
    keep = [c for c in table.column_names if c != "row" and (
        "vector" in table.column_names or c not in ("tokens", "truncated", "vector"))]
    out = {c: table.column(c).to_pylist() for c in keep if c != "vector"}
    if "vector" in keep:
        out["vector"] = shards.vectors()
    return out


def run_ray(stages: Sequence[Stage], docs: Iterable[Document], concurrency: int = 2,
            batch_size: int = 64, folder: str | Path | None = None) -> dict[str, Any]:
    """The stages under Ray Data (`build_shards_ray`), the rows read back here in document
    order: for a small corpus in memory (comparisons, `ragkit.scale.throughput`). The shards
    go to a temporary folder unless `folder` is given (on a multi-node cluster, give one that
    every node sees). Needs Ray: ``make setup`` (or ``pip install -e '.[scale]'`` in the
    ragkit folder)."""
    docs = list(docs)
    shard_docs = max(1, -(-len(docs) // (2 * max(concurrency, 1))))  # a few shards an actor
    if folder is not None:
        return shard_rows(build_shards_ray(docs, folder, stages, shard_docs=shard_docs,
                                           batch_size=batch_size, concurrency=concurrency))
    with tempfile.TemporaryDirectory(prefix="ragkit-ray-") as tmp:
        return shard_rows(build_shards_ray(docs, Path(tmp) / "shards", stages,
                                           shard_docs=shard_docs, batch_size=batch_size,
                                           concurrency=concurrency))
