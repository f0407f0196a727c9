"""`ragkit bench ann`: the static token-mean embedder (deterministic; its cumulative-sum window
means equal a direct mean), the stride and the even take, the sweep (exact search is recall
1.0 and IVF at nprobe 1 is not, so a sweep that measured nothing fails here), `choose_index`'s
rule, and the tool's rows and figure."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragkit.scale.ann import (METRICS, Grid, choose_index, distinct_rows, exact_neighbours,
                              neighbour_structure, recall_at_k, sweep)
from ragkit.scale.static import (StaticEmbedder, Windows, stride_for, total_windows,
                                 window_means, window_starts)

TABLE = np.random.default_rng(7).normal(size=(50, 6)).astype(np.float32)


def direct(ids, table, start, width):
    return table[np.asarray(ids[start:start + width], np.int64)].astype(np.float64).mean(axis=0)


def unit(v):
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


@settings(max_examples=200, deadline=None)
@given(ids=st.lists(st.integers(0, len(TABLE) - 1), min_size=1, max_size=120),
       width=st.integers(1, 40), stride=st.integers(1, 15))
def test_window_means_equal_a_direct_mean(ids, width, stride):
    starts = window_starts(len(ids), width, stride)
    got = window_means(np.array(ids), TABLE, width, stride)
    assert len(got) == len(starts) >= 1
    assert starts[0] == 0 and np.all(np.diff(starts) == stride)
    if len(ids) > width:  # whole windows only, and no room for another
        assert starts[-1] + width <= len(ids) < starts[-1] + stride + width
    else:
        assert starts.tolist() == [0]
    for row, s in zip(got, starts):
        np.testing.assert_allclose(row, direct(ids, TABLE, s, width), rtol=1e-5, atol=1e-6)


@settings(max_examples=100, deadline=None)
@given(docs=st.lists(st.lists(st.integers(0, len(TABLE) - 1), min_size=0, max_size=60),
                     min_size=1, max_size=5),
       widths=st.lists(st.integers(1, 20), min_size=1, max_size=3, unique=True),
       stride=st.integers(1, 9))
def test_the_embedders_window_vectors_are_the_normalised_direct_means(docs, widths, stride):
    emb = StaticEmbedder.__new__(StaticEmbedder)  # the arithmetic, without the model's table
    emb.table, emb.dim = TABLE, TABLE.shape[1]
    tokens = [np.array(d, np.int64) for d in docs]
    parts = [(i, w, s) for i, t in enumerate(tokens) for w in widths
             for s in window_starts(len(t), w, stride)]
    arr = np.array(parts, np.int64).reshape(-1, 3)
    windows = Windows([f"d{i}" for i in range(len(docs))], tokens, arr[:, 0], arr[:, 1],
                      arr[:, 2], stride)
    assert len(windows) == total_windows([len(t) for t in tokens], widths, stride)
    got = emb.window_vectors(windows)
    assert got.dtype == np.float32 and got.shape == (len(parts), TABLE.shape[1])
    for row, (i, w, s) in zip(got, parts):
        np.testing.assert_allclose(row, unit(direct(docs[i], TABLE, s, w)), rtol=1e-5,
                                   atol=1e-6)


def test_window_vectors_of_a_long_document_are_gathered_in_blocks_alike():
    emb = StaticEmbedder.__new__(StaticEmbedder)
    emb.table, emb.dim = TABLE, TABLE.shape[1]
    ids = np.random.default_rng(5).integers(0, len(TABLE), 140_000)
    starts = window_starts(len(ids), 7, 1)  # 139,994 windows: three blocks of rows
    windows = Windows(["long"], [ids], np.zeros(len(starts), np.int64),
                      np.full(len(starts), 7, np.int64), starts, 1)
    got = emb.window_vectors(windows)
    for j in (0, 65_535, 65_536, 131_072, len(starts) - 1):
        np.testing.assert_allclose(got[j], unit(direct(ids, TABLE, j, 7)), rtol=1e-5, atol=1e-6)


@settings(max_examples=200, deadline=None)
@given(lengths=st.lists(st.integers(0, 500), min_size=1, max_size=6),
       widths=st.lists(st.integers(1, 64), min_size=1, max_size=2, unique=True),
       n=st.integers(1, 3000))
def test_the_stride_is_the_largest_that_gives_n_windows(lengths, widths, n):
    stride = stride_for(lengths, widths, n)
    assert stride >= 1
    if total_windows(lengths, widths, 1) >= n:
        assert total_windows(lengths, widths, stride) >= n
        assert total_windows(lengths, widths, stride + 1) < n or stride >= max(lengths)
    else:
        assert stride == 1


def test_take_spreads_evenly_and_keeps_the_order():
    k = 1000
    w = Windows(["a"], [np.arange(5)], np.zeros(k, np.int64), np.ones(k, np.int64),
                np.arange(k, dtype=np.int64), 1)
    took = w.take(10)
    assert took.starts.tolist() == list(range(0, 1000, 100))
    assert w.take(5000) is w


@pytest.fixture(scope="module")
def static():
    return StaticEmbedder()


def test_the_static_embedder_is_minilms_table_and_deterministic(static):
    assert static.table.shape == (30522, 384) and static.dim == 384
    text = ["Annual plans can be cancelled within 30 days of purchase for a full refund. "
            "After 30 days the unused months are refunded pro rata, minus a fee."]
    a = static.windows(["refund"], text, (8, 4), 3)
    v1, v2 = static.window_vectors(a), StaticEmbedder().window_vectors(a)
    assert np.array_equal(v1, v2)
    np.testing.assert_allclose(np.linalg.norm(v1, axis=1), 1.0, rtol=1e-5)
    ids = a.tokens[0]
    for j in (0, 1, len(a) - 1):  # a few windows against a direct mean of the table rows
        s, w = int(a.starts[j]), int(a.widths[j])
        np.testing.assert_allclose(v1[j], unit(direct(ids, static.table, s, w)), rtol=1e-5,
                                   atol=1e-6)
    q = static.embed(text + ["refund"])
    np.testing.assert_allclose(q[0], unit(direct(ids, static.table, 0, len(ids))), rtol=1e-5,
                               atol=1e-6)
    assert np.array_equal(q, static.embed(text + ["refund"]))


def clustered(n=3000, dim=96, clusters=20, spread=1.5, seed=3):
    """Unit vectors around `clusters` centres, loose enough that one IVF cell misses some of a
    query's neighbours."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(clusters, dim))
    x = centres[rng.integers(0, clusters, n)] + spread * rng.normal(size=(n, dim))
    q = centres[rng.integers(0, clusters, 80)] + spread * rng.normal(size=(80, dim))
    return unit(x).astype(np.float32), unit(q).astype(np.float32)


