"""Notebook decisions: the best baseline is chosen on the tune half and quoted held-out."""

import json

import pandas as pd
import pytest

from ragkit.evaluate.splits import SPLITS_FILE
from ragkit.experiments.decide import against, against_best, tune_picks


class Out:
    def __init__(self, values: dict[str, float], n_chunks: int | None = None):
        self.per_query = pd.DataFrame({"query_id": list(values),
                                       "recall@B1024": list(values.values())})
        self.means = {} if n_chunks is None else {"n_chunks": float(n_chunks)}

    def values(self, metric, budget=None):
        col = metric if budget is None else f"{metric}@B{budget}"
        return self.per_query.set_index("query_id")[col]


@pytest.fixture(scope="module")
def halves():
    course = json.loads(SPLITS_FILE.read_text())["course"]
    return course["tune"][:40], course["held-out"][:40]


def test_the_best_baseline_is_chosen_on_tune_and_quoted_on_held_out(halves):
    tune, held = halves
    # baseline "a" is best on tune, "b" on held-out: the pick must be "a"
    a = Out({**{q: 0.8 for q in tune}, **{q: 0.2 for q in held}})
    b = Out({**{q: 0.1 for q in tune}, **{q: 0.9 for q in held}})
    t = Out({**{q: 0.0 for q in tune}, **{q: 0.5 for q in held}})
    d = against_best({("course", "t"): t, ("course", "a"): a, ("course", "b"): b}, "t",
                     ["a", "b"])
    c = d.by_benchmark["course"]
    assert c.n == len(held) and c.diff == pytest.approx(0.5 - 0.2)
    assert d.call == "use" and "tune half" in d.against and "best of the 2" in d.against
    assert tune_picks({("course", "t"): t, ("course", "a"): a, ("course", "b"): b},
                      ["a", "b"]) == {"course": "a"}
    ids = [f"mine-{i}" for i in range(5)]  # no tune half: the best on all questions
    assert tune_picks({("mine", "a"): Out({q: 0.1 for q in ids}),
                       ("mine", "b"): Out({q: 0.3 for q in ids})}, ["a", "b", "c"]) == {"mine": "b"}


def test_unknown_questions_are_chosen_and_quoted_on_the_same_questions():
    ids = [f"mine-{i}" for i in range(30)]
    d = against_best({("mine", "t"): Out({q: 1.0 for q in ids}),
                      ("mine", "a"): Out({q: 0.0 for q in ids})}, "t", ["a"])
    assert d.by_benchmark["mine"].n == 30 and "no tune half" in d.against


def test_against_one_alternative_pairs_held_out_only(halves):
    tune, held = halves
    x = Out({**{q: 1.0 for q in tune}, **{q: 0.0 for q in held}})
    y = Out({q: 0.0 for q in tune + held})
    d = against({("course", "x"): x, ("course", "y"): y}, "x", "y", alternative="plain")
    assert d.by_benchmark["course"].diff == 0 and d.call == "no evidence either way"
    assert d.against == "plain" and d.split == "held-out half" and d.note == ""
    # held-out: x ahead; tune: y ahead -> the note says the halves point opposite ways
    x2 = Out({**{q: 0.0 for q in tune}, **{q: 1.0 for q in held}})
    y2 = Out({**{q: 1.0 for q in tune}, **{q: 0.0 for q in held}})
    d2 = against({("course", "x"): x2, ("course", "y"): y2}, "x", "y")
    # ... measurably both ways: not a stable effect, so no call either way
    assert d2.unstable == ("course",) and d2.call == "no evidence either way"
    assert d2.note.startswith(
        f"on course's tune half the same comparison reads -100.0 [-100.0, -100.0], n = {len(tune)}")
    assert "is reversed measurably on the tune half" in d2.line()
    assert d2.line().endswith("the two halves point in opposite directions).")
    # the tune half leans the other way without a measurable difference: the call stands
    y3 = Out({**{q: 1.0 for q in tune[:2]}, **{q: 0.0 for q in tune[2:] + held}})
    x3 = Out({**{q: 0.0 for q in tune}, **{q: 1.0 for q in held}})
    d3 = against({("course", "x"): x3, ("course", "y"): y3}, "x", "y")
    assert d3.unstable == () and d3.call == "use" and "opposite directions" in d3.note
    assert against({("course", "x"): x}, "x", "y") is None


def test_a_use_states_its_measured_cost(halves):
    """The units each side embeds and indexes, on the deciding benchmark, beside the call."""
    tune, held = halves
    a = Out({**{q: 0.2 for q in tune}, **{q: 0.2 for q in held}}, n_chunks=300)
    t = Out({**{q: 0.5 for q in tune}, **{q: 0.6 for q in held}}, n_chunks=1200)
    d = against_best({("course", "t"): t, ("course", "a"): a}, "t", ["a"])
    assert d.call == "use" and d.cost == "1,200 chunks to embed and index against 300 on course"
    assert "cost: 1,200 chunks" in d.line()


def test_a_call_notes_chunks_the_encoder_cut_on_its_deciding_benchmark(halves):
    tune, held = halves
    x = Out({**{q: 0.5 for q in tune}, **{q: 1.0 for q in held}})  # x ahead
    y = Out({q: 0.5 for q in tune + held})
    x.flags, y.flags = [], ["truncated:30"]  # the side behind was cut more
    d = against({("course", "x"): x, ("course", "y"): y}, "x", "y")
    assert d.note == ("on course, the encoder cut 0 of the texts this side embedded and 30 of "
                      "the baseline's (longer than it reads), so part of the difference is text "
                      "the encoder never saw")
    x.flags = ["truncated:30"]  # as many cut on each side: no handicap of one side
    assert against({("course", "x"): x, ("course", "y"): y}, "x", "y").note == ""
    x.flags, y.flags = ["truncated:40"], []  # the side ahead was cut more: no excuse
    assert against({("course", "x"): x, ("course", "y"): y}, "x", "y").note == ""
    # the same count cut on both sides (small-to-big returns parents but embeds the children
    # its baseline embeds): no note, whatever the returned units' counts
    x.flags, y.flags = ["truncated:294"], ["truncated:294"]
    x.chunks, y.chunks = [None] * 382, [None] * 1728
    assert against({("course", "x"): x, ("course", "y"): y}, "x", "y").note == ""
    # shares, not counts: the side behind cut 304 of its 334 texts, the side ahead 490 of 641
    x.flags, y.flags = ["truncated:490"], ["truncated:304"]
    x.chunks, y.chunks = [None] * 641, [None] * 334
    assert against({("course", "x"): x, ("course", "y"): y}, "x", "y").note.startswith(
        "on course, the encoder cut 490 of the 641 texts this side embedded and 304 of the "
        "baseline's 334")


def test_a_cost_counts_what_each_side_embeds_not_what_it_returns(halves):
    """Small-to-big returns parents but embeds its children: its cost is the children."""
    tune, held = halves
    children = Out({**{q: 0.5 for q in tune}, **{q: 0.6 for q in held}}, n_chunks=1200)
    s2b = Out({**{q: 0.2 for q in tune}, **{q: 0.2 for q in held}}, n_chunks=300)  # parents
    s2b.n_indexed = 1200  # the very children the baseline embeds
    d = against({("course", "s2b"): s2b, ("course", "c"): children}, "s2b", "c")
    assert d.call == "do not use" and d.cost == ""  # the same units: nothing to weigh
    s2b.n_indexed = 1500
    assert against({("course", "s2b"): s2b, ("course", "c"): children}, "s2b", "c").cost == (
        "1,500 chunks to embed and index against 1,200 on course")
