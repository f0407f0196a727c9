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
                                          benchmarks (see `ragkit.evaluate.benchmarks`)
``RAGKIT_EMBEDDER``                       ``embedder``: a sentence-transformers hub id or local
                                          folder instead of the bundled all-MiniLM-L6-v2
``RAGKIT_EMBED_BACKEND``                  ``embed_backend``: ``auto`` (default), ``torch`` or
                                          ``onnx`` (see `ragkit.embed`)
``RAGKIT_EMBED_PRECISION``                ``embed_precision``: ``fp32`` (default) or ``bf16``
                                          (an opt-in on CPU: torch under bfloat16 autocast;
                                          its drift is ``ragkit bench precision``)
``RAGKIT_GEMMA_DIR``                      ``gemma_dir``: an assembled EmbeddingGemma folder (the
                                          second encoder of notebooks 04-06)
``RAGKIT_RERANK_MODEL``                   ``rerank_model``: the reranking model (`ragkit.retrieve.rerank`)
``RAGKIT_REGENERATE_PREAMBLES``           ``regenerate_preambles``: 1/true/yes recomputes cached
                                          preambles (`ragkit.contextualize`)
``RAGKIT_REGENERATE_ANSWERS``             ``regenerate_answers``: 1/true/yes recomputes cached
                                          answers (`ragkit.evaluate.answer`)
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

One variable is not a `Settings` field, because it changes while a process runs:
``RAGKIT_RUNNING_KERNELS`` names a file holding how many notebook kernels run now (written by
``ragkit reproduce --jobs N`` and by the tests under ``pytest -n``), read at each call by
`running_kernels` for `ragkit.environment.cpu_share`. It is the runners' to set, not a reader's.

A value ragkit cannot use is never replaced by a default: `get_settings` raises `SettingsError`
naming the variable, its value and the allowed values (integers, numbers, choices, the 1/0
flags), and `ragkit.environment.check_environment` adds the paths that must exist. The
``ragkit`` command runs it first: a bad variable is one line on stderr and exit code 2.

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
# every simple baseline (`ragkit.chunkers.simple_baselines`), so a chunker is compared with the
# best of all seven, never with a best-of-a-few
BYOD_STRATEGIES = "baselines,structure,router"
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
    embed_precision: str = "fp32"
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


class SettingsError(ValueError):
    """A ``RAGKIT_*`` variable holds a value ragkit cannot use. The message is one line naming
    the variable, its value and what is allowed (the command line prints it and exits 2)."""

    def __init__(self, name: str, value: str, allowed: str):
        shown = value if len(value) <= 80 else value[:77] + "..."
        super().__init__(f"{name}={shown!r} is not valid: {allowed}")
        self.name, self.value, self.allowed = name, value, allowed


SEED_MAX = 2**32 - 1  # numpy's seeds are unsigned 32-bit


