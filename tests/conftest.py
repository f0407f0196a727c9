"""Test settings: offline, no telemetry, results written to a temporary folder."""

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
_shared = ROOT.parent / "shared" / "benchmarks"
if "RAGKIT_BENCHMARKS_DIR" not in os.environ and (_shared / "MANIFEST.md").exists():
    os.environ["RAGKIT_BENCHMARKS_DIR"] = str(_shared)


@pytest.fixture(autouse=True)
def _results_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(tmp_path / "results"))


@pytest.fixture(scope="session")
def embedder():
    from ragkit.embed import Embedder

    return Embedder(show_progress=False)


def needs_benchmarks():
    from ragkit.config import get_settings

    return pytest.mark.skipif(
        not get_settings().benchmarks_dir,
        reason="public benchmark copies not available (set RAGKIT_BENCHMARKS_DIR)")
