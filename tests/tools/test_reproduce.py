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


# one worker runs the notebooks one after another (make test: --dist loadgroup), so each embeds
# only what the ones before it left uncached, while the other worker takes the short tests
@pytest.mark.long
@pytest.mark.xdist_group("notebooks")
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


def test_stages_keep_readers_and_speed_measurements_apart():
    from ragkit.tools.reproduce import READS_OTHER_ROWS, RUNS_ALONE, stages

    numbers = [s.name[:2] for s in notebook_sources()]
    got = stages(numbers)
    assert sorted(n for stage in got for n in stage) == sorted(numbers)  # every notebook once
    for i, stage in enumerate(got):
        if set(stage) & (READS_OTHER_ROWS | RUNS_ALONE):
            assert len(stage) == 1
        if set(stage) & READS_OTHER_ROWS:  # a reader runs after every notebook that writes rows
            assert all(set(later) <= READS_OTHER_ROWS for later in got[i + 1:])
    assert stages(["00", "01", "07", "08", "09"]) == [["00", "01", "08"], ["09"], ["07"]]
    assert stages(["07", "02", "03"]) == [["02", "03"], ["07"]]
    assert stages(["07", "09"]) == [["09"], ["07"]]


def test_every_notebook_reading_the_results_folder_is_declared():
    """A notebook that reads the rows in the results folder either depends on other notebooks'
    rows (READS_OTHER_ROWS: it runs after every earlier one) or is named here with the only rows
    it reads, none of which another notebook writes."""
    from ragkit.tools.reproduce import READS_OTHER_ROWS

    own_rows_only = {"01": "bench_chroma_repro (written by 01 itself)",
                     "04": "bench_context (written by ragkit bench context-speed)",
                     "05": "bench_late_quality (written by ragkit bench late-quality)",
                     "10": "bench_design's FinanceBench rows (written by ragkit bench design)"}
    readers = {s.name[:2] for s in notebook_sources()
               if any(f in s.read_text() for f in ("load_results(", "load_scores(", "load_hits(",
                                                   "saved_runs(", "load_runs("))}
    assert readers == set(READS_OTHER_ROWS) | set(own_rows_only)


TIMED_NOTEBOOK = """# %%
import json, os, time
from ragkit.environment import cpu_share
start = time.time()
share = cpu_share(64)  # the threads this kernel's encoder would take now
time.sleep({sleep})
path = os.path.join({folder!r}, "{name}.json")
open(path, "w").write(json.dumps([start, time.time(), share]))
"""


@pytest.mark.slow
def test_jobs_run_a_stage_at_once_and_a_reader_after_everything(tmp_path, monkeypatch):
    from ragkit.tools import reproduce

    before = {k: v for k, v in os.environ.items() if k.endswith("_RUNNING_KERNELS")}
    monkeypatch.setattr(reproduce, "READS_OTHER_ROWS", frozenset({"02"}))
    monkeypatch.setattr(reproduce, "RUNS_ALONE", frozenset())
    folder = tmp_path / "nb"
    folder.mkdir()
    for name, sleep in (("00_a", 4), ("01_b", 4), ("02_reader", 0), ("03_c", 0)):
        (folder / f"{name}.py").write_text(TIMED_NOTEBOOK.format(
            sleep=sleep, folder=str(tmp_path), name=name))
    times, cells, cpu = reproduce.run_notebooks(reproduce.notebook_sources(folder), "smoke",
                                                tmp_path / "out", 120, jobs=2)
    assert list(times) == ["00_a", "01_b", "02_reader", "03_c"] == list(cpu) == list(cells)
    span = {n: json.loads((tmp_path / f"{n}.json").read_text()) for n in times}
    assert span["00_a"][0] < span["01_b"][1] and span["01_b"][0] < span["00_a"][1]  # overlap
    # the reader runs last, after every notebook that writes rows, even one numbered above it
    assert span["02_reader"][0] >= max(span["00_a"][1], span["01_b"][1], span["03_c"][1])
    assert all((tmp_path / "out" / f"{n}.ipynb").exists() for n in times)
    # two kernels at once take half the CPUs each; a kernel alone takes them all
    cpus = os.cpu_count() or 1
    assert span["00_a"][2] == span["01_b"][2] == max(1, cpus // 2)
    assert span["02_reader"][2] == cpus
    # put back after the run (conftest sets it under pytest -n)
    assert {k: v for k, v in os.environ.items() if k.endswith("_RUNNING_KERNELS")} == before


def test_a_stage_starts_with_the_notebooks_that_took_longest_last_time(tmp_path, monkeypatch):
    """The last run's times only order a stage; a missing, broken or other-profile record
    orders nothing and breaks nothing."""
    from ragkit.tools.reproduce import last_times, longest_first

    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(tmp_path))
    assert last_times("full") == {}
    record = tmp_path / "reproduce_times.json"
    record.write_text("{not json")
    assert last_times("full") == {}
    record.write_text(json.dumps({"profile": "smoke", "notebooks": {"00_a": 3.0}}))
    assert last_times("full") == {}
    record.write_text(json.dumps({"profile": "full", "notebooks": ["not", "a", "mapping"]}))
    assert last_times("full") == {}
    record.write_text(json.dumps({"profile": "full",
                                  "notebooks": {"00_a": 3.0, "01_b": 9.0, "03_c": 1.0}}))
    assert longest_first(["00_a", "01_b", "02_new", "03_c"], last_times("full")) == [
        "02_new", "01_b", "00_a", "03_c"]
    # a run from an empty cache is ordered by the last cold run, a warm one by the last warm
    # run; a state with no times of its own falls back to the last whole run
    record.write_text(json.dumps({"profile": "full", "notebooks": {"00_a": 3.0, "01_b": 9.0},
                                  "by_cache": {"empty": {"notebooks": {"00_a": 50.0,
                                                                       "01_b": 9.0}},
                                               "warm": {"total_s": 12.0}}}))
    assert longest_first(["00_a", "01_b"], last_times("full", "empty")) == ["00_a", "01_b"]
    assert longest_first(["00_a", "01_b"], last_times("full", "warm")) == ["01_b", "00_a"]
    assert last_times("full") == {"00_a": 3.0, "01_b": 9.0}


