"""Late chunking: embed the whole document once, then pool token vectors per chunk.

An ordinary embedder sees each chunk alone, so "It expires after 90 days" has lost the word
"password" that the previous chunk held. Late chunking (Günther et al., Jina AI, 2024) runs the
encoder over the *document*, keeps the contextual token vectors, and mean-pools them over each
chunk's character span. Every chunk vector has seen its document, or, when the document is
longer than the encoder's window, the window around the chunk (step 3); the chunk boundaries
still decide what gets retrieved and scored. This module does that for any sentence-transformers
model with mean pooling (the bundled all-MiniLM-L6-v2 by default, EmbeddingGemma, ...):

1. **Tokenise once, with offsets.** The document is tokenised as the embedder would tokenise it
   (the model's document prompt, e.g. EmbeddingGemma's ``title: none | text: ``, then the
   text), with a fast tokenizer's offset mapping. The leading special tokens plus the prompt
   (the *head*) and the trailing special tokens (the *tail*) are told apart from the text
   tokens; a slow tokenizer has no offsets and is refused with an error, never approximated.
2. **Chunk spans -> token ranges.** A token belongs to every chunk whose character span
   ``[start, end)`` contains the token's first character, so disjoint chunks partition the
   tokens and overlapping chunks share them. Tokens that start between chunks (whitespace, or
   SentencePiece's ``▁word`` whose first character is the space before a chunk) go to the chunk
   they run into, else to the nearest chunk by characters (ties to the following one): no token
   is dropped. A chunk that contains no token start (an empty chunk, or one inside a single
   token) borrows the nearest token and is counted in ``flags``. These rules are checked on
   every document: each token is in some chunk, each chunk has a token, and disjoint chunks
   partition the tokens exactly (`chunk_token_ranges`).
3. **Macro windows.** A document longer than the encoder's limit is cut into windows of
   ``window`` text tokens (default: the model's limit minus head and tail), consecutive windows
   sharing ``overlap`` tokens (default ``window // 4``); the last window is moved back so that it
   is full. Each window is encoded as head + its tokens + tail, and each token's vector is taken
   from the window in which it is farthest from a cut edge (the window whose centre is nearest;
   the document's own ends are not cuts) (`plan_windows`). Windows are batched (across
   documents, sorted by length) up to ``max_batch_tokens``; per-chunk sums are accumulated as
   float64 prefix sums at chunk boundaries, so memory holds one window batch plus two vectors
   per chunk, never the document's attention or all its token states.
4. **Same space as the queries.** The pooled vectors go through the model's own modules after
   its Pooling module (EmbeddingGemma's two Dense layers, Normalize), so they are compared with
   ``Embedder.encode(queries, "query")`` exactly as ordinary chunk vectors are.

Special tokens (``specials``): sentence-transformers' mean pooling includes ``[CLS]``/``[SEP]``
(and the prompt, when the model's Pooling has ``include_prompt``). With ``specials="edges"``
(the default) the head of the first window is pooled into the chunk(s) that start the document
and the tail of the last window into the chunk(s) that end it; interior chunks pool text tokens
only. Then a document that is one chunk and fits in one window gets *exactly* its ordinary
embedding (late chunking reduces to naive chunking), which the tests check. With
``specials="exclude"`` only text tokens are pooled; that moves a one-chunk document's vector
away from its ordinary embedding (measured cosine: MiniLM 0.93 for "Hello world." to 0.9998 for
256 tokens; EmbeddingGemma, whose pooling includes its 6-token prompt, 0.67 to 0.91 on short
texts), so it is not the default. With ``specials="every"`` every chunk pools the head (the
first window's, prompt included) and the tail (the last window's) besides its own tokens, as
its own ordinary embedding pools them: for a model whose pooling includes a prompt, interior
chunks are then pooled like the texts it was trained on (`ragkit bench late-quality` measures
the three).

Not embedded: a chunk's ``prefix`` (breadcrumbs, LLM preambles). Late chunking pools the
chunk's body span only; chunks that carry a prefix are counted in ``flags``
(``late:prefix_ignored:N``). Any other departure (a document longer than one window, a chunk
that borrowed a token, non-whitespace text outside every chunk, a model whose pooling is not
mean) is a warning and a flag that a results row can carry; documents whose vectors come from
the cache are still tokenised and checked, so the flags do not depend on the cache.

    >>> late = LateEmbedder()                                    # doctest: +SKIP
    >>> late.embed([doc], chunks).shape  # one unit vector per chunk  # doctest: +SKIP
    (12, 384)
    >>> r = LateDenseRetriever(chunks, [doc], Embedder())         # doctest: +SKIP
    >>> r.search(["How long is the refund window?"], k=3)[0][0].chunk.text  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Literal, Mapping, Sequence

import numpy as np

from .cache import VectorCache
from .config import get_settings
from .embed import Embedder
from .retrieve import DenseRetriever
from .types import Chunk, Document, check_chunks

if TYPE_CHECKING:  # pragma: no cover
    import torch

Specials = Literal["edges", "exclude", "every"]
CACHE_VERSION = 1


class _StateMemo:
    """Token states of recent window batches, kept in this process up to `max_bytes`.

    The windows of a document depend on the document alone, not on its chunks, and the batches
    are formed from the sorted windows, so a second chunker over the same documents asks for
    the very same batches: they are taken from here instead of running the encoder again —
    bit-identical, because the key is the batch's exact token ids and the model's identity.
    Least recently used batches go first."""

    def __init__(self, max_bytes: int = 1_500_000_000):
        from collections import OrderedDict

        self.max_bytes, self.bytes = max_bytes, 0
        self._items: OrderedDict[str, Any] = OrderedDict()
        self.hits = self.misses = 0

    @staticmethod
    def key(model: str, batch: Sequence[Sequence[int]]) -> str:
        h = hashlib.sha256(model.encode())
        for ids in batch:
            h.update(np.asarray(ids, dtype=np.int64).tobytes() + b"|")
        return h.hexdigest()

    def get(self, key: str):
        states = self._items.get(key)
        if states is None:
            self.misses += 1
            return None
        self._items.move_to_end(key)
        self.hits += 1
        return states

    def put(self, key: str, states) -> None:
        size = states.element_size() * states.nelement()
        if size > self.max_bytes:
            return
        self._items[key] = states
        self.bytes += size
        while self.bytes > self.max_bytes:
            _, old = self._items.popitem(last=False)
            self.bytes -= old.element_size() * old.nelement()

    def clear(self) -> None:
        self._items.clear()
        self.bytes = 0


STATES = _StateMemo()  # one per process: notebook 05 runs three chunkers over each benchmark


class LateChunkingWarning(UserWarning):
    """Late chunking departed from the plain rule somewhere (see the flag it names)."""


def _require(ok: bool, msg: str) -> None:
    """An invariant check that, unlike `assert`, survives ``python -O``."""
    if not ok:
        raise AssertionError(msg)


# -- tokens ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class DocTokens:
    """A tokenised document: text token ids with character offsets into the document text,
    plus the head (leading special tokens + prompt) and tail (trailing special tokens) that
    every window is wrapped in. ``pooled_head`` is how many head tokens the model's own mean
    pooling includes (all of them, or none when its Pooling excludes the prompt)."""

    ids: np.ndarray      # (n,) int64
    starts: np.ndarray   # (n,) first character of each token in the document text
    ends: np.ndarray     # (n,) one past its last character
    head: tuple[int, ...]
    tail: tuple[int, ...]
    pooled_head: int

    def __len__(self) -> int:
        return len(self.ids)


def tokenize_document(tokenizer: Any, text: str, prompt: str = "",
                      include_prompt: bool = True) -> DocTokens:
    """Tokenise ``prompt + text`` once, as the embedder would, and split off head and tail.

    A text token is one whose characters reach past the prompt (SentencePiece's first
    ``▁word`` starts on the prompt's trailing space; its start is clamped to the text's 0).
    """
    if not getattr(tokenizer, "is_fast", False):
        raise TypeError(
            f"late chunking needs a fast (Rust) tokenizer with offset mappings; "
            f"{type(tokenizer).__name__} is slow. Load the model with a tokenizer.json "
            "(use_fast=True) - late chunking does not fall back to guessing token positions.")
    enc = tokenizer(prompt + text, add_special_tokens=True, return_offsets_mapping=True,
                    truncation=False, verbose=False)
    ids = np.asarray(enc["input_ids"], dtype=np.int64)
    off = np.asarray(enc["offset_mapping"], dtype=np.int64).reshape(-1, 2)
    p = len(prompt)
    is_text = (off[:, 1] > p) & (off[:, 1] > off[:, 0])
    where = np.flatnonzero(is_text)
    if len(where) == 0:  # empty or whitespace-only text: the whole input is head + tail
        first = last = len(ids)
    else:
        first, last = int(where[0]), int(where[-1]) + 1
    starts = np.maximum(off[first:last, 0], p) - p
    ends = off[first:last, 1] - p
    _require(bool(np.all(np.diff(starts) >= 0)),
             "token offsets are not in text order; this tokenizer cannot be used for late "
             "chunking")
    head = tuple(int(i) for i in ids[:first])
    return DocTokens(ids=ids[first:last], starts=starts, ends=ends, head=head,
                     tail=tuple(int(i) for i in ids[last:]),
                     pooled_head=len(head) if include_prompt else 0)


@dataclass
class TokenRanges:
    """Per chunk, the token range ``[lo, hi)`` it pools over, and what needed a rule."""

    lo: np.ndarray
    hi: np.ndarray
    borrowed: int = 0          # chunks with no token start of their own
    gap_tokens: int = 0        # tokens that started outside every chunk
    uncovered_chars: int = 0   # non-whitespace characters outside every chunk


def chunk_token_ranges(text: str, starts: np.ndarray, ends: np.ndarray,
                       spans: Sequence[tuple[int, int]]) -> TokenRanges:
    """Map character spans to token ranges (module docstring, step 2) and check the result.

    Every chunk's tokens are contiguous, e.g. tokens starting at [0, 6, 12] and spans
    [(0, 5), (6, 17)] -> lo [0, 1], hi [1, 3].
    """
    n, m = len(starts), len(spans)
    sp = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
    if m == 0:
        return TokenRanges(np.zeros(0, np.int64), np.zeros(0, np.int64))
    if n == 0:  # nothing to pool but the head and tail: every chunk gets all of it
        return TokenRanges(np.zeros(m, np.int64), np.zeros(m, np.int64))
    s, e = sp[:, 0], sp[:, 1]
    lo = np.searchsorted(starts, s, "left")
    hi = np.searchsorted(starts, e, "left")

    # tokens in no chunk go to the chunk they run into, else the nearest one (ties: the next)
    unset = hi <= lo
    lo[unset], hi[unset] = n, 0  # so that min/max below give the assigned tokens' range
    cover = np.zeros(n + 1, np.int64)
    np.add.at(cover, lo[~unset], 1)
    np.add.at(cover, hi[~unset], -1)
    gaps = np.flatnonzero(np.cumsum(cover[:n]) == 0)
    if len(gaps):
        order = np.argsort(s, kind="stable")
        first_after = np.searchsorted(s[order], starts[gaps], "right")  # next chunk's rank
        ends_sorted = e[order]
        # the chunk with the largest end among those starting at or before the token
        run_max = np.maximum.accumulate(ends_sorted)
        prev_rank = np.searchsorted(run_max, run_max, "left")  # first rank reaching that max
        has_prev, has_next = first_after > 0, first_after < m
        prev = order[prev_rank[np.maximum(first_after - 1, 0)]]
        nxt = order[np.minimum(first_after, m - 1)]
        d_prev = starts[gaps] - (e[prev] - 1)
        d_next = s[nxt] - starts[gaps]
        to_next = has_next & (~has_prev | (s[nxt] < ends[gaps]) | (d_next <= d_prev))
        target = np.where(to_next, nxt, prev)
        np.minimum.at(lo, target, gaps)
        np.maximum.at(hi, target, gaps + 1)

    # chunks that still have no token (empty, or inside one token) borrow the nearest token
    empty = np.flatnonzero(hi <= lo)
    for c in empty.tolist():
        after = int(np.searchsorted(starts, s[c], "left"))
        before = after - 1
        if before >= 0 and (ends[before] > s[c] or after >= n
                            or s[c] - ends[before] < starts[after] - e[c]):
            j = before
        else:
            j = min(after, n - 1)
        lo[c], hi[c] = j, j + 1
    gap_tokens = len(gaps)

    # invariants: every chunk has a token, every token is in a chunk, disjoint -> partition
    _require(bool(np.all(hi > lo)), "a chunk has no token")
    cover = np.zeros(n + 1, np.int64)
    np.add.at(cover, lo, 1)
    np.add.at(cover, hi, -1)
    _require(bool(np.all(np.cumsum(cover[:n]) > 0)), "a token belongs to no chunk")
    own = np.setdiff1d(np.arange(m), empty)
    order = own[np.argsort(s[own], kind="stable")]
    if len(order) and bool(np.all(e[order][:-1] <= s[order][1:])):  # disjoint spans
        _require(int(lo[order[0]]) == 0 and int(hi[order[-1]]) == n
                 and bool(np.all(hi[order][:-1] == lo[order][1:])),
                 "disjoint chunks do not partition the tokens")

    chars = np.zeros(len(text) + 1, np.int64)
    np.add.at(chars, np.clip(s, 0, len(text)), 1)
    np.add.at(chars, np.clip(e, 0, len(text)), -1)
    out = np.r_[False, np.cumsum(chars[:-1]) == 0, False].astype(np.int8)
    edges = np.flatnonzero(np.diff(out))  # alternating run starts and ends
    uncovered = sum(len("".join(text[a:b].split()))
                    for a, b in zip(edges[::2].tolist(), edges[1::2].tolist()))
    return TokenRanges(lo, hi, borrowed=len(empty), gap_tokens=gap_tokens,
                       uncovered_chars=uncovered)


# -- windows --------------------------------------------------------------------------------

def plan_windows(n: int, window: int, overlap: int) -> tuple[np.ndarray, np.ndarray]:
    """Windows ``[a, b)`` over n tokens and, for each, the tokens it supplies ``[lo, hi)``.

    Windows start every ``window - overlap`` tokens; the last one is moved back to end at n.
    Each token is supplied by the window whose centre is nearest (ties to the earlier), i.e.
    where it is farthest from a cut; e.g. n=10, window=6, overlap=2 -> windows (0,6), (4,10),
    supplied (0,5), (5,10).
    """
    if window < 1:
        raise ValueError(f"window must be at least 1 token, not {window}")
    if not 0 <= overlap < window:
        raise ValueError(f"overlap must be in [0, window), not {overlap} (window {window})")
    if n <= window:
        return np.array([[0, n]], np.int64), np.array([[0, n]], np.int64)
    stride = window - overlap
    starts = list(range(0, n - window, stride))
    if starts[-1] != n - window:
        starts.append(n - window)
    a = np.asarray(starts, np.int64)
    wins = np.stack([a, a + window], axis=1)
    centres2 = 2 * a + window - 1  # twice the centre, to stay in integers
    cuts = (centres2[:-1] + centres2[1:]) // 4 + 1  # tokens <= midpoint go to the earlier
    lo = np.r_[0, cuts]
    hi = np.r_[cuts, n]
    _require(bool(np.all(lo >= wins[:, 0]) and np.all(hi <= wins[:, 1])
                  and np.all(hi > lo)), "a window supplies tokens it does not hold")
    return wins, np.stack([lo, hi], axis=1)


# -- one document's plan and accumulators ---------------------------------------------------

@dataclass
class _Block:
    """Rows ``[row, row + length)`` of window ``win``'s output are virtual positions
    ``[vstart, vstart + length)`` of the pooled stream (head, text tokens, tail)."""

    win: int
    row: int
    length: int
    vstart: int


@dataclass
class _DocPlan:
    tokens: DocTokens
    windows: np.ndarray
    blocks: list[_Block]
    lo_v: np.ndarray
    hi_v: np.ndarray
    bounds: np.ndarray          # sorted virtual positions where a prefix sum is needed
    bound_block: np.ndarray
    vals: np.ndarray | None = None
    totals: np.ndarray | None = None
    by_window: dict[int, list[int]] = field(default_factory=dict)
    every: tuple[int, int, int] | None = None  # "every": (head end, tail start, stream end)

    def window_ids(self, k: int) -> list[int]:
        a, b = (int(x) for x in self.windows[k])
        return [*self.tokens.head, *self.tokens.ids[a:b].tolist(), *self.tokens.tail]

    def window_length(self, k: int) -> int:
        a, b = (int(x) for x in self.windows[k])
        return len(self.tokens.head) + b - a + len(self.tokens.tail)

    def take(self, k: int, states: "torch.Tensor") -> None:
        """Fold window k's token states (length x hidden) into the chunk prefix sums.

        Sums are float64 (a 100,000-token prefix sum in float32 would lose the small chunks);
        on a GPU they are formed there and only the rows at chunk boundaries come back.
        """
        import torch

        if self.vals is None:
            self.vals = np.zeros((len(self.bounds), states.shape[-1]), np.float64)
            self.totals = np.zeros((len(self.blocks), states.shape[-1]), np.float64)
        for b in self.by_window.get(k, []):
            blk = self.blocks[b]
            sel = np.arange(*np.searchsorted(self.bound_block, [b, b + 1]))
            local = self.bounds[sel] - blk.vstart  # rows before each boundary, 0..length
            rows = states[blk.row: blk.row + blk.length]
            if rows.is_cuda:  # pragma: no cover - exercised on the GPU machine
                csum = rows.to(torch.float64).cumsum(0)
                idx = torch.as_tensor(np.maximum(local - 1, 0), device=csum.device)
                got, total = csum[idx].cpu().numpy(), csum[-1].cpu().numpy()
            else:  # numpy: torch's small CPU ops are slow under thread contention
                csum = np.cumsum(rows.float().numpy(), axis=0, dtype=np.float64)
                got, total = csum[np.maximum(local - 1, 0)], csum[-1]
            self.vals[sel] = np.where((local > 0)[:, None], got, 0.0)
            self.totals[b] = total

    def means(self) -> np.ndarray:
        """Mean of each chunk's pooled positions, once every window has been taken (with
        ``specials="every"``, each chunk's mean also takes in the head and the tail)."""
        _require(self.vals is not None, "no window was encoded")
        offsets = np.cumsum(self.totals, axis=0) - self.totals  # blocks are in stream order
        cum = offsets[self.bound_block] + self.vals
        lo = np.searchsorted(self.bounds, self.lo_v)
        hi = np.searchsorted(self.bounds, self.hi_v)
        count = (self.hi_v - self.lo_v).astype(np.float64)[:, None]
        sums = cum[hi] - cum[lo]
        if self.every is not None:  # head [0, a) and tail [b, c) of the stream, in each chunk
            a, b, c = (int(np.searchsorted(self.bounds, x)) for x in self.every)
            extra = (cum[a] - cum[0]) + (cum[c] - cum[b])
            sums = sums + extra[None, :]
            count = count + float(self.every[0] + self.every[2] - self.every[1])
        return sums / count


