"""A second retrieval stage: take a first stage's top N candidates, rescore them, keep the top k.

Anthropic's contextual-retrieval article ends with a reranker (Cohere's, over the top 150).
Two kinds of rescoring are available here, behind one `Scorer` interface:

- `CrossEncoderScorer`: a sentence-transformers ``CrossEncoder`` by hub id or local folder
  (e.g. ``cross-encoder/ms-marco-MiniLM-L6-v2``, for readers who are online): reads query and
  chunk together, the classic reranker;
- `BiEncoderScorer`: offline, a stronger bi-encoder than the first stage's, e.g. EmbeddingGemma
  (assembled with ``/work/shared/tools/assemble-embeddinggemma /tmp/embeddinggemma``), used with
  its query/document prompts through `ragkit.embed.Embedder` (so its vectors are cached too).
  Only the candidates are embedded, which is what makes a 300M model affordable on a CPU.

`Reranker` wraps any retriever and has the same ``search(queries, k, where)`` as the others;
`describe()` says which first stage and which scorer produced a ranking, for results rows.

    >>> first = HybridRetriever(DenseRetriever(chunks, Embedder()),       # doctest: +SKIP
    ...                         BM25Retriever(chunks))
    >>> rr = make_reranker(first, "/tmp/embeddinggemma", candidates=50)  # doctest: +SKIP
    >>> rr.describe()                                                   # doctest: +SKIP
    {'first_stage': 'hybrid', 'reranker': 'bi-encoder', 'reranker_model': 'embeddinggemma',
     'candidates': 50}
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal, Protocol, Sequence

import numpy as np

from .config import get_settings
from .index import Where
from .retrieve import Hit, newest_first
from .types import Chunk

Placement = Literal["before", "after"]


class Scorer(Protocol):
    """A second stage: scores each query's candidate chunks (higher is better)."""

    kind: str
    name: str

    def score(self, queries: Sequence[str], candidates: Sequence[Sequence[Chunk]]
              ) -> list[np.ndarray]: ...


class CrossEncoderScorer:
    """Scores (query, chunk) pairs with a sentence-transformers CrossEncoder."""

    kind = "cross-encoder"

    def __init__(self, model: str | Path, placement: Placement = "before",
                 device: str | None = None, batch_size: int = 32, max_length: int | None = 512):
        from sentence_transformers import CrossEncoder

        from .config import resolve_device

        self.name = Path(str(model)).name
        self.placement = placement
        self.batch_size = batch_size
        self.model = CrossEncoder(str(model), device=resolve_device(device),
                                  max_length=max_length)

    def score(self, queries: Sequence[str], candidates: Sequence[Sequence[Chunk]]
              ) -> list[np.ndarray]:
        pairs = [(q, c.embedding_text(self.placement)) for q, cs in zip(queries, candidates)
                 for c in cs]
        flat = (np.asarray(self.model.predict(pairs, batch_size=self.batch_size,
                                              show_progress_bar=False), dtype=np.float64)
                if pairs else np.zeros(0))
        out, pos = [], 0
        for cs in candidates:
            out.append(flat[pos:pos + len(cs)])
            pos += len(cs)
        return out


_EMBEDDERS: dict[str, object] = {}


def _shared_embedder(model: str | Path | None, **kw):
    """One loaded `Embedder` per (model, settings) for every scorer in the process: a notebook
    that builds a reranker per stage loads the 300M model once."""
    from .embed import Embedder

    key = json.dumps([str(model), sorted((k, str(v)) for k, v in kw.items())])
    if key not in _EMBEDDERS:
        _EMBEDDERS[key] = Embedder(model, show_progress=False, **kw)
    return _EMBEDDERS[key]


