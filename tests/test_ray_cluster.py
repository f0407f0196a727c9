"""Ray Data's runner on a Ray cluster of two nodes on this machine (ragkit.scale.raydata): a head
(``ray start --head --num-cpus=1``) and a worker (``ray start --address=... --num-cpus=1``), the
driver joining through ``RAY_ADDRESS``. The worker declares one GPU (``--num-gpus=1``; there is
none): the encoder actors ask for one each, so they can only run on the worker node, while the
other stages' tasks run on either. The shards it writes must be the single-process run's.

Each node runs ``ray start --block`` in its own process group, so the teardown stops exactly
this cluster (SIGTERM to the process this test started, then SIGKILL to its group), even when a
test fails; ``ray stop --force`` would also kill any other Ray on the machine."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT
from ragkit.scale import (ChunkStage, EmbedStage, ShardError, ShardSet, ShardWarning,
                          build_shards, build_shards_ray)
from ragkit.scale.raydata import DOCUMENTS, STAGING
from ragkit.scale.shards import JOURNAL, MANIFEST
from ragkit.text import load_corpus
from ragkit.types import Document

# In make test: 30 s on an idle 2-core machine, about two minutes on a loaded one. One group:
# its three tests share the module's cluster, so they run on one pytest-xdist worker.
pytestmark = [pytest.mark.long, pytest.mark.xdist_group("ray-cluster")]

RAY = str(Path(sys.executable).with_name("ray"))
COLUMNS = ("row", "chunk_id", "doc_id", "start", "end", "text", "prefix", "strategy",
           "metadata", "tokens", "truncated")


def _free_ports(n: int) -> list[int]:
    """n distinct ports free now (each socket held open until all are chosen)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _own_ports(node: int) -> list[str]:
    """Every port a node listens on, its own: under ``make test`` another Ray (the local one of
    tests/test_stages.py, or a user's) may be starting workers on this machine at the same
    moment, from Ray's default worker range (10002-19999), and a port one Ray finds free can be
    taken by the other before it binds (a driver that loses that race is aborted, taking its
    pytest worker with it). So each node draws workers from a range below Linux's ephemeral
    ports (32768+) and apart from Ray's default, offset by this process's id, and the rest of
    its ports are free ones chosen here."""
    low = 20000 + (os.getpid() % 60) * 200 + node * 100
    agent, grpc, runtime, metrics, manager, objects = _free_ports(6)
    return [f"--min-worker-port={low}", f"--max-worker-port={low + 99}",
            f"--dashboard-agent-listen-port={agent}", f"--dashboard-agent-grpc-port={grpc}",
            f"--runtime-env-agent-port={runtime}", f"--metrics-export-port={metrics}",
            f"--node-manager-port={manager}", f"--object-manager-port={objects}"]


