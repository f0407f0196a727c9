"""`ragkit bench prose`: its command line refuses what it cannot run, before any work."""

import pytest

from ragkit.tools import bench_prose


@pytest.mark.parametrize("argv, message", [
    (["--sizes", "64,x"], "--sizes must be integers, got '64,x'"),
    (["--sizes", ","], "--sizes must be positive integers"),
    (["--candidates", "20,0"], "--candidates must be positive integers, got '20,0'"),
    (["--candidates", "many"], "--candidates must be integers"),
])
def test_bad_arguments_are_named(argv, message):
    with pytest.raises(SystemExit) as e:
        bench_prose.main(argv)
    assert message in str(e.value)


def test_margin_and_grid_follow_the_documented_rule():
    assert bench_prose.margin(0.824, 0.072) == pytest.approx(1.0)
    assert bench_prose.margin(0.824 * 1.1, 0.072 * 0.9) == pytest.approx(0.9)  # the weaker one
    # simplest first: the tie-break prefers earlier pipelines
    assert bench_prose.pipelines([50, 20, 20]) == (
        "dense", "hybrid", "hybrid+cross-encoder@20", "hybrid+cross-encoder@50")
