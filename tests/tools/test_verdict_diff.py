"""`ragkit verdict-diff` and ``make reproduce PRECISION=bf16``: what two runs conclude."""

import json

import nbformat
import numpy as np
import pandas as pd
import pytest

from ragkit.tools import reproduce
from ragkit.tools.verdict_diff import compare, main, skeleton, verdict_lines


def test_a_skeleton_keeps_words_names_and_counts_and_drops_what_may_move():
    a = ("**Use** router over fixed_chars(1000/200): recall@B1024 +2.4 [-4.1, +9.5] on "
         "anthropic (n = 124); beats on 1 of 3, loses on 0; 12/5/99")
    b = ("**Use** router over fixed_chars(1000/200): recall@B1024 +2.61 [-3.9, +9.8] on "
         "anthropic (n = 124); beats on 1 of 3, loses on 0; 13/5/98")
    assert skeleton(a) == skeleton(b)
    assert "1000/200" in skeleton(a) and "1 of 3" in skeleton(a) and "n = 124" in skeleton(a)
    assert skeleton(a) != skeleton(b.replace("beats on 1 of 3", "beats on 2 of 3"))
    assert skeleton(a) != skeleton(b.replace("**Use**", "**Do not use**"))
    assert verdict_lines("a table header\nrouter beats fixed by 3.1 points\n") == [
        "router beats fixed by # points"]


def _run(folder, notebook_lines, recall):
    """A results folder with one notebook's rows and per-question recall@B, and its executed
    notebook whose output prints `notebook_lines`."""
    (folder / "runs").mkdir(parents=True)
    row = {"notebook": "02_x", "experiment": "e", "benchmark": "course", "strategy": "router",
           "embedder": "m", "params": {}, "run": "r1", "metric": "recall@B1024", "value": 0.5,
           "budget": 1024}
    (folder / "02_x.jsonl").write_text(json.dumps(row) + "\n")
    pd.DataFrame({"query_id": ["q1", "q2"], "type": ["a", "a"], "metric": ["recall@B"] * 2,
                  "budget": [1024, 1024], "value": recall, "run": ["r1", "r1"]}).to_parquet(
        folder / "runs" / "02_x.scores.parquet")
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("print()")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=notebook_lines)]
    nb.cells = [cell]
    (folder / "notebooks").mkdir()
    nbformat.write(nb, folder / "notebooks" / "02_x.ipynb")


def test_verdict_diff_reports_the_recall_drift_and_a_flipped_verdict(tmp_path, capsys):
    same = "router beats fixed by 3.1 points [+0.2, +6.0]\n"
    _run(tmp_path / "a", same, [1.0, 0.5])
    _run(tmp_path / "b", same.replace("3.1", "2.9"), [1.0, 0.4])
    found = compare(tmp_path / "a", tmp_path / "b", tmp_path / "a" / "notebooks",
                    tmp_path / "b" / "notebooks")
    assert found["recall_at_b"]["course"]["largest"] == pytest.approx(-5.0)
    assert found["differing"] == {}
    assert main([str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    _run(tmp_path / "c", "no measurable difference between router and fixed\n", [1.0, 0.5])
    assert main([str(tmp_path / "a"), str(tmp_path / "c"), "--out",
                 str(tmp_path / "diff.json")]) == 1
    out = capsys.readouterr().out
    assert "- router beats fixed by # points #" in out
    assert "+ no measurable difference between router and fixed" in out
    assert json.loads((tmp_path / "diff.json").read_text())["differing"]["02_x"]
    assert main([str(tmp_path / "a"), str(tmp_path / "nope")]) == 3


def test_bf16_is_refused_where_the_machine_has_no_bfloat16(tmp_path, monkeypatch, capsys):
    import ragkit.environment as environment

    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setattr(environment, "bf16_unavailable", lambda device=None: "no bfloat16 here")
    called = []
    monkeypatch.setattr(reproduce, "run_notebooks", lambda *a, **k: called.append(a))
    assert reproduce.main(["--precision", "bf16", "--only", "00"]) == 3
    err = capsys.readouterr().err
    assert err.strip() == "ragkit reproduce: --precision bf16 refused: no bfloat16 here"
    assert called == [] and not (tmp_path / "results").exists()


def test_bf16_writes_apart_from_the_record_with_the_records_bench_rows(tmp_path, monkeypatch):
    import ragkit.environment as environment

    record = tmp_path / "results"
    (record / "runs").mkdir(parents=True)
    (record / "bench_design.jsonl").write_text("{}\n")
    (record / "runs" / "bench_design.scores.parquet").write_bytes(b"x")
    (record / "02_x.jsonl").write_text("{}\n")  # a notebook's row: not copied
    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(record))
    monkeypatch.delenv("RAGKIT_EMBED_PRECISION", raising=False)
    monkeypatch.setattr(environment, "bf16_unavailable", lambda device=None: None)
    seen = {}

    def fake_run(sources, profile, out_dir, timeout, jobs, state=None):
        from ragkit.config import get_settings

        settings = get_settings()  # what the kernels this run starts will read
        seen.update(precision=settings.embed_precision, out=out_dir,
                    results=str(settings.results_dir))
        return {}, {}, {}

    monkeypatch.setattr(reproduce, "run_notebooks", fake_run)
    monkeypatch.setattr(reproduce, "check_against_record", lambda *a: seen.update(check=a) or 0)
    assert reproduce.main(["--precision", "bf16", "--only", "00"]) == 0
    bf16 = record / "bf16"
    assert seen["precision"] == "bf16" and seen["results"] == str(bf16)
    assert seen["out"] == bf16 / "notebooks"
    assert (bf16 / "bench_design.jsonl").exists() and not (bf16 / "02_x.jsonl").exists()
    assert (bf16 / "runs" / "bench_design.scores.parquet").read_bytes() == b"x"
    assert seen["check"][:2] == (record, bf16)
    assert json.loads((bf16 / "reproduce_times.json").read_text())["partial"] == {}
    assert np.array_equal(sorted(p.name for p in record.iterdir()),
                          sorted(["runs", "bench_design.jsonl", "02_x.jsonl", "bf16"]))
