"""`ragkit bench scale` without its extras: Ray missing is one line naming the install command
and exit status 3 before any work (``--no-ray`` runs the rest); nothing runnable is exit status
3, not a traceback."""

import sys

import numpy as np
import pytest

from ragkit.tools import bench_scale


@pytest.fixture
def fake_throughput(monkeypatch):
    """The runners the bench asks for, recorded; a Ray runner imports ray as the real one does."""
    asked = []

    def throughput(docs, chunker, runners, **kw):
        asked.extend(runners)
        for r in runners:
            if r.startswith("ray"):
                import ray  # noqa: F401 - what run_ray does first
        rates = {r: {"seconds": 1.0, "chars_per_s": 1.0, "chunks_per_s": 1.0,
                     "tokens_per_s": 1.0, "chunks": 3.0, "tokens": 9.0,
                     "same_chunks_as_first": 1.0} for r in runners}
        return rates, np.eye(3, 8, dtype=np.float32)

    monkeypatch.setattr("ragkit.scale.measure.throughput", throughput)
    return asked


def test_without_ray_the_bench_says_what_is_missing_in_one_line_and_exits_3(
        tmp_path, monkeypatch, capsys, fake_throughput):
    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(tmp_path))
    monkeypatch.setitem(sys.modules, "ray", None)    # import ray -> ImportError
    with pytest.raises(SystemExit) as e:
        bench_scale.main(["--copies", "1"])
    assert e.value.code == 3 and fake_throughput == []  # before any work
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "Ray is not installed" in err and "make setup" in err \
        and "pip install -e '.[scale]'" in err and "--no-ray" in err
    assert "pip install 'ragkit[scale]'" not in err


def test_no_ray_runs_the_rest_without_ray(tmp_path, monkeypatch, capsys, fake_throughput):
    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(tmp_path))
    monkeypatch.setitem(sys.modules, "ray", None)
    monkeypatch.setitem(sys.modules, "faiss", None)  # and no index sweep either, to stay quick
    assert bench_scale.main(["--copies", "1", "--no-ray"]) == 0
    assert fake_throughput == ["1 process", "1 process, all threads", "2 processes"]
    assert "Traceback" not in capsys.readouterr().err
    assert (tmp_path / "bench_scale.jsonl").exists()


def test_nothing_runnable_exits_3_with_one_line_each(tmp_path, monkeypatch, capsys,
                                                     fake_throughput):
    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(tmp_path))
    for name in ("ray", "faiss", "sentence_transformers"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(SystemExit) as e:
        bench_scale.main(["--copies", "1", "--no-ray"])
    assert e.value.code == 3 and fake_throughput == []
    err = capsys.readouterr().err
    assert "sentence-transformers is not installed" in err and "Traceback" not in err


def test_two_workers_are_set_against_one_process_with_every_thread(tmp_path, monkeypatch,
                                                                   capsys):
    """The speed-up a second worker brings is read against one process whose encoder has every
    thread, not only against the one-thread process; --no-sweep keeps the saved sweep rows."""
    import json

    seconds = {"1 process": 40.0, "1 process, all threads": 25.0, "2 processes": 22.0}

    def throughput(docs, chunker, runners, **kw):
        return ({r: {"seconds": seconds[r], "chars_per_s": 1.0 / seconds[r],
                     "chunks_per_s": 1.0, "tokens_per_s": 1.0, "chunks": 3.0, "tokens": 9.0,
                     "same_chunks_as_first": 1.0} for r in runners},
                np.eye(3, 8, dtype=np.float32))

    monkeypatch.setattr("ragkit.scale.measure.throughput", throughput)
    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(tmp_path))
    saved = {"experiment": "index_sweep", "metric": "recall@10_vs_exact", "value": 1.0,
             "notebook": "bench_scale", "benchmark": "synthetic_10", "strategy": "ivf_flat"}
    (tmp_path / "bench_scale.jsonl").write_text(json.dumps(saved) + "\n")
    monkeypatch.setitem(sys.modules, "ray", None)
    assert bench_scale.main(["--copies", "1", "--no-ray", "--no-sweep"]) == 0
    out = capsys.readouterr().out
    assert "one process with every thread: 1.14x (faster" in out
    rows = [json.loads(line) for line in (tmp_path / "bench_scale.jsonl").read_text()
            .splitlines()]
    got = {(r["strategy"], r["metric"]): r["value"] for r in rows
           if r.get("experiment") == "throughput"}
    assert got[("2 processes", "speedup_vs_one")] == pytest.approx(40 / 22)
    assert got[("2 processes", "speedup_vs_all_threads")] == pytest.approx(25 / 22)
    assert got[("1 process, all threads", "speedup_vs_all_threads")] == pytest.approx(1.0)
    assert any(r.get("experiment") == "index_sweep" for r in rows), "sweep rows kept"
    params = next(r["params"] for r in rows if r.get("strategy") == "1 process, all threads")
    assert params["threads_per_worker"] == params["cpus"] and "load_average" in params
