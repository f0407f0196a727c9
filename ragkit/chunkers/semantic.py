"""Semantic chunking: cut where the meaning changes, measured with an embedder.

Two algorithms, both always under a hard cap of tokens:

- `SemanticChunker` (Kamradt's "semantic splitting", as in langchain's SemanticChunker): the
  document is cut into sentences (prose is split at sentence ends; a table, list or code block
  stays one unit unless it is over the cap), each sentence is embedded together with `buffer`
  neighbours on each side, and the text is cut wherever the cosine similarity of two adjacent
  sentences falls below the `percentile`-th percentile of all adjacent similarities. Never after
  a heading. A segment still over the hard cap is cut at the least similar allowed boundary
  within its longest prefix that fits the cap, and so on to its end.
- `ClusterSemanticChunker` (Chroma's chunking report): the document is cut into small pieces
  (`RecursiveChunker`, ~50 cl100k tokens, no overlap); their unit vectors give a similarity
  matrix, from which the mean of its upper triangle is subtracted (so unrelated pairs count
  against a cluster) and whose diagonal is zeroed; dynamic programming then picks the split
  into runs of consecutive pieces that maximises the summed within-run similarity, a run
  holding at most ``max_chunk_size // piece_size`` pieces. Unlike Chroma's implementation,
  which starts every best score at 0 and so, when no run has a positive reward, falls back to
  one run from the document's start (an oversize chunk), every score starts at minus infinity
  and a run must also fit ``max_chunk_size`` tokens, so the cap always holds.

Only the similarity matrix's band near the diagonal is ever needed: the mean of the upper
triangle follows from the sum of the vectors, ``(|sum v|^2 - sum |v|^2) / (n (n - 1))``.

The embedder is a parameter: anything with ``encode(texts) -> array of unit vectors`` (default
`ragkit.embed.Embedder()`); `LexicalEmbedder` is a model-free stand-in for tests.
"""

from __future__ import annotations

import copy
import re
import warnings
import zlib
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from ..text.markdown import blocks_for
from ..text.sentences import TokenIndex, pieces, sentence_cuts
from ..text.tokens import count_tokens, counter, get_tokenizer
from ..types import Chunk, Document
from .base import Chunker
from .recursive import RecursiveChunker
from .structure import DEFAULT_LEVELS, Costs, split_span, words_isolated


class TextEmbedder(Protocol):
    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


class LexicalEmbedder:
    """Hashed bag of words, L2-normalised: no model, deterministic, fast (for tests).

    >>> v = LexicalEmbedder(dim=64).encode(["refund window", "refund window"])
    >>> round(float(v[0] @ v[1]), 6)
    1.0
    """

    name = "lexical"

    def __init__(self, dim: int = 256):
        self.dim = dim

    def encode(self, texts: Sequence[str], kind: str = "document") -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in re.findall(r"\w+", t.lower()):
                out[i, zlib.crc32(w.encode("utf-8", "surrogatepass")) % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms > 0, norms, 1.0)


def _default_embedder() -> TextEmbedder:
    from ..embed.encoders import Embedder

    return Embedder(show_progress=False)


def _embedder_name(embedder: Any) -> str:
    if embedder is None:
        from ..embed.encoders import model_label

        return model_label(None)
    return str(getattr(embedder, "name", type(embedder).__name__))