def _die_with_this_process() -> None:
    """(In the child, before exec.) SIGKILL when the test process dies, however it dies (Ray
    aborts a driver on some internal errors, and the fixture's teardown never runs); the
    node's own processes die with it (Ray's kernel fate-sharing under ``--block``)."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _start(args: list[str], env: dict, log: Path) -> subprocess.Popen:
    with open(log, "wb") as out:
        return subprocess.Popen([RAY, "start", "--block", "--num-cpus=1",
                                 "--object-store-memory=200000000", "--disable-usage-stats",
                                 *args], env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, preexec_fn=_die_with_this_process)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()  # `ray start --block` stops its own processes on SIGTERM
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # anything of this node left in its group
    except ProcessLookupError:
        pass


def _wait_started(procs: list, logs: list[Path], timeout: float = 300) -> None:
    """Until the latest node's ``ray start`` says its runtime started (the next node must not
    start before: two nodes starting at once on one machine race for the same socket names)."""
    end = time.monotonic() + timeout
    while "Ray runtime started" not in logs[len(procs) - 1].read_text(errors="replace"):
        if time.monotonic() > end or any(p.poll() is not None for p in procs):
            tails = "\n".join(log.read_text(errors="replace")[-3000:] for log in logs
                               if log.exists())
            raise RuntimeError(f"the test cluster did not start:\n{tails}")
        time.sleep(1)


@pytest.fixture(scope="module")
def cluster():
    import ray

    from ragkit.scale import connect

    ray.shutdown()
    port, = _free_ports(1)
    address = f"127.0.0.1:{port}"
    tmp = Path(tempfile.mkdtemp(prefix="rk-ray-"))  # short: Ray's socket paths have a limit
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env["RAY_raylet_start_wait_time_s"] = "120"
    procs, logs = [], [tmp / "head.log", tmp / "worker.log"]
    before = os.environ.get("RAY_ADDRESS")
    try:
        procs.append(_start(["--head", f"--port={port}", "--include-dashboard=false",
                             f"--temp-dir={tmp / 'ray'}", *_own_ports(0)], env, logs[0]))
        _wait_started(procs, logs)
        procs.append(_start([f"--address={address}", "--num-gpus=1", *_own_ports(1)], env,
                            logs[1]))
        _wait_started(procs, logs)
        os.environ["RAY_ADDRESS"] = address
        connect()  # what the pipeline calls: ray.init(address=RAY_ADDRESS), no num_cpus
        yield address
    finally:
        ray.shutdown()
        if before is None:
            os.environ.pop("RAY_ADDRESS", None)
        else:
            os.environ["RAY_ADDRESS"] = before
        for proc in reversed(procs):
            _stop(proc)
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="module")
def docs():
    # the head of each of five course documents: several chunks each, quick to embed
    return [Document(d.id, d.text[:1500], d.metadata)
            for d in load_corpus(ROOT / "data" / "corpus").documents[:5]]


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_the_driver_joined_the_cluster_at_ray_address(cluster):
    import ray

    port = cluster.rsplit(":", 1)[1]
    assert ray.get_runtime_context().gcs_address.endswith(f":{port}")  # not a Ray of its own
    alive = [n for n in ray.nodes() if n["Alive"]]
    assert len(alive) == 2 and sum(n["Resources"].get("GPU", 0) for n in alive) == 1
    assert ray.cluster_resources()["CPU"] == 2  # the nodes' own counts, none from the driver


def test_cluster_shards_are_the_single_process_shards(cluster, docs, tmp_path):
    stages = [ChunkStage("recursive:200/0", tokenizer="minilm"), EmbedStage(backend="torch")]
    single = build_shards(docs, tmp_path / "single", stages, shard_docs=2, batch_size=2)
    made = []
    by_ray = build_shards_ray(docs, tmp_path / "ray", stages, shard_docs=2, batch_size=2,
                              after_shard=made.append)
    assert sorted(made) == [0, 1, 2] and by_ray.complete
    assert sorted(p.name for p in by_ray.folder.iterdir()) == [
        MANIFEST, "shard-00000.parquet", "shard-00001.parquet", "shard-00002.parquet"]
    assert by_ray.manifest["settings"] == single.manifest["settings"]
    assert [{k: v for k, v in e.items() if k != "sha256"} for e in by_ray.manifest["shards"]] \
        == [{k: v for k, v in e.items() if k != "sha256"} for e in single.manifest["shards"]]
    for col in COLUMNS:  # the same chunks, ids, row numbers, token counts
        assert by_ray.column(col) == single.column(col), col
    a, b = single.vectors(), by_ray.vectors()
    assert a.shape == b.shape == (len(single), 384)
    np.testing.assert_allclose(b, a, atol=1e-5, rtol=0)  # float rounding, batch composition


def test_a_killed_cluster_job_reruns_only_the_missing_shards(cluster, tmp_path):
    docs = [Document(f"d{i:03d}", f"Document {i}. " + "Some words about refunds. " * 8)
            for i in range(6)]
    stages = [ChunkStage("fixed_chars:60/0")]
    whole = build_shards(docs, tmp_path / "whole", stages, shard_docs=1)

    class Killed(RuntimeError):
        pass

    recorded = []

    def kill_after_two(k):
        recorded.append(k)
        if len(recorded) == 2:
            raise Killed
    folder = tmp_path / "s"
    with pytest.raises(Killed):
        build_shards_ray(docs, folder, stages, shard_docs=1, after_shard=kill_after_two)
    partial = ShardSet(folder)
    assert not partial.complete and len(partial.shards) == 2
    assert sorted(int(p.stem[-5:]) for p in partial.shards) == sorted(recorded)
    kept, damaged = partial.shards  # one left alone, one whose bytes change on disk
    stat = kept.stat()
    data = bytearray(damaged.read_bytes())
    data[len(data) // 2] ^= 0x01
    damaged.write_bytes(bytes(data))
    with pytest.raises(ShardError, match=rf"{damaged.name}: its sha256 is .* not the"):
        ShardSet(folder).column("text")

    made = []
    with pytest.warns(ShardWarning, match=damaged.name):
        resumed = build_shards_ray(docs, folder, stages, shard_docs=1, after_shard=made.append)
    assert sorted(made) == sorted(set(range(6)) - {int(kept.stem[-5:])})
    assert (kept.stat().st_ino, kept.stat().st_mtime_ns) == (stat.st_ino, stat.st_mtime_ns)
    assert resumed.complete and not (folder / JOURNAL).exists()
    assert not (folder / DOCUMENTS).exists() and not (folder / STAGING).exists()
    assert _files(folder) == _files(whole.folder)  # chunk-only shards: byte-identical
