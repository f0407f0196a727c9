"""The decision guide: picks, "nothing beats the simple baseline", costs, per-type rows, file."""

import pandas as pd

from ragkit.report import Recorder, guide, load_results, load_scores


def _record(rec, strategy, recall, benchmark="course", types=None, generator=None,
            n_chunks=100.0):
    from ragkit.experiments import Outcome

    n = len(recall)
    pq = pd.DataFrame({"query_id": [f"q{i}" for i in range(n)],
                       "type": types or ["lookup"] * n, "recall": recall,
                       **{f"{m}@B{b}": recall for m in ("recall", "pass", "iou")
                          for b in (512, 1024)}})
    means = {c: float(pq[c].mean()) for c in pq.columns if c not in ("query_id", "type")}
    means |= {"n_chunks": n_chunks, "mean_chunk_chars": 400.0}
    params = {"retriever": "dense"} | ({"generator": generator} if generator else {})
    out = Outcome(benchmark, strategy, [], {}, pq, means, [], params, {}, 12, (512, 1024))
    return out.record(rec, experiment="x", embedder="all-MiniLM-L6-v2", k=5)


def _saved(tmp_path, monkeypatch, runs):
    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(tmp_path))
    rec = Recorder("07_test")
    for args, kw in runs:
        _record(rec, *args, **kw)
    rec.save()
    return load_results(tmp_path), load_scores(tmp_path)


def test_a_significant_winner_is_picked_with_its_interval_and_costs(tmp_path, monkeypatch):
    base = [1.0, 0.0] * 40                     # 50 %
    better = [1.0, 1.0, 1.0, 0.0] * 20          # 75 %: wins on 20 questions, loses none
    rows, scores = _saved(tmp_path, monkeypatch, [
        (("fixed_chars(1000/200)", base), {}),
        (("contextual · gemma", better), {"generator": "gemma", "n_chunks": 1000.0}),
        (("noise", [0.0, 1.0] * 40), {})])    # 50 %, ties in mean, not a winner
    g = guide.decision_guide(rows, scores, benchmarks=["course", "chroma"])
    assert list(g.budget) == [512, 1024]        # no 2048 scores, no chroma rows: skipped
    r = g.iloc[0]
    assert r.pick == "contextual · gemma" and r.baseline == "fixed_chars(1000/200)"
    assert r.low > 0 and abs(r["diff"] - 0.25) < 1e-9 and r.n == 80
    assert (r.n_beat_baseline, r.n_configurations) == (1, 2)
    assert r.chunks == 1000 and r.llm_calls == 1000 and r.tokens_embedded == 100_000
    assert abs(r.llm_cost_usd - 100_000 * guide.PRICE_PER_MILLION_TOKENS / 1e6) < 1e-12
    assert r.chunking_time == r.query_latency == r.index_size == guide.NOT_MEASURED
    text = guide.markdown(g)
    assert "**contextual · gemma** beats the baseline" in text and "+25.0 [" in text


def test_nothing_beats_the_baseline_when_no_interval_is_above_zero(tmp_path, monkeypatch):
    base = [1.0, 0.0, 1.0, 1.0] * 20            # 75 %
    rows, scores = _saved(tmp_path, monkeypatch, [
        (("recursive(1000/200,chars)", base), {}),
        (("structure", [1.0, 1.0, 0.0, 1.0] * 20), {}),   # same mean, reshuffled
        (("semantic", [1.0, 0.0, 0.0, 1.0] * 20), {})])   # below
    g = guide.decision_guide(rows, scores, budgets=[1024])
    r = g.iloc[0]
    assert r.pick == guide.NOTHING and r.leader == "structure" and r.low <= 0
    assert r.n_beat_baseline == 0 and r.n_below_baseline == 1
    assert r.chunks == 100 and r.llm_calls == 0      # the baseline's costs
    assert "nothing beats the simple baseline (best challenger: structure)" in guide.markdown(g)


def test_by_type_compares_the_pick_per_question_type(tmp_path, monkeypatch):
    types = ["lookup", "comparison"] * 40
    base = [1.0, 0.0] * 40                      # lookups right, comparisons wrong
    rows, scores = _saved(tmp_path, monkeypatch, [
        (("fixed_chars(1000/200)", base), {"types": types}),
        (("router", [1.0] * 80), {"types": types})])
    g = guide.decision_guide(rows, scores, budgets=[1024])
    types_table = guide.by_type(rows, scores, g, "course", 1024)
    t = types_table.set_index("type")
    assert t.loc["comparison", "diff"] == 1.0 and t.loc["lookup", "diff"] == 0.0
    assert t.loc["comparison", "n"] == 40
    assert "| comparison | 40 | 100.0 % | 0.0 % |" in guide.markdown(g, types_table)


def test_write_goes_to_the_results_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(tmp_path))
    path = guide.write(guide.markdown(pd.DataFrame()))
    assert path == tmp_path / "decision_guide.md"
    assert "run `make reproduce`" in path.read_text()


