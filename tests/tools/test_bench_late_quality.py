"""`ragkit bench late-quality`: its command line refuses what it cannot run, before any work."""

import pytest

from ragkit.tools import bench_late_quality


@pytest.mark.parametrize("argv, message", [
    (["--windows", "big"], "--windows must be integers"),
    (["--windows", "-1"], "--windows must be integers >= 0"),
    (["--specials", "edges,middle"], "unknown --specials ['middle']"),
])
def test_bad_arguments_are_named(argv, message):
    with pytest.raises(SystemExit) as e:
        bench_late_quality.main(argv)
    assert message in str(e.value)
