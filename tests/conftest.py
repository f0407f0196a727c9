"""Test settings: offline, no telemetry, results written to a temporary folder."""

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
from ragkit.environment import offline_defaults  # noqa: E402

offline_defaults()
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
_shared = ROOT.parent / "shared" / "benchmarks"
if "RAGKIT_BENCHMARKS_DIR" not in os.environ and (_shared / "MANIFEST.md").exists():
    os.environ["RAGKIT_BENCHMARKS_DIR"] = str(_shared)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Under ``--dist loadgroup`` (make test), a pytest-xdist worker marks each test of an
    ``xdist_group`` by a ``@group`` suffix on its node id, and the scheduler keeps a group on one
    worker. From pytest 9.2 the suffix no longer takes, and xdist 3.8 does not say so: the
    notebooks and the Ray cluster's tests would spread over the workers, silently (pytest-xdist
    issue #1386). So a grouped test that a worker got without its suffix fails, saying why."""
    if (os.environ.get("PYTEST_XDIST_WORKER") and item.config.getvalue("loadgroup")
            and item.get_closest_marker("xdist_group") and "@" not in item.nodeid):
        pytest.fail(f"--dist loadgroup does not group on pytest {pytest.__version__} with this "
                    "pytest-xdist (pytest-xdist issue #1386): install the pinned pytest "
                    "(make setup, constraints.txt), or run without -n", pytrace=False)


def pytest_collection_modifyitems(config, items):
    """Tests marked `long` (the notebooks, the model-backed fuzzing, the ranx oracle: 20 s to 2
    min each) are collected first, so under ``-n 2 --dist loadgroup`` (make test) one worker
    starts on the notebooks (their own group, run in order) and the other on the long tests,
    and the short tests fill in behind both instead of one worker finishing alone on a long one."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


def _count_workers(path: Path, step: int) -> None:
    import fcntl

    from ragkit.cache import atomic_write_text

    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        now = int(path.read_text()) if path.exists() else 0
        atomic_write_text(path, str(max(0, now + step)))  # readers never see it half written


@pytest.fixture(scope="session", autouse=True)
def _share_cpus_between_workers(tmp_path_factory):
    """Under ``pytest -n N`` (make test), the workers running at the moment share the CPUs:
    each encoder, in a worker or in a notebook kernel it starts, takes ``cpu_count // running``
    threads (`ragkit.environment.cpu_share`), and a worker left alone takes them all back."""
    from ragkit.environment import RUNNING_KERNELS

    if not os.environ.get("PYTEST_XDIST_WORKER"):  # one process: nothing to share
        yield
        return
    path = tmp_path_factory.getbasetemp().parent / "running_workers"
    _count_workers(path, +1)
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv(RUNNING_KERNELS, str(path))
            yield
    finally:
        _count_workers(path, -1)


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


# A small policy and three hand-cut chunks, shared by the preamble and rerank tests.
REFUND_TEXT = """# Refund Policy

This policy explains when Northwind Cloud returns money to a Suite customer and how long it takes.

## Annual plans

Annual plans can be cancelled within 30 days of purchase for a full refund. After 30 days the
unused months are refunded pro rata, minus a processing fee of 25 EUR.

## Monthly plans

Monthly plans are never refunded; cancelling stops the next renewal. Billing support answers
refund requests within two business days.
"""


def refund_doc():
    from ragkit.types import Document

    return Document(id="refund", text=REFUND_TEXT,
                    metadata={"title": "Refund Policy", "format": "markdown"})


def refund_chunks(doc):
    """Three chunks: one per section body (spans sliced from the document)."""
    from ragkit.types import Chunk

    out = []
    for start_marker, end_marker in (("Annual plans can", "## Monthly"),
                                     ("Monthly plans are", None), ("This policy", "## Annual")):
        s = doc.text.index(start_marker)
        e = doc.text.index(end_marker) if end_marker else len(doc.text)
        e = len(doc.text[:e].rstrip())
        out.append(Chunk.make(doc, s, e, strategy="test"))
    return out


# A policy whose table row sits far below its header: the chunk-view tests (explain, 01/02).
TABLE_HEADER = "| Tier | Refund window | Processing fee |\n|---|---|---|\n"
TABLE_FILLER = "Filler sentence about something else entirely. " * 30
TABLE_TEXT = (TABLE_HEADER + TABLE_FILLER + "| Gold | 14 days | 2% |\n" + TABLE_FILLER
              + "Refunds past 30 days are void.")


def table_policy():
    """(document, gold span of its Gold-tier row)."""
    from ragkit.types import Document, Span

    start = TABLE_TEXT.index("| Gold")
    return (Document("policy", TABLE_TEXT),
            Span("policy", start, start + len("| Gold | 14 days | 2% |")))