def test_a_first_bf16_run_is_ordered_by_the_float32_record(tmp_path, monkeypatch):
    """With no record of its own (a first bf16 run, rows in results/bf16/), the float32
    record's times of the same cache state order the stages; once the folder has its own
    record, that one is read."""
    from ragkit.tools.reproduce import last_times

    own = tmp_path / "bf16"
    own.mkdir()
    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(own))
    (tmp_path / "reproduce_times.json").write_text(json.dumps(
        {"profile": "full", "notebooks": {"00_a": 1.0},
         "by_cache": {"empty": {"notebooks": {"00_a": 7.0, "01_b": 70.0}}}}))
    assert last_times("full", "empty") == {}
    assert last_times("full", "empty", tmp_path) == {"00_a": 7.0, "01_b": 70.0}
    (own / "reproduce_times.json").write_text(json.dumps(
        {"profile": "full", "notebooks": {"00_a": 2.0, "01_b": 3.0}}))
    assert last_times("full", "empty", tmp_path) == {"00_a": 2.0, "01_b": 3.0}


@pytest.mark.slow
def test_a_failure_is_said_at_once_while_the_notebook_beside_it_runs_on(tmp_path, monkeypatch,
                                                                        capsys):
    """With two kernels at once, a notebook that fails is reported when it fails, in two
    lines (where, and the error itself), naming the notebooks still running (the pool waits
    for them before the run stops)."""
    from ragkit.tools import reproduce

    monkeypatch.setattr(reproduce, "READS_OTHER_ROWS", frozenset())
    monkeypatch.setattr(reproduce, "RUNS_ALONE", frozenset())
    folder = tmp_path / "nb"
    folder.mkdir()
    (folder / "00_slow.py").write_text(TIMED_NOTEBOOK.format(sleep=8, folder=str(tmp_path),
                                                              name="00_slow"))
    (folder / "01_fails.py").write_text("# %%\nraise ValueError('broken on purpose')\n")
    (folder / "02_queued.py").write_text(TIMED_NOTEBOOK.format(sleep=0, folder=str(tmp_path),
                                                                name="02_queued"))
    with pytest.raises(RuntimeError, match="01_fails.py failed"):
        reproduce.run_notebooks(reproduce.notebook_sources(folder), "smoke", tmp_path / "out",
                                120, jobs=2)
    err = capsys.readouterr().err
    first, *rest = err.strip().splitlines()
    assert first.startswith("01_fails.py failed") and first.endswith("broken on purpose")
    assert "\x1b" not in err
    assert rest and rest[-1].startswith("stopping once the notebooks the workers already hold "
                                        "end: ") and "00_slow" in rest[-1]
