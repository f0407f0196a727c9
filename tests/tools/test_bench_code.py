"""`ragkit bench code`: its command line refuses what it cannot run, before any work; the
tuning grid and objective are the documented ones."""

import pytest

from ragkit.tools import bench_code


@pytest.mark.parametrize("argv, message", [
    (["--sizes", "big"], "argument --sizes: 'big' is not a whole number"),
    (["--sizes", "1000,10"], "argument --sizes: must be at least 50, got 10"),
    (["--sizes", ","], "argument --sizes: needs at least one number, got ','"),
])
def test_bad_arguments_are_named(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        bench_code.main(argv)
    assert e.value.code != 0
    assert message in f"{e.value} {capsys.readouterr().err}"


def test_grid_tries_no_overlap_and_a_fifth_smaller_sizes_first():
    assert bench_code.grid([2000, 1000, 1000]) == [(1000, 0), (1000, 200), (2000, 0),
                                                   (2000, 400)]


def test_score_is_the_mean_of_pass_and_recall_over_the_budgets():
    import pandas as pd

    cols = {f"{m}@B{b}": [0.0, 1.0] for m in bench_code.METRICS for b in bench_code.BUDGETS}
    cols["recall@B512"] = [0.5, 0.25]
    out = type("Out", (), {"per_query": pd.DataFrame({"query_id": ["a", "b"], **cols})})()
    assert bench_code.score(out, ["a"]) == pytest.approx(0.5 / 6)
    assert bench_code.score(out, ["b"]) == pytest.approx((5 + 0.25) / 6)


def test_an_unknown_preamble_generator_is_named(capsys):
    with pytest.raises(SystemExit) as e:
        bench_code.main(["--contextual", "structural,oracle"])
    assert e.value.code == 2
    assert "argument --contextual: unknown generator(s) ['oracle']" in capsys.readouterr().err


def test_fusion_grid_starts_at_the_stacks_default_so_ties_keep_it():
    from ragkit.retrieve import STACK_WEIGHTS

    assert bench_code.FUSION_GRID[0] == (STACK_WEIGHTS[0], 0)
    assert len(set(bench_code.FUSION_GRID)) == len(bench_code.FUSION_GRID)
    assert all(0 < w < 1 for w, _ in bench_code.FUSION_GRID)
