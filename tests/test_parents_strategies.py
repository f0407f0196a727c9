"""Notebook 06's five strategies (`ragkit.retrieve.comparison_strategies`)."""

from ragkit.chunkers import StructureChunker
from ragkit.evaluate import Benchmark
from ragkit.retrieve import comparison_strategies
from ragkit.types import Document

TEXT = ("# Refund Policy\n\n## Refunds\n\n" + " ".join(
    f"Sentence {i} talks about refunds and windows." for i in range(30)) +
    "\n\n## Data retention\n\n" + " ".join(
    f"Retention fact {i} says logs are kept for a while." for i in range(30)) + "\n")


def test_five_strategies_share_one_parent_store(embedder):
    bench = Benchmark("t", [Document("d", TEXT, {"title": "Refund Policy"})], [])
    runs, pc = comparison_strategies(bench, embedder, StructureChunker(soft=300, hard=400),
                                     child_tokens=40, child_k=10, window=1)
    assert list(runs) == ["small (children)", "big (parents)", "small-to-big", "auto-merging",
                          "sentence window"]
    parents = list(pc.store.parents.values())
    assert runs["small-to-big"]["retriever"] is pc and runs["big (parents)"]["chunks"] == parents
    assert runs["auto-merging"]["retriever"].store is pc.store
    assert runs["auto-merging"]["chunks"] == parents + pc.children
    assert runs["sentence window"]["omega"] is False
    assert all(len(c.text.split()) <= 60 for c in pc.children)


def test_parent_child_and_sentence_retrievers_say_what_they_index(embedder):
    bench = Benchmark("t", [Document("d", TEXT, {"title": "Refund Policy"})], [])
    runs, pc = comparison_strategies(bench, embedder, StructureChunker(soft=300, hard=400),
                                     child_tokens=40, child_k=10, window=1)
    assert pc.n_indexed == len(pc.children) < len(pc.children) + len(pc.store.parents)
    assert runs["auto-merging"]["retriever"].n_indexed == len(pc.children)
    sentences = runs["sentence window"]["retriever"]
    assert sentences.n_indexed == len(sentences.sentences)