def test_llm_generators_match_the_pipeline():
    from ragkit.experiments import LLM_GENERATORS

    assert tuple(guide.LLM_GENERATORS) == tuple(LLM_GENERATORS)


def test_an_empty_guide_keeps_its_columns(tmp_path, monkeypatch):
    rows, scores = _saved(tmp_path, monkeypatch, [(("structure", [1.0, 0.0] * 10), {})])
    g = guide.decision_guide(rows, scores)     # no baseline: nothing to decide
    assert g.empty and "pick" in g.columns
    assert guide.by_type(rows, scores, g).empty


def test_summary_reads_the_verdict_and_the_difference(tmp_path, monkeypatch):
    rows, scores = _saved(tmp_path, monkeypatch, [
        (("fixed_chars(1000/200)", [1.0, 0.0] * 40), {}),
        (("router", [1.0, 1.0, 1.0, 0.0] * 20), {})])
    s = guide.summary(guide.decision_guide(rows, scores, budgets=[1024]))
    assert s.verdict[0] == "**router** beats the baseline"
    assert s.baseline[0] == "fixed_chars(1000/200) (50.0 %)"
    assert s["difference, points [95 % CI]"][0].startswith("+25.0 [")


def test_closing_sentences_from_the_guide_and_the_boards(tmp_path, monkeypatch):
    from ragkit.report import closing
    from ragkit.report import leaderboard as lb

    rows, scores = _saved(tmp_path, monkeypatch, [
        (("fixed_chars(1000/200)", [1.0, 1.0, 1.0, 0.0] * 20), {}),
        (("router", [1.0, 0.0] * 40), {}),
        (("structure", [1.0, 1.0, 0.0, 1.0] * 20), {})])
    g = guide.decision_guide(rows, scores, budgets=[1024])
    said = closing.guide_findings(g, 1024)
    assert said[0].startswith("Across 1 benchmark × budget cells of the decision guide, a "
                              "configuration beats the best simple baseline in 0 (none)")
    assert said[1].startswith("On **course** at 1,024 tokens nothing beats the simple baseline "
                              "**fixed_chars(1000/200)** (75.0 %); its best challenger: no "
                              "measurable difference between **structure**")
    boards = {"course": lb.board(rows, scores, "course", 1024)}
    router = closing.router_findings(boards, scores, 1024)[0]
    assert router.startswith("On **course** the router ranks 3 of 3 at 1,024 tokens; "
                             "**fixed_chars(1000/200)** beats **router** on recall@1024 by 25.0")


def test_the_baseline_is_the_strongest_run_on_simple_chunks_and_the_label_says_so(
        tmp_path, monkeypatch):
    """The bar is the best run on a simple splitter's chunks, whatever retrieval it ran with
    (a stack and a cross-encoder on fixed windows included), and the guide's label says that
    rather than "fixed-size or recursive splitter"."""
    from ragkit.report import leaderboard as lb

    rows, scores = _saved(tmp_path, monkeypatch, [
        (("fixed_chars(1000/200)", [1.0, 0.0] * 40), {}),
        (("fixed_chars(1000/200)+stack+cross-encoder", [1.0, 1.0, 1.0, 0.0] * 20), {}),
        (("langchain markdown+recursive(254/0,minilm)", [1.0, 0.0, 0.0, 0.0] * 20), {}),
        (("router+stack", [1.0, 1.0, 0.0, 1.0] * 20), {})])
    g = guide.decision_guide(rows, scores, budgets=[1024])
    r = g.iloc[0]
    assert r.baseline == "fixed_chars(1000/200)+stack+cross-encoder"
    assert r.pick == guide.NOTHING and r.leader == "router+stack"
    text = guide.markdown(g)
    assert lb.BASELINE_LABEL in text and "fixed-size or recursive splitter)" not in text


def test_budget_chart_draws_lines_and_names_the_single_budget_runs(tmp_path, monkeypatch):
    """A run scored at one budget is a point, not a line: `curve_runs` leaves it out of the
    chart and names it, and still draws the leading runs measured at several budgets and the
    best simple baseline."""
    from ragkit.report import leaderboard as lb

    rows, scores = _saved(tmp_path, monkeypatch, [
        (("fixed_chars(1000/200)", [1.0, 0.0] * 40), {}),
        (("router", [1.0, 1.0, 1.0, 0.0] * 20), {})])
    one = scores[scores.run == rows[rows.strategy == "router"].run.dropna().iloc[0]]
    only_1024 = one[one.budget.isin((-1, 1024))].assign(run="r1024")
    rows = pd.concat([rows, rows[rows.strategy == "router"].assign(
        run="r1024", strategy="prose+stack", value=0.99)])
    scores = pd.concat([scores, only_1024.assign(value=1.0)])
    b = lb.board(rows, scores, "course", 1024)
    assert b.strategy.iloc[0] == "prose+stack"
    runs, skipped = lb.curve_runs(b, scores, top=3, budgets=(512, 1024), min_budgets=2)
    assert skipped == ["prose+stack"]
    assert [b.set_index("run").strategy[r] for r in runs] == ["router", "fixed_chars(1000/200)"]
