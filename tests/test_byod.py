"""Notebook 08's paired table: the best strategy is picked on the tune half and compared on
the held-out half only (`ragkit.experiments.byod`)."""

import pandas as pd

from ragkit.evaluate import Benchmark
from ragkit.evaluate.splits import grouped_split, load_splits
from ragkit.experiments import halves, held_out_steps, pick_on_tune
from ragkit.types import Document, Query, Span


class Scores:
    """An outcome with per-question values of one metric (what `values` returns)."""

    def __init__(self, values: dict[str, float]):
        self.series = pd.Series(values, dtype=float)

    def values(self, metric, budget=None):
        return self.series


SIDE = {"t1": "tune", "t2": "tune", "h1": "held-out", "h2": "held-out", "h3": "held-out"}


def test_the_pick_reads_the_tune_half_only_and_is_compared_on_the_held_out_half():
    # "lucky" is first on all questions only because of the held-out half; on the tune half
    # "steady" is ahead, so it is the pick, and the comparison never sees the tune questions
    outcomes = {("b", "lucky"): Scores({"t1": 0.5, "t2": 0.5, "h1": 1, "h2": 1, "h3": 1}),
                ("b", "steady"): Scores({"t1": 0.9, "t2": 0.8, "h1": 0.6, "h2": 0.7, "h3": 0.5}),
                ("b", "weak"): Scores({"t1": 0.1, "t2": 0.2, "h1": 0.2, "h2": None, "h3": 0.4})}
    pick, means = pick_on_tune(outcomes, "b", ["lucky", "steady", "weak"], SIDE)
    assert pick == "steady" and means["lucky"] == 0.5 and round(means["steady"], 2) == 0.85
    steps = held_out_steps(outcomes, "b", pick, ["lucky", "weak"], SIDE)
    assert steps.against.tolist() == ["lucky", "weak"]
    lucky, weak = steps.to_dict("records")
    assert lucky["n"] == 3 and round(lucky["diff"], 3) == -0.4      # the held-out half only
    assert weak["n"] == 2 and round(weak["diff"], 3) == 0.25        # a NaN question left out
    assert lucky["high"] < 0 < weak["diff"]
    assert {"benchmark", "step", "diff", "low", "high", "comparison"} <= set(steps.columns)


def test_a_tie_on_the_tune_half_goes_to_the_first_strategy():
    same = {"t1": 0.5, "t2": 0.5, "h1": 0.0, "h2": 0.0, "h3": 0.0}
    outcomes = {("b", s): Scores(same) for s in ("z", "a")}
    assert pick_on_tune(outcomes, "b", ["z", "a"], SIDE)[0] == "z"


def test_halves_use_the_committed_split_or_compute_it_for_new_questions():
    committed = load_splits()
    course_ids = [q for q in committed if q.startswith("q")][:6]
    docs = [Document(f"d{i}", "some text here " * 20) for i in range(3)]
    known = Benchmark("your corpus", docs, [Query(q, "?", (Span("d0", 0, 5),))
                                            for q in course_ids])
    assert halves(known) == {q: committed[q] for q in course_ids}
    fresh = [Query(f"mine-{i}", "?", (Span(f"d{i % 3}", 10 * i, 10 * i + 5),)) for i in range(6)]
    mine = Benchmark("mine", docs, fresh)
    side = halves(mine)
    assert side == dict(grouped_split("mine", fresh, 3).side)
    assert set(side.values()) == {"tune", "held-out"}


def test_chunking_costs_count_each_chunkers_chunks_and_time_it():
    from ragkit.chunkers import FixedCharChunker
    from ragkit.experiments.byod import chunking_costs

    bench = Benchmark("b", [Document("d1", "x" * 1000), Document("d2", "y" * 250)], [])
    costs = chunking_costs(bench, [FixedCharChunker(250, 0), FixedCharChunker(500, 0)])
    assert list(costs.strategy) == ["fixed_chars(250/0)", "fixed_chars(500/0)"]
    assert list(costs.n_chunks) == [5, 3]   # 4 + 1 windows of 250, then 2 + 1 of 500
    assert (costs.seconds >= 0).all()
