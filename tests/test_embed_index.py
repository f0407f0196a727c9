import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import needs_benchmarks
from ragkit.retrieve import VectorIndex


def test_import_ragkit_is_lazy():
    code = ("import sys, ragkit, ragkit.text.documents, ragkit.evaluate, ragkit.retrieve, "
            "ragkit.experiments.pipeline, ragkit.report.results, ragkit.embed, "
            "ragkit.retrieve.index, ragkit.chunkers; "
            "heavy = [m for m in ('torch', 'faiss', 'transformers', 'sentence_transformers') "
            "if m in sys.modules]; print(heavy); assert not heavy, heavy")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_vectors_equal_sentence_transformers(embedder):
    from sentence_transformers import SentenceTransformer

    from ragkit.models import bundled_minilm

    texts = ["Gold members get 14 days.", "Access expires after 90 days of inactivity."]
    ours = embedder.encode(texts)
    ref = SentenceTransformer(str(bundled_minilm()), device="cpu").encode(
        texts, normalize_embeddings=True)
    assert ours.shape == (2, 384)
    np.testing.assert_allclose(ours, ref, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


def test_cache_hit_makes_no_model_call(tmp_path, monkeypatch):
    from ragkit.embed import Embedder

    monkeypatch.setenv("RAGKIT_CACHE_DIR", str(tmp_path))
    first = Embedder(show_progress=False)
    texts = ["cache me", "and me"]
    v1 = first.encode(texts)
    assert first.stats["encoded"] == 2
    second = Embedder(show_progress=False)  # a new process would look the same
    calls = []
    for owner, name in ((type(second.model), "encode"), (Embedder, "_encode_batches")):
        monkeypatch.setattr(owner, name,
                            lambda *a, **k: calls.append(1) or pytest.fail("model was called"))
    v2 = second.encode(texts)
    assert calls == [] and second.stats["cache_hits"] == 2
    np.testing.assert_array_equal(v1, v2)
    assert not list(tmp_path.rglob("*.pkl")) and list(tmp_path.rglob("*.npz"))


def test_a_warm_run_never_loads_the_model_and_a_damaged_card_is_read_again(
        tmp_path, monkeypatch):
    """Issue 34: with every vector and token count cached, a new Embedder answers from its
    model card (backend, limit, dimension, prompts) and never loads sentence-transformers."""
    from ragkit.embed import Embedder

    monkeypatch.setenv("RAGKIT_CACHE_DIR", str(tmp_path))
    texts = ["Gold members get 14 days.", "refund " * 300]
    first = Embedder(show_progress=False)
    v1 = first.encode(texts, kind="query")
    model = first.model
    expected = {"backend": first.backend, "max_tokens": model.max_seq_length,
                "dimension": model.get_embedding_dimension(),
                "prompt": (getattr(model, "prompts", None) or {}).get("query", ""),
                "settings": first.settings(), "truncated": first.last_truncated}
    assert expected["truncated"] == 1
    cards = list((tmp_path / "model_cards").glob("*.json"))
    assert len(cards) == 1

    def answers(emb):
        vecs = emb.encode(texts, kind="query")
        np.testing.assert_array_equal(vecs, v1)
        return {"backend": emb.backend, "max_tokens": emb.max_tokens,
                "dimension": emb.dimension, "prompt": emb.prompt("query"),
                "settings": emb.settings(), "truncated": emb.last_truncated}

    second = Embedder(show_progress=False)
    assert answers(second) == expected
    assert second._model is None  # never loaded: a warm notebook kernel skips ~4 s
    # the card is keyed by the settings that decide it: torch gets a card of its own
    Embedder(show_progress=False, backend="torch").max_tokens
    assert len(list((tmp_path / "model_cards").glob("*.json"))) == 2
    cards[0].write_text('{"max_tokens": "lots"}')
    third = Embedder(show_progress=False)
    with pytest.warns(UserWarning, match="model card .* not used"):
        assert answers(third) == expected
    assert third._model is not None and json.loads(cards[0].read_text())["max_tokens"] == \
        expected["max_tokens"]  # read from the model again and rewritten
    assert not list(tmp_path.rglob("*.pkl"))


def test_corrupt_cache_shard_is_recomputed_with_a_warning(tmp_path, monkeypatch):
    from ragkit.cache import CacheWarning
    from ragkit.embed import Embedder

    monkeypatch.setenv("RAGKIT_CACHE_DIR", str(tmp_path))
    v1 = Embedder(show_progress=False).encode(["some text"])
    shard = next((tmp_path / "embeddings").rglob("*.npz"))
    shard.write_bytes(shard.read_bytes()[:100])  # truncated
    e = Embedder(show_progress=False)
    with pytest.warns(CacheWarning, match="corrupt"):
        v2 = e.encode(["some text"])
    assert e.stats["encoded"] == 1
    np.testing.assert_allclose(v1, v2, atol=1e-6)


def test_token_counts_are_cached_and_still_report_truncation(tmp_path, monkeypatch):
    from ragkit.embed import Embedder, TruncationWarning

    monkeypatch.setenv("RAGKIT_CACHE_DIR", str(tmp_path))
    texts = ["refund " * 400, "short", "refund " * 300]
    first = Embedder(show_progress=False)
    with pytest.warns(TruncationWarning, match="2 of 3"):
        first.encode(texts)
    expected = first.count_tokens(texts)
    second = Embedder(show_progress=False)
    monkeypatch.setattr(Embedder, "count_tokens",
                        lambda *a, **k: pytest.fail("counted a text whose count is cached"))
    longest = f"2 of 3 document texts .*longest {max(expected)}\\)"
    with pytest.warns(TruncationWarning, match=longest):
        second.encode(texts)
    assert second.flags == ["truncated:2"]
    assert second._lengths(texts, second._keys(texts, "document"), "document") == expected


def test_truncation_is_reported_not_silent(embedder):
    from ragkit.embed import TruncationWarning

    long = "refund " * 400
    with pytest.warns(TruncationWarning, match="exceed"):
        embedder.encode([long, "short"])
    assert embedder.flags == ["truncated:1"]
    embedder.encode(["short"])
    assert embedder.flags == []


def test_onnx_backend_gives_torch_vectors_and_its_own_cache_keys(embedder):
    from ragkit.embed import Embedder

    texts = ["Gold members get 14 days.", "Refunds cover unused services only. " * 20,
             "Access expires after 90 days of inactivity.", "x"]
    torch_emb = Embedder(show_progress=False, cache=False, backend="torch")
    onnx_emb = Embedder(show_progress=False, cache=False, backend="onnx")
    assert (torch_emb.backend, onnx_emb.backend, embedder.backend) == ("torch", "onnx", "onnx")
    np.testing.assert_allclose(onnx_emb.encode(texts), torch_emb.encode(texts), atol=1e-5)
    assert torch_emb._keys(texts, "document") != onnx_emb._keys(texts, "document")
    assert onnx_emb.flags == []



def test_compare_backends_keeps_every_run_and_the_best_is_the_least():
    from ragkit.embed import compare_backends

    texts = ["Gold members get 14 days.", "Refunds cover unused services only. " * 20]
    t = compare_backends(texts, repeats=3)
    for backend in ("torch", "onnx"):
        runs = t[f"{backend}_runs"]
        assert len(runs) == 3 and all(r > 0 for r in runs) and t[backend] == min(runs)
    assert 0 <= t["max_abs_difference"] < 1e-5

def test_cpu_share_divides_the_cpus_among_running_kernels_and_never_adds(tmp_path,
                                                                         monkeypatch):
    import os

    from ragkit.environment import RUNNING_KERNELS, cpu_share

    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    monkeypatch.delenv(RUNNING_KERNELS, raising=False)
    assert cpu_share(8) == 8 and cpu_share(3) == 3  # no runner: what the process had
    share = tmp_path / "running"
    monkeypatch.setenv(RUNNING_KERNELS, str(share))
    assert cpu_share(8) == 8  # the file is not there (yet): unchanged
    for running, base, want in ((1, 8, 8), (2, 8, 4), (3, 8, 2), (16, 8, 1), (2, 1, 1),
                                (2, 3, 3), (0, 8, 8)):
        share.write_text(str(running))
        assert cpu_share(base) == want, (running, base)
    share.write_text("two")
    assert cpu_share(8) == 8  # unreadable: unchanged


def test_onnx_vectors_are_the_same_bits_on_a_share_of_the_threads(tmp_path, monkeypatch):
    import os

    from ragkit.embed import Embedder
    from ragkit.environment import RUNNING_KERNELS

    texts = ["Gold members get 14 days.", "Refunds cover unused services only. " * 30,
             "Access expires after 90 days of inactivity.", "x"] * 9
    emb = Embedder(show_progress=False, cache=False, backend="onnx")
    alone = emb.encode(texts)
    graph = emb._graph()
    monkeypatch.setattr(os, "cpu_count", lambda: 2 * graph.base_threads)
    share = tmp_path / "running"
    share.write_text("4")  # four kernels on twice this process's threads: half of them each
    monkeypatch.setenv(RUNNING_KERNELS, str(share))
    shared = emb.encode(texts)
    assert max(1, graph.base_threads // 2) in graph.sessions  # made for the shared calls
    assert np.array_equal(alone, shared)


def test_the_onnx_path_follows_torchs_thread_count_at_each_call(monkeypatch):
    """The ONNX graph is made once a process; an encoder asked for more threads after it was
    made (bench scale's one process with every thread, after one-thread workers) gets them."""
    import torch

    from ragkit.embed import Embedder
    from ragkit.environment import RUNNING_KERNELS

    monkeypatch.delenv(RUNNING_KERNELS, raising=False)  # no CPU share: the count is torch's
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        emb = Embedder(show_progress=False, cache=False, backend="onnx")
        one = emb.encode(["Gold members get 14 days."] * 4)
        graph = emb._graph()
        torch.set_num_threads(3)
        three = emb.encode(["Gold members get 14 days."] * 4)
        assert 3 in graph.sessions and 1 in graph.sessions
        assert np.array_equal(one, three)
    finally:
        torch.set_num_threads(before)


def test_onnx_backend_where_it_does_not_apply_is_an_error_or_torch():
    from ragkit.embed import Embedder

    explicit, auto = (Embedder(show_progress=False, cache=False, backend=b)
                      for b in ("onnx", "auto"))
    explicit.device = auto.device = "cuda"  # decided before any model is loaded
    with pytest.raises(ValueError, match="'onnx' does not apply: the model runs on cuda"):
        explicit.backend
    assert auto.backend == "torch"
    with pytest.raises(ValueError, match="backend must be"):
        Embedder(backend="tensorrt")


def test_a_bad_onnx_export_falls_back_to_torch_out_loud(monkeypatch):
    import ragkit.embed.encoders as embed

    def broken(*a, **k):
        raise RuntimeError("exporter exploded")

    import ragkit.embed.onnx as onnx_backend

    monkeypatch.setattr(onnx_backend, "GRAPHS", {})
    monkeypatch.setattr(onnx_backend, "OnnxTransformer", broken)
    e = embed.Embedder(show_progress=False, cache=False)
    assert e.backend == "onnx"  # decided without exporting; the export waits for a text
    with pytest.warns(embed.OnnxFallbackWarning, match="exporter exploded"):
        vec = e.encode(["still encodes"])
    assert e.backend == "torch" and e.flags == ["onnx_fallback:torch"]
    np.testing.assert_allclose(vec, embed.Embedder(show_progress=False, cache=False,
                                                   backend="torch").encode(["still encodes"]),
                               atol=1e-6)
    with pytest.raises(RuntimeError, match="exploded"):
        embed.Embedder(show_progress=False, cache=False, backend="onnx").backend


def _brute(vectors, queries, k, allowed=None):
    scores = queries @ vectors.T
    if allowed is not None:
        mask = np.full(len(vectors), -np.inf)
        mask[allowed] = 0
        scores = scores + mask
    return np.argsort(-scores, axis=1, kind="stable")[:, :k]


def test_faiss_matches_numpy_brute_force():
    rng = np.random.default_rng(0)
    v = rng.normal(size=(500, 32)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    q = v[:20] + 0.1 * rng.normal(size=(20, 32)).astype(np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    _, ids = VectorIndex(v).search(q, 10)
    np.testing.assert_array_equal(ids, _brute(v, q, 10))


def test_prefilter_still_returns_k_hits_when_k_exist():
    rng = np.random.default_rng(1)
    v = rng.normal(size=(1000, 16)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    meta = [{"region": "eu" if i % 100 == 0 else "us", "doc_id": f"d{i}"} for i in range(1000)]
    ix = VectorIndex(v, meta)
    q = v[5:6]
    scores, ids = ix.search(q, 5, where={"region": "eu"})  # only 10 of 1000 pass
    assert (ids >= 0).all() and all(meta[i]["region"] == "eu" for i in ids[0])
    allowed = [i for i in range(1000) if i % 100 == 0]
    np.testing.assert_array_equal(ids, _brute(v, q, 5, allowed))
    _, ids = ix.search(q, 20, where={"region": ["eu"]})  # fewer than k exist
    assert (ids[0] >= 0).sum() == 10
    _, ids = ix.search(q, 3, where=lambda m: m["doc_id"] in {"d1", "d2"})
    assert sorted(ids[0][:2]) == [1, 2] and ids[0][2] == -1


@needs_benchmarks()
def test_encoder_floor_sums_the_tokens_of_what_the_cache_holds(tmp_path, monkeypatch):
    from ragkit.embed import Embedder
    from ragkit.experiments.speed import encoder_floor
    from ragkit.report import read_rows

    monkeypatch.setenv("RAGKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(tmp_path / "results"))
    with pytest.raises(SystemExit, match="no cached vectors"):
        encoder_floor(smoke=True)
    emb = Embedder(show_progress=False)
    texts = ["short", "Refunds cover unused services only. " * 60, "a middling sentence here"]
    with pytest.warns(UserWarning, match="exceed"):
        emb.encode(texts)
    want = sum(min(n, emb.max_tokens) for n in emb.count_tokens(texts))
    assert emb.count_tokens(texts)[1] > emb.max_tokens  # the long one is cut at the limit
    rows = encoder_floor(smoke=True)
    assert rows[0][1] == 3 and rows[0][2] == f"{want:,}"
    saved = {r["metric"]: r for r in read_rows(tmp_path / "results" / "bench_floor.jsonl")}
    rate, floor = saved["tokens_per_s"]["value"], saved["floor_minutes"]["value"]
    assert rate > 0 and floor == pytest.approx(want / rate / 60)
    assert saved["floor_minutes"]["params"]["tokens"] == want


@needs_benchmarks()
@pytest.mark.slow  # starts five encoder processes (about 50 s)
def test_thread_share_bench_runs_two_kernels_and_keeps_the_vectors(tmp_path, monkeypatch):
    from ragkit.experiments.speed import thread_share
    from ragkit.report import read_rows

    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(tmp_path))
    rows = thread_share(smoke=True)
    assert [r[0] for r in rows] == ["1 kernel, every thread (reference)",
                                    "2 kernels, every thread each", "2 kernels, CPU share each"]
    saved = {(r["strategy"], r["metric"]): r["value"]
             for r in read_rows(tmp_path / "bench_threads.jsonl")}
    assert saved[("1 kernel, every thread (reference)", "time_vs_alone")] == 1.0
    assert all(v == 1.0 for (_, m), v in saved.items() if m == "vectors_identical")
    assert all(v > 0 for (_, m), v in saved.items() if m == "seconds")


@needs_benchmarks()
@pytest.mark.slow  # times three backends (about 25 s)
def test_encoder_speed_bench_compares_the_backends_on_the_same_texts(tmp_path, monkeypatch):
    from ragkit.experiments import encoder_speed
    from ragkit.report import read_rows

    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(tmp_path))
    rows = encoder_speed(smoke=True)
    assert [r[0] for r in rows] == ["torch", "onnx", "torch bf16"]
    assert rows[0][1] == rows[1][1] == rows[2][1] == 64
    saved = {(r["strategy"], r["metric"]): r["value"]
             for r in read_rows(tmp_path / "bench_encoder_speed.jsonl")}
    assert saved[("torch", "speed_vs_torch")] == 1.0 and saved[("onnx", "texts_per_s")] > 0
    assert saved[("onnx", "max_abs_difference")] < 1e-5
    assert 1e-5 < saved[("torch bf16", "max_abs_difference")] < 0.05  # it moves, a little
    assert saved[("torch bf16", "min_cosine_to_fp32")] > 0.999
    peak = next(r for r in read_rows(tmp_path / "bench_encoder_speed.jsonl")
                if r["metric"] == "matmul_gflops")["value"]
    gflops = saved[("torch", "gflops")]
    assert saved[("torch", "fraction_of_matmul_rate")] == pytest.approx(gflops / peak)


def test_bf16_precision_is_an_opt_in_that_says_so():
    from ragkit.embed import Embedder

    texts = ["Gold members get 14 days.", "Access expires after 90 days of inactivity."]
    fp32 = Embedder(show_progress=False, cache=False)
    bf16 = Embedder(show_progress=False, cache=False, precision="bf16")
    assert fp32.precision == "fp32" and "precision" not in fp32.settings()
    assert bf16.backend == "torch" and bf16.settings()["precision"] == "bf16"
    assert bf16._keys(texts, "document") != fp32._keys(texts, "document")
    a, b = fp32.encode(texts), bf16.encode(texts)
    assert 0 < np.abs(a - b).max() < 0.05 and (a * b).sum(axis=1).min() > 0.999
    assert "precision:bf16" in bf16.flags and fp32.flags == []
    with pytest.raises(ValueError, match="float32 only"):
        Embedder(show_progress=False, cache=False, backend="onnx", precision="bf16").backend
    with pytest.raises(ValueError, match="precision must be"):
        Embedder(precision="int4")


def test_the_exported_onnx_graph_is_cached_on_disk_and_a_damaged_copy_is_re_exported(
        tmp_path, monkeypatch):
    """Issue 34: a new process reads the exported graph instead of exporting and checking it
    (about 4 s) when its bytes are the ones that passed the check; a damaged one is exported
    again, out loud.
    Each step encodes texts the vector cache has not seen, so the graph is needed."""
    import ragkit.embed.onnx as onnx_backend
    from ragkit.embed import Embedder

    monkeypatch.setenv("RAGKIT_CACHE_DIR", str(tmp_path / "cache"))
    exports = []
    real_export = onnx_backend.export_graph
    monkeypatch.setattr(onnx_backend, "export_graph",
                        lambda *a: exports.append(1) or real_export(*a))
    reference = Embedder(show_progress=False, cache=False, backend="torch")

    def encode_in_a_new_process(texts):
        monkeypatch.setattr(onnx_backend, "GRAPHS", {})
        vecs = Embedder(show_progress=False, backend="onnx").encode(texts)
        np.testing.assert_allclose(vecs, reference.encode(texts), atol=1e-5)

    encode_in_a_new_process(["Gold members get 14 days."])
    files = list((tmp_path / "cache" / "onnx").glob("*.onnx"))
    assert len(exports) == 1 and len(files) == 1 and files[0].stat().st_size > 1_000_000
    encode_in_a_new_process(["Refunds cover unused services only. " * 20])
    assert len(exports) == 1  # read from disk, not exported
    record = json.loads(files[0].with_suffix(".json").read_text())
    assert 0 <= record["max_gap_to_torch"] <= record["tolerance"]
    damaged = bytearray(files[0].read_bytes())
    damaged[len(damaged) // 2] ^= 1  # one bit of one weight: still loads, differs from torch
    files[0].write_bytes(bytes(damaged))
    with pytest.warns(onnx_backend.OnnxCacheWarning, match="sha256 differs"):
        encode_in_a_new_process(["Access expires after 90 days of inactivity."])
    assert len(exports) == 2 and files[0].stat().st_size > 1_000_000  # exported and rewritten
    # without the vector cache nothing is read from or written to disk
    monkeypatch.setattr(onnx_backend, "GRAPHS", {})
    Embedder(show_progress=False, backend="onnx", cache=False).encode(["x"])
    assert len(exports) == 3
    key = onnx_backend.graph_key("fp", ["input_ids", "attention_mask"])
    assert key != onnx_backend.graph_key("fp2", ["input_ids", "attention_mask"])
    assert key == onnx_backend.graph_key("fp", ["attention_mask", "input_ids"])


# texts whose order by characters is not their order by tokens: code and numbers take more
# tokens per character than prose, so a sort by characters mixes lengths in a batch
MIXED = ([f"x{i}=f({i},{i+1});" * (3 + i % 7) for i in range(40)]
         + [("The refund window is fourteen days for members. " * (1 + i % 5)) for i in range(40)]
         + ["0x1f 0x2e 0x3d " * (2 + i % 9) for i in range(30)])


@pytest.mark.parametrize("backend", ["onnx", "torch"])
def test_batches_sorted_by_tokens_give_the_same_bits_as_sentence_transformers_order(backend):
    from ragkit.embed import Embedder

    emb = Embedder(show_progress=False, cache=False, backend=backend, batch_size=16)
    counts = emb.count_tokens(MIXED)
    batches = emb.batches(counts)
    order = np.concatenate(batches)
    assert sorted(order.tolist()) == list(range(len(MIXED)))
    assert [counts[i] for i in order] == sorted(counts, reverse=True)  # longest first, by tokens
    by_chars = sorted(range(len(MIXED)), key=lambda i: -len(MIXED[i]))
    assert [counts[i] for i in by_chars] != sorted(counts, reverse=True)  # a real difference
    ours = emb.encode(MIXED)
    if backend == "torch":  # sentence-transformers' own encode sorts by characters
        ref = emb.model.encode(MIXED, batch_size=16, normalize_embeddings=True,
                               convert_to_numpy=True)
    else:  # the same transformer in batches of characters-sorted texts, and each text alone
        ref = np.empty_like(ours)
        for i in range(0, len(by_chars), 16):
            idx = by_chars[i: i + 16]
            ref[idx] = emb._run([MIXED[j] for j in idx], emb._graph())
        alone = np.stack([emb._run([t], emb._graph())[0] for t in MIXED[:12]])
        np.testing.assert_array_equal(ours[:12], alone)
    if backend == "onnx":  # the CPU default (float32 MiniLM): the record's bits
        np.testing.assert_array_equal(ours, ref)
    else:  # torch's kernels depend on the batch's padded shape in the last bits (~7e-8)
        np.testing.assert_allclose(ours, ref, atol=1e-6, rtol=0)


_CLAIM_CHILD = """
import json, sys, time
from pathlib import Path
from ragkit.embed import Embedder
Embedder.slice_size = 8
part, folder = int(sys.argv[1]), Path(sys.argv[2])
texts = json.loads((folder / "texts.json").read_text())
mine = texts[:60] if part == 0 else texts[20:]  # 40 texts wanted by both
emb = Embedder(show_progress=False)
emb.count_tokens(["warm up"]); emb.encode(["warm up " + str(part)])
(folder / f"ready{part}").write_text("1")
while len(list(folder.glob("ready*"))) < 2:
    time.sleep(0.01)
before = emb.stats["encoded"]
vecs = emb.encode(mine)
import numpy as np
np.save(folder / f"vectors{part}.npy", vecs)
(folder / f"encoded{part}").write_text(str(emb.stats["encoded"] - before))
"""


def test_two_processes_filling_one_cache_encode_each_text_once(tmp_path):
    import os

    from ragkit.embed import Embedder

    texts = [f"{t} ({i})" for i, t in enumerate(MIXED[:80])]
    (tmp_path / "texts.json").write_text(json.dumps(texts))
    env = {**os.environ, "RAGKIT_CACHE_DIR": str(tmp_path / "cache")}
    procs = [subprocess.Popen([sys.executable, "-c", _CLAIM_CHILD, str(p), str(tmp_path)],
                              env=env, stderr=subprocess.PIPE, text=True) for p in (0, 1)]
    for p in procs:
        assert p.wait(timeout=300) == 0, p.stderr.read()
    encoded = [int((tmp_path / f"encoded{p}").read_text()) for p in (0, 1)]
    assert sum(encoded) == len(texts) and min(encoded) > 0  # each text once, both worked
    v0, v1 = (np.load(tmp_path / f"vectors{p}.npy") for p in (0, 1))
    np.testing.assert_array_equal(v0[20:], v1[:40])  # the shared texts: the same bits
    ref = Embedder(show_progress=False, cache=False).encode(texts)
    np.testing.assert_array_equal(v0, ref[:60])
    np.testing.assert_array_equal(v1, ref[20:])
    assert not list((tmp_path / "cache" / "embeddings" / ".claims").glob("*.json"))


def test_a_claim_left_by_a_dead_process_does_not_block_the_cache(tmp_path):
    from ragkit.cache import Claims

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    claims = Claims(tmp_path)
    claims.folder.mkdir(parents=True)
    (claims.folder / "stale.json").write_text(json.dumps({"pid": dead.pid, "keys": ["a", "b"]}))
    (claims.folder / "torn.json").write_text('{"pid": ')
    (claims.folder / "alive.json").write_text(json.dumps({"pid": os.getppid(), "keys": ["c"]}))
    mine, claim = claims.take(["a", "b", "c", "d"], limit=3)
    assert mine == ["a", "b", "d"] and claim.exists()
    assert sorted(p.name for p in claims.folder.glob("*.json")) == sorted(["alive.json",
                                                                            claim.name])
    assert claims.take(["c"], limit=5) == ([], None)  # only another live process's key left
    Claims.release(claim)
    assert not claim.exists()


def test_batch_drift_is_zero_for_a_batch_blind_encoder_and_not_for_one_that_mixes():
    from ragkit.embed import batch_drift

    class Fake:
        def __init__(self, size, mixes):
            self.size, self.mixes = size, mixes

        def encode(self, texts):
            base = np.array([[len(t), 1.0] for t in texts])
            if self.mixes:  # each batch's vectors pulled toward the batch mean
                for at in range(0, len(texts), self.size):
                    part = base[at:at + self.size]
                    base[at:at + self.size] = part + 0.1 * part.mean(axis=0)
            return base

    texts = [f"text {'x' * i}" for i in range(10)]
    assert batch_drift(lambda size: Fake(size, False), texts) == 0.0
    assert batch_drift(lambda size: Fake(size, True), texts) > 0.1
