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


def test_tallies_and_the_precision_flag_are_not_verdicts():
    """Two runs whose paired comparison reaches the same verdict with one question moved from
    tied to ahead, or whose row carries a precision flag, agree; a flipped verdict does not."""
    from ragkit.tools.verdict_diff import interval_margin

    a = ("- **router** beats **fixed** on recall@B1024 by 6.0 points (95 % CI [+0.5, +12.0], "
         "n = 116; router ahead on 16 questions, behind on 8, tied on 92). 1 wins / 0 losses / "
         "3 ties; held truncated:85")
    b = (a.replace("16 questions, behind on 8, tied on 92", "17 questions, behind on 8, tied on "
                   "91").replace("1 wins / 0 losses / 3 ties", "2 wins / 0 losses / 2 ties")
         .replace("held truncated:85", "held precision:bf16;truncated:85"))
    assert skeleton(a) == skeleton(b)
    assert skeleton(a) != skeleton(a.replace("beats", "loses to"))
    assert interval_margin(a) == 0.5
    assert interval_margin("-1.4 points (95 % CI [-2.9, +0.001])") == -0.0
    assert interval_margin("-18.8 [-25.1, -12.7] on anthropic") == 12.7
    assert interval_margin("+4.3 (95 % CI [-1.6 %, +10.5 %])") == -1.6
    assert interval_margin("no interval here") is None


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
    # the differing lines are shown with their numbers, and how far the interval is from 0
    assert ("- router beats fixed by 3.1 points [+0.2, +6.0]  [its interval's nearer end is "
            "+0.2 from 0]") in out
    assert "+ no measurable difference between router and fixed" in out
    saved = json.loads((tmp_path / "diff.json").read_text())
    assert saved["differing"]["02_x"] == ["- router beats fixed by # points #",
                                          "+ no measurable difference between router and fixed"]
    assert [x["margin"] for x in saved["differing_with_numbers"]["02_x"]] == [0.2, None]
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

    def fake_run(sources, profile, out_dir, timeout, jobs, state=None, fallback=None):
        from ragkit.config import get_settings

        settings = get_settings()  # what the kernels this run starts will read
        seen.update(precision=settings.embed_precision, out=out_dir,
                    results=str(settings.results_dir), fallback=fallback)
        return {}, {}, {}

    monkeypatch.setattr(reproduce, "run_notebooks", fake_run)
    monkeypatch.setattr(reproduce, "check_against_record", lambda *a: seen.update(check=a) or 0)
    assert reproduce.main(["--precision", "bf16", "--only", "00"]) == 0
    bf16 = record / "bf16"
    assert seen["precision"] == "bf16" and seen["results"] == str(bf16)
    assert seen["out"] == bf16 / "notebooks"
    assert seen["fallback"] == record  # ordered by the record's times until it has its own
    assert (bf16 / "bench_design.jsonl").exists() and not (bf16 / "02_x.jsonl").exists()
    assert (bf16 / "runs" / "bench_design.scores.parquet").read_bytes() == b"x"
    assert seen["check"][:2] == (record, bf16)
    assert json.loads((bf16 / "reproduce_times.json").read_text())["partial"] == {}
    assert np.array_equal(sorted(p.name for p in record.iterdir()),
                          sorted(["runs", "bench_design.jsonl", "02_x.jsonl", "bf16"]))
