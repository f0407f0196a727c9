"""`ragkit eval --index` scores a built index exactly as `ragkit eval` scores the same strategy
in memory: searched deep enough for nDCG@10 and the largest budget, with the budgeted metrics."""

import json
import shutil

import pytest

from conftest import ROOT
from ragkit.chunkers import get_chunker
from ragkit.evaluate import BUDGETS, load_folder
from ragkit.experiments import run_experiment
from ragkit.tools import index_build

DOCS = ("refund-policy-2024", "billing-faq", "edge-hardware-warranty")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """Three course documents, the golden questions whose evidence is all in them, and the
    index `ragkit index` builds from them."""
    root = tmp_path_factory.mktemp("tiny")
    (root / "corpus").mkdir()
    for d in DOCS:
        shutil.copy(ROOT / "data" / "corpus" / f"{d}.md", root / "corpus")
    lines = [line for line in (ROOT / "data" / "golden" / "questions.jsonl").read_text(
        encoding="utf-8").splitlines() if line.strip() and
        {e["doc_id"] for e in json.loads(line).get("evidence", [])} <= set(DOCS)]
    (root / "golden.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert index_build.main([str(root / "corpus"), "--out", str(root / "ix")]) == 0
    bench, _, _ = load_folder(str(root / "corpus"), str(root / "golden.jsonl"))
    return root, bench


def test_index_path_and_in_memory_path_give_the_same_metrics(tiny, embedder):
    root, bench = tiny
    assert len([q for q in bench.queries if q.gold]) >= 10
    by_index = index_build.evaluate_index(bench, str(root / "ix"), embedder, k=5)
    in_memory = run_experiment(bench, get_chunker("recursive:250/0"), embedder, k=5)
    assert by_index.depth >= 10 and by_index.depth == in_memory.depth  # not k = 5
    for b in BUDGETS:
        for m in ("recall", "pass", "iou"):
            assert f"{m}@B{b}" in by_index.means
    assert set(by_index.means) == set(in_memory.means)
    for metric, value in in_memory.means.items():
        assert by_index.means[metric] == pytest.approx(value, abs=1e-6), metric
    # the same hits, in the same order, for every question
    for qid, hits in in_memory.hits.items():
        assert [h.chunk.id for h in by_index.hits[qid]] == [h.chunk.id for h in hits], qid


def test_an_index_of_other_documents_is_a_clear_error(tiny, embedder, tmp_path):
    root, bench = tiny
    (tmp_path / "other").mkdir()
    shutil.copy(ROOT / "data" / "corpus" / "billing-faq.md", tmp_path / "other" / "x.md")
    other, _, _ = load_folder(str(tmp_path / "other"), str(root / "golden.jsonl"))
    other.documents[0] = type(other.documents[0])("not-in-the-index", "text", {})
    with pytest.raises(ValueError, match="holds none of the 1 documents"):
        index_build.evaluate_index(other, str(root / "ix"), embedder, k=5)


def test_the_eval_command_prints_and_records_the_budgeted_metrics(tiny, tmp_path, capsys):
    from ragkit.tools.cli import main

    root, _ = tiny
    results = tmp_path / "rows.jsonl"
    assert main(["eval", "--corpus", str(root / "corpus"), "--golden",
                 str(root / "golden.jsonl"), "--index", str(root / "ix"),
                 "--results", str(results)]) == 0
    out = capsys.readouterr().out
    assert "recall@B1024" in out and "pass@B4096" in out and "ndcg@10" in out
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert {r["budget"] for r in rows if r["metric"] == "pass@B"} == set(BUDGETS)
    assert {r["experiment"] for r in rows} == {"eval_index"}


@pytest.mark.parametrize("fingerprint", [True, False], ids=["fingerprint", "built-before"])
def test_an_index_of_an_edited_corpus_is_refused_naming_the_documents(tiny, tmp_path,
                                                                       fingerprint, capsys):
    """Issue 51, case 4: the index of a corpus, then two of its documents edited (3 KB put in
    front): eval --index scored 0 % and exited 0. Now exit 3, one line naming both documents,
    both with the corpus fingerprint the index records and (an index built before it) by its
    chunks no longer found at their spans."""
    from transformers.utils import logging as hf_logging

    from ragkit.tools.cli import main

    shown = hf_logging.is_progress_bar_enabled()
    hf_logging.enable_progress_bar()  # as another test may leave it: still one line on stderr
    root, _ = tiny
    index = tmp_path / "ix"
    shutil.copytree(root / "ix", index)
    assert (index / index_build.FINGERPRINT).is_file()
    if not fingerprint:
        (index / index_build.FINGERPRINT).unlink()
    corpus = tmp_path / "corpus"
    shutil.copytree(root / "corpus", corpus)
    for name in DOCS[:2]:
        path = corpus / f"{name}.md"
        text = path.read_text(encoding="utf-8")
        head, sep, body = text.partition("\n---\n") if text.startswith("---") else ("", "", text)
        path.write_text(head + sep + "Prepended. " * 280 + "\n\n" + body, encoding="utf-8")
    try:
        code = main(["eval", "--corpus", str(corpus), "--golden", str(root / "golden.jsonl"),
                     "--index", str(index), "--results", str(tmp_path / "rows.jsonl")])
    finally:
        (hf_logging.enable_progress_bar if shown else hf_logging.disable_progress_bar)()
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 3 and len(err) == 1, err
    assert "another version of this corpus" in err[0] and "2 document(s) changed" in err[0]
    assert DOCS[0] in err[0] and DOCS[1] in err[0] and DOCS[2] not in err[0]
    assert not (tmp_path / "rows.jsonl").exists()


def test_a_truncated_index_file_is_one_line(tiny, tmp_path, capsys):
    """Issue 51, case 10: a truncated index.faiss under eval --index was faiss's RuntimeError
    traceback (exit 4); now one line naming the file, exit 3."""
    from ragkit.tools.cli import main

    root, _ = tiny
    index = tmp_path / "ix"
    shutil.copytree(root / "ix", index)
    data = (index / "index.faiss").read_bytes()
    (index / "index.faiss").write_bytes(data[: len(data) // 2])
    code = main(["eval", "--corpus", str(root / "corpus"), "--golden",
                 str(root / "golden.jsonl"), "--index", str(index), "--results",
                 str(tmp_path / "rows.jsonl")])
    err = capsys.readouterr().err
    assert code == 3 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "index.faiss: not a faiss index ragkit can read" in err