SMALL = Grid(nlists=(32,), nprobes=(1, 32), hnsw_ms=(8,), ef_searches=(8, 128), pq_m=48, pq_bits=6,
             pq_nlist=16)


@pytest.fixture(scope="module")
def swept():
    import faiss

    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)  # a second thread only waits on a busy 2-core machine
    try:
        x, q = clustered()
        return sweep(x, q, SMALL, k=10)
    finally:
        faiss.omp_set_num_threads(threads)


def test_the_sweep_measures_recall_exact_is_one_ivf_nprobe_1_is_not(swept):
    by = {(r["family"], r["params"].get("nprobe"), r["params"].get("efSearch")): r
          for r in swept}
    assert by[("flat", None, None)]["recall@10"] == 1.0
    assert by[("ivf_flat", 1, None)]["recall@10"] < 0.95
    assert by[("ivf_flat", 32, None)]["recall@10"] == pytest.approx(1.0)  # every cell: exact
    assert by[("hnsw", None, 8)]["recall@10"] <= by[("hnsw", None, 128)]["recall@10"]
    assert by[("ivf_pq_refine", 32, None)]["recall@10"] > by[("ivf_pq", 32, None)]["recall@10"]


def test_every_row_has_every_metric(swept):
    assert [r["family"] for r in swept] == (["flat"] + ["ivf_flat"] * 2 + ["hnsw"] * 2
                                            + ["ivf_pq"] * 2 + ["ivf_pq_refine"] * 2)
    for r in swept:
        assert set(METRICS) <= set(r)
        assert all(np.isfinite(r[m]) for m in METRICS), r
        assert 0 <= r["recall@10"] <= 1 and r["memory_bytes"] > 0 and r["p95_ms"] >= r["p50_ms"]
    pq = [r for r in swept if r["family"] == "ivf_pq"][0]
    flat = [r for r in swept if r["family"] == "flat"][0]
    assert pq["memory_bytes"] < flat["memory_bytes"] / 4  # 48 bytes a vector, not 384


def test_recall_counts_a_duplicate_of_a_neighbour_as_found():
    x = unit(np.random.default_rng(1).normal(size=(50, 8))).astype(np.float32)
    x = np.concatenate([x, x[:1]])   # row 50 is row 0 again
    q = x[:1].copy()
    scores, ids = exact_neighbours(x, q, 2)
    assert set(ids[0].tolist()) == {0, 50}
    other = np.array([[50, 0]])
    assert recall_at_k(other, x, q, scores) == 1.0
    assert recall_at_k(np.array([[50, 7]]), x, q, scores) == 0.5
    assert recall_at_k(np.array([[-1, -1]]), x, q, scores) == 0.0


