"""Chunkers: every strategy the course compares, behind one interface (`Chunker.chunk`).

Get one by name, with its settings, e.g. ``get_chunker("recursive", size=250, overlap=0)``, or
from a compact spec as the command line takes it: ``get_chunker("recursive:250/0")``.
"""

from __future__ import annotations

from typing import Any

from .base import Chunker
from .baselines import ChonkieRecursive, LangchainMarkdownRecursive
from .classes import (ApiChunker, ChatChunker, ClauseChunker, SectionChunker, TableRowChunker,
                      TranscriptChunker)
from .code import CodeChunker
from .fixed import FixedCharChunker, FixedTokenChunker, PageChunker
from .groups import SentenceGroupChunker
from .lint import lint_corpus
from .recursive import MARKDOWN_SEPARATORS, RecursiveChunker
from .router import Router
from .semantic import ClusterSemanticChunker, SemanticChunker
from .structure import StructureChunker

REGISTRY: dict[str, type[Chunker]] = {
    "fixed_chars": FixedCharChunker,
    "fixed_tokens": FixedTokenChunker,
    "recursive": RecursiveChunker,
    "structure": StructureChunker,
    "clause": ClauseChunker,
    "section": SectionChunker,
    "api": ApiChunker,
    "transcript": TranscriptChunker,
    "chat": ChatChunker,
    "table_rows": TableRowChunker,
    "code": CodeChunker,
    "semantic": SemanticChunker,
    "cluster_semantic": ClusterSemanticChunker,
    "router": Router,
    "sentences": SentenceGroupChunker,
    "pages": PageChunker,
}


def simple_baselines(paged: bool = False) -> list[Chunker]:
    """The seven simple baselines every chunker is compared with: fixed characters 250/0 and
    1,000/200, fixed tokens 512/64 (MiniLM's and cl100k's), recursive 1,000/200 characters,
    langchain's Markdown + recursive splitter and chonkie's recursive chunker (254 MiniLM
    tokens, what the encoder reads); with `paged` (a corpus of PDFs), an eighth: one chunk per
    page (`PageChunker`). ``get_chunkers("baselines")`` names them all."""
    return [FixedCharChunker(250, 0), FixedCharChunker(1000, 200),
            FixedTokenChunker(512, 64, tokenizer="minilm"),
            FixedTokenChunker(512, 64, tokenizer="cl100k_base"),
            RecursiveChunker(1000, 200, tokenizer="chars", separators=["\n\n", "\n", " ", ""]),
            LangchainMarkdownRecursive(254, 0, "minilm"), ChonkieRecursive(254),
            *([PageChunker()] if paged else [])]


BASELINES = "baselines"  # in a list of chunker specs: every simple baseline


def get_chunkers(spec: str) -> list[Chunker]:
    """Chunkers from a comma-separated list of specs (`get_chunker`); the word ``baselines``
    stands for every simple baseline (`simple_baselines`), so a comparison is with all seven
    and never with a best-of-a-few.

    >>> [c.label for c in get_chunkers("baselines,router")][-2:]
    ['chonkie recursive(254,minilm)', 'router']
    """
    out: list[Chunker] = []
    for s in (x.strip() for x in spec.split(",")):
        out += simple_baselines() if s == BASELINES else [get_chunker(s)]
    return out


def register(name: str, cls: type[Chunker]) -> None:
    REGISTRY[name] = cls


def get_chunker(spec: str, **params: Any) -> Chunker:
    """``"name"`` or ``"name:size/overlap"`` (+ keyword settings) -> a chunker instance."""
    name, _, sizes = spec.partition(":")
    if name not in REGISTRY:
        raise KeyError(f"unknown chunker {name!r}; choose from {', '.join(sorted(REGISTRY))}")
    if sizes:
        size, _, overlap = sizes.partition("/")
        params.setdefault("size", int(size))
        if overlap:
            params.setdefault("overlap", int(overlap))
    return REGISTRY[name](**params)


__all__ = ["SentenceGroupChunker", "Chunker", "FixedCharChunker", "FixedTokenChunker", "PageChunker",
           "RecursiveChunker", "REGISTRY",
           "get_chunker", "get_chunkers", "simple_baselines", "BASELINES", "register", "StructureChunker", "ClauseChunker", "SectionChunker",
           "ApiChunker", "TranscriptChunker", "ChatChunker", "TableRowChunker", "CodeChunker",
           "SemanticChunker", "ClusterSemanticChunker", "Router", "ChonkieRecursive",
           "LangchainMarkdownRecursive", "lint_corpus", "MARKDOWN_SEPARATORS"]
