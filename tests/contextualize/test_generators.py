"""Contextual preambles: caching, cache keys, flags, no self-quoting, the real local LLM,
placement; and the rerank stage's interface. (The API generator: test_anthropic.py; the rerank stage: tests/test_rerank.py.)"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from ragkit import contextualize as ctx
from ragkit.cache import JsonlCache
from ragkit.contextualize import (Contextualizer, ExtractiveContextualizer, Preamble,
                                  StructuralContextualizer, contextualize, loop_fraction,
                                  quality_flags, verbatim_fraction)
from ragkit.types import Chunk, Document

# the shared policy document and its three hand-cut chunks (tests/conftest.py)
from conftest import REFUND_TEXT as DOC_TEXT
from conftest import refund_chunks as _chunks
from conftest import refund_doc as _doc


class Fake(Contextualizer):
    """Returns scripted preambles and counts its calls."""

    name = "fake"
    model = "fake-1"

    def __init__(self, texts=None, budget: int = 100):
        super().__init__(budget, budget_tokenizer="chars")
        self.texts = texts or {}
        self.calls = 0

    def generate(self, doc, chunk):
        self.calls += 1
        return Preamble(self.texts.get(chunk.start, f"context of {chunk.start}"))


# --------------------------------------------------------------------------- caching and keys


def test_cached_second_call_makes_no_model_call(tmp_path):
    doc = _doc()
    chunks = _chunks(doc)
    gen = Fake()
    cache = tmp_path / "c.jsonl"
    first = contextualize([doc], chunks, gen, cache=cache)
    assert gen.calls == 3
    second = contextualize([doc], chunks, Fake(), cache=JsonlCache(cache))
    assert [c.prefix for c in second] == [c.prefix for c in first]
    g2 = Fake()
    contextualize([doc], chunks, g2, cache=JsonlCache(cache))
    assert g2.calls == 0 and g2.stats["cache_hits"] == 3
    # the body is untouched, the order kept, the metadata names the generator
    assert [c.text for c in second] == [c.text for c in chunks]
    assert all(doc.text[c.start:c.end] == c.text for c in second)
    assert second[0].metadata["context_generator"] == "fake"
    assert second[0].metadata["context_model"] == "fake-1"
    # regenerate, by argument or by environment
    g3 = Fake()
    contextualize([doc], chunks, g3, cache=JsonlCache(cache), regenerate=True)
    assert g3.calls == 3


def test_regenerate_env(tmp_path, monkeypatch):
    doc = _doc()
    cache = tmp_path / "c.jsonl"
    contextualize([doc], _chunks(doc), Fake(), cache=cache)
    monkeypatch.setenv("RAGKIT_REGENERATE_PREAMBLES", "1")
    g = Fake()
    contextualize([doc], _chunks(doc), g, cache=JsonlCache(cache))
    assert g.calls == 3


def test_template_version_and_model_change_the_key(tmp_path):
    doc = _doc()
    c = _chunks(doc)[0]
    base = Fake()
    k0 = base.key(doc, c)
    assert Fake().key(doc, c) == k0  # stable
    other_model = Fake()
    other_model.model = "fake-2"
    other_template = Fake()
    other_template.template_version = "2"
    other_budget = Fake(budget=50)
    keys = {k0, other_model.key(doc, c), other_template.key(doc, c), other_budget.key(doc, c)}
    assert len(keys) == 4
    edited = Document(id=doc.id, text=doc.text.replace("25 EUR", "30 EUR"), metadata=doc.metadata)
    assert base.key(edited, Chunk.make(edited, c.start, c.end, "test")) != k0
    # and the cache really misses after a template change
    cache = tmp_path / "c.jsonl"
    contextualize([doc], [c], base, cache=cache)
    contextualize([doc], [c], other_template, cache=JsonlCache(cache))
    assert other_template.calls == 1


def test_cache_file_is_sorted_after_rewrite(tmp_path):
    doc = _doc()
    cache = JsonlCache(tmp_path / "c.jsonl")
    contextualize([doc], _chunks(doc), Fake(), cache=cache)
    cache.rewrite()
    keys = [json.loads(line)["key"] for line in cache.path.read_text().splitlines()]
    assert keys == sorted(keys) and len(keys) == 3


# --------------------------------------------------------------------------- flags


def test_flags_on_crafted_examples():
    chunk = ("Annual plans can be cancelled within 30 days of purchase for a full refund. After "
             "30 days the unused months are refunded pro rata.")
    verbatim = ("This chunk says annual plans can be cancelled within 30 days of purchase for a "
                "full refund.")
    assert verbatim_fraction(verbatim, chunk) > 0.5
    assert "verbatim" in quality_flags(verbatim, chunk, 100, 10)
    fresh = "The refund rules of the Refund Policy, section on yearly subscriptions."
    assert quality_flags(fresh, chunk, 100, 10) == []
    loop = "The policy covers refunds. " * 5
    assert loop_fraction(loop) > 0.25 and "loop" in quality_flags(loop, chunk, 100, 10)
    assert "loop" in quality_flags("Refund policy: ==========================", chunk, 100, 5)
    assert quality_flags(fresh, chunk, budget=5, tokens=12) == ["over_budget"]
    assert quality_flags("   ", chunk, 100, 0) == ["empty"]


LONG = " ".join(f"term{i}" for i in range(60))  # 60 distinct words, ~400 characters


def test_flags_are_recorded_and_counted(tmp_path):
    doc = _doc()
    chunks = _chunks(doc)
    a, m, p = (c.start for c in chunks)
    gen = Fake({a: chunks[0].text[:80], m: "Monthly plans. " * 6, p: LONG},
               budget=120)
    out = contextualize([doc], chunks, gen, cache=tmp_path / "c.jsonl")
    assert "verbatim" in out[0].metadata["context_flags"]
    assert "loop" in out[1].metadata["context_flags"]
    assert "over_budget" in out[2].metadata["context_flags"]
    assert gen.stats["verbatim"] == 1 and gen.stats["loop"] == 1
    assert gen.stats["over_budget"] == 1 and gen.stats["flagged"] == 3
    recs = JsonlCache(tmp_path / "c.jsonl").load().values()
    assert Counter(f for r in recs for f in r["flags"])["over_budget"] == 1
    # over-budget preambles are kept whole, never silently shortened
    assert out[2].prefix == LONG


# --------------------------------------------------------------------------- no self-quoting


@pytest.fixture(scope="module")
def course_sample():
    from ragkit.chunkers import RecursiveChunker
    from ragkit.config import get_settings
    from ragkit.text import load_corpus

    docs = {d.id: d for d in load_corpus(get_settings().data_dir / "corpus").documents}
    picked = [docs[i] for i in ("refund-policy-2024", "paper-edge-thermal-study",
                                "refund_calculator" if "refund_calculator" in docs
                                else "refund-calculator")]
    return picked, RecursiveChunker(200, 0, "minilm").chunk_all(picked)


def test_structural_and_extractive_never_quote_the_chunk(course_sample, embedder):
    docs, chunks = course_sample
    by_id = {d.id: d for d in docs}
    structural = StructuralContextualizer(budget=60)
    extractive = ExtractiveContextualizer(budget=60, embedder=embedder)
    for gen in (structural, extractive):
        for d in docs:
            mine = [c for c in chunks if c.doc_id == d.id]
            gen.prepare(d, mine)
            for c in mine:
                p = gen.generate(d, c)
                for s, e in p.sources:
                    assert e <= c.start or s >= c.end, (gen.name, c.start, (s, e))
                if gen is extractive:
                    pieces = p.text.split(" … ") if p.text else []
                else:
                    pieces = p.text.split("\n")[1:]  # the summary (the path is headings above)
                for piece in pieces:
                    assert piece.rstrip(" …") not in ctx._clean(c.text), (gen.name, piece)
                assert gen.count(p.text) <= 60 or "cut" in p.flags
    assert structural.generate(by_id["refund-policy-2024"], chunks[1]).text.startswith(
        "Refund Policy")


def test_structural_heading_path():
    doc = _doc()
    monthly = _chunks(doc)[1]
    p = StructuralContextualizer(budget=100).generate(doc, monthly)
    assert p.text.splitlines()[0] == "Refund Policy > Monthly plans"
    assert "This policy explains" in p.text  # the first paragraph, outside this chunk
    intro = _chunks(doc)[2]  # the first paragraph itself: not repeated
    assert StructuralContextualizer(budget=100).generate(doc, intro).text == "Refund Policy"
    cut = StructuralContextualizer(budget=12).generate(doc, monthly)
    assert "cut" in cut.flags and cut.text.endswith("…")


# --------------------------------------------------------------------------- placement


def test_placement_before_and_after(tmp_path):
    doc = _doc()
    c = _chunks(doc)[0]
    [before] = contextualize([doc], [c], Fake({c.start: "CTX"}), "before")
    assert before.embedding_text("before") == f"CTX\n\n{c.text}"
    assert before.embedding_text("after") == f"{c.text}\n\nCTX"
    assert before.metadata["context_placement"] == "before"
    [after] = contextualize([doc], [c], Fake({c.start: "CTX"}), "after")
    assert after.metadata["context_placement"] == "after"
    crumb = c.with_prefix("[Refund Policy]")
    [both] = contextualize([doc], [crumb], Fake({c.start: "CTX"}))
    assert both.prefix == "[Refund Policy]\nCTX" and both.text == c.text
    with pytest.raises(ValueError):
        contextualize([doc], [c], Fake(), "middle")  # type: ignore[arg-type]


# ------------------------------------------------------------------- the local LLM, for real


@pytest.fixture(scope="module")
def gemma_gen():
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (make setup-llm)")
    try:
        gen = ctx.gemma(budget=40)
    except ImportError as e:
        pytest.skip(f"gemma GGUF package missing: {e}")
    yield gen
    gen.close()


def test_gemma_real_deterministic_cached_and_reuse_invariant(gemma_gen, tmp_path):
    doc = _doc()
    chunks = _chunks(doc)[:2]
    cache = tmp_path / "gemma.jsonl"
    one = contextualize([doc], chunks, gemma_gen, cache=cache)
    calls = gemma_gen.stats["model_calls"]
    assert calls == 2 and gemma_gen.stats["prefix_reused"] >= 1
    two = contextualize([doc], chunks, gemma_gen, cache=cache, regenerate=True)
    assert [c.prefix for c in one] == [c.prefix for c in two]
    assert all(c.prefix.startswith("This chunk") for c in one)
    three = contextualize([doc], chunks, gemma_gen, cache=JsonlCache(cache))
    assert gemma_gen.stats["model_calls"] == calls + 2  # the cached call made none
    assert [c.prefix for c in three] == [c.prefix for c in one]
    # the KV cache is an optimisation only: a reset before every chunk gives the same text
    gemma_gen.reuse_prefix = False
    try:
        assert [gemma_gen.preamble(doc, c) for c in chunks] == [c.prefix for c in one]
    finally:
        gemma_gen.reuse_prefix = True
    rec = next(iter(JsonlCache(cache).load().values()))
    assert rec["model"] == "gemma-3-270m-Q4_K_M" and rec["settings"]["decoding"] == "greedy"
    assert rec["runtime"].startswith("llama-cpp-python")


# ------------------------------------------- without the llm extra: the committed caches still read


@pytest.mark.parametrize("name,finder", [("gemma", "gemma_gguf"), ("smollm2", "smollm2_gguf")])
def test_pinned_fingerprints_are_the_packaged_files(name, finder):
    """The fingerprints a cache-only generator keys by are those of the files the pinned
    packages ship (checked where the `llm` extra is installed)."""
    from ragkit.contextualize import llamacpp
    from ragkit.models import file_fingerprint

    try:
        path = getattr(llamacpp, finder)()
    except (ImportError, FileNotFoundError) as e:
        pytest.skip(f"the llm extra is not installed (make setup-llm): {e}")
    gen = ctx.make_contextualizer(name)
    assert llamacpp.PINNED_FINGERPRINTS[gen.model] == file_fingerprint(path)


@pytest.mark.parametrize("name,finder", [("gemma", "gemma_gguf"), ("smollm2", "smollm2_gguf")])
def test_without_the_package_a_generator_reads_its_cache_and_says_what_to_install(
        name, finder, monkeypatch):
    from ragkit.contextualize import llamacpp
    from ragkit.contextualize.cache import cached_documents
    from ragkit.evaluate.benchmarks import load_course

    def absent():
        raise ImportError(f"{name} needs the `llm` extra: `make setup-llm`")

    monkeypatch.setattr(llamacpp, finder, absent)
    gen = ctx.make_contextualizer(name)
    assert gen.model_path is None
    assert gen.settings()["fingerprint"] == llamacpp.PINNED_FINGERPRINTS[gen.model]
    from ragkit.chunkers import RecursiveChunker
    from ragkit.experiments import COURSE_CHUNKER

    course = load_course()
    pieces = RecursiveChunker(**COURSE_CHUNKER).chunk_all(course.documents)
    if name == "gemma":  # the course's committed gemma preambles are found without the file
        assert cached_documents("course", course.documents, pieces, gen)
    with pytest.raises(ImportError, match="make setup-llm"):
        gen.generate(course.documents[0], pieces[0])
    with pytest.raises(ValueError, match="fingerprint"):
        llamacpp.LlamaCppContextualizer(None, name="x", model="y")


def test_a_chunk_that_opens_with_a_heading_is_not_under_its_earlier_sibling():
    """Notebook 07's q012: a chunk starting at "## Can I get my money back?" read
    "Billing FAQ > What happens if a payment fails?", the section before it."""
    text = ("# Billing FAQ\n\nAnswers to billing questions, in one place for every customer.\n\n"
            "## What happens if a payment fails?\n\nWe retry the card three times.\n\n"
            "## Can I get my money back?\n\nRefunds are available within 14 days.\n")
    doc = Document("faq", text, {"title": "Billing FAQ"})
    start = text.index("## Can I")
    head = StructuralContextualizer(budget=60).generate(doc, Chunk.make(doc, start, len(text),
                                                                        "t")).text
    assert head.splitlines()[0] == "Billing FAQ"
    inside = text.index("Refunds")  # a chunk inside that section is under it
    head = StructuralContextualizer(budget=60).generate(doc, Chunk.make(doc, inside, len(text),
                                                                        "t")).text
    assert head.splitlines()[0] == "Billing FAQ > Can I get my money back?"
