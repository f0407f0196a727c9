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
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import numpy as np

from ..cache import VectorCache
from ..config import get_settings
from ..types import Chunk, Document, check_chunks
from .encoders import Embedder
from .late_plan import (DocTokens, LateChunkingWarning, Specials, _DocPlan, _plan, _require,
                        chunk_token_ranges, tokenize_document)

if TYPE_CHECKING:  # pragma: no cover
    from collections import OrderedDict

    import torch

CACHE_VERSION = 1


class _StateMemo:
    """Token states of recent windows, kept in this process up to `max_bytes`.

    A window's states depend on its token ids and the model alone, not on the chunks nor on
    the other windows of its batch, so a window that recurs (a second chunker over the same
    documents, a window sweep whose first window or whole short document is the same at every
    size and overlap, an exercise re-running a configuration) is taken from here instead of
    running the encoder again. Keyed by the window's exact token ids and the model's identity;
    on the CPU's default path (ONNX Runtime, float32) the states are bit-identical whatever the
    batch (tests check it). Least recently used windows go first."""

    def __init__(self, max_bytes: int = 1_500_000_000):
        from collections import OrderedDict

        self.max_bytes, self.bytes = max_bytes, 0
        self._items: OrderedDict[str, Any] = OrderedDict()
        self.hits = self.misses = 0

    @staticmethod
    def key(model: str, window: Sequence[int]) -> str:
        h = hashlib.sha256(model.encode())
        h.update(np.asarray(window, dtype=np.int64).tobytes())
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


STATES = _StateMemo()  # one per process: notebook 05 runs three chunkers and a window sweep


# -- tokens ---------------------------------------------------------------------------------


# -- windows --------------------------------------------------------------------------------


# -- one document's plan and accumulators ---------------------------------------------------


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
        self._flags: list[str] = []
        self.stats: dict[str, int] = {}
        self._cache = VectorCache(get_settings().cache_dir / "late") if cache else None
        self._parts: tuple[Any, list[Any], bool] | None = None
        self._mode_flag: list[str] = []

    # -- the model's pieces ---------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.embedder.name

    @property
    def flags(self) -> list[str]:
        """What the latest `embed` did that a results row must carry (``late:...``)."""
        return list(self._flags)

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
                            "dtype": self.dtype, "backend": self.embedder.backend,
                            "precision": self.embedder.precision})
        for batch in self.batches(jobs):
            ids = [plans[d].window_ids(k) for _, d, k in batch]
            keys = [STATES.key(model, w) for w in ids]
            states = [STATES.get(key) if self.memo else None for key in keys]
            # only the windows the memo lacks go through the encoder, each distinct one once
            todo = list({keys[i]: i for i, st in enumerate(states) if st is None}.values())
            if todo:
                fresh = self.forward([ids[i] for i in todo])
                got = {keys[i]: fresh[row, : len(ids[i])] for row, i in enumerate(todo)}
                for key, st in got.items():
                    if self.memo:
                        STATES.put(key, st.clone())
                states = [got[key] if st is None else st for key, st in zip(keys, states)]
                self.stats["forward_tokens"] += sum(len(ids[i]) for i in todo)
            for i, (_, d, k) in enumerate(batch):
                plans[d].take(k, states[i])
            self.stats["windows"] += len(batch)
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
                **({"precision": p} if (p := self.embedder.precision) != "fp32" else {}),
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
        self._flags, self.stats = [], {"documents": 0, "windowed_documents": 0, "windows": 0,
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
        self._flags = flags


def late_vectors(docs: Iterable[Document] | Mapping[str, Document], chunks: Sequence[Chunk],
                 model: Embedder | str | Path | None = None, window: int | None = None,
                 overlap: int | None = None, **kw: Any) -> np.ndarray:
    """Late-chunked unit vectors aligned with `chunks` (see `LateEmbedder`)."""
    return LateEmbedder(model, window=window, overlap=overlap, **kw).embed(docs, chunks)
