"""Ray Data's runner in parts, without starting Ray (ragkit.scale.raydata): how it joins a
cluster or starts a Ray, the options of the encoder actors by device, the row tags that carry
each chunk's shard and place through the stages, and the task that turns a shard's staged rows
into the single-process shard file. The runner as a whole: tests/test_ray_cluster.py (a
two-node cluster) and tests/test_stages.py (a Ray started here)."""

import random
import sys
import types

import numpy as np
import pyarrow.parquet as pq
import pytest

from ragkit.scale import ChunkStage, build_shards
from ragkit.scale import raydata
from ragkit.scale.raydata import DOC, SEQ, SHARD, actor_options, connect
from ragkit.types import Document


@pytest.fixture
def fake_ray(monkeypatch):
    """A `ray` module that records how it was initialised."""
    calls = []
    ray = types.ModuleType("ray")
    ray.is_initialized = lambda: bool(calls)
    ray.init = lambda **kw: calls.append(kw)
    ray.data = types.ModuleType("ray.data")
    monkeypatch.setitem(sys.modules, "ray", ray)
    monkeypatch.setitem(sys.modules, "ray.data", ray.data)
    return calls


def test_connect_joins_the_cluster_at_ray_address_without_resources(fake_ray, monkeypatch):
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.5:6379")
    connect(num_cpus=3)
    assert len(fake_ray) == 1 and fake_ray[0]["address"] == "10.0.0.5:6379"
    assert "num_cpus" not in fake_ray[0] and "include_dashboard" not in fake_ray[0]
    connect(num_cpus=3)  # already initialised: nothing more
    assert len(fake_ray) == 1


def test_connect_without_ray_address_starts_a_ray_of_its_own(fake_ray, monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    connect(num_cpus=3)
    assert fake_ray[0]["address"] == "local" and fake_ray[0]["num_cpus"] == 3


def test_without_ray_the_error_names_the_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ImportError, match=r"make setup, or pip install -e '\.\[scale\]'"):
        connect()


def test_encoder_actors_ask_for_a_gpu_each_when_the_cluster_has_gpus():
    assert actor_options(8, None, 64) == {"num_gpus": 1, "concurrency": 8, "batch_size": 1024}
    assert actor_options(8, 2, 4096)["batch_size"] == 4096
    cpu = actor_options(0, 3, 64)
    assert "num_gpus" not in cpu and cpu == {"num_cpus": 1, "concurrency": 3, "batch_size": 64}


def test_chunk_rows_keep_their_shard_and_place_through_the_stages():
    docs = {"doc_id": np.array(["a", "b", "a", "c"], object),  # "a" twice, in two shards
            "text": np.array(["x" * 25, "", "y" * 12, "z" * 5], object),
            "metadata": np.array(["{}"] * 4, object),
            SHARD: np.array([0, 0, 1, 1]), DOC: np.array([0, 1, 0, 1])}
    chunks = raydata._tagged(docs, ChunkStage("fixed_chars:10/0")).to_pydict()
    assert chunks["doc_id"] == ["a", "a", "a", "a", "a", "c"]  # "b" has no chunk
    assert list(zip(chunks[SHARD], chunks[DOC], chunks[SEQ])) == [
        (0, 0, 0), (0, 0, 1), (0, 0, 2), (1, 0, 0), (1, 0, 1), (1, 1, 0)]

    class Same:  # a chunks -> chunks stage (as embedding is): the tags carry over
        def __call__(self, batch):
            return {**{k: list(v) for k, v in batch.items()}, "vector": np.eye(6, 3)}

    batch = {k: np.asarray(v) for k, v in chunks.items()}
    out = raydata._tagged(batch, Same()).to_pydict()
    assert [out[t] for t in (SHARD, DOC, SEQ)] == [chunks[t] for t in (SHARD, DOC, SEQ)]
    assert out["vector"][1] == [0.0, 1.0, 0.0]