class BiEncoderScorer:
    """Cosine between query and chunk vectors of a (stronger) sentence-transformers model."""

    kind = "bi-encoder"

    def __init__(self, model: str | Path | None = None, placement: Placement = "before",
                 embedder=None, **embedder_kw):
        if embedder is None:
            embedder = _shared_embedder(model, **embedder_kw)
        self.embedder = embedder
        self.name = embedder.name
        self.placement = placement

    def score(self, queries: Sequence[str], candidates: Sequence[Sequence[Chunk]]
              ) -> list[np.ndarray]:
        texts: dict[str, str] = {}
        for cs in candidates:
            for c in cs:
                texts.setdefault(c.id, c.embedding_text(self.placement))
        ids = list(texts)
        dvec = self.embedder.encode([texts[i] for i in ids], "document") if ids else None
        row = {cid: j for j, cid in enumerate(ids)}
        qvec = self.embedder.encode(list(queries), "query")
        return [np.asarray([float(dvec[row[c.id]] @ qv) for c in cs]) if cs else np.zeros(0)
                for qv, cs in zip(qvec, candidates)]

    @property
    def flags(self) -> list[str]:
        return self.embedder.flags()


class Reranker:
    """`first_stage` retrieves `candidates` hits per query; `scorer` reorders them; top k kept.

    Ties keep the first stage's order. Hits carry the rescoring score.
    """

    kind = "rerank"

    def __init__(self, first_stage, scorer: Scorer, candidates: int = 50):
        if candidates <= 0:
            raise ValueError("candidates must be positive")
        self.first_stage, self.scorer, self.candidates = first_stage, scorer, candidates

    @property
    def name(self) -> str:
        return f"{getattr(self.first_stage, 'kind', 'retriever')}>{self.scorer.kind}:" \
               f"{self.scorer.name}"

    def describe(self) -> dict[str, object]:
        return {"first_stage": getattr(self.first_stage, "kind", type(self.first_stage).__name__),
                "reranker": self.scorer.kind, "reranker_model": self.scorer.name,
                "candidates": self.candidates}

    @property
    def flags(self) -> list[str]:
        """The first stage's flags, then the scorer's (a bi-encoder's truncations), marked
        ``rerank_``; a scorer without flags (a cross-encoder) adds none."""
        own = getattr(self.scorer, "flags", [])
        return [*self.first_stage.flags, *(f"rerank_{f}" for f in own)]

    def search(self, queries: Sequence[str], k: int, where: Where | Sequence[Where] = None
               ) -> list[list[Hit]]:
        first = self.first_stage.search(queries, max(k, self.candidates), where)
        scores = self.scorer.score(list(queries), [[h.chunk for h in hs] for hs in first])
        out = []
        for hits, s in zip(first, scores):
            order = np.lexsort((np.arange(len(hits)), -np.asarray(s, dtype=np.float64)))[:k]
            out.append(newest_first([Hit(hits[j].chunk, float(s[j])) for j in order]))
        return out


def detect_kind(model: str | Path) -> Literal["cross-encoder", "bi-encoder"]:
    """A local folder: cross-encoder when its config names a sequence-classification head or
    sentence-transformers says CrossEncoder, else bi-encoder. A hub id: cross-encoder (the
    usual thing to rerank with)."""
    p = Path(str(model))
    if not p.is_dir():
        return "cross-encoder"
    for name in ("config_sentence_transformers.json", "config.json"):
        f = p / name
        if f.exists():
            cfg = json.loads(f.read_text(encoding="utf-8"))
            if cfg.get("model_type") == "CrossEncoder" or any(
                    "SequenceClassification" in a for a in cfg.get("architectures") or []):
                return "cross-encoder"
    return "bi-encoder"


def make_reranker(first_stage, model: str | Path | None = None, *,
                  kind: Literal["auto", "cross-encoder", "bi-encoder"] = "auto",
                  candidates: int = 50, placement: Placement = "before", **kw) -> Reranker:
    """A `Reranker` over `first_stage` with `model` (default: ``RAGKIT_RERANK_MODEL``)."""
    model = model or get_settings().rerank_model
    if not model:
        raise ValueError(f"no reranking model: pass one or set RAGKIT_RERANK_MODEL (a cross-encoder "
                         "hub id, or offline an EmbeddingGemma folder: run "
                         "/work/shared/tools/assemble-embeddinggemma /tmp/embeddinggemma)")
    kind = detect_kind(model) if kind == "auto" else kind
    scorer: Scorer = (CrossEncoderScorer(model, placement, **kw) if kind == "cross-encoder"
                      else BiEncoderScorer(model, placement, **kw))
    return Reranker(first_stage, scorer, candidates)
