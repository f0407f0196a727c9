"""A million vectors of real text on two CPUs: static token-mean embeddings of sliding windows.

An approximate-index sweep needs many vectors whose neighbours are arranged the way real text
arranges them. Encoding a million windows with MiniLM (six transformer layers a window) takes
days on two CPU cores; near-copies of a few hundred real vectors (`synthetic_vectors`) are
cheap but degenerate (every probe finds the tight clusters, so recall is 1.000 everywhere).

`StaticEmbedder` is the cheap real encoder in between: all-MiniLM-L6-v2's own *input word
embedding matrix* (30,522 x 384, read from the bundled model's safetensors), averaged over the
tokens of a text (MiniLM's WordPiece tokenizer, no special tokens) and L2-normalised: a
bag-of-words vector in MiniLM's input space, float32, 384 dims. It is not MiniLM's sentence
vector (no attention, no pooling head): its neighbours are texts sharing words, which is the
structure of real text, at the cost of one table lookup a token.

`windows` cuts every document's token sequence into windows of ``W`` tokens every ``S`` tokens
(one or more widths) and `window_vectors` takes their means from the cumulative sum of each
document's token-embedding sequence (float64), so a window costs one subtraction whatever its
width: O(tokens) in all. `stride_for` picks the largest stride that still gives the number of
windows asked for. Nothing is random.

    >>> import numpy as np
    >>> table = np.eye(4, dtype=np.float32)
    >>> window_means(np.array([0, 1, 2, 3]), table, width=2, stride=2)
    array([[0.5, 0.5, 0. , 0. ],
           [0. , 0. , 0.5, 0.5]], dtype=float32)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

CORPORA = ("course", "chroma", "anthropic")
ENCODER = "minilm-static-token-mean"
ENCODER_WHY = ("static token-mean embeddings: the mean of all-MiniLM-L6-v2's input word "
               "embeddings over each window's tokens, L2-normalised (384 dims); real text at "
               "one table lookup a token, where the full MiniLM over a million windows would "
               "take days on two CPU cores")


def window_starts(length: int, width: int, stride: int) -> np.ndarray:
    """Start offsets of the windows of `width` tokens every `stride` tokens over a sequence of
    `length` tokens; a sequence shorter than `width` is one window of all its tokens (none when
    empty); the tail past the last whole window is left out.

    >>> window_starts(10, 4, 3).tolist(), window_starts(3, 4, 1).tolist(), window_starts(0, 4, 1)
    ([0, 3, 6], [0], array([], dtype=int64))
    """
    if width < 1 or stride < 1:
        raise ValueError(f"width and stride must be >= 1, got {width} and {stride}")
    if length <= 0:
        return np.zeros(0, np.int64)
    if length <= width:
        return np.zeros(1, np.int64)
    return np.arange(0, length - width + 1, stride, dtype=np.int64)


def window_count(length: int, width: int, stride: int) -> int:
    """len(window_starts(length, width, stride)), without the array."""
    if length <= 0:
        return 0
    return 1 if length <= width else (length - width) // stride + 1


def _normalise(v: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return (v / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def window_means(ids: np.ndarray, table: np.ndarray, width: int, stride: int,
                 starts: np.ndarray | None = None, normalise: bool = False) -> np.ndarray:
    """The mean of ``table[ids]`` over each window (`window_starts`, or the given `starts`),
    from one cumulative sum in float64; L2-normalised when `normalise`."""
    ids = np.asarray(ids, np.int64)
    if starts is None:
        starts = window_starts(len(ids), width, stride)
    if len(starts) == 0:
        return np.zeros((0, table.shape[1]), np.float32)
    csum = np.zeros((len(ids) + 1, table.shape[1]), np.float64)
    np.cumsum(table[ids], axis=0, dtype=np.float64, out=csum[1:])
    ends = np.minimum(starts + width, len(ids))
    out = ((csum[ends] - csum[starts]) / (ends - starts)[:, None]).astype(np.float32)
    return _normalise(out) if normalise else out


@dataclass
class Windows:
    """A fixed list of windows over tokenised documents: window i is tokens
    ``starts[i] : starts[i] + widths[i]`` of document ``doc[i]`` (of `names`)."""

    names: list[str]
    tokens: list[np.ndarray]
    doc: np.ndarray
    widths: np.ndarray
    starts: np.ndarray
    stride: int

    def __len__(self) -> int:
        return len(self.doc)

    def rows(self, sel: slice | np.ndarray) -> "Windows":
        """The windows `sel` picks (a slice: a block to embed at a time; an array of
        positions: the windows a search returned)."""
        return Windows(self.names, self.tokens, self.doc[sel], self.widths[sel],
                       self.starts[sel], self.stride)

    def take(self, n: int) -> "Windows":
        """`n` windows evenly spaced over the list (all when fewer), in list order, so every
        corpus is represented whatever `n` (a fixed rule: no sampling)."""
        if n >= len(self):
            return self
        pick = (np.arange(n, dtype=np.int64) * len(self)) // n
        return Windows(self.names, self.tokens, self.doc[pick], self.widths[pick],
                       self.starts[pick], self.stride)


def total_windows(lengths: Sequence[int], widths: Sequence[int], stride: int) -> int:
    return sum(window_count(n, w, stride) for n in lengths for w in widths)


def stride_for(lengths: Sequence[int], widths: Sequence[int], n: int) -> int:
    """The largest stride (>= 1) at which the documents of these token `lengths` give at least
    `n` windows of the `widths` (no larger than the longest document); 1 when even stride 1
    gives fewer.

    >>> stride_for([100], [10], 91), stride_for([100], [10], 10), stride_for([100], [10], 500)
    (1, 10, 1)
    """
    if total_windows(lengths, widths, 1) < n:
        return 1
    # the count falls as the stride grows and stops falling past the longest document
    low, high = 1, max(1, max(lengths, default=1))
    while low < high:
        mid = (low + high + 1) // 2
        if total_windows(lengths, widths, mid) >= n:
            low = mid
        else:
            high = mid - 1
    return low


class StaticEmbedder:
    """MiniLM's input word embeddings, averaged (see the module docstring)."""

    name = ENCODER

    def __init__(self, model_dir: str | Path | None = None):
        from safetensors import safe_open
        from tokenizers import Tokenizer

        from ..models import bundled_minilm

        folder = Path(model_dir) if model_dir else bundled_minilm()
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()
        with safe_open(str(folder / "model.safetensors"), framework="np") as f:
            key = next(k for k in f.keys() if k.endswith("embeddings.word_embeddings.weight"))
            self.table = np.ascontiguousarray(f.get_tensor(key), np.float32)
        self.dim = self.table.shape[1]

    def token_ids(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Each text's WordPiece ids, no special tokens, no truncation."""
        return [np.asarray(e.ids, np.int64)
                for e in self.tokenizer.encode_batch(list(texts), add_special_tokens=False)]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One unit vector per text: the mean over all its tokens (queries)."""
        out = [window_means(ids, self.table, max(1, len(ids)), 1, normalise=True)
               for ids in self.token_ids(texts)]
        return np.concatenate([o if len(o) else np.zeros((1, self.dim), np.float32)
                               for o in out])

    def windows(self, names: Sequence[str], texts: Sequence[str], widths: Sequence[int],
                stride: int) -> Windows:
        """Every window of every width over every text, in order: text by text, then width by
        width, then start."""
        tokens = self.token_ids(texts)
        doc, wid, start = [], [], []
        for i, ids in enumerate(tokens):
            for w in widths:
                s = window_starts(len(ids), w, stride)
                doc.append(np.full(len(s), i, np.int64))
                wid.append(np.full(len(s), w, np.int64))
                start.append(s)
        def cat(parts: list[np.ndarray]) -> np.ndarray:
            return np.concatenate(parts) if parts else np.zeros(0, np.int64)

        return Windows(list(names), tokens, cat(doc), cat(wid), cat(start), stride)

    def window_vectors(self, windows: Windows) -> np.ndarray:
        """(len(windows), dim) unit float32 vectors, in the windows' order; one cumulative sum
        a document."""
        out = np.zeros((len(windows), self.dim), np.float32)
        for i in np.unique(windows.doc):
            rows = np.flatnonzero(windows.doc == i)
            ids = windows.tokens[i]
            csum = np.zeros((len(ids) + 1, self.dim), np.float64)
            np.cumsum(self.table[ids], axis=0, dtype=np.float64, out=csum[1:])
            for b in range(0, len(rows), 65_536):  # a block at a time: bounded float64 copies
                part = rows[b:b + 65_536]
                s = windows.starts[part]
                e = np.minimum(s + windows.widths[part], len(ids))
                out[part] = (csum[e] - csum[s]) / (e - s)[:, None]
            del csum
        return _normalise(out)


def benchmark_texts(corpora: Sequence[str] = CORPORA
                    ) -> tuple[list[str], list[str], list[str]]:
    """(document names, document texts, question texts) of the benchmarks, in a fixed order
    (`ragkit.evaluate.benchmarks.load`)."""
    from ..evaluate.benchmarks import load

    names, texts, questions = [], [], []
    for corpus in corpora:
        bench = load(corpus)
        for d in bench.documents:
            names.append(f"{corpus}/{d.id}")
            texts.append(d.text)
        questions += [q.text for q in bench.queries]
    return names, texts, questions