def get_settings() -> Settings:
    """Read the settings from the environment (cheap; call it whenever you need them).

    Every variable with a constrained value is checked here: a value outside it raises
    `SettingsError` naming the variable, its value and the allowed values (an empty value is
    the same as an unset one). Paths are checked by `ragkit.environment.check_environment`,
    which the command line runs first."""
    env = os.environ
    profile = _choice(env, "RAGKIT_PROFILE", "full", ("full", "smoke"))
    device = _text(env, "RAGKIT_DEVICE", "auto").lower()
    if device not in ("auto", "cpu", "cuda") and not (
            device.startswith("cuda:") and device[5:].isdigit()):
        raise SettingsError("RAGKIT_DEVICE", device, "expected auto, cpu, cuda or cuda:N")
    seed = _number(env, "RAGKIT_SEED", "13", int, 0, SEED_MAX)
    backend = _choice(env, "RAGKIT_EMBED_BACKEND", "auto", ("auto", "torch", "onnx"))
    precision = _choice(env, "RAGKIT_EMBED_PRECISION", "fp32", ("fp32", "bf16"))
    default_results = PROJECT_ROOT / "results" / ("smoke" if profile == "smoke" else "")
    data_dir = Path(_text(env, "RAGKIT_DATA_DIR") or PROJECT_ROOT / "data")
    return Settings(
        profile=profile,  # type: ignore[arg-type]
        seed=seed,
        device=device,
        cache_dir=Path(_text(env, "RAGKIT_CACHE_DIR") or PROJECT_ROOT / ".cache"),
        results_dir=Path(_text(env, "RAGKIT_RESULTS_DIR") or default_results),
        data_dir=data_dir,
        benchmarks_dir=_path(env, "RAGKIT_BENCHMARKS_DIR"),
        embedder=env.get("RAGKIT_EMBEDDER") or None,
        embed_backend=backend,
        embed_precision=precision,
        gemma_dir=_path(env, "RAGKIT_GEMMA_DIR"),
        rerank_model=env.get("RAGKIT_RERANK_MODEL") or None,
        regenerate_preambles=_flag(env, "RAGKIT_REGENERATE_PREAMBLES"),
        regenerate_answers=_flag(env, "RAGKIT_REGENERATE_ANSWERS"),
        judge_model=env.get("RAGKIT_JUDGE_MODEL", "gpt-4o-mini"),
        judge_embeddings=env.get("RAGKIT_JUDGE_EMBEDDINGS", "text-embedding-3-small"),
        byod_corpus=Path(_text(env, "RAGKIT_BYOD_CORPUS") or data_dir / "corpus"),
        byod_golden=Path(_text(env, "RAGKIT_BYOD_GOLDEN")
                         or data_dir / "golden" / "questions.jsonl"),
        byod_strategies=env.get("RAGKIT_BYOD_STRATEGIES", BYOD_STRATEGIES),
        hypothesis_examples=_number(env, "RAGKIT_HYPOTHESIS_EXAMPLES", "1000", int, 1),
        big_line_mb=_number(env, "RAGKIT_BIG_LINE_MB", "1", float, 0.001, 10000),
    )


# Variables naming something that must already be there when they are set: (name, kind).
def _text(env, name: str, default: str = "") -> str:
    return (env.get(name) or "").strip() or default


def _choice(env, name: str, default: str, allowed: tuple[str, ...]) -> str:
    value = _text(env, name, default).lower()
    if value not in allowed:
        raise SettingsError(name, value, f"expected {' or '.join(allowed)} (default {default})")
    return value


def _path(env, name: str) -> Path | None:
    value = _text(env, name)
    return Path(value) if value else None


FALSE = ("0", "false", "no")


def _flag(env, name: str) -> bool:
    value = _text(env, name).lower()
    if value and value not in TRUE + FALSE:
        raise SettingsError(name, value, "expected 1, true or yes to switch it on; 0, false, no "
                            "or empty to leave it off")
    return value in TRUE


def _number(env, name: str, default: str, kind, low=None, high=None):
    value = _text(env, name, default)
    what = "a whole number" if kind is int else "a number"
    bounds = (f" from {low} to {high}" if low is not None and high is not None
              else f" of at least {low}" if low is not None else "")
    try:
        number = kind(value)
    except ValueError:
        number = None
    if number is None or number != number or (low is not None and number < low) \
            or (high is not None and number > high):
        raise SettingsError(name, value, f"expected {what}{bounds} (default {default})")
    return number


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


RUNNING_KERNELS = "RAGKIT_RUNNING_KERNELS"


def running_kernels() -> int | None:
    """How many notebook kernels (or test workers) are running now, from the file
    ``RAGKIT_RUNNING_KERNELS`` names; None where the variable is unset or the file is missing
    or unreadable. Read at every call, because it changes while a process runs."""
    path = os.environ.get(RUNNING_KERNELS)
    if not path:
        return None
    try:
        return int(Path(path).read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return None


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
