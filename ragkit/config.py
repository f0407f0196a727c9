"""One settings object, read from the environment, and the seeding helper every notebook calls.

Every ``RAGKIT_*`` environment variable is read here, by `get_settings`, and nowhere else (the
library, the tools, the notebooks and the tests all ask the `Settings` object). All are optional:

========================================  ==========================================================
variable                                  `Settings` field and meaning
========================================  ==========================================================
``RAGKIT_PROFILE``                        ``profile``: ``full`` (default) or ``smoke`` (a small
                                          slice of every experiment, for CI)
``RAGKIT_SEED``                           ``seed``: integer seed (default 13)
``RAGKIT_DEVICE``                         ``device``: ``auto`` (default), ``cpu``, ``cuda[:N]``
``RAGKIT_CACHE_DIR``                      ``cache_dir``: embeddings and other caches (default
                                          ``<project>/.cache``)
``RAGKIT_RESULTS_DIR``                    ``results_dir``: results rows and figures (default
                                          ``results/``, or ``results/smoke/`` in the smoke profile
                                          so a smoke run never overwrites the course's numbers)
``RAGKIT_DATA_DIR``                       ``data_dir``: the course corpus and golden files
                                          (default ``<project>/data``)
``RAGKIT_BENCHMARKS_DIR``                 ``benchmarks_dir``: a local folder holding the public
                                          benchmarks (see `ragkit.benchmarks`)
``RAGKIT_EMBEDDER``                       ``embedder``: a sentence-transformers hub id or local
                                          folder instead of the bundled all-MiniLM-L6-v2
``RAGKIT_EMBED_BACKEND``                  ``embed_backend``: ``auto`` (default), ``torch`` or
                                          ``onnx`` (see `ragkit.embed`)
``RAGKIT_GEMMA_DIR``                      ``gemma_dir``: an assembled EmbeddingGemma folder (the
                                          second encoder of notebooks 04-06)
``RAGKIT_RERANK_MODEL``                   ``rerank_model``: the reranking model (`ragkit.rerank`)
``RAGKIT_REGENERATE_PREAMBLES``           ``regenerate_preambles``: 1/true/yes recomputes cached
                                          preambles (`ragkit.contextualize`)
``RAGKIT_REGENERATE_ANSWERS``             ``regenerate_answers``: 1/true/yes recomputes cached
                                          answers (`ragkit.answer`)
``RAGKIT_JUDGE_MODEL``                    ``judge_model``: the LLM judge (default ``gpt-4o-mini``)
``RAGKIT_JUDGE_EMBEDDINGS``               ``judge_embeddings``: the judge's embeddings (default
                                          ``text-embedding-3-small``)
``RAGKIT_BYOD_CORPUS``                    ``byod_corpus``: notebook 08's folder (default the
                                          course corpus)
``RAGKIT_BYOD_GOLDEN``                    ``byod_golden``: notebook 08's questions (default the
                                          course's ``golden/questions.jsonl``)
``RAGKIT_BYOD_STRATEGIES``                ``byod_strategies``: notebook 08's strategies
``RAGKIT_HYPOTHESIS_EXAMPLES``            ``hypothesis_examples``: examples per property test
                                          (default 1000; tests only)
``RAGKIT_BIG_LINE_MB``                    ``big_line_mb``: the robustness test's one-line
                                          document, in MB (default 1; tests only)
========================================  ==========================================================

Flags and names that are not ragkit's own (``ANTHROPIC_API_KEY``, ``OPENAI_API_KEY``,
``HF_HUB_OFFLINE``) stay with the clients that use them.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

PROJECT_ROOT = Path(__file__).resolve().parent.parent
Profile = Literal["smoke", "full"]
BYOD_STRATEGIES = "fixed_chars:1000/200,recursive:250/0,structure,router"
TRUE = ("1", "true", "yes")


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
    gemma_dir: Path | None = None
    rerank_model: str | None = None
    regenerate_preambles: bool = False
    regenerate_answers: bool = False
    judge_model: str = "gpt-4o-mini"
    judge_embeddings: str = "text-embedding-3-small"
    byod_corpus: Path | None = None
    byod_golden: Path | None = None
    byod_strategies: str = BYOD_STRATEGIES
    hypothesis_examples: int = 1000
    big_line_mb: float = 1.0

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
    seed = _number(env, "RAGKIT_SEED", "13", int)
    backend = env.get("RAGKIT_EMBED_BACKEND", "auto").strip().lower()
    if backend not in ("auto", "torch", "onnx"):
        raise ValueError(f"RAGKIT_EMBED_BACKEND must be auto, torch or onnx, not {backend!r}")
    default_results = PROJECT_ROOT / "results" / ("smoke" if profile == "smoke" else "")
    data_dir = Path(env.get("RAGKIT_DATA_DIR", PROJECT_ROOT / "data"))
    return Settings(
        profile=profile,  # type: ignore[arg-type]
        seed=seed,
        device=device,
        cache_dir=Path(env.get("RAGKIT_CACHE_DIR", PROJECT_ROOT / ".cache")),
        results_dir=Path(env.get("RAGKIT_RESULTS_DIR", default_results)),
        data_dir=data_dir,
        benchmarks_dir=_path(env, "RAGKIT_BENCHMARKS_DIR"),
        embedder=env.get("RAGKIT_EMBEDDER") or None,
        embed_backend=backend,
        gemma_dir=_path(env, "RAGKIT_GEMMA_DIR"),
        rerank_model=env.get("RAGKIT_RERANK_MODEL") or None,
        regenerate_preambles=_flag(env, "RAGKIT_REGENERATE_PREAMBLES"),
        regenerate_answers=_flag(env, "RAGKIT_REGENERATE_ANSWERS"),
        judge_model=env.get("RAGKIT_JUDGE_MODEL", "gpt-4o-mini"),
        judge_embeddings=env.get("RAGKIT_JUDGE_EMBEDDINGS", "text-embedding-3-small"),
        byod_corpus=Path(env.get("RAGKIT_BYOD_CORPUS", data_dir / "corpus")),
        byod_golden=Path(env.get("RAGKIT_BYOD_GOLDEN", data_dir / "golden" / "questions.jsonl")),
        byod_strategies=env.get("RAGKIT_BYOD_STRATEGIES", BYOD_STRATEGIES),
        hypothesis_examples=_number(env, "RAGKIT_HYPOTHESIS_EXAMPLES", "1000", int),
        big_line_mb=_number(env, "RAGKIT_BIG_LINE_MB", "1", float),
    )


def _path(env, name: str) -> Path | None:
    value = env.get(name)
    return Path(value) if value else None


def _flag(env, name: str) -> bool:
    return env.get(name, "").strip().lower() in TRUE


def _number(env, name: str, default: str, kind):
    try:
        return kind(env.get(name, default))
    except ValueError as e:
        raise ValueError(f"{name} must be a number ({kind.__name__}): {e}") from None


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


def pick(full, smoke):
    """The value for the current profile: ``pick(full=472, smoke=20)``."""
    return smoke if get_settings().smoke else full
