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


def test_refusal_scores_report_the_test_half_sizes():
    qs = [Query(f"a{i}", "?", gold=(Span("d", 0, 1),)) for i in range(30)] + \
         [Query(f"r{i}", "?", type="refusal") for i in range(10)]
    top = {q.id: (0.8 if q.gold else 0.4) + 0.001 * i for i, q in enumerate(qs)}
    r = refusal_scores(qs, top, balanced=True)
    assert r["n_answerable"] + r["n_unanswerable"] == 20
    assert r["over_refusal"] == 0.0 and r["unsupported_answer"] == 0.0