def test_a_shard_from_rows_staged_in_any_order_is_the_single_process_shard(tmp_path):
    docs = [Document(f"d{i}", f"Document {i}. " + "Some words about refunds. " * (3 + i))
            for i in range(4)]
    stages = [ChunkStage("fixed_chars:40/0")]
    single = build_shards(docs, tmp_path / "single", stages, shard_docs=4)
    batch = {"doc_id": np.array([d.id for d in docs], object),
             "text": np.array([d.text for d in docs], object),
             "metadata": np.array(["{}"] * 4, object),
             SHARD: np.zeros(4, int), DOC: np.arange(4)}
    staged = raydata._tagged(batch, stages[0])
    order = list(range(staged.num_rows))
    random.Random(3).shuffle(order)  # Ray returns rows in any order, in several files
    (tmp_path / "staged").mkdir()
    files = []
    for i, part in enumerate((order[:5], order[5:])):
        files.append(str(tmp_path / "staged" / f"{i}.parquet"))
        pq.write_table(staged.take(part), files[-1])
    entry = raydata._finish_shard(files, str(tmp_path / "shard-00000.parquet"), 0,
                                  {"docs": 4, "docs_sha256": "x", "chars": 0})
    assert (tmp_path / "shard-00000.parquet").read_bytes() == single.shards[0].read_bytes()
    assert entry["sha256"] == single.manifest["shards"][0]["sha256"]
    assert entry["rows"] == len(single) and entry["first_row"] == 0


def test_the_ray_runner_stops_the_ray_it_started_and_only_that(fake_ray, monkeypatch):
    """`throughput`'s Ray runner stops a Ray it started (left to the interpreter's exit, a
    notebook kernel is killed by SIGTERM mid-shutdown and Ray prints a stack dump), and leaves
    a Ray that was up before it alone."""
    from ragkit.scale import measure
    from ragkit.scale.batches import run_local

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    stops = []
    sys.modules["ray"].shutdown = lambda: (stops.append(1), fake_ray.clear())

    def run_ray(stages, docs, concurrency, batch_size):
        connect(num_cpus=concurrency + 1)  # starts (the fake) Ray, as the real runner does
        return run_local(stages, docs, batch_size=batch_size)

    monkeypatch.setattr(raydata, "run_ray", run_ray)
    docs = [Document("a", "Refunds are paid within ten days of the request. " * 6)]
    rates, _ = measure.throughput(docs, runners=("1 process", "ray 2 actors"))
    assert rates["ray 2 actors"]["same_chunks_as_first"] == 1.0 and rates["ray 2 actors"]["chunks"]
    assert stops == [1] and not fake_ray  # started by the runner: stopped

    connect()  # a Ray the caller started before
    measure.throughput(docs, runners=("ray 2 actors",))
    assert stops == [1] and len(fake_ray) == 1  # left up


def test_the_ray_runner_times_its_start_and_a_one_document_job_apart(fake_ray, monkeypatch):
    """Ray's row carries ``init_seconds`` (ray.init), ``job_seconds`` (the whole job, first),
    then ``one_doc_job_seconds`` (a job over the first document only) and
    ``warm_job_seconds`` (the whole job again)."""
    from ragkit.scale import measure
    from ragkit.scale.batches import run_local

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    started = []
    sys.modules["ray"].shutdown = lambda: (started.extend(fake_ray), fake_ray.clear())
    jobs = []

    def run_ray(stages, docs, concurrency, batch_size):
        jobs.append([d.id for d in docs])
        return run_local(stages, docs, batch_size=batch_size)

    monkeypatch.setattr(raydata, "run_ray", run_ray)
    docs = [Document(i, "Refunds are paid within ten days of the request. " * 6) for i in "abc"]
    rates, _ = measure.throughput(docs, runners=("ray 2 actors",))
    r = rates["ray 2 actors"]
    assert jobs == [["a", "b", "c"], ["a"], ["a", "b", "c"]]  # cold, one document, warm
    assert started[0]["num_cpus"] == 3 and not fake_ray
    assert 0 <= r["init_seconds"] and 0 < r["job_seconds"] and 0 < r["one_doc_job_seconds"]
    assert 0 < r["warm_job_seconds"]
    assert r["init_seconds"] + r["job_seconds"] <= r["seconds"]
