"""The generator interface (`Contextualizer`, `Preamble`) and the quality checks every
preamble gets (`quality_flags`: verbatim, loop, over_budget, empty)."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, Sequence

from ..types import Chunk, Document, stable_hash, text_hash

Placement = Literal["before", "after"]
FLAGS = ("verbatim", "loop", "over_budget", "cut", "window", "empty", "chunk_cut")


@dataclass(frozen=True)
class Preamble:
    """What a generator returns: the text, its flags, and where it came from.

    `sources` are the document spans a structural/extractive preamble quotes (never inside the
    chunk); `info` holds generator details worth caching (window span, finish reason, usage).
    """

    text: str
    flags: tuple[str, ...] = ()
    sources: tuple[tuple[int, int], ...] = ()
    info: Mapping[str, Any] = field(default_factory=dict)


_WORD = re.compile(r"\w+|[^\w\s]+")


def words(text: str) -> list[str]:
    """Lower-cased words and punctuation runs: ``"Hi, there!" -> ['hi', ',', 'there', '!']``."""
    return [w.lower() for w in _WORD.findall(text)]


def verbatim_fraction(preamble: str, chunk_text: str, n: int = 4) -> float:
    """Share of the preamble's words that lie in a run of >= n words also found in the chunk.

    >>> verbatim_fraction("the fee is 2% of the amount", "a fee: the fee is 2% of the amount")
    1.0
    """
    p, c = words(preamble), words(chunk_text)
    if len(p) < n:
        return 1.0 if p and " ".join(p) in " ".join(c) else 0.0
    grams = {tuple(c[i:i + n]) for i in range(len(c) - n + 1)}
    covered = [False] * len(p)
    for i in range(len(p) - n + 1):
        if tuple(p[i:i + n]) in grams:
            covered[i:i + n] = [True] * n
    return sum(covered) / len(p)


def loop_fraction(text: str, n: int = 4) -> float:
    """Share of the word n-grams that repeat an earlier one (0 for fresh text, ->1 for a loop).

    >>> loop_fraction("a b c d a b c d a b c d")  # 9 four-word grams, 5 of them repeats
    0.5555555555555556
    """
    w = words(text)
    grams = [tuple(w[i:i + n]) for i in range(len(w) - n + 1)]
    return (len(grams) - len(set(grams))) / len(grams) if grams else 0.0


_CHAR_LOOP = re.compile(r"(.{3,}?)\1{3,}", re.S)


def quality_flags(preamble: str, chunk_text: str, budget: int, tokens: int) -> list[str]:
    """Flags for one preamble: ``empty``, ``verbatim`` (> 50 % copied from the chunk), ``loop``
    (> 25 % repeated 4-grams, or a stretch of text repeated 4+ times), ``over_budget``."""
    if not preamble.strip():
        return ["empty"]
    flags = []
    if verbatim_fraction(preamble, chunk_text) > 0.5:
        flags.append("verbatim")
    if loop_fraction(preamble) > 0.25 or _CHAR_LOOP.search(preamble):
        flags.append("loop")
    if tokens > budget:
        flags.append("over_budget")
    return flags


def _clean(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


class GeneratorUnavailable(RuntimeError):
    """A generator that cannot run here (no API key, an API that cannot be reached or refuses
    the request): a one-line message saying what to do, without the key."""


class Contextualizer(ABC):
    """A preamble generator. Subclasses set `name`, `model`, `template_version` and implement
    `generate`; everything that decides the output goes into `settings()` (and so the cache key).
    `stats` counts calls, cache hits and flags over the generator's lifetime."""

    name = "base"
    model = ""
    template_version = "1"

    def __init__(self, budget: int = 100, budget_tokenizer: str = "minilm"):
        if budget <= 0:
            raise ValueError(f"budget must be positive, got {budget}")
        self.budget = budget
        self.budget_tokenizer = budget_tokenizer
        self.stats: Counter = Counter()

    def settings(self) -> dict[str, Any]:
        return {"generator": self.name, "model": self.model,
                "template_version": self.template_version, "budget": self.budget,
                "budget_tokenizer": self.budget_tokenizer}

    def count(self, text: str) -> int:
        """Tokens of `text` in the budget tokenizer."""
        from ..text.tokens import count_tokens

        return count_tokens(text, self.budget_tokenizer)

    def key(self, doc: Document, chunk: Chunk) -> str:
        """Cache key: settings + document hash + chunk hash + span."""
        return stable_hash(self.settings(), doc.hash, text_hash(chunk.text), chunk.start,
                           chunk.end, n=32)

    def prepare(self, doc: Document, chunks: Sequence[Chunk]) -> None:
        """Called once per document before its chunks are generated (e.g. to batch encodes)."""

    @abstractmethod
    def generate(self, doc: Document, chunk: Chunk) -> Preamble:
        """The preamble for one chunk (uncached)."""

    def preamble(self, doc: Document, chunk: Chunk) -> str:
        return self.generate(doc, chunk).text

    def unavailable(self) -> str | None:
        """Why this generator cannot run here, known before any call (e.g. no API key), or
        None."""
        return None

    def record_info(self) -> dict[str, Any]:
        """Extra fields for cache records (e.g. the runtime's version); not part of the key."""
        return {}

    def close(self) -> None:
        """Release a loaded model."""
