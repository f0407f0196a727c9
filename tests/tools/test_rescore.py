"""ragkit rescore: a run scored again from its saved hits gives back exactly the scores it
was recorded with, when the rules have not changed (here: the committed course runs of bench
design, which were scored under today's rules)."""

import json

import pandas as pd

from ragkit.config import PROJECT_ROOT

from conftest import needs_benchmarks


@needs_benchmarks()
def test_rescoring_a_committed_run_gives_back_its_scores(tmp_path, monkeypatch):
    from ragkit.tools.rescore import rescore

    results = PROJECT_ROOT / "results"
    rows = [json.loads(x) for x in (results / "bench_design.jsonl").read_text().splitlines()]
    pick = {r["run"] for r in rows if r.get("benchmark") == "course" and r.get("run")
            and r.get("embedder") == "all-MiniLM-L6-v2"
            and r.get("strategy") in ("router+stack", "fixed_chars(1000/200)+dense")}
    assert len(pick) == 2
    src = tmp_path / "src"
    (src / "runs").mkdir(parents=True)
    (src / "bench_design.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows if r.get("run") in pick))
    for kind in ("hits", "scores"):
        frame = pd.read_parquet(results / "runs" / f"bench_design.{kind}.parquet")
        frame[frame.run.isin(pick)].to_parquet(src / "runs" / f"bench_design.{kind}.parquet")
    out = tmp_path / "out"
    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(out))
    lines = rescore(src, "bench_design", "all-MiniLM-L6-v2", "test", ["course"])
    assert len(lines) == 2 and all(x.startswith("rescored") for x in lines)
    from ragkit.report.results import read_scores

    # the committed rows may name pass@k by its old name ("recall@k"): read as today's
    before = read_scores(src / "runs" / "bench_design.scores.parquet")
    after = pd.read_parquet(out / "runs" / "bench_design.scores.parquet")
    name = {r["run"]: r["strategy"] for f in (src, out)
            for r in map(json.loads, (f / "bench_design.jsonl").read_text().splitlines())}
    both = before.assign(s=before.run.map(name)).merge(
        after.assign(s=after.run.map(name)), on=["s", "query_id", "metric", "budget"])
    assert len(both) == len(before) == len(after)
    assert (both.value_x - both.value_y).abs().max() == 0
    rescored = [json.loads(x) for x in (out / "bench_design.jsonl").read_text().splitlines()]
    assert {r["params"]["rescored_from"] for r in rescored} == {"test"}
