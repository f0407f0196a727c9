"""Approximate indexes from shards (ragkit.scale.index): the pre-filter returns only allowed
rows, recall against exact search, and an index saved and loaded answers the same."""

import numpy as np
import pytest

from ragkit.retrieve import VectorIndex
from ragkit.scale import ScaledIndex, write_row_shards


def _vectors(n, dim=32, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(20, dim))
    x = centres[rng.integers(0, 20, n)] + 0.6 * rng.normal(size=(n, dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _rows(x, start):
    n = len(x)
    ids = range(start, start + n)
    return {"chunk_id": [f"c{i}" for i in ids], "doc_id": [f"d{i // 10}" for i in ids],
            "start": [0] * n, "end": [1] * n, "text": ["x"] * n, "prefix": [""] * n,
            "strategy": ["synthetic"] * n,
            "metadata": [f'{{"region": "{("eu", "us", "apac")[i % 3]}", "year": {2020 + i % 5}}}'
                         for i in ids], "vector": x}


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    x = _vectors(6000)
    folder = tmp_path_factory.mktemp("shards")
    return x, write_row_shards((_rows(x[i: i + 1500], i) for i in range(0, 6000, 1500)),
                               folder, {"synthetic": True})


@pytest.mark.parametrize("kind", ["ivf_flat", "ivf_pq", "hnsw"])
def test_filtered_search_returns_only_allowed_rows(shards, kind):
    x, folder = shards
    extra = {"m": 4} if kind == "ivf_pq" else {}
    ix = ScaledIndex.from_shards(folder.folder, kind=kind, exact_below=100, **extra)
    q = _vectors(20, seed=1)
    for where, mode in (({"region": "eu"}, "filtered:approximate"),
                        ({"region": ["us", "apac"], "year": 2021}, "filtered:approximate"),
                        ({"doc_id": ["d7", "d300"]}, "filtered:exact")):
        allowed = set(ix.allowed(where).tolist())
        _, ids = ix.search(q, k=10, where=where, nprobe=8, ef=64)
        assert ix.last_mode == mode
        got = set(ids[ids >= 0].tolist())
        assert got and got <= allowed
        if mode == "filtered:exact":  # 20 allowed rows, 10 wanted: every query gets 10
            assert (ids >= 0).all()


def test_ivf_flat_recall_against_exact_and_more_probes_help(shards):
    x, folder = shards
    q = _vectors(50, seed=2)
    _, exact = VectorIndex(x, use_gpu=False).search(q, 10)
    ix = ScaledIndex.from_shards(folder.folder)
    recall = {}
    for nprobe in (1, ix.params["nlist"]):
        _, ids = ix.search(q, 10, nprobe=nprobe)
        recall[nprobe] = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(ids, exact)])
    assert recall[ix.params["nlist"]] == 1.0  # every cell probed: exact
    assert recall[1] < 1.0


def test_saved_index_loads_with_its_metadata(shards, tmp_path):
    x, folder = shards
    ix = ScaledIndex.from_shards(folder.folder)
    path = ix.save(tmp_path / "ix")
    again = ScaledIndex.load(path, folder.folder)
    q = _vectors(5, seed=3)
    np.testing.assert_array_equal(ix.search(q, 5, where={"region": "us"})[1],
                                  again.search(q, 5, where={"region": "us"})[1])



def test_eval_index_on_a_folder_that_is_not_an_index_says_so(tmp_path):
    from ragkit.scale import ShardError
    from ragkit.tools.index_build import evaluate_index

    with pytest.raises(ShardError, match="not a shard folder"):  # `ragkit eval` exits 3
        evaluate_index(None, str(tmp_path), None, k=5)


@pytest.mark.parametrize("model, needle", [
    ("all-MiniLM-L6-v2", "another copy of all-MiniLM-L6-v2 (model fingerprint old, now new): "
                         "rebuild it"),
    ("other-model", "embedded with other-model, not all-MiniLM-L6-v2: pass the same --embedder"),
])
def test_an_index_from_other_model_files_says_which(tmp_path, monkeypatch, model, needle):
    """A model folder changed in place (or the fingerprint scheme changed) keeps its name: the
    message must not read 'embedded with X, not X'."""
    from types import SimpleNamespace

    import ragkit.scale.shards
    from ragkit.tools.index_build import evaluate_index

    manifest = {"settings": {"stages": [{"stage": "embed", "model": model,
                                         "fingerprint": "old"}]}}
    monkeypatch.setattr(ragkit.scale.shards, "ShardSet",
                        lambda folder: SimpleNamespace(manifest=manifest, folder=folder))
    emb = SimpleNamespace(name="all-MiniLM-L6-v2", fingerprint="new")
    with pytest.raises(ValueError) as e:
        evaluate_index(None, str(tmp_path), emb, k=5)
    assert needle in str(e.value)


@pytest.mark.parametrize("info", ["[" * 50_000 + "]" * 50_000, '{"kind": %s}' % ("9" * 5000)])
def test_a_saved_index_whose_json_is_past_the_limits_is_a_value_error_naming_it(shards, tmp_path,
                                                                                 info):
    """`ragkit eval --index` reports a ValueError as one line (exit 3); a RecursionError or the
    int-conversion ValueError without the file's name used to escape from json.loads."""
    x, folder = shards
    path = ScaledIndex.from_shards(folder.folder).save(tmp_path / "ix")
    path.with_suffix(".json").write_text(info, encoding="utf-8")
    with pytest.raises(ValueError, match=r"ix\.json: not readable JSON"):
        ScaledIndex.load(path, folder.folder)
