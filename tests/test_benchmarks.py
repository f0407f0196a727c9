import shutil

import pytest

from conftest import needs_benchmarks
from ragkit.config import get_settings
from ragkit.evaluate import benchmarks as B


@needs_benchmarks()
def test_chroma_loader_gold_spans_match_references():
    bench = B.load_chroma()
    assert len(bench.documents) == 5 and len(bench.queries) == 472
    assert sum(len(q.gold) for q in bench.queries) == 790
    docs = bench.docs_by_id()
    for q in bench.queries[:50]:
        for g in q.gold:
            assert 0 <= g.start < g.end <= len(docs[g.doc_id].text)


@needs_benchmarks()
def test_anthropic_loader_gold_is_the_golden_chunk_span():
    bench = B.load_anthropic()
    assert len(bench.documents) == 90 and len(bench.queries) == 248 and len(bench.chunks) == 737
    assert sum(len(q.gold) for q in bench.queries) == 306
    spans = {(c.doc_id, c.start, c.end) for c in bench.chunks}
    assert all((g.doc_id, g.start, g.end) in spans for q in bench.queries for g in q.gold)
    assert sum(len(d.text) for d in bench.documents) == 497_299


@needs_benchmarks()
def test_as_hugging_face_datasets():
    docs, qs = B.load_chroma().to_datasets()
    assert docs.num_rows == 5 and qs.num_rows == 472
    assert set(qs.column_names) >= {"query_id", "question", "gold"}


@needs_benchmarks()
def test_wrong_checksum_is_refused(tmp_path):
    src = get_settings().benchmarks_dir
    shutil.copytree(src, tmp_path / "b", dirs_exist_ok=True)
    target = tmp_path / "b" / "chroma" / "questions_df.csv"
    target.chmod(0o644)
    target.write_text(target.read_text() + "\n")
    with pytest.raises(B.ChecksumError, match="differs"):
        B.fetch("chroma/questions_df.csv", tmp_path / "b")


def test_missing_everywhere_says_what_to_set(tmp_path, monkeypatch):
    monkeypatch.delenv("RAGKIT_BENCHMARKS_DIR", raising=False)
    monkeypatch.setenv("RAGKIT_CACHE_DIR", str(tmp_path))
    with pytest.raises(B.BenchmarkUnavailable, match="RAGKIT_BENCHMARKS_DIR"):
        B.fetch("chroma/questions_df.csv", allow_download=False)


def test_download_path_verifies_checksum(tmp_path, monkeypatch):
    """The online path, with the network replaced by a local fake serving wrong bytes."""
    import io
    import urllib.request

    monkeypatch.delenv("RAGKIT_BENCHMARKS_DIR", raising=False)
    monkeypatch.setenv("RAGKIT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(urllib.request, "urlopen", lambda url, timeout: io.BytesIO(b"tampered"))
    with pytest.raises(B.ChecksumError):
        B.fetch("chroma/corpora/chatlogs.md")
    assert not (tmp_path / "benchmarks" / "chroma" / "corpora" / "chatlogs.md").exists()


def test_unknown_benchmark():
    with pytest.raises(KeyError, match="unknown benchmark"):
        B.load("nope")


@needs_benchmarks()
def test_chonkie_chunks_whose_text_differs_are_relocated_and_flagged():
    pytest.importorskip("chonkie")
    from ragkit.chunkers import ChonkieRecursive
    from ragkit.types import check_chunks

    doc = B.load_anthropic().docs_by_id()["doc_20"]  # indented byte strings: chonkie 1.7.0
    chunker = ChonkieRecursive(254)
    with pytest.warns(UserWarning, match="differs from the source"):
        chunks = chunker.chunk(doc)
    check_chunks(doc, chunks)  # every chunk is its span
    # whitespace-rejoined chunks are found again; chunks chonkie rebuilt from WordPiece tokens
    # ("##6 - 941 ...") exist nowhere in the source: dropped, and counted in the row's flags
    assert chunker.relocated > 0 and chunker.unlocated > 0
    assert chunker.flags == [f"chonkie_relocated:{chunker.relocated}",
                               f"unlocated_chunks:{chunker.unlocated}"]
    starts = [c.start for c in chunks]
    assert starts == sorted(starts)


@needs_benchmarks()
@pytest.mark.parametrize("name", ["chroma", "anthropic"])
def test_the_smoke_slices_are_prefixes_that_keep_their_gold_and_chunks(name):
    """Issue 34: the smoke profile cuts documents at a paragraph break (`Benchmark.head`);
    every kept text is a prefix of its document, and every kept question's gold and every kept
    upstream chunk read exactly what they read in the whole benchmark."""
    full = B.load(name)
    smoke = full.for_profile("smoke")
    whole = full.docs_by_id()
    assert smoke.queries and len(smoke.queries) <= 24
    assert sum(len(d.text) for d in smoke.documents) < 45_000
    for d in smoke.documents:
        assert whole[d.id].text.startswith(d.text)
        assert len(d.text) == len(whole[d.id].text) or whole[d.id].text[len(d.text):].startswith(
            "\n\n")
    ids = {q.id for q in full.queries}
    kept = smoke.docs_by_id()
    for q in smoke.queries:
        assert q.id in ids
        for g in q.gold:
            assert kept[g.doc_id].text[g.start:g.end] == whole[g.doc_id].text[g.start:g.end]
    for c in smoke.chunks:
        assert kept[c.doc_id].text[c.start:c.end] == c.text
    cut = full.head(5_000)
    assert all(len(d.text) <= 5_000 for d in cut.documents)
    assert {q.id for q in cut.queries} == {
        q.id for q in full.queries
        if all(g.end <= len(cut.docs_by_id()[g.doc_id].text) for g in q.gold)}
