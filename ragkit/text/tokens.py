"""Token counting with character offsets, for any tokenizer a chunker budgets in.

Two families: Hugging Face fast tokenizers (the embedder's own, e.g. MiniLM's WordPiece) and
OpenAI's cl100k_base (what Chroma's report measured chunk sizes in; the offline package
`bpe-openai` provides it with a tiktoken-compatible API). Both expose the same interface:

- ``count(text)``: number of tokens (no special tokens);
- ``spans(text)``: ``(start, end)`` character span of every token, so a chunker can tokenise a
  document once and cut on token boundaries without re-counting each candidate piece.

`count_tokens` is ragkit's one cache of token counts, keyed by (tokenizer name, text): the
context budget (cl100k_base), the chunkers' sizes (the embedder's tokenizer) and the preamble
budget all count through it, so each text is tokenised once per tokenizer.

    >>> tok = get_tokenizer("cl100k_base")
    >>> tok.count("Refunds are available within 14 days.")
    9
    >>> count_tokens("Refunds are available within 14 days.", "cl100k_base")
    9
"""

from __future__ import annotations

from array import array
from functools import lru_cache, partial
from itertools import accumulate
from typing import Callable, Protocol

PIECE = 200_000  # characters tokenised at once by the tiktoken-style encoder
FIRST_CHARS_TEXTS = 2048  # texts whose token byte ends `first_chars` keeps


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
        # the packer cuts the same chunk bodies again and again (each budget, each pass):
        # their token byte ends are kept for the latest FIRST_CHARS_TEXTS of them
        self._byte_ends = lru_cache(maxsize=FIRST_CHARS_TEXTS)(self._token_byte_ends)

    def _pieces(self, text: str) -> list[tuple[int, int]]:
        """Cut texts longer than PIECE characters (bpe-openai refuses 1M+) before a space that
        starts a word — a place where cl100k's pre-tokenizer splits anyway, so the tokens
        are the same as for the whole text."""
        out, start = [], 0
        while len(text) - start > PIECE:
            cut = text.rfind(" ", start + PIECE // 2, start + PIECE)
            while cut > start and (text[cut - 1].isspace() or not text[cut + 1:cut + 2].strip()):
                cut = text.rfind(" ", start + PIECE // 2, cut)
            if cut <= start:  # no word boundary: one enormous token run; cut hard
                cut = start + PIECE
            out.append((start, cut))
            start = cut
        out.append((start, len(text)))
        return out

    def encode(self, text: str) -> list[int]:
        if len(text) <= PIECE:
            return self._enc.encode(text, disallowed_special=())
        return [t for s, e in self._pieces(text)
                for t in self._enc.encode(text[s:e], disallowed_special=())]

    def count(self, text: str) -> int:
        return len(self.encode(text))

    def first_chars(self, text: str, n: int) -> int:
        """Characters of `text` its first `n` tokens cover: the decoded length of their bytes,
        a character split between token `n` and `n + 1` left out. The same number as
        ``spans(text)[n - 1][1]`` (a test checks), without decoding every token's offset.

        >>> tok = TiktokenTokenizer("cl100k_base")
        >>> tok.first_chars("one two three", 2), tok.first_chars("one two three", 9)
        (7, 13)
        """
        if n <= 0:
            return 0
        data, ends = self._byte_ends(text)
        if n >= len(ends):
            return len(text)
        return len(data[:ends[n - 1]].decode("utf-8", errors="ignore"))

    def _token_byte_ends(self, text: str) -> tuple[bytes, array]:
        """The bytes of `text`'s tokens, joined, and where each token's bytes end in them."""
        pieces = self._enc.decode_tokens_bytes(self.encode(text))
        return b"".join(pieces), array("q", accumulate(len(b) for b in pieces))

    def spans(self, text: str) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        for s, e in self._pieces(text) if len(text) > PIECE else [(0, len(text))]:
            ids = self._enc.encode(text[s:e], disallowed_special=())
            if not ids:
                continue
            _, starts = self._enc.decode_with_offsets(ids)
            starts = [s + x for x in starts]
            out.extend(zip(starts, starts[1:] + [e]))
        return out


LONG_RUN = 100  # characters: WordPiece makes a longer word one [UNK] (max_input_chars_per_word)


class HFTokenizer:
    """A Hugging Face fast tokenizer (the embedder's own), special tokens excluded.

    A run of characters with no token boundary in it (a 2 MB string without spaces, a long
    base64 blob, Thai script for an English vocabulary) comes back from WordPiece as a single
    unknown token. Counted that way, any amount of such text "fits" one token, and no cap
    holds; so an unknown token longer than `LONG_RUN` characters counts, and is cut, as one
    token per character.
    """

    def __init__(self, tokenizer, name: str | None = None):
        tokenizer.model_max_length = 10**12  # we count, never feed the model: no length notice
        self._tok = tokenizer
        self.name = name or getattr(tokenizer, "name_or_path", "hf")
        self._unk = getattr(tokenizer, "unk_token_id", None)

    def count(self, text: str) -> int:
        ids = self._tok(text, add_special_tokens=False, truncation=False)["input_ids"]
        if self._unk is not None and self._unk in ids and len(text) > LONG_RUN:
            return len(self.spans(text))
        return len(ids)

    def count_batch(self, texts: list[str]) -> list[int]:
        enc = self._tok(texts, add_special_tokens=False, truncation=False)
        return [len(self.spans(t)) if self._unk is not None and self._unk in ids
                and len(t) > LONG_RUN else len(ids) for t, ids in zip(texts, enc["input_ids"])]

    def spans(self, text: str) -> list[tuple[int, int]]:
        enc = self._tok(text, add_special_tokens=False, truncation=False,
                        return_offsets_mapping=True)
        out: list[tuple[int, int]] = []
        for s, e in enc["offset_mapping"]:
            if e - s > LONG_RUN:  # one unknown token over a long run: a token per character
                out.extend((i, i + 1) for i in range(s, e))
            else:
                out.append((s, e))
        return out


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

    from ..models import resolve_model

    path = resolve_model(None if name == "minilm" else name)
    return HFTokenizer(AutoTokenizer.from_pretrained(path), name=name)


# The count cache keeps at most this many (tokenizer name, text) pairs, holding at most this
# many characters of text; when either is reached it is emptied and fills again.
COUNT_CACHE_SIZE = 500_000
COUNT_CACHE_CHARS = 64_000_000
_COUNTS: dict[tuple[str, str], int] = {}
_HELD = [0]  # characters of text the cache holds


def count_tokens(text: str, tokenizer: str | Tokenizer = "cl100k_base") -> int:
    """Tokens of `text` (no special tokens) in `tokenizer`, a `get_tokenizer` name or a
    tokenizer: ragkit's one token-count cache, keyed by (tokenizer name, text). An empty text
    has none. `clear_counts` forgets every count (e.g. to time a cold pass)."""
    if not text:
        return 0
    key = (tokenizer if isinstance(tokenizer, str) else tokenizer.name, text)
    if key[0] == "chars":  # a character count needs no cache
        return len(text)
    n = _COUNTS.get(key)
    if n is None:
        tok = get_tokenizer(tokenizer) if isinstance(tokenizer, str) else tokenizer
        n = tok.count(text)
        if len(_COUNTS) >= COUNT_CACHE_SIZE or _HELD[0] + len(text) > COUNT_CACHE_CHARS:
            clear_counts()
        _COUNTS[key] = n
        _HELD[0] += len(text)
    return n


def counter(tokenizer: str | Tokenizer) -> Callable[[str], int]:
    """`count_tokens` in one tokenizer, as a function of the text alone (for a splitter's
    length function)."""
    return partial(count_tokens, tokenizer=tokenizer)


def clear_counts() -> None:
    """Forget every cached token count."""
    _COUNTS.clear()
    _HELD[0] = 0
