"""The batch stages give the same rows in one process, under datasets.map(num_proc=2) and
under Ray Data on a Ray started here (ragkit.scale.stages, ragkit.scale.raydata; the multi-node
cluster is tests/test_ray_cluster.py)."""

import pickle

import numpy as np
import pytest

from ragkit.scale import (ChunkStage, EmbedStage, LateEmbedStage, batch_to_chunks,
                          documents_to_batch, run_datasets, run_local, run_ray)
from ragkit.text import load_corpus
from ragkit.types import Document

from conftest import ROOT

ROW_COLUMNS = ("chunk_id", "doc_id", "start", "end", "text", "prefix", "strategy", "metadata",
               "tokens", "truncated")


@pytest.fixture(scope="module")
def docs():
    # the head of each course document: enough for several chunks each, quick to embed
    return [Document(d.id, d.text[:1500], d.metadata)
            for d in load_corpus(ROOT / "data" / "corpus").documents[:8]]


@pytest.fixture(scope="module")
def stages():
    return [ChunkStage("recursive:200/0", context="structural", tokenizer="minilm"),
            EmbedStage(backend="torch", threads=1)]


@pytest.fixture(scope="module")
def single(stages, docs):
    return run_local(stages, docs, batch_size=3)


def _same(a, b):
    for col in ROW_COLUMNS:
        assert [str(v) for v in a[col]] == [str(v) for v in b[col]], col
    assert a["vector"].shape == b["vector"].shape
    np.testing.assert_allclose(a["vector"], b["vector"], atol=1e-5, rtol=0)


def test_chunk_stage_keeps_offsets_and_ids(docs):
    out = ChunkStage("recursive:200/0", context="structural", tokenizer="minilm")(
        documents_to_batch(docs[:3]))
    by_id = {d.id: d for d in docs}
    chunks = batch_to_chunks(out)  # recomputes every id from the content
    assert chunks and all(by_id[c.doc_id].text[c.start:c.end] == c.text for c in chunks)
    assert all(c.prefix for c in chunks)  # the contextualize step ran, prefix kept apart


def test_stages_pickle_without_their_model(stages, single):
    # in memory only: datasets.map(num_proc=N) and Ray send stage objects to worker processes
    # by pickling them; nothing here writes a pickle to disk (caches are NPZ/JSON)
    clone = pickle.loads(pickle.dumps(stages[1]))
    assert clone._embedder is None and stages[1]._embedder is not None


def test_datasets_map_with_two_processes_matches_one(stages, docs, single):
    _same(single, run_datasets(stages, docs, num_proc=2, batch_size=3))


class _BarsSeen:
    """A stage that records, in each worker, whether progress bars would be drawn there."""

    def __call__(self, batch):
        import datasets
        from transformers.utils import logging as hf_logging

        seen = hf_logging.is_progress_bar_enabled() or datasets.is_progress_bar_enabled()
        return {"bars": [seen] * len(batch["doc_id"])}


def test_forked_workers_draw_no_progress_bars_and_the_setting_comes_back(docs):
    # in a notebook, a bar drawn in a forked worker (the encoder loading its weights) is a
    # widget message the kernel will not send from a fork: it prints the message whole
    from transformers.utils import logging as hf_logging

    before = hf_logging.is_progress_bar_enabled()
    try:
        hf_logging.enable_progress_bar()
        out = run_datasets([_BarsSeen()], docs, num_proc=2, batch_size=2)
        assert len(out["bars"]) == len(docs) and not any(out["bars"])
        assert hf_logging.is_progress_bar_enabled()  # the caller's setting, back
        hf_logging.disable_progress_bar()
        run_datasets([_BarsSeen()], docs, num_proc=2, batch_size=2)
        assert not hf_logging.is_progress_bar_enabled()
    finally:
        (hf_logging.enable_progress_bar if before else hf_logging.disable_progress_bar)()


@pytest.mark.long  # starts a Ray runtime here (about 35 s): in make test, as the cluster test is
def test_ray_data_local_mode_matches_one_process(stages, docs, single):
    # Ray comes with `make setup`: no skip (a missing Ray is an install error here)
    import ray

    try:
        _same(single, run_ray(stages, docs, concurrency=2, batch_size=3))
    finally:
        ray.shutdown()


def test_late_stage_one_chunk_document_is_its_plain_embedding():
    doc = Document("d", "Passwords expire after ninety days unless an admin renews them.")
    batch = documents_to_batch([doc])
    late = LateEmbedStage("fixed_chars:1000/0", threads=1)(batch)
    plain = EmbedStage(threads=1)(ChunkStage("fixed_chars:1000/0")(batch))
    assert late["chunk_id"] == plain["chunk_id"]
    np.testing.assert_allclose(late["vector"], plain["vector"], atol=1e-5)
