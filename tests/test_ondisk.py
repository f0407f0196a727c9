"""The on-disk IVF index (`ragkit.scale.ondisk`) and `ragkit bench ondisk`: built in blocks and
merged on disk, it answers as the same index in memory does; the streamed exact top-k is exact
search; the searching process reports its memory."""

import json

import numpy as np
import pytest

faiss = pytest.importorskip("faiss")

from ragkit.scale.ondisk import (RunningTopK, build_ondisk, exact_top_k, memory_mib,  # noqa: E402
                                 open_ondisk, search_in_fresh_process, train_ivf)


def unit(n, d, seed):
    x = np.random.default_rng(seed).normal(size=(n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def vectors():
    return unit(6_000, 24, 0)


@pytest.fixture(scope="module")
def built(vectors, tmp_path_factory):
    folder = tmp_path_factory.mktemp("ondisk") / "ix"
    info = build_ondisk(train_ivf(vectors[::3], 32), (vectors[i:i + 2_500]
                                                      for i in range(0, len(vectors), 2_500)),
                        folder)
    return folder, info


def test_the_on_disk_index_answers_as_the_same_index_in_memory(vectors, built):
    folder, info = built
    assert info["n"] == len(vectors) and info["blocks"] == 3 and info["nlist"] == 32
    assert not list(folder.glob("block_*")), "the block files are removed after the merge"
    assert info["lists_bytes"] >= len(vectors) * 24 * 4  # every vector is in the lists file
    memory = train_ivf(vectors[::3], 32)
    memory.add(vectors)
    disk = open_ondisk(folder)
    queries = unit(40, 24, 1)
    for nprobe in (1, 4, 32):
        params = faiss.SearchParametersIVF(nprobe=nprobe)
        d_s, d_i = disk.search(queries, 10, params=params)
        m_s, m_i = memory.search(queries, 10, params=params)
        assert np.array_equal(d_i, m_i)
        assert np.allclose(d_s, m_s)


def test_the_folder_may_move_the_lists_are_found_beside_the_index(built, tmp_path):
    import shutil

    folder, _ = built
    moved = shutil.copytree(folder, tmp_path / "elsewhere")
    ids = open_ondisk(moved).search(unit(3, 24, 2), 5)[1]
    assert (ids >= 0).all()


def test_building_into_a_folder_with_files_is_refused(vectors, tmp_path):
    (tmp_path / "mine.txt").write_text("keep me")
    with pytest.raises(FileExistsError, match="not empty"):
        build_ondisk(train_ivf(vectors[::3], 8), [vectors[:100]], tmp_path)
    assert (tmp_path / "mine.txt").read_text() == "keep me"


def test_opening_a_folder_without_an_index_names_what_is_missing(tmp_path):
    with pytest.raises(FileNotFoundError, match="index.faiss"):
        open_ondisk(tmp_path)


def test_training_needs_a_vector_a_cell():
    with pytest.raises(ValueError, match="at least 64"):
        train_ivf(unit(10, 8, 0), 64)


def test_the_streamed_top_k_is_exact_search(vectors):
    queries = unit(25, 24, 3)
    flat = faiss.IndexFlatIP(24)
    flat.add(vectors)
    want_s, want_i = flat.search(queries, 10)
    got_s, got_i = exact_top_k((vectors[i:i + 777] for i in range(0, len(vectors), 777)),
                               queries, 10)
    assert np.array_equal(got_i, want_i)
    assert np.allclose(got_s, want_s, atol=1e-6)


def test_ties_keep_the_lower_id_and_a_short_stream_leaves_misses():
    block = np.ones((3, 4), np.float32) / 2  # three equal vectors
    top = RunningTopK(np.ones((1, 4), np.float32) / 2, 5)
    top.add(block[:1])
    top.add(block[1:])
    assert top.ids.tolist() == [[0, 1, 2, -1, -1]]
    assert np.isneginf(top.scores[0, 3:]).all()


def test_the_fresh_process_finds_what_this_one_finds_and_reports_its_memory(built):
    folder, _ = built
    queries = unit(12, 24, 4)
    out = search_in_fresh_process(folder, queries, 10, (2, 32))
    here = open_ondisk(folder)
    for nprobe in (2, 32):
        ids, seconds = out["runs"][nprobe]
        want = here.search(queries, 10, params=faiss.SearchParametersIVF(nprobe=nprobe))[1]
        assert np.array_equal(ids, want)
        assert seconds.shape == (12,) and (seconds > 0).all()
    if memory_mib():  # Linux
        for key in ("rss", "rss_anon", "rss_file", "hwm"):
            assert out["memory_end"][key] > 0
        assert out["memory_end"]["hwm"] >= out["memory_end"]["rss"]


def test_the_tool_writes_recall_latency_and_memory_rows(tmp_path, monkeypatch, capsys):
    from ragkit.scale import static
    from ragkit.tools import bench_ondisk

    real = static.benchmark_texts  # the course corpus alone: offline and quick
    monkeypatch.setattr(static, "benchmark_texts", lambda: real(("course",)))
    results = tmp_path / "results"
    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(results))
    code = bench_ondisk.main(["--out", str(tmp_path / "ix"), "--n", "3000", "--nlist", "16",
                              "--nprobes", "1,16", "--window", "16,32", "--queries", "30",
                              "--block", "1000"])
    assert code == 0
    rows = [json.loads(line) for line in (results / "bench_ondisk.jsonl").read_text()
            .splitlines()]
    search = {(r["params"]["nprobe"], r["metric"]): r["value"] for r in rows
              if r["experiment"] == "ondisk_search"}
    assert search[(16, "recall@10")] == pytest.approx(1.0)  # every cell probed: exact
    assert search[(1, "recall@10")] < 1.0  # one cell of 16 misses neighbours
    build = {r["metric"]: r["value"] for r in rows if r["experiment"] == "ondisk_build"}
    assert build["lists_bytes"] >= 3000 * 384 * 4
    assert not (tmp_path / "ix").exists(), "removed without --keep"
    assert "held" in capsys.readouterr().out


def test_the_tool_refuses_a_folder_with_files(tmp_path, capsys):
    from ragkit.tools import bench_ondisk

    (tmp_path / "x").write_text("mine")
    assert bench_ondisk.main(["--out", str(tmp_path), "--smoke"]) == 2
    assert "not a new or empty folder" in capsys.readouterr().err
    assert (tmp_path / "x").read_text() == "mine"
