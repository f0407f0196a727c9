"""Token counting with character offsets, for any tokenizer a chunker budgets in.

Two families: Hugging Face fast tokenizers (the embedder's own, e.g. MiniLM's WordPiece) and
OpenAI's cl100k_base (what Chroma's report measured chunk sizes in; the offline package
`bpe-openai` provides it with a tiktoken-compatible API). Both expose the same interface:

- ``count(text)``: number of tokens (no special tokens);
- ``spans(text)``: ``(start, end)`` character span of every token, so a chunker can tokenise a
  document once and cut on token boundaries without re-counting each candidate piece.

    >>> tok = get_tokenizer("cl100k_base")
    >>> tok.count("Refunds are available within 14 days.")
    8
"""

from __future__ import annotations

from functools import lru_cache
from typing import Protocol


class Tokenizer(Protocol):
    name: str

    def count(self, text: str) -> int: ...

    def spans(self, text: str) -> list[tuple[int, int]]: ...


class TiktokenTokenizer:
    """cl100k_base / o200k_base through `bpe-openai` (or tiktoken, when its files are cached)."""

    def __init__(self, encoding: str = "cl100k_base"):
        try:
            import bpe_openai

            self._enc = bpe_openai.get_encoding(encoding)
        except ImportError:  # pragma: no cover - tiktoken needs a download on first use
            import tiktoken

            self._enc = tiktoken.get_encoding(encoding)
        self.name = encoding

    def encode(self, text: str) -> list[int]:
        return self._enc.encode(text, disallowed_special=())

    def count(self, text: str) -> int:
        return len(self.encode(text))

    def spans(self, text: str) -> list[tuple[int, int]]:
        ids = self.encode(text)
        if not ids:
            return []
        _, starts = self._enc.decode_with_offsets(ids)
        ends = starts[1:] + [len(text)]
        return list(zip(starts, ends))


class HFTokenizer:
    """A Hugging Face fast tokenizer (the embedder's own), special tokens excluded."""

    def __init__(self, tokenizer, name: str | None = None):
        self._tok = tokenizer
        self.name = name or getattr(tokenizer, "name_or_path", "hf")

    def count(self, text: str) -> int:
        return len(self._tok(text, add_special_tokens=False, truncation=False)["input_ids"])

    def count_batch(self, texts: list[str]) -> list[int]:
        enc = self._tok(texts, add_special_tokens=False, truncation=False)
        return [len(ids) for ids in enc["input_ids"]]

    def spans(self, text: str) -> list[tuple[int, int]]:
        enc = self._tok(text, add_special_tokens=False, truncation=False,
                        return_offsets_mapping=True)
        return [tuple(s) for s in enc["offset_mapping"]]


class CharTokenizer:
    """Counts characters: lets every token-budgeted chunker run on a character budget."""

    name = "chars"

    def count(self, text: str) -> int:
        return len(text)

    def spans(self, text: str) -> list[tuple[int, int]]:
        return [(i, i + 1) for i in range(len(text))]


@lru_cache(maxsize=8)
def get_tokenizer(name: str = "cl100k_base") -> Tokenizer:
    """`cl100k_base`, `o200k_base`, `chars`, or a Hugging Face tokenizer id / local folder
    (``minilm`` is the bundled all-MiniLM-L6-v2's WordPiece tokenizer)."""
    if name in ("cl100k_base", "o200k_base"):
        return TiktokenTokenizer(name)
    if name == "chars":
        return CharTokenizer()
    from transformers import AutoTokenizer

    from .embed import resolve_model

    path = resolve_model(None if name == "minilm" else name)
    return HFTokenizer(AutoTokenizer.from_pretrained(path), name=name)
