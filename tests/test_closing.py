"""Closing findings of notebooks 06–08: steps, ranks, rerank pairs, sentences;
and the ranked leaderboard figure (`ragkit.report.ranked_intervals`)."""

import pandas as pd

from ragkit.experiments import Outcome
from ragkit.report import Recorder, closing, load_results, load_scores


def _outcome(bench, strategy, recall):
    n = len(recall)
    pq = pd.DataFrame({"query_id": [f"q{i}" for i in range(n)], "type": "lookup",
                       "recall": recall, "recall@B1024": recall, "iou@B1024": recall,
                       "pass@20": recall})
    means = {c: float(pq[c].mean()) for c in pq.columns if c not in ("query_id", "type")}
    return Outcome(bench, strategy, [], {}, pq, means, [], {"retriever": "dense"}, {}, 20,
                   (1024,))


def test_step_table_pairs_each_step_with_the_row_it_builds_on():
    outs = {("course", "structure"): _outcome("course", "structure", [0.0, 1.0] * 20),
            ("course", "structure + breadcrumbs"): _outcome(
                "course", "structure + breadcrumbs", [1.0, 1.0] * 20),
            ("course", "+ structural preamble"): _outcome(
                "course", "+ structural preamble", [0.0, 0.0] * 20)}
    t = closing.step_table(outs, budget=1024).set_index("step")
    assert list(t.index) == ["structure + breadcrumbs", "+ structural preamble"]  # no BM25 row
    assert t.loc["structure + breadcrumbs", "diff"] == 0.5
    assert t.loc["+ structural preamble", "against"] == "structure + breadcrumbs"
    assert t.loc["+ structural preamble", "high"] < 0
    fixed_k = closing.step_table(outs, [("structure", "+ structural preamble")], budget=None)
    assert fixed_k.iloc[0]["diff"] == 0.5
    said = closing.step_findings(closing.step_table(outs, budget=1024))
    assert said[0].startswith("**structure + breadcrumbs** against structure, recall@1024: it "
                              "raises it on course (+50.0 points")
    assert "it lowers it on course (-100.0 points" in said[1]


def test_rank_of_finds_merged_names():
    board = pd.DataFrame({"strategy": ["a", "b = router …", "router"]})
    assert closing.rank_of(board, "router") == (2, 3)
    assert closing.rank_of(board, "nope") is None


def test_rerank_pairs_compare_each_rerank_stage_with_the_stage_without_it(tmp_path,
                                                                          monkeypatch):
    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(tmp_path))
    rec = Recorder("04_x")
    _outcome("course", "contextual embeddings + BM25 · gemma · c", [1.0, 1.0] * 20).record(
        rec, experiment="x", embedder="e", k=5)
    _outcome("course", "contextual embeddings + BM25 + rerank · gemma · c",
             [1.0, 0.0] * 20).record(rec, experiment="x", embedder="e", k=5)
    rec.save()
    rows, scores = load_results(tmp_path), load_scores(tmp_path)
    pairs = closing.rerank_pairs(rows, scores)
    assert len(pairs) == 1 and pairs[0]["comparison"].diff == -0.5
    assert pairs[0]["without"] == "contextual embeddings + BM25 · gemma · c"
    said = closing.rerank_findings(pairs)[0]
    assert "beats **contextual embeddings + BM25 + rerank" in said and "Pass@20" in said
    assert "did not run in these rows" in closing.rerank_findings([])[0]


def test_claims_finding_counts_verdicts_and_after_colon():
    claims = pd.DataFrame({"role": ["claim", "claim", "sensitivity"],
                           "verdict": ["held", "not held", "held"]})
    assert closing.claims_finding(claims) == ("Of the 2 quantitative claims the course checks: "
                                              "1 held, 1 not held.")
    assert closing.after_colon("No measurable difference") == "no measurable difference"
    assert closing.after_colon("**a** beats **b**") == "**a** beats **b**"


def test_ranked_intervals_keeps_the_top_and_the_highlighted_rows():
    from ragkit.report import ranked_intervals

    board = pd.DataFrame({"strategy": [f"s{i}" for i in range(20)] + ["fixed_chars(1000/200)"],
                          "recall": [0.9 - 0.01 * i for i in range(20)] + [0.5]})
    board["recall_low"], board["recall_high"] = board.recall - 0.05, board.recall + 0.05
    fig = ranked_intervals(board, top=5, highlight=lambda s: s.startswith("fixed"))
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels[0] == "s0" and labels[-1] == "fixed_chars(1000/200)" and len(labels) == 6
    # two encoders' baselines: both coloured, the dotted line at one encoder's best only
    board.loc[3, "strategy"] = "fixed_chars(250/0) (other)"
    fig = ranked_intervals(board, top=5, highlight=lambda s: s.startswith("fixed"),
                           line=lambda s: "(other)" not in s, line_label="best of one encoder")
    ax = fig.axes[0]
    (x,) = {line.get_xdata()[0] for line in ax.lines if line.get_linestyle() == ":"}
    assert x == 50.0  # fixed_chars(1000/200), not the other encoder's 87.0
    assert "best of one encoder" in [t.get_text() for t in ax.get_legend().get_texts()]


def test_step_display_formats_the_difference_in_points():
    outs = {("c", "a"): _outcome("c", "a", [1.0, 1.0] * 10),
            ("c", "b"): _outcome("c", "b", [1.0, 0.0] * 10)}
    shown = closing.step_display(closing.step_table(outs, [("a", "b")]))
    assert list(shown.columns) == ["benchmark", "step", "against", "difference", "n"]
    assert shown.difference[0] == "+50.0 [+30.0, +70.0]"


def test_metric_agreement_counts_each_steps_measured_directions():
    import pandas as pd

    from ragkit.report import metric_agreement

    keys = {"benchmark": ["b"] * 4, "step": ["s1", "s2", "s3", "s4"], "against": ["a"] * 4}
    recall = pd.DataFrame({**keys, "diff": [0.05, 0.04, 0.0, -0.03],
                           "low": [0.02, 0.01, -0.01, -0.05], "high": [0.08, 0.07, 0.01, -0.01]})
    iou = pd.DataFrame({**keys, "diff": [0.01, -0.02, 0.0, 0.002],
                        "low": [0.005, -0.03, -0.01, -0.001], "high": [0.02, -0.01, 0.01, 0.004]})
    text = metric_agreement(recall, iou, "recall", "IoU")
    assert text.splitlines()[0] == (
        "Of 4 steps, recall and IoU move measurably the same way in 1 and in opposite ways in "
        "1; only recall moves measurably in 1, only IoU in 0, neither in 1.")
    assert text.splitlines()[1:] == ["  b, s2 against a: recall +4.0 [+1.0, +7.0], IoU -2.0 "
                                     "[-3.0, -1.0]"]