def _plan(tokens: DocTokens, ranges: TokenRanges, window: int, overlap: int,
          specials: Specials) -> _DocPlan:
    n = len(tokens)
    wins, supplied = plan_windows(n, window, overlap)
    n_head = len(tokens.head)
    if n == 0:  # an empty text: every chunk gets the ordinary embedding of head + tail
        hp, tp = n_head, len(tokens.tail)
    else:
        hp = tokens.pooled_head if specials in ("edges", "every") else 0
        tp = len(tokens.tail) if specials in ("edges", "every") else 0
    blocks: list[_Block] = []
    if hp:
        blocks.append(_Block(0, n_head - hp, hp, 0))
    for k, (lo, hi) in enumerate(supplied.tolist()):
        if hi > lo:
            blocks.append(_Block(k, n_head + lo - int(wins[k, 0]), hi - lo, hp + lo))
    last = len(wins) - 1
    if tp:
        blocks.append(_Block(last, n_head + int(wins[last, 1] - wins[last, 0]), tp, hp + n))
    total = hp + n + tp
    every = None
    if specials == "every" and n:  # text tokens here; head and tail added in `means`
        every = (hp, hp + n, total)
        lo_v, hi_v = ranges.lo + hp, ranges.hi + hp
        bounds = np.unique(np.r_[lo_v, hi_v, 0, every])
    else:
        lo_v = np.where(ranges.lo == 0, 0, ranges.lo + hp)
        hi_v = np.where(ranges.hi == n, total, ranges.hi + hp)
        bounds = np.unique(np.r_[lo_v, hi_v])
    vstarts = np.asarray([blk.vstart for blk in blocks], np.int64)
    bound_block = np.searchsorted(vstarts, bounds, "right") - 1
    plan = _DocPlan(tokens, wins, blocks, lo_v, hi_v, bounds, bound_block, every=every)
    for b, blk in enumerate(blocks):
        plan.by_window.setdefault(blk.win, []).append(b)
    return plan


