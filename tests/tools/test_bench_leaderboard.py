"""`ragkit bench leaderboard`: its command line refuses what it cannot run, before any work."""

import pytest

from ragkit.tools import bench_leaderboard


@pytest.mark.parametrize("argv, message", [
    (["--benchmarks", "course,beir"], "unknown benchmark(s) ['beir']"),
    (["--candidates", "0"], "--candidates: must be at least 1, got 0"),
])
def test_bad_arguments_are_named(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        bench_leaderboard.main(argv)
    assert message in str(e.value) + capsys.readouterr().err


def test_the_rule_is_the_documented_one():
    assert bench_leaderboard.verdict(0.001, 0.2) == "beats"
    assert bench_leaderboard.verdict(-0.001, 0.2) == "no measurable difference"
    assert bench_leaderboard.verdict(-0.2, -0.001) == "loses"
    assert "best baseline is the one with the highest mean span" in " ".join(
        bench_leaderboard.__doc__.split())


def test_chroma_target_reads_the_recorded_runs_per_split():
    """Recall and IoU at k = 5 per split from per-query scores; 'both' only when both of
    Chroma's bests are reached by the mean."""
    import pandas as pd

    from ragkit.evaluate.splits import split_of

    qids = [f"chroma-{i:03d}" for i in range(40)]
    rows = pd.DataFrame([{"experiment": "leaderboard", "benchmark": "chroma",
                          "strategy": bench_leaderboard.RAGKIT, "run": "r1"},
                         {"experiment": "leaderboard", "benchmark": "course",
                          "strategy": bench_leaderboard.RAGKIT, "run": "r2"}])
    recall = {q: (0.9 if split_of(q) == "tune" else 0.7) for q in qids}
    scores = pd.DataFrame(
        [{"run": "r1", "query_id": q, "metric": "recall", "budget": -1, "value": recall[q]}
         for q in qids] +
        [{"run": "r1", "query_id": q, "metric": "iou", "budget": -1, "value": 0.08}
         for q in qids] +
        [{"run": "r1", "query_id": q, "metric": "recall", "budget": 1024, "value": 0.0}
         for q in qids])
    found = {r["split"]: r for r in bench_leaderboard.chroma_target(rows, scores)}
    assert set(found) == {"tune", "held-out", "all"}
    assert found["tune"]["recall"][0] == pytest.approx(0.9)
    assert found["tune"]["both"] and not found["held-out"]["both"]
    assert found["all"]["n"] == 40
    assert found["all"]["iou"][0] == pytest.approx(0.08)