def test_neighbour_structure_counts_distinct_rows_and_percentiles():
    x, q = clustered(n=500)
    x = np.concatenate([x, x[:100]])
    scores, _ = exact_neighbours(x, q, 10)
    s = neighbour_structure(x, q, scores)
    assert s["n"] == 600 and s["distinct"] == 500 and s["distinct_1e-4"] == 500
    assert list(s["top1"]) == [1, 10, 50, 90, 99]
    assert s["top1"][50] >= s["top10"][50] > s["random"][50]
    assert distinct_rows(np.zeros((3, 4), np.float32)) == 1


def test_choose_index_picks_the_fastest_that_reaches_the_target():
    rows = [{"name": "slow exact", "recall@10": 1.0, "p50_ms": 20.0},
            {"name": "ivf 16", "recall@10": 0.97, "p50_ms": 0.4},
            {"name": "ivf 64", "recall@10": 0.99, "p50_ms": 0.9},
            {"name": "ivf 4", "recall@10": 0.88, "p50_ms": 0.1}]
    pick, line = choose_index(rows, 0.95)
    assert pick["name"] == "ivf 16" and "ivf 16" in line and "0.95" in line
    assert choose_index(rows, 0.98)[0]["name"] == "ivf 64"
    assert choose_index(rows, 0.5)[0]["name"] == "ivf 4"


def test_choose_index_says_when_none_reaches_the_target():
    rows = [{"name": "a", "recall@10": 0.9, "p50_ms": 1.0},
            {"name": "b", "recall@10": 0.8, "p50_ms": 0.1}]
    pick, line = choose_index(rows, 0.95)
    assert pick is None
    assert "No setting reaches 0.95" in line and "a at 0.900" in line
    assert choose_index([], 0.95)[0] is None


def test_the_tool_writes_every_metric_and_the_figure(tmp_path, monkeypatch, capsys):
    from ragkit.tools import bench_ann

    x, q = clustered(n=4000)

    def make_vectors(n, widths, stride, queries):
        return x[:n], q, {"load_tokenise_s": 0.0, "embed_s": 0.0, "documents": 3,
                          "tokens": 9999, "stride": 1, "windows_available": len(x),
                          "windows_at_stride_1": len(x), "n": min(n, len(x)),
                          "queries": len(q), "questions": len(q)}

    monkeypatch.setattr(bench_ann, "make_vectors", make_vectors)
    results = tmp_path / "results"
    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(results))
    import faiss

    threads = faiss.omp_get_max_threads()
    try:
        assert bench_ann.main(["--smoke", "--threads", "1"]) == 0
    finally:
        faiss.omp_set_num_threads(threads)
    out = capsys.readouterr().out
    assert "minilm-static-token-mean" in out and "rule: the fastest setting" in out
    rows = [json.loads(line) for line in (results / "bench_ann.jsonl").read_text().splitlines()]
    sweep_rows = [r for r in rows if r["experiment"] == "ann_sweep"]
    by_setting: dict = {}
    for r in sweep_rows:
        by_setting.setdefault(r["strategy"], set()).add(r["metric"])
    assert len(by_setting) == 1 + 2 * 3 + 2 + 3 + 3   # the smoke grid
    assert all(metrics == set(METRICS) for metrics in by_setting.values())
    recalls = [r["value"] for r in sweep_rows if r["metric"] == "recall@10"]
    assert min(recalls) < 1.0 and max(recalls) == 1.0
    assert {r["params"]["threads"] for r in sweep_rows} == {1}
    assert any(r["experiment"] == "neighbour_structure" and r["metric"] == "distinct_vectors"
               for r in rows)
    assert any(r["experiment"] == "choose_index" for r in rows)
    assert (results / "figures" / "bench_ann_recall_latency_4000.png").stat().st_size > 10_000


@pytest.mark.parametrize("args, says", [(["--window", "0"], "widths from 1"),
                                        (["--window", "a"], "window widths"),
                                        (["--target", "1.5"], "at most 1"),
                                        (["--n", "10"], "at least 1000")])
def test_the_tool_refuses_bad_options_in_one_line(args, says, capsys):
    from ragkit.tools import bench_ann

    with pytest.raises(SystemExit) as e:
        bench_ann.main(args)
    assert e.value.code == 2 and says in capsys.readouterr().err
