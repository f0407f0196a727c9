"""Late chunking's bookkeeping, before and after the encoder runs (`ragkit.embed.late`).

- `tokenize_document`: a document tokenised once, as the embedder would, with character offsets;
  the head (leading special tokens and the prompt) and the tail told apart from the text;
- `chunk_token_ranges`: chunk character spans -> token ranges, every token in some chunk and
  every chunk with a token (the rules of step 2 in `ragkit.embed.late`);
- `plan_windows`: a long document's macro windows, and for each token the window it takes its
  vector from (step 3);
- `_plan` / `_DocPlan`: one document's windows and the per-chunk sums the pooled vectors come
  from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Sequence

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    import torch


Specials = Literal["edges", "exclude", "every"]


class LateChunkingWarning(UserWarning):
    """Late chunking departed from the plain rule somewhere (see the flag it names)."""


def _require(ok: bool, msg: str) -> None:
    """An invariant check that, unlike `assert`, survives ``python -O``."""
    if not ok:
        raise AssertionError(msg)


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
