"""Helpers notebooks 01 and 02 rely on: a staged case shown in full, a refusal threshold that
refuses."""

import numpy as np

from ragkit.chunkers import FixedCharChunker
from ragkit.evaluate import calibrate_threshold, refusal_scores
from ragkit.report import staged_case_html
from ragkit.retrieve import Hit
from ragkit.types import Query, Span

from conftest import TABLE_TEXT as TEXT
from conftest import table_policy

DOC, GOLD = table_policy()


def test_staged_case_shows_explanation_whole_chunks_and_full_hits():
    chunks = FixedCharChunker(1000, 200).chunk(DOC)
    q = Query("q1", "Gold window?", gold=(GOLD,), answer="14 days & a 2% fee")
    far = chunks[-1]  # the last chunk: no gold, its whole text must appear
    case = {"name": "fee_tier_table_split", "description": "The <header> ends before the row."}
    page = staged_case_html(case, q, {"policy": DOC}, chunks, {"dense": [Hit(far, 0.5)]}, k=3,
                            splitter="fixed")
    assert "fee tier table split" in page and "Why it was staged" in page
    assert "The &lt;header&gt; ends before the row." in page          # escaped, shown whole
    assert "14 days &amp; a 2% fee" in page
    assert "gold span 1 of 1" in page and "holds all the gold" in page
    assert "<b style='color:#b00020'>| Gold | 14 days | 2% |</b>" in page
    assert far.text.strip()[-60:].replace("\n", " ") in page.replace("\n", " ")  # hit in full
    assert "no gold" in page


def test_balanced_threshold_refuses_when_most_questions_are_answerable():
    rng = np.random.default_rng(0)
    scores = np.concatenate([rng.normal(0.7, 0.05, 90), rng.normal(0.55, 0.05, 10)])
    answerable = [True] * 90 + [False] * 10
    plain = calibrate_threshold(scores, answerable)
    balanced = calibrate_threshold(scores, answerable, balanced=True)
    assert balanced > plain
    refused_unanswerable = np.mean(scores[90:] < balanced)
    assert refused_unanswerable > 0.5


def test_refusal_scores_report_the_held_out_half_sizes():
    qs = [Query(f"a{i}", "?", gold=(Span("d", 0, 1),)) for i in range(30)] + \
         [Query(f"r{i}", "?", type="refusal") for i in range(10)]
    top = {q.id: (0.8 if q.gold else 0.4) + 0.001 * i for i, q in enumerate(qs)}
    side = {q.id: ("tune", "held-out")[i % 2] for i, q in enumerate(qs)}
    r = refusal_scores(qs, top, balanced=True, split=side)
    assert (r["n_answerable"], r["n_unanswerable"]) == (15, 5)
    assert (r["n_tune_answerable"], r["n_tune_unanswerable"]) == (15, 5)
    assert r["over_refusal"] == 0.0 and r["unsupported_answer"] == 0.0
    assert r["balanced_accuracy"] == 1.0 == r["balanced_accuracy_low"]


def test_refusal_threshold_is_chosen_on_the_tune_half_only():
    """Tune and held-out would choose different thresholds: the tune one is used, and no
    held-out score can move it."""
    from ragkit.evaluate import calibrate_threshold

    tune_ans, tune_ref = [0.60, 0.70, 0.80, 0.90], [0.30, 0.40]
    held_ans, held_ref = [0.35, 0.45, 0.50, 0.95], [0.55, 0.58]
    qs, top, side = [], {}, {}
    for half, ans, ref in (("tune", tune_ans, tune_ref), ("held-out", held_ans, held_ref)):
        for i, s in enumerate(ans + ref):
            q = Query(f"{half}-{i}", "?", gold=(Span("d", 0, 1),) if i < len(ans) else ())
            qs.append(q)
            top[q.id], side[q.id] = s, half
    on_tune = calibrate_threshold(tune_ans + tune_ref, [True] * 4 + [False] * 2, balanced=True)
    on_held = calibrate_threshold(held_ans + held_ref, [True] * 4 + [False] * 2, balanced=True)
    assert on_tune != on_held
    r = refusal_scores(qs, top, balanced=True, split=side)
    assert r["refusal_threshold"] == on_tune == 0.6
    # scored on the held-out half: 0.95 answered, 0.35/0.45/0.50 refused; 0.55/0.58 refused
    assert r["over_refusal"] == 0.75 and r["unsupported_answer"] == 0.0
    assert r["balanced_accuracy"] == (0.25 + 1.0) / 2
    assert r["balanced_accuracy_low"] <= r["balanced_accuracy"] <= r["balanced_accuracy_high"]
    moved = {**top, **{q: s - 0.5 for q, s in top.items() if side[q] == "held-out"}}
    assert refusal_scores(qs, moved, balanced=True, split=side)["refusal_threshold"] == on_tune
    # a split function works as a mapping does
    same = refusal_scores(qs, top, balanced=True, split=side.__getitem__)
    assert same == r


def test_refusal_scores_use_the_committed_grouped_split_by_default():
    from ragkit.evaluate import split_of

    ids = [f"q{i:03d}" for i in range(1, 41)]
    qs = [Query(i, "?", gold=(Span("d", 0, 1),) if n % 4 else ()) for n, i in enumerate(ids)]
    top = {q.id: 0.9 if q.gold else 0.1 for q in qs}
    r = refusal_scores(qs, top, balanced=True)
    held = [q for q in qs if split_of(q.id) == "held-out"]
    assert 0 < len(held) < len(qs)  # q001-q040 fall on both sides of results/splits.json
    assert r["n_answerable"] + r["n_unanswerable"] == len(held)
    assert r["n_unanswerable"] == sum(not q.gold for q in held)
