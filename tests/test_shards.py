"""Sharded output (ragkit.shards): a run killed after a shard resumes to the same bytes."""

import json

import numpy as np
import pytest

from ragkit.documents import load_corpus
from ragkit.shards import MANIFEST, ShardError, ShardSet, build_shards
from ragkit.stages import ChunkStage, EmbedStage

from ragkit.types import Document

from conftest import ROOT


class Crash(RuntimeError):
    pass


@pytest.fixture(scope="module")
def docs():
    # the head of each course document: enough for several chunks each, quick to embed
    return [Document(d.id, d.text[:1500], d.metadata)
            for d in load_corpus(ROOT / "data" / "corpus").documents[:5]]


@pytest.fixture(scope="module")
def stages():
    return [ChunkStage("recursive:200/0", tokenizer="minilm"), EmbedStage(backend="torch")]


@pytest.fixture(scope="module")
def whole(tmp_path_factory, docs, stages):
    return build_shards(docs, tmp_path_factory.mktemp("whole"), stages, shard_docs=2,
                        batch_size=2)


def _files(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_a_run_killed_after_a_shard_resumes_to_identical_output(tmp_path, docs, stages, whole,
                                                                 monkeypatch):
    assert whole.complete and len(whole.shards) == 3

    def crash_after_1(k):
        if k == 1:
            raise Crash
    with pytest.raises(Crash):
        build_shards(docs, tmp_path / "crashed", stages, shard_docs=2, batch_size=2,
                     after_shard=crash_after_1)
    man = json.loads((tmp_path / "crashed" / MANIFEST).read_text())
    assert [s["name"] for s in man["shards"]] == ["shard-00000.parquet", "shard-00001.parquet"]
    assert not man["complete"]

    calls = []
    embed = EmbedStage.__call__
    monkeypatch.setattr(EmbedStage, "__call__", lambda self, b: calls.append(1) or embed(self, b))
    seen = []
    resumed = build_shards(docs, tmp_path / "crashed", stages, shard_docs=2, batch_size=2,
                           after_shard=seen.append)
    assert seen == [0, 1, 2] and resumed.complete
    assert len(calls) == 1  # one batch in the one shard left to do; shards 0 and 1 skipped
    assert _files(tmp_path / "crashed") == _files(whole.folder)  # byte-identical


def test_shards_read_back_rows_ids_and_vectors(docs, whole):
    shards = whole
    by_id = {d.id: d for d in docs}
    texts, starts, ends, doc_ids = (shards.column(c) for c in ("text", "start", "end", "doc_id"))
    assert all(by_id[d].text[s:e] == t for d, s, e, t in zip(doc_ids, starts, ends, texts))
    assert shards.column("row") == list(range(len(shards)))
    vecs = shards.vectors()
    assert vecs.shape == (len(shards), 384) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1, atol=1e-5)
    assert shards.stats()["documents"] == len(docs)


def test_resuming_with_other_settings_or_documents_is_refused(tmp_path, docs, stages):
    build_shards(docs[:2], tmp_path / "s", stages[:1], shard_docs=1)
    with pytest.raises(ShardError, match="other settings"):
        build_shards(docs[:2], tmp_path / "s", [ChunkStage("fixed_chars:500/0")], shard_docs=1)
    with pytest.raises(ShardError, match="other documents"):
        build_shards(docs[2:4], tmp_path / "s", stages[:1], shard_docs=1)
    with pytest.raises(ShardError, match="not a shard folder"):
        ShardSet(tmp_path)
