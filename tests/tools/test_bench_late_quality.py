"""`ragkit bench late-quality`: its command line refuses what it cannot run, before any work."""

import pytest

from ragkit.tools import bench_late_quality


@pytest.mark.parametrize("argv, message", [
    (["--windows", "big"], "argument --windows: 'big' is not a whole number"),
    (["--windows", "0,-1"], "argument --windows: must be at least 0, got -1"),
    (["--specials", "edges,middle"], "argument --specials: unknown pooling(s) ['middle']"),
    (["--specials", ","], "argument --specials: unknown pooling(s) [',']"),
])
def test_bad_arguments_are_named(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        bench_late_quality.main(argv)
    assert e.value.code != 0
    assert message in f"{e.value} {capsys.readouterr().err}"
