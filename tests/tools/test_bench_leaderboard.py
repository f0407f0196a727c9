"""`ragkit bench leaderboard`: its command line refuses what it cannot run, before any work."""

import pytest

from ragkit.tools import bench_leaderboard


@pytest.mark.parametrize("argv, message", [
    (["--benchmarks", "course,beir"], "unknown benchmark(s) ['beir']"),
    (["--candidates", "0"], "--candidates must be positive"),
])
def test_bad_arguments_are_named(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        bench_leaderboard.main(argv)
    assert message in str(e.value)


def test_the_rule_is_the_documented_one():
    assert bench_leaderboard.verdict(0.001, 0.2) == "beats"
    assert bench_leaderboard.verdict(-0.001, 0.2) == "no measurable difference"
    assert bench_leaderboard.verdict(-0.2, -0.001) == "loses"
    assert "best baseline is the one with the highest mean span" in " ".join(
        bench_leaderboard.__doc__.split())
