"""An encoder's "model card": what a warm run needs to know about the model without loading it.

`Embedder` asks four things of its model besides vectors: the input limit in tokens, the
vector dimension, the query/document prompts, and (for the ``auto`` backend on a CPU) why ONNX
Runtime does not apply, if it does not. A run whose vectors and token counts are all cached needs
nothing else, so the answers are kept as JSON in ``<cache_dir>/model_cards/<key>.json``. The key
hashes what decides them: the weights' fingerprint, the device, any ``max_seq_length`` override,
the requested backend and precision, and the versions of sentence-transformers, transformers,
onnx and onnxruntime. Loading sentence-transformers and the model costs a notebook kernel about
4 s; with a card, a warm kernel skips it.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path
from typing import Any, Callable

CARD_PACKAGES = ("sentence-transformers", "transformers", "onnx", "onnxruntime")


def versions(*names: str) -> dict[str, str | None]:
    """Installed versions (None: not installed) of the packages that decide a model card."""
    from importlib import metadata

    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def card_key(settings: dict[str, Any]) -> str:
    """The card's file stem: a hash of `settings` and the versions of `CARD_PACKAGES`."""
    what = {**settings, "versions": versions(*CARD_PACKAGES)}
    return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()


def read_card(model, onnx_reason: Callable[[], str | None] | None) -> dict[str, Any]:
    """The card of a loaded sentence-transformers `model`; ``onnx_reason`` (when given) says why
    ONNX Runtime does not apply (None: it does)."""
    get = getattr(model, "get_embedding_dimension", None) or \
        model.get_sentence_embedding_dimension
    card: dict[str, Any] = {
        "max_tokens": int(model.max_seq_length), "dimension": int(get()),
        "prompts": {k: str(v) for k, v in (getattr(model, "prompts", None) or {}).items()}}
    if onnx_reason is not None:
        card["onnx_unsupported"] = onnx_reason()
    return card


def _valid(card: Any, needs_onnx: bool) -> bool:
    return (isinstance(card, dict) and isinstance(card.get("max_tokens"), int)
            and isinstance(card.get("dimension"), int) and isinstance(card.get("prompts"), dict)
            and (not needs_onnx or "onnx_unsupported" in card))


def cached_card(path: Path, compute: Callable[[], dict[str, Any]], needs_onnx: bool,
                label: str = "") -> dict[str, Any]:
    """The card stored at `path`, else `compute()` written there. A damaged or unreadable card
    is computed again and rewritten, with a warning; a card that cannot be written (a read-only
    cache) is computed each run, with a warning."""
    from ..cache import atomic_write_text

    if path.exists():
        try:
            card = json.loads(path.read_text(encoding="utf-8"))
            if not _valid(card, needs_onnx):
                raise ValueError("not a model card")
            return card
        except (OSError, ValueError) as e:
            warnings.warn(f"model card {path} not used ({type(e).__name__}: {e}); reading the "
                          "model again", stacklevel=3)
    card = compute()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps({**card, "model": label}, sort_keys=True, indent=1))
    except OSError as e:
        warnings.warn(f"model card not cached at {path} ({e.strerror or e})", stacklevel=3)
    return card