def _encode(embedder: TextEmbedder, texts: list[str]) -> np.ndarray:
    """Vectors for `texts`, quietly: an embedder truncating a long sentence window is fine here,
    the vectors only compare neighbours."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vecs = np.asarray(embedder.encode(texts), dtype=np.float32)
    return vecs.reshape(len(texts), -1)


class _EmbeddingChunker(Chunker):
    """Holds an embedder (created on first use) without letting it into the settings hash."""

    def __init__(self, embedder: TextEmbedder | None):
        self._embedder = embedder
        self.embedder = _embedder_name(embedder)

    def using(self, embedder: TextEmbedder):
        """This chunker, the same settings (and label), with `embedder` computing its sentence
        vectors (an uncached one, say, to time a first run)."""
        twin = copy.copy(self)
        twin._embedder = embedder
        return twin

    @property
    def embedder_model(self) -> TextEmbedder:
        if self._embedder is None:
            self._embedder = _default_embedder()
        return self._embedder


class SemanticChunker(_EmbeddingChunker):
    name = "semantic"

    def __init__(self, percentile: float = 10.0, hard: int = 254, tokenizer: str = "minilm",
                 buffer: int = 1, embedder: TextEmbedder | None = None):
        if not 0 <= percentile <= 100 or hard <= 0 or buffer < 0:
            raise ValueError("need 0 <= percentile <= 100, hard > 0, buffer >= 0")
        super().__init__(embedder)
        self.percentile, self.hard, self.buffer = percentile, hard, buffer
        self.tokenizer = tokenizer

    @property
    def label(self) -> str:
        return f"semantic(p{self.percentile:g},{self.hard},{self.tokenizer})"

    def sentences(self, doc: Document) -> list[tuple[int, int, int, bool]]:
        """``(start, end, tokens, is_heading)`` units: the sentences of prose blocks, other
        blocks whole; anything over the hard cap cut further."""
        text, tok = doc.text, get_tokenizer(self.tokenizer)
        exact = None if tok.name == "chars" else counter(tok)
        out = []
        for b in blocks_for(doc):
            spans = pieces(text, b.start, b.end, sentence_cuts(text, b.start, b.end)) \
                if b.kind in ("paragraph", "quote") else [(b.start, b.end)]
            for s, e in spans:
                n = count_tokens(text[s:e], tok)
                if n <= self.hard:
                    out.append((s, e, n, b.kind == "heading"))
                    continue
                tix = TokenIndex(text, s, e, tok)
                out.extend((ps, pe, k, False) for ps, pe, k in
                           split_span(text, s, e, DEFAULT_LEVELS, self.hard, tix, exact,
                                      words_isolated(tok)))
        return out

    def chunk(self, doc: Document) -> list[Chunk]:
        units = self.sentences(doc)
        if not units:
            return []
        text, costs = doc.text, Costs(get_tokenizer(self.tokenizer))
        texts = [text[s:e] for s, e, _, _ in units]
        b = self.buffer
        windows = [" ".join(texts[max(0, i - b):i + b + 1]) for i in range(len(texts))]
        vecs = _encode(self.embedder_model, windows) if len(units) > 1 else np.zeros((1, 1))
        sims = np.einsum("ij,ij->i", vecs[:-1], vecs[1:]).astype(float)
        allowed = np.array([not units[i][3] for i in range(len(units) - 1)], dtype=bool)
        cuts: list[int] = []  # boundary i lies between unit i and unit i + 1
        if allowed.any():
            threshold = np.percentile(sims[allowed], self.percentile)
            cuts = [i for i in range(len(sims)) if allowed[i] and sims[i] < threshold]
        bounds = [0, *(i + 1 for i in cuts), len(units)]
        gaps = [costs.gap(text, units[i][1], units[i + 1][0]) for i in range(len(units) - 1)]
        tok_sum = np.concatenate([[0], np.cumsum([u[2] for u in units])])
        gap_sum = np.concatenate([[0], np.cumsum(gaps)])

        def size(lo: int, hi: int) -> int:
            return int(tok_sum[hi] - tok_sum[lo] + gap_sum[hi - 1] - gap_sum[lo])

        def fit(lo: int, hi: int) -> list[tuple[int, int]]:
            """Cut an oversize segment: take the longest run from `lo` that fits the cap and
            cut it at its least similar allowed boundary (the latest one on ties); repeat."""
            out = []
            while size(lo, hi) > self.hard:
                end = lo + 1
                while end < hi and size(lo, end + 1) <= self.hard:
                    end += 1
                cut = min(range(lo, end), key=lambda i: (not allowed[i], sims[i], -i))
                out.append((lo, cut + 1))
                lo = cut + 1
            return [*out, (lo, hi)]

        segs = [s for lo, hi in zip(bounds, bounds[1:]) for s in fit(lo, hi)]
        segs = exact_cap(segs, size, self.hard, lambda lo, hi: costs.text(
            text[units[lo][0]:units[hi - 1][1]]), lambda lo, hi: min(
            range(lo, hi - 1), key=lambda i: (not allowed[i], sims[i])))
        chunks = [self.make(doc, units[lo][0], units[hi - 1][1], sentences=hi - lo,
                            tokens=size(lo, hi), embedder=self.embedder) for lo, hi in segs]
        return self.finish(doc, chunks)


class ClusterSemanticChunker(_EmbeddingChunker):
    name = "cluster_semantic"

    def __init__(self, max_chunk_size: int = 400, piece_size: int = 50,
                 tokenizer: str = "cl100k_base", embedder: TextEmbedder | None = None):
        if not 0 < piece_size <= max_chunk_size:
            raise ValueError("need 0 < piece_size <= max_chunk_size")
        super().__init__(embedder)
        self.max_chunk_size, self.piece_size, self.tokenizer = max_chunk_size, piece_size, tokenizer

    @property
    def label(self) -> str:
        return f"cluster_semantic({self.max_chunk_size}/{self.piece_size},{self.tokenizer})"

    def chunk(self, doc: Document) -> list[Chunk]:
        text = doc.text
        spans = RecursiveChunker(self.piece_size, 0, self.tokenizer).spans(doc)
        if not spans:
            return []
        costs = Costs(get_tokenizer(self.tokenizer))
        sizes = [costs.text(text[s:e]) for s, e in spans]
        gaps = [costs.gap(text, a[1], b[0]) for a, b in zip(spans, spans[1:])]
        vecs = _encode(self.embedder_model, [text[s:e] for s, e in spans]).astype(np.float64)
        runs = cluster_runs(vecs, sizes, gaps, max(1, self.max_chunk_size // self.piece_size),
                            self.max_chunk_size)
        near = np.einsum("ij,ij->i", vecs[:-1], vecs[1:])

        def size(lo: int, hi: int) -> int:
            return sum(sizes[lo:hi]) + sum(gaps[lo:hi - 1])

        runs = exact_cap(runs, size, self.max_chunk_size,
                         lambda lo, hi: costs.text(text[spans[lo][0]:spans[hi - 1][1]]),
                         lambda lo, hi: min(range(lo, hi - 1), key=lambda i: near[i]))
        chunks = [self.make(doc, spans[lo][0], spans[hi - 1][1], pieces=hi - lo,
                            tokens=size(lo, hi), embedder=self.embedder) for lo, hi in runs]
        return self.finish(doc, chunks)


def exact_cap(segs: list[tuple[int, int]], size: Callable[[int, int], int], hard: int,
              count: Callable[[int, int], int], weakest: Callable[[int, int], int]
              ) -> list[tuple[int, int]]:
    """Make sure: a segment whose summed size comes near the cap is counted as one text, and
    cut at its `weakest` boundary while that count is over (a BPE tokenizer does not always
    give the concatenation the sum of its parts' counts)."""
    out, todo = [], list(reversed(segs))
    while todo:
        lo, hi = todo.pop()
        if hi - lo > 1 and size(lo, hi) > hard - 8 and count(lo, hi) > hard:
            cut = weakest(lo, hi) + 1
            todo.extend([(cut, hi), (lo, cut)])
        else:
            out.append((lo, hi))
    return out


def cluster_runs(vecs: np.ndarray, sizes: Sequence[int], gaps: Sequence[int], max_pieces: int,
                 max_tokens: int) -> list[tuple[int, int]]:
    """Chroma's clustering DP: runs ``(lo, hi)`` of consecutive pieces maximising the summed
    mean-centred similarity inside each run, at most `max_pieces` pieces and `max_tokens`
    tokens a run (a single piece is always allowed).

    >>> v = np.array([[1, 0], [1, 0], [0, 1], [0, 1]], dtype=float)
    >>> cluster_runs(v, [1, 1, 1, 1], [0, 0, 0], max_pieces=4, max_tokens=10)
    [(0, 2), (2, 4)]
    """
    n = len(vecs)
    if n == 1:
        return [(0, 1)]
    total = vecs.sum(axis=0)
    mean = (float(total @ total) - float((vecs * vecs).sum())) / (n * (n - 1))
    # band[d][j] = similarity of piece j and piece j + d, minus the mean
    band = [None] + [np.einsum("ij,ij->i", vecs[:-d], vecs[d:]) - mean
                     for d in range(1, min(max_pieces, n))]
    best = np.full(n + 1, -np.inf)
    best[0] = 0.0
    start = np.zeros(n + 1, dtype=int)
    for i in range(1, n + 1):  # best split of pieces [0, i); the last run is [j, i)
        reward, tokens = 0.0, 0
        for j in range(i - 1, max(i - 1 - max_pieces, -1), -1):
            tokens += sizes[j] + (gaps[j] if j + 1 < i else 0)
            if j < i - 1 and tokens > max_tokens:
                break
            reward += 2.0 * sum(float(band[d][j]) for d in range(1, i - j))
            if best[j] + reward > best[i]:
                best[i], start[i] = best[j] + reward, j
    runs, i = [], n
    while i > 0:
        runs.append((int(start[i]), i))
        i = int(start[i])
    return runs[::-1]
