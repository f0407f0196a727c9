"""Sharded output (ragkit.scale.shards): a run killed after a shard resumes to the same bytes."""

import json

import numpy as np
import pytest

from ragkit.scale import ChunkStage, EmbedStage, ShardError, ShardSet, ShardWarning, build_shards
from ragkit.scale.shards import JOURNAL, MANIFEST
from ragkit.text import load_corpus

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
    man = ShardSet(tmp_path / "crashed").manifest
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


# -- the manifest: O(shards) bytes, resumable, every shard's hash checked ----------------------

def _small_docs(n):
    return [Document(f"d{i:03d}", f"Document {i}. " + "Some words about refunds. " * 8)
            for i in range(n)]


def _chunk_only():
    return [ChunkStage("fixed_chars:60/0")]


def test_writing_n_shards_writes_o_n_manifest_bytes(tmp_path):
    """After each shard, compare the manifest files with the previous look: an append adds its
    new bytes, a file replaced or rewritten counts in full. Rewriting a growing list after each
    shard would total about n/2 final manifests; the journal totals about two."""
    folder = tmp_path / "s"
    seen = {}
    written = [0]

    def look(_k=None):
        for path in (folder / MANIFEST, folder / JOURNAL):
            if not path.exists():
                seen.pop(path.name, None)
                continue
            st, data = path.stat(), path.read_bytes()
            old = seen.get(path.name)
            if old is None or (st.st_ino, st.st_mtime_ns) != old[0] and not (
                    data.startswith(old[1]) and path.name == JOURNAL):
                written[0] += len(data)  # a new or replaced file: every byte written
            elif data != old[1]:
                written[0] += len(data) - len(old[1])  # appended
            seen[path.name] = ((st.st_ino, st.st_mtime_ns), data)

    n = 40
    shards = build_shards(_small_docs(n), folder, _chunk_only(), shard_docs=1, after_shard=look)
    look()
    final = len((folder / MANIFEST).read_bytes())
    assert len(shards.shards) == n and shards.complete and not (folder / JOURNAL).exists()
    assert written[0] <= 3 * final, (written[0], final)  # O(n); the old rewrite: ~20x final


def test_n_shards_write_the_manifest_twice_and_append_one_journal_line_each(tmp_path,
                                                                           monkeypatch):
    """Counted, not measured: the whole manifest is written when the run starts and when it
    ends, whatever n; each shard adds one line to the journal."""
    from ragkit.scale import shards as mod

    writes, appends = [], []
    write, append = mod.atomic_write_text, mod._append_entry
    monkeypatch.setattr(mod, "atomic_write_text",
                        lambda path, text: writes.append(path.name) or write(path, text))
    monkeypatch.setattr(mod, "_append_entry",
                        lambda folder, entry: appends.append(entry["name"]) or append(folder,
                                                                                     entry))
    for n in (5, 40):
        writes.clear(), appends.clear()
        build_shards(_small_docs(n), tmp_path / f"s{n}", _chunk_only(), shard_docs=1)
        assert writes == [MANIFEST, MANIFEST]
        assert appends == [f"shard-{k:05d}.parquet" for k in range(n)]


def test_a_killed_run_resumes_only_the_missing_shards_even_with_a_torn_journal_line(
        tmp_path, monkeypatch):
    docs = _small_docs(6)
    whole = build_shards(docs, tmp_path / "whole", _chunk_only(), shard_docs=1)

    def crash_after_2(k):
        if k == 2:
            raise Crash
    with pytest.raises(Crash):
        build_shards(docs, tmp_path / "s", _chunk_only(), shard_docs=1, after_shard=crash_after_2)
    with open(tmp_path / "s" / JOURNAL, "ab") as f:  # killed while appending shard 3's line
        f.write(b'{"name": "shard-00003.parq')
    assert len(ShardSet(tmp_path / "s").shards) == 3  # a reader skips the torn line too

    made = []
    call = ChunkStage.__call__
    monkeypatch.setattr(ChunkStage, "__call__",
                        lambda self, b: made.extend(b["doc_id"]) or call(self, b))
    resumed = build_shards(docs, tmp_path / "s", _chunk_only(), shard_docs=1)
    assert made == ["d003", "d004", "d005"]  # shards 0-2 were on disk and recorded
    assert resumed.complete and _files(tmp_path / "s") == _files(whole.folder)


def test_a_folder_from_before_the_journal_reads_and_resumes(tmp_path):
    """The first format listed every finished shard in manifest.json itself."""
    docs = _small_docs(4)
    whole = build_shards(docs, tmp_path / "whole", _chunk_only(), shard_docs=1)
    old = tmp_path / "old"
    old.mkdir()
    man = json.loads((whole.folder / MANIFEST).read_text())
    for entry in man["shards"][:2]:
        (old / entry["name"]).write_bytes((whole.folder / entry["name"]).read_bytes())
    (old / MANIFEST).write_text(json.dumps({**man, "shards": man["shards"][:2],
                                            "complete": False}, indent=1, sort_keys=True))
    assert len(ShardSet(old)) == sum(e["rows"] for e in man["shards"][:2])
    resumed = build_shards(docs, old, _chunk_only(), shard_docs=1)
    assert resumed.complete and _files(old) == _files(whole.folder)


def test_a_changed_shard_is_a_clear_error_when_read_and_made_again_on_resume(tmp_path):
    docs = _small_docs(3)
    folder = tmp_path / "s"
    build_shards(docs, folder, _chunk_only(), shard_docs=1)
    good = _files(folder)
    path = folder / "shard-00001.parquet"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit
    path.write_bytes(bytes(data))

    shards = ShardSet(folder)
    assert len(shards.table(0)) > 0  # the shards left alone still read
    with pytest.raises(ShardError, match=r"shard-00001\.parquet: its sha256 is .* not the"):
        shards.column("text")
    (folder / "shard-00002.parquet").unlink()
    with pytest.raises(ShardError, match=r"shard-00002\.parquet: missing"):
        ShardSet(folder).table(2)
    with pytest.warns(ShardWarning) as caught:
        repaired = build_shards(docs, folder, _chunk_only(), shard_docs=1)
    assert sorted(str(w.message).split(":")[0].rsplit("/", 1)[1] for w in caught) == [
        "shard-00001.parquet", "shard-00002.parquet"]
    assert _files(folder) == good
    assert len(repaired.column("text")) == len(repaired)
