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


class Ranked:
    """An outcome with one question's ranked chunks (what `budget_depth` reads)."""

    def __init__(self, qid, chunks):
        from types import SimpleNamespace

        self.hits = {qid: [SimpleNamespace(chunk=c) for c in chunks]}
        self._chunks = chunks

    def retrieved(self, qid):
        return self._chunks


def test_budget_depth_tells_depth_from_ranking_and_from_a_held_gold():
    from ragkit.experiments.byod import budget_depth
    from ragkit.types import Chunk

    words = " ".join(f"w{i}" for i in range(400))  # each "wNNN " about two cl100k tokens
    doc = Document("d", words)
    gold_at = words.index("w350")
    q = Query("q", "?", gold=(Span("d", gold_at, gold_at + 4),))
    big = [Chunk.make(doc, a, b, "t") for a, b in ((0, 600), (600, 1200), (1200, len(words)))]
    small = [Chunk.make(doc, gold_at, gold_at + 4, "t")] + big
    # the gold chunk is third: within k = 5, but a 300-token budget holds fewer chunks
    deep = budget_depth(Ranked("q", big), q, budget=300, k=5)
    assert deep["ranks"] == [3] and deep["units"] < 3 and deep["cause"] == "depth"
    # the same ranking read at k = 2: past both the top k and the budget
    assert budget_depth(Ranked("q", big), q, budget=300, k=2)["cause"] == "ranking"
    held = budget_depth(Ranked("q", small), q, budget=300, k=5)
    assert held["held"] == [1] and held["cause"] == "held"


def test_headline_names_the_ties_and_the_margin_over_the_window_baselines():
    from ragkit.experiments.byod import headline

    steps = pd.DataFrame([
        {"against": "router", "diff": 0.016, "low": -0.018, "high": 0.054, "n": 116},
        {"against": "fixed_chars(1000/200)", "diff": 0.11, "low": 0.058, "high": 0.168, "n": 116},
        {"against": "recursive(1000/200,chars)", "diff": 0.139, "low": 0.085, "high": 0.2,
         "n": 116},
        {"against": "chonkie", "diff": 0.15, "low": 0.093, "high": 0.215, "n": 116}])
    line = headline(steps, "structure", ["fixed_chars(1000/200)", "recursive(1000/200,chars)"],
                    "recall@B1024")
    assert "n = 116" in line and "**structure** shows no measurable difference from **router** (+1.6 [-1.8, +5.4])" in line
    # ahead of it, and not a window baseline: named after the windows, so none is left out
    assert line.endswith("; against the other strategies: ahead of chonkie +15.0 [+9.3, +21.5] "
                         "points.")
    assert "against the 2 window baselines" in line and "ahead of 2, behind 0 and not measurably different from 0" in line
    assert line.index("fixed_chars(1000/200) +11.0 [+5.8, +16.8]") < line.index("recursive(")
    none = headline(steps.iloc[1:], "structure", [], "recall@B1024")
    assert "differs measurably from every other strategy" in none and "window" not in none
