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
           "get_chunker", "register", "StructureChunker", "ClauseChunker", "SectionChunker",
           "ApiChunker", "TranscriptChunker", "ChatChunker", "TableRowChunker", "CodeChunker",
           "SemanticChunker", "ClusterSemanticChunker", "Router", "ChonkieRecursive",
           "LangchainMarkdownRecursive", "lint_corpus", "MARKDOWN_SEPARATORS"]
