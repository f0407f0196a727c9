"""One settings object, read from the environment, and the seeding helper every notebook calls.

Environment variables (all optional):

- ``RAGKIT_PROFILE``: ``full`` (default) or ``smoke`` (a small slice of every experiment, for CI);
- ``RAGKIT_SEED``: integer seed (default 13);
- ``RAGKIT_DEVICE``: ``auto`` (default), ``cpu`` or ``cuda``;
- ``RAGKIT_CACHE_DIR``: where embeddings and other caches go (default ``<project>/.cache``);
- ``RAGKIT_RESULTS_DIR``: where results rows and figures go (default ``results/``, or
  ``results/smoke/`` in the smoke profile so a smoke run never overwrites the course's numbers);
- ``RAGKIT_BENCHMARKS_DIR``: a local folder holding the public benchmarks (see `benchmarks`);
- ``RAGKIT_EMBEDDER``: a sentence-transformers hub id or local folder to use instead of the
  bundled all-MiniLM-L6-v2;
- ``RAGKIT_EMBED_BACKEND``: ``auto`` (default), ``torch`` or ``onnx`` (see `ragkit.embed`).
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

PROJECT_ROOT = Path(__file__).resolve().parent.parent
Profile = Literal["smoke", "full"]


@dataclass(frozen=True)
class Settings:
    profile: Profile
    seed: int
    device: str
    cache_dir: Path
    results_dir: Path
    data_dir: Path
    benchmarks_dir: Path | None
    embedder: str | None
    embed_backend: str = "auto"

    @property
    def smoke(self) -> bool:
        return self.profile == "smoke"


def get_settings() -> Settings:
    """Read the settings from the environment (cheap; call it whenever you need them)."""
    env = os.environ
    profile = env.get("RAGKIT_PROFILE", "full").strip().lower()
    if profile not in ("smoke", "full"):
        raise ValueError(f"RAGKIT_PROFILE must be 'smoke' or 'full', not {profile!r}")
    device = env.get("RAGKIT_DEVICE", "auto").strip().lower()
    if device not in ("auto", "cpu", "cuda") and not device.startswith("cuda:"):
        raise ValueError(f"RAGKIT_DEVICE must be auto, cpu or cuda, not {device!r}")
    try:
        seed = int(env.get("RAGKIT_SEED", "13"))
    except ValueError as e:
        raise ValueError(f"RAGKIT_SEED must be an integer: {e}") from None
    backend = env.get("RAGKIT_EMBED_BACKEND", "auto").strip().lower()
    if backend not in ("auto", "torch", "onnx"):
        raise ValueError(f"RAGKIT_EMBED_BACKEND must be auto, torch or onnx, not {backend!r}")
    default_results = PROJECT_ROOT / "results" / ("smoke" if profile == "smoke" else "")
    bench = env.get("RAGKIT_BENCHMARKS_DIR")
    return Settings(
        profile=profile,  # type: ignore[arg-type]
        seed=seed,
        device=device,
        cache_dir=Path(env.get("RAGKIT_CACHE_DIR", PROJECT_ROOT / ".cache")),
        results_dir=Path(env.get("RAGKIT_RESULTS_DIR", default_results)),
        data_dir=Path(env.get("RAGKIT_DATA_DIR", PROJECT_ROOT / "data")),
        benchmarks_dir=Path(bench) if bench else None,
        embedder=env.get("RAGKIT_EMBEDDER") or None,
        embed_backend=backend,
    )


def resolve_device(device: str | None = None) -> str:
    """`auto` -> `cuda` when torch sees a GPU, else `cpu` (the one CPU-fallback helper)."""
    device = device or get_settings().device
    if device != "auto":
        return device
    try:
        import torch
    except ImportError:
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"


def seed_everything(seed: int | None = None) -> int:
    """Seed python, numpy and (if installed) torch; returns the seed used."""
    seed = get_settings().seed if seed is None else seed
    random.seed(seed)
    os.environ.setdefault("PYTHONHASHSEED", str(seed))
    try:
        import numpy as np

        np.random.seed(seed)
    except ImportError:
        pass
    try:
        import torch

        torch.manual_seed(seed)
    except ImportError:
        pass
    return seed


def env_flag(name: str) -> bool:
    """True when the environment variable is set to 1 / true / yes (any case)."""
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes")


def pick(full, smoke):
    """The value for the current profile: ``pick(full=472, smoke=20)``."""
    return smoke if get_settings().smoke else full
