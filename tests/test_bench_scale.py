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
    assert fake_throughput == ["1 process", "2 processes"]
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
