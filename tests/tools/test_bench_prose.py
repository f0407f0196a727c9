"""`ragkit bench prose`: its command line refuses what it cannot run, before any work."""

import pytest

from ragkit.tools import bench_prose


@pytest.mark.parametrize("argv, message", [
    (["--sizes", "64,x"], "argument --sizes: 'x' is not a whole number"),
    (["--sizes", ","], "argument --sizes: needs at least one number, got ','"),
    (["--candidates", "20,0"], "argument --candidates: must be at least 1, got 0"),
    (["--candidates", "many"], "argument --candidates: 'many' is not a whole number"),
])
def test_bad_arguments_are_named(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        bench_prose.main(argv)
    assert e.value.code != 0
    assert message in f"{e.value} {capsys.readouterr().err}"


def test_margin_and_grid_follow_the_documented_rule():
    assert bench_prose.margin(0.824, 0.072) == pytest.approx(1.0)
    assert bench_prose.margin(0.824 * 1.1, 0.072 * 0.9) == pytest.approx(0.9)  # the weaker one
    # simplest first: the tie-break prefers earlier pipelines; the leaderboard's stack
    # (dense 0.5, constant 0, identifier words) is the first stack tried
    grid = bench_prose.pipelines([50, 20, 20])
    assert grid[:3] == ("dense", "hybrid", "stack(dense 0.5,rrf 0,bm25 identifiers)")
    assert grid[-2:] == ("hybrid+cross-encoder@20", "hybrid+cross-encoder@50")
    stacks = [bench_prose.parse_stack(p) for p in grid if p.startswith("stack(")]
    assert len(stacks) == len(set(stacks)) == 20
    assert {w for w, _, _ in stacks} == {0.1, 0.2, 0.3, 0.5, 0.7}
    assert {c for _, c, _ in stacks} == {0, 60}
    assert {t for _, _, t in stacks} == {"identifiers", "words"}
    assert bench_prose.pipelines([]) == grid[:-2]  # no cross-encoder unless asked


def test_the_stack_pipeline_is_the_leaderboards_at_its_first_grid_point():
    from ragkit.retrieve import STACK_WEIGHTS

    w, c, t = bench_prose.parse_stack(bench_prose.pipelines([])[2])
    assert (w, 1 - w) == tuple(STACK_WEIGHTS) and c == 0 and t == "identifiers"