# -- the embedder ---------------------------------------------------------------------------

class LateEmbedder:
    """Late-chunked chunk vectors from a ragkit `Embedder`'s sentence-transformers model.

    ``model`` is an `Embedder` (its loaded model, device, precision and fingerprint are shared)
    or anything `Embedder` accepts (None = the bundled MiniLM, a folder, a hub id). ``window``
    and ``overlap`` are in text tokens (see `plan_windows`); ``specials`` is explained in the
    module docstring. Vectors are cached in checksummed NPZ shards under
    ``<cache_dir>/late``; within a process, window batches already run are taken from the
    memo `STATES` (``memo=False`` runs every forward pass, as a timing needs). After each
    `embed` call, ``flags`` lists what a results row must carry and ``stats`` counts
    documents, windows and tokens.
    """

    def __init__(self, model: Embedder | str | Path | None = None, *, window: int | None = None,
                 overlap: int | None = None, specials: Specials = "edges",
                 max_batch_tokens: int = 8192, device: str | None = None, cache: bool = True,
                 memo: bool = True):
        if specials not in ("edges", "exclude", "every"):
            raise ValueError(f"specials must be 'edges', 'exclude' or 'every', not {specials!r}")
        self.embedder = model if isinstance(model, Embedder) else Embedder(
            model, device=device, cache=cache, show_progress=False)
        self.window, self.overlap, self.specials = window, overlap, specials
        self.max_batch_tokens = max_batch_tokens
        self.memo = memo  # reuse window batches from `STATES` (off when timing forward passes)
        self.flags: list[str] = []
        self.stats: dict[str, int] = {}
        self._cache = VectorCache(get_settings().cache_dir / "late") if cache else None
        self._parts: tuple[Any, list[Any], bool] | None = None
        self._mode_flag: list[str] = []

    # -- the model's pieces ---------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.embedder.name

    @property
    def device(self) -> str:
        return self.embedder.device

    @property
    def dtype(self) -> str:
        """The transformer's precision, e.g. ``"float32"``."""
        return str(self.model_parts()[0].dtype).replace("torch.", "")

    def model_parts(self) -> tuple[Any, list[Any], bool]:
        """(transformer, modules after Pooling, pooling includes the prompt)."""
        if self._parts is None:
            st = self.embedder.model
            mods = list(st)
            pool = next((i for i, m in enumerate(mods) if type(m).__name__ == "Pooling"), None)
            if pool is None or pool == 0:
                raise ValueError(f"{self.name}: late chunking needs a sentence-transformers "
                                 "model of the form Transformer -> Pooling -> ...")
            cfg = mods[pool].get_config_dict()
            mode = cfg.get("pooling_mode") or ("mean" if cfg.get("pooling_mode_mean_tokens")
                                               else "other")
            self._mode_flag = [] if mode == "mean" else [f"late:pooling_{mode}_replaced_by_mean"]
            self._parts = (mods[0].auto_model, mods[pool + 1:],
                           bool(cfg.get("include_prompt", True)))
        return self._parts

    def tokenize(self, text: str) -> DocTokens:
        """The document as the embedder's document input, tokenised once with offsets."""
        _, _, include_prompt = self.model_parts()
        return tokenize_document(self.embedder.tokenizer, text, self.embedder.prompt("document"),
                                 include_prompt)

    def limits(self, tokens: DocTokens) -> tuple[int, int]:
        """(window, overlap) in text tokens for a document (head and tail take the rest)."""
        room = self.embedder.max_tokens - len(tokens.head) - len(tokens.tail)
        window = self.window or room
        if window > room:
            raise ValueError(f"window {window} + {len(tokens.head) + len(tokens.tail)} special/"
                             f"prompt tokens exceeds {self.name}'s limit of "
                             f"{self.embedder.max_tokens} tokens")
        overlap = window // 4 if self.overlap is None else self.overlap
        return window, overlap

    # -- the forward pass -----------------------------------------------------------------
    def forward(self, batch: list[list[int]]) -> "torch.Tensor":
        """Token states (batch x longest x hidden) for windows of token ids, right-padded."""
        import torch

        tok = self.embedder.tokenizer
        width = max(len(ids) for ids in batch)
        pad = tok.pad_token_id if tok.pad_token_id is not None else 0
        ids = torch.full((len(batch), width), pad, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for i, row in enumerate(batch):
            ids[i, : len(row)] = torch.as_tensor(row)
            mask[i, : len(row)] = 1
        inputs = {"input_ids": ids.to(self.device), "attention_mask": mask.to(self.device)}
        if "token_type_ids" in tok.model_input_names:
            inputs["token_type_ids"] = torch.zeros_like(inputs["input_ids"])
        return self.embedder.token_states(inputs)

    def batches(self, jobs: list[tuple[int, int, int]]) -> Iterable[list[tuple[int, int, int]]]:
        """(length, doc, window) jobs sorted by length, cut into batches of bounded tokens."""
        batch: list[tuple[int, int, int]] = []
        for job in sorted(jobs):
            if batch and (len(batch) + 1) * job[0] > self.max_batch_tokens:
                yield batch
                batch = []
            batch.append(job)
        if batch:
            yield batch

    def after_pooling(self, pooled: np.ndarray) -> np.ndarray:
        """The model's modules after Pooling (Dense, Normalize ...), then L2-normalise."""
        import torch

        transformer, post, _ = self.model_parts()
        out = []
        for i in range(0, len(pooled), 4096):
            x = torch.as_tensor(pooled[i: i + 4096], device=self.device,
                                dtype=transformer.dtype)
            with torch.inference_mode():
                for mod in post:
                    x = mod({"sentence_embedding": x})["sentence_embedding"]
            out.append(x.float().cpu().numpy())
        vecs = np.concatenate(out) if out else np.zeros((0, self.embedder.dimension), np.float32)
        if not np.all(np.isfinite(vecs)):
            raise FloatingPointError(
                f"{self.name}: non-finite chunk vectors in {transformer.dtype} on {self.device}; "
                "this model may not support float16 (EmbeddingGemma needs float32 or bfloat16)")
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        return (vecs / np.maximum(norms, 1e-12)).astype(np.float32)

    def _run(self, plans: list[_DocPlan]) -> list[np.ndarray]:
        jobs = [(p.window_length(k), d, k) for d, p in enumerate(plans)
                for k in range(len(p.windows))]
        model = json.dumps({"fingerprint": self.embedder.fingerprint, "device": self.device,
                            "dtype": self.dtype, "backend": self.embedder.backend})
        for batch in self.batches(jobs):
            ids = [plans[d].window_ids(k) for _, d, k in batch]
            key = STATES.key(model, ids)
            states = STATES.get(key) if self.memo else None
            if states is None:
                states = self.forward(ids)
                if self.memo:
                    STATES.put(key, states)
            for i, (_, d, k) in enumerate(batch):
                plans[d].take(k, states[i])
            self.stats["windows"] += len(batch)
            self.stats["forward_tokens"] += sum(n for n, _, _ in batch)
        means = [p.means() for p in plans]
        _require(all(len(m) == len(p.lo_v) for m, p in zip(means, plans)),
                 "not exactly one vector per chunk")
        sizes = [len(m) for m in means]
        vecs = self.after_pooling(np.concatenate(means)) if means else np.zeros((0, 0), np.float32)
        return np.split(vecs, np.cumsum(sizes)[:-1]) if means else []

    # -- public API -----------------------------------------------------------------------
    def settings(self) -> dict[str, Any]:
        """What, besides the document and the spans, decides a late vector."""
        return {"model": self.name, "fingerprint": self.embedder.fingerprint,
                "max_seq_length": self.embedder.max_tokens, "window": self.window or "max",
                "overlap": "window//4" if self.overlap is None else self.overlap,
                "specials": self.specials, "dtype": self.dtype,
                **({"backend": b} if (b := self.embedder.backend) != "torch" else {}),
                "late_version": CACHE_VERSION}

    def embed_document(self, text: str, spans: Sequence[tuple[int, int]]) -> np.ndarray:
        """Unit vectors (len(spans) x dim) for character spans of one text (no cache)."""
        doc = Document(id="_", text=text)
        return self.embed([doc], [Chunk.make(doc, s, e, "late") for s, e in spans],
                          cache=False)

    def embed(self, docs: Iterable[Document] | Mapping[str, Document], chunks: Sequence[Chunk],
              cache: bool = True, group_windows: int = 256) -> np.ndarray:
        """Late-chunked unit vectors, one per chunk, in the order of `chunks`.

        Documents are processed in groups of about `group_windows` windows, so the prefix sums
        held at once stay bounded however large the corpus.
        """
        by_id = dict(docs) if isinstance(docs, Mapping) else {d.id: d for d in docs}
        chunks = list(chunks)
        self.flags, self.stats = [], {"documents": 0, "windowed_documents": 0, "windows": 0,
                                      "tokens": 0, "forward_tokens": 0, "cache_hits": 0,
                                      "borrowed": 0, "gap_tokens": 0, "uncovered_chars": 0}
        self.model_parts()
        groups: dict[str, list[int]] = {}
        for i, c in enumerate(chunks):
            groups.setdefault(c.doc_id, []).append(i)
        missing_docs = sorted(set(groups) - set(by_id))
        if missing_docs:
            raise KeyError(f"chunks refer to documents not given: {missing_docs[:5]}")
        base = json.dumps(self.settings(), sort_keys=True)
        keys: list[str] = [""] * len(chunks)
        doc_spans: dict[str, list[tuple[int, int]]] = {}
        for doc_id, idx in groups.items():
            doc = by_id[doc_id]
            check_chunks(doc, [chunks[i] for i in idx])
            spans = doc_spans[doc_id] = sorted({chunks[i].span for i in idx})
            doc_key = hashlib.sha256(f"{base}\x00{doc.hash}\x00{json.dumps(spans)}".encode()
                                     ).hexdigest()
            for i in idx:
                keys[i] = f"{doc_key}:{chunks[i].start}-{chunks[i].end}"
        store = self._cache if cache else None
        found, _ = store.get(keys) if store else ({}, [])
        todo = {d for d, idx in groups.items() if any(keys[i] not in found for i in idx)}
        self.stats["cache_hits"] = sum(len(groups[d]) for d in groups if d not in todo)

        new: dict[str, np.ndarray] = {}
        pending: list[tuple[str, _DocPlan]] = []
        n_windows = 0
        for pos, doc_id in enumerate(groups):
            # every document is planned (cheap: no model call), so that stats and flags are
            # the same whether its vectors come from the cache or from the model
            text = by_id[doc_id].text
            tokens = self.tokenize(text)
            window, overlap = self.limits(tokens)
            ranges = chunk_token_ranges(text, tokens.starts, tokens.ends, doc_spans[doc_id])
            plan = _plan(tokens, ranges, window, overlap, self.specials)
            self.stats["documents"] += 1
            self.stats["windowed_documents"] += int(len(plan.windows) > 1)
            self.stats["tokens"] += len(tokens)
            for k in ("borrowed", "gap_tokens", "uncovered_chars"):
                self.stats[k] += int(getattr(ranges, k))
            if doc_id in todo:
                pending.append((doc_id, plan))
                n_windows += len(plan.windows)
            if pending and (n_windows >= group_windows or pos == len(groups) - 1):
                for (d, _), vecs in zip(pending, self._run([p for _, p in pending])):
                    row = {sp: r for r, sp in enumerate(doc_spans[d])}
                    for i in groups[d]:
                        new[keys[i]] = vecs[row[chunks[i].span]]
                pending, n_windows = [], 0
        if store and new:
            store.put(list(new), np.stack(list(new.values())))
        found.update(new)
        self._set_flags(chunks)
        if not chunks:
            return np.zeros((0, self.embedder.dimension), np.float32)
        vecs = np.stack([found[k] for k in keys]).astype(np.float32)
        _require(vecs.shape[0] == len(chunks), "not exactly one vector per chunk")
        return vecs

    def _set_flags(self, chunks: Sequence[Chunk]) -> None:
        s = self.stats
        notes = {
            "prefix_ignored": (sum(bool(c.prefix) for c in chunks),
                               "chunks carry a prefix, which late chunking does not embed"),
            "windowed_docs": (s["windowed_documents"], "documents exceed one window and were "
                              "encoded in overlapping windows"),
            "borrowed_token_chunks": (s["borrowed"], "chunks contain no token start and "
                                      "borrowed the nearest token"),
            "uncovered_chars": (s["uncovered_chars"], "non-whitespace characters lie outside "
                                "every chunk; their tokens were pooled into the nearest chunk"),
        }
        flags = list(self._mode_flag)
        for name, (count, what) in notes.items():
            if count:
                flags.append(f"late:{name}:{count}")
                warnings.warn(f"late chunking with {self.name}: {count} {what}",
                              LateChunkingWarning, stacklevel=3)
        if flags and flags[0].startswith("late:pooling_"):
            warnings.warn(f"{self.name} does not pool by mean; late chunking pools by mean",
                          LateChunkingWarning, stacklevel=3)
        self.flags = flags


def late_vectors(docs: Iterable[Document] | Mapping[str, Document], chunks: Sequence[Chunk],
                 model: Embedder | str | Path | None = None, window: int | None = None,
                 overlap: int | None = None, **kw: Any) -> np.ndarray:
    """Late-chunked unit vectors aligned with `chunks` (see `LateEmbedder`)."""
    return LateEmbedder(model, window=window, overlap=overlap, **kw).embed(docs, chunks)


class LateDenseRetriever(DenseRetriever):
    """`DenseRetriever` over late-chunked chunk vectors: same `search(queries, k, where)`, same
    `flags` (the late embedder's); queries are embedded by `embedder` with its query prompt."""

    kind = "late"

    def __init__(self, chunks: Sequence[Chunk], docs: Iterable[Document] | Mapping[str, Document],
                 embedder: Embedder, window: int | None = None, overlap: int | None = None,
                 use_gpu: bool | None = None, **kw: Any):
        self.late = LateEmbedder(embedder, window=window, overlap=overlap, **kw)
        self._docs = docs
        super().__init__(chunks, embedder, "before", use_gpu)
        del self._docs  # read once, by embed_chunks

    def embed_chunks(self) -> tuple[np.ndarray, list[str]]:
        """Late-chunked vectors of `self.chunks` within their documents, and the late
        embedder's flags."""
        vecs = self.late.embed(self._docs, self.chunks)
        return vecs, list(self.late.flags)


# --- the comparison notebook 05 makes -------------------------------------------------------

LATE_METRICS = ("recall", "iou", "recall@k", "mrr@k", "ndcg@10")


def naive_vs_late(bench, embedder: Embedder, chunker, *, k: int = 5, window: int | None = None,
                  overlap: int | None = None, tag: str = "", recorder=None,
                  metrics: Sequence[str] = LATE_METRICS) -> list[dict[str, Any]]:
    """The same chunk spans of `bench`, embedded alone (``naive``) and late (``late``), one row
    each: benchmark, chunker, mode, embedder, the mean of each of `metrics`, the flags, the
    number of documents, ``per_query`` (the run's per-query DataFrame, for paired intervals)
    and ``hits`` (query id -> ranked hits). With a `recorder`, both runs are recorded
    (experiment ``late``, or ``late sweep`` when `tag` is set)."""
    from .pipeline import run_experiment

    chunks = chunker.chunk_all(bench.documents)
    late = LateDenseRetriever(chunks, bench.documents, embedder, window=window, overlap=overlap)
    rows = []
    for mode, retriever in (("naive", "dense"), ("late", late)):
        out = run_experiment(bench, embedder=embedder, k=k, chunks=chunks, retriever=retriever,
                             label=f"{mode} · {chunker.label}{tag}")
        if recorder is not None:
            out.record(recorder, experiment="late" + (" sweep" if tag else ""),
                       embedder=embedder.name, k=k, chunker=chunker.label, mode=mode,
                       window=window, overlap=overlap)
        rows.append({"benchmark": bench.name, "chunker": chunker.label, "mode": mode,
                     "embedder": embedder.name, **{m: out.means[m] for m in metrics},
                     "flags": ";".join(out.flags), "documents": len(bench.documents),
                     "per_query": out.per_query, "hits": out.hits})
    return rows


def windowed_documents(flags: str) -> int:
    """How many documents late chunking encoded in several windows, read from a row's flags
    (``late:windowed_docs:N``; 0 when absent)::

        >>> windowed_documents("late:prefix_ignored:1;late:windowed_docs:52")
        52
    """
    for flag in flags.split(";"):
        name, _, n = flag.rpartition(":")
        if name == "late:windowed_docs" and n.isdigit():
            return int(n)
    return 0


def late_vs_naive(rows: Sequence[Mapping[str, Any]], metric: str = "ndcg@10"):
    """One row per (benchmark, chunker, embedder) of `naive_vs_late` rows: naive and late
    means of `metric`, the paired difference late − naive with its 95 % interval, n, wins /
    losses / ties, and ``comparison`` (the `ragkit.stats.Comparison`)."""
    import pandas as pd

    from .stats import paired

    runs: dict[tuple, dict[str, Any]] = {}
    for r in rows:
        runs.setdefault((r["benchmark"], r["chunker"], r["embedder"]), {})[r["mode"]] = r
    out = []
    for (bench, chunker, embedder), by in runs.items():
        if not {"naive", "late"} <= by.keys():
            continue
        late = by["late"]["per_query"].set_index("query_id")[metric]
        naive = by["naive"]["per_query"].set_index("query_id")[metric].loc[late.index]
        c = paired(late.to_numpy(), naive.to_numpy())
        out.append({"benchmark": bench, "chunker": chunker, "embedder": embedder,
                    "naive": c.mean_b, "late": c.mean_a, "late − naive": c.diff,
                    "low": c.low, "high": c.high, "n": c.n, "wins": c.wins,
                    "losses": c.losses, "ties": c.ties, "comparison": c})
    return pd.DataFrame(out)


def late_quality_table(rows) -> "pd.DataFrame":
    """The paired rows of ``ragkit bench late-quality`` (``results/bench_late_quality.jsonl``,
    experiment ``late_quality_paired``) as one table: per encoder, metric (with the question
    subset it was scored on), window (``limit``: the encoder's own) and pooling of the special
    tokens, late − naive with its 95 % interval, wins / losses / ties, and the verdict read
    from the interval (`ragkit.report.verdict`: late "beats", "loses" or "no measurable
    difference" against naive). `rows` is `ragkit.results.load_results()` or any frame with
    those columns; rows of other experiments are ignored.

    >>> import pandas as pd
    >>> row = dict(notebook="bench_late_quality", experiment="late_quality_paired",
    ...            embedder="gemma", metric="diff_ndcg@10", value=-0.04,
    ...            params={"window": None, "specials": "edges", "subset": "all",
    ...                    "ci95": ["-0.07", "-0.006"], "wins": 48, "losses": 74, "ties": 111})
    >>> late_quality_table(pd.DataFrame([row]))[["window", "verdict"]].values.tolist()
    [['limit', 'loses']]
    """
    import pandas as pd

    from .report import verdict

    cols = ["embedder", "metric", "questions", "window", "pooling", "late − naive", "low",
            "high", "wins", "losses", "ties", "verdict"]
    if not {"experiment", "metric", "params"} <= set(rows.columns):
        return pd.DataFrame(columns=cols)
    sub = rows[(rows.experiment == "late_quality_paired") & rows.metric.str.startswith("diff_")]
    if "notebook" in sub:
        sub = sub[sub.notebook == "bench_late_quality"]
    out = []
    for r in sub.itertuples():
        p = r.params if isinstance(r.params, dict) else {}
        low, high = (float(x) for x in p.get("ci95", ("nan", "nan")))
        out.append({"embedder": r.embedder, "metric": r.metric.removeprefix("diff_"),
                    "questions": p.get("subset", "all"),
                    "window": "limit" if p.get("window") is None else int(p["window"]),
                    "pooling": p.get("specials", ""), "late − naive": float(r.value),
                    "low": low, "high": high, "wins": p.get("wins"), "losses": p.get("losses"),
                    "ties": p.get("ties"), "verdict": verdict(low, high)})
    df = pd.DataFrame(out, columns=cols)
    order = {"limit": -1}
    return df.sort_values(["embedder", "metric", "pooling", "window"],
                          key=lambda s: s.map(lambda v: order.get(v, v)) if s.name == "window"
                          else s).reset_index(drop=True)


def late_quality_sentences(table) -> list[str]:
    """One sentence per (encoder, metric) of `late_quality_table`, its direction counted from
    the verdicts: in how many (window, pooling) settings late chunking beats naive, loses to
    it, or shows no measurable difference, and the setting with the largest difference.

    >>> import pandas as pd
    >>> t = pd.DataFrame({"embedder": ["gemma"] * 2, "metric": ["ndcg@10"] * 2,
    ...                   "questions": ["all"] * 2, "window": ["limit", 128],
    ...                   "pooling": ["edges"] * 2, "late − naive": [-0.04, 0.017],
    ...                   "low": [-0.07, -0.009], "high": [-0.006, 0.044],
    ...                   "verdict": ["loses", "no measurable difference"]})
    >>> late_quality_sentences(t)[0]
    'gemma, ndcg@10 (all questions), late − naive over 2 (window, pooling) settings: late chunking beats naive in 0, loses in 1, no measurable difference in 1; the largest difference, -4.0 points [-7.0, -0.6], is at window limit with edges pooling.'
    """
    from .report import ci

    out = []
    for (embedder, metric, questions), g in table.groupby(["embedder", "metric", "questions"],
                                                          sort=False):
        counts = g.verdict.value_counts()
        top = g.loc[g["late − naive"].abs().idxmax()]
        out.append(
            f"{embedder}, {metric} ({questions.replace('_', '-')} questions), late − naive over "
            f"{len(g)} (window, pooling) settings: late chunking beats naive in "
            f"{counts.get('beats', 0)}, loses in {counts.get('loses', 0)}, no measurable "
            f"difference in {counts.get('no measurable difference', 0)}; the largest "
            f"difference, {100 * top['late − naive']:+.1f} points {ci(top.low, top.high)}, is at "
            f"window {top.window} with {top.pooling} pooling.")
    return out
