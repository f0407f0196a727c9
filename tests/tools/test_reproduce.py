"""Execute every notebook in the smoke profile; any error fails the test (no `|| echo`)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ragkit.report import comparable, read_rows
from ragkit.tools.reproduce import children_cpu, execute, notebook_sources

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def smoke_env(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGKIT_PROFILE", "smoke")
    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(tmp_path / "results"))
    return tmp_path


@pytest.mark.parametrize("source", notebook_sources(), ids=lambda p: p.stem)
def test_notebook_runs_in_smoke_profile(source, smoke_env):
    secs = execute(source, "smoke", smoke_env / "executed", timeout=900)
    nb = json.loads((smoke_env / "executed" / f"{source.stem}.ipynb").read_text())
    errors = [o for c in nb["cells"] for o in c.get("outputs", []) if o["output_type"] == "error"]
    assert not errors
    rows = read_rows(smoke_env / "results" / f"{source.stem}.jsonl")
    assert rows and all(r["profile"] == "smoke" for r in rows)
    print(f"{source.stem}: {secs:.1f}s")


@pytest.mark.slow  # the determinism of the runs, re-checked by make test-all (about 2 min)
def test_same_notebook_twice_gives_identical_rows(smoke_env):
    """Determinism: apart from timestamps, a second run writes exactly the same rows and the
    same per-query values, bit for bit (rows keep full precision)."""
    import pandas as pd

    source = [s for s in notebook_sources() if s.name.startswith("01_")] or notebook_sources()
    source = source[0]
    runs, scores = [], []
    for i in range(2):
        execute(source, "smoke", smoke_env / f"run{i}", timeout=900)
        path = smoke_env / "results" / f"{source.stem}.jsonl"
        runs.append(comparable(read_rows(path)))
        per_query = smoke_env / "results" / "runs" / f"{source.stem}.scores.parquet"
        scores.append(pd.read_parquet(per_query))
        shutil.move(path, smoke_env / f"rows{i}.jsonl")
        shutil.move(per_query, smoke_env / f"scores{i}.parquet")
    assert runs[0] == runs[1]
    assert len(scores[0]) and scores[0].equals(scores[1])


def test_children_cpu_counts_a_finished_child():
    before = children_cpu()
    subprocess.run([sys.executable, "-c", "sum(i * i for i in range(3_000_000))"], check=True)
    assert children_cpu() - before > 0.05  # the child's own CPU seconds, whatever the load
