"""The decision guide: three questions answered from one-factor comparisons, the same cells in
the guide file, the README and notebook 07's closing sentences."""

import json

import numpy as np
import pandas as pd

from ragkit.evaluate.splits import SPLITS_FILE
from ragkit.experiments.design import BUDGETS, Config, effects, saved_runs, simple_baselines
from ragkit.report import Recorder, guide, load_results

COURSE = json.loads(SPLITS_FILE.read_text())["course"]
IDS = sorted(COURSE["tune"] + COURSE["held-out"])
HELD = set(COURSE["held-out"])
SIMPLE = [c.label for c in simple_baselines()]


def _record(rec, cfg: Config, held: float, tune: float, seed: int):
    from ragkit.experiments import Outcome

    rng = np.random.default_rng(seed)
    vals = np.clip(np.array([held if q in HELD else tune for q in IDS])
                   + rng.normal(0, 0.02, len(IDS)), 0, 1)
    pq = pd.DataFrame({"query_id": IDS, "type": "lookup",
                       **{f"{m}@B{b}": vals for m in ("recall", "pass") for b in BUDGETS}})
    means = {c: float(pq[c].mean()) for c in pq.columns if c not in ("query_id", "type")}
    Outcome("course", cfg.label, [], {}, pq, means, [], {}, {}, 12, BUDGETS).record(
        rec, experiment="design", embedder=cfg.encoder, k=5, **cfg.params())


def _saved(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(tmp_path))
    rec = Recorder("bench_design")
    enc = "all-MiniLM-L6-v2"
    for i, c in enumerate(SIMPLE):
        _record(rec, Config(c, "dense", "none", enc, True), 0.40 + 0.01 * i, 0.40 + 0.01 * i, i)
        _record(rec, Config(c, "stack", "none", enc, True), 0.60 + 0.01 * i, 0.60 + 0.01 * i, 10 + i)
    _record(rec, Config("router", "dense", "none", enc), 0.70, 0.70, 20)   # beats dense bases
    _record(rec, Config("router", "stack", "none", enc), 0.66, 0.66, 21)   # ties stack bases
    _record(rec, Config("router", "stack", "cross-encoder", enc), 0.50, 0.5, 22)  # loses
    for cfg, cost in ((Config("router", "stack", "none", enc), 3.0),):
        for m, v in (("chunks", 120), ("chunk_cpu_s", cost), ("index_mb", 1.5),
                     ("query_p50_ms", 4.0), ("query_p95_ms", 9.0)):
            rec.add(experiment="design_costs", benchmark="course", strategy=cfg.label,
                    metric=m, value=float(v), embedder=enc, n_queries=40, params=cfg.params())
    rec.save()
    return saved_runs(tmp_path)


def test_three_questions_with_held_out_numbers_and_picks(tmp_path, monkeypatch):
    runs = _saved(tmp_path, monkeypatch)
    found = effects(runs)
    header, rows = guide.chunker_rows(found)
    by = {(r[1], r[2]): dict(zip(header, r)) for r in rows}
    dense, stack = by[("dense", 1024)], by[("stack", 1024)]
    assert dense["ragkit's chunker"] == "router+dense (tuned)"
    assert dense["best simple baseline (tune half)"] == SIMPLE[-1]
    assert dense["pick"] == "router+dense" and dense["n"] == len(HELD)
    assert stack["pick"].startswith("no measurable difference: ")  # the cheaper: the baseline
    # the held-out half's own leader among the baselines, beside ragkit's recall
    assert dense["highest baseline on the held-out half (recall@B)"].startswith(SIMPLE[-1])
    _, retrieval = guide.retrieval_rows(found)
    rerank = next(r for r in retrieval if r[3] == "stack+cross-encoder" and r[2] == 1024)
    assert rerank[-1] == "router+stack" and rerank[5].startswith("-")  # it loses: leave it out
    text = guide.markdown(found, [])
    for title in ("1. Which chunker, under your retrieval?", "2. Which retrieval, on your "
                  "chunks?", "3. Which encoder?"):
        assert f"## {title}" in text
    assert "Not measured by `ragkit bench design`" in text  # no second encoder in these runs


def test_readme_guide_and_closing_agree_cell_for_cell(tmp_path, monkeypatch):
    from ragkit.experiments.design_costs import load_costs
    from ragkit.report import closing, load_results
    from ragkit.tools import readme

    runs = _saved(tmp_path, monkeypatch)
    found = effects(runs)
    costs = load_costs(load_results(tmp_path))
    assert costs[0]["chunk_cpu_s"] == 3.0 and costs[0]["n_timed"] == 40
    text = guide.markdown(found, costs)
    section = readme.design_section(tmp_path).split("### The title, measured")[0]
    table_lines = [ln for ln in section.splitlines() if ln.startswith("| course |")]
    assert table_lines and all(ln in text.splitlines() for ln in table_lines)
    assert len(table_lines) == sum(ln.startswith("| course |") for ln in text.splitlines())
    said = closing.guide_findings(found, 1024)
    assert said[0].startswith("Against the best of every simple baseline under the same "
                              "retrieval (seven; eight with one chunk per page on PDFs), "
                              "ragkit's chunker beats it in 3, loses in 0 and shows "
                              "no measurable difference in 3 of 6")
    wins = said[0].split(" Where it is ahead: ", 1)[1]  # each win named, with what weakens it
    assert wins.count(" tokens, +") == 3 and wins.rstrip(".").count(";") >= 2
    assert any("under the stack: no measurable difference" in s for s in said)


def test_a_notebook_shows_one_budget_of_the_guide_and_the_costs_its_rows_compare(
        tmp_path, monkeypatch):
    """Notebook 07 shows the guide at its headline budget (`sections` of those effects: the
    guide file's rows at that budget, no others) and the costs of the configurations those
    rows compare (`costs_table`), and writes the whole guide to a file."""
    from ragkit.experiments.design_costs import load_costs

    runs = _saved(tmp_path, monkeypatch)
    found = effects(runs)
    whole = guide.markdown(found, load_costs(load_results(tmp_path))).splitlines()
    shown = guide.sections([e for e in found if e.budget == 1024], level=3).splitlines()
    rows = [ln for ln in shown if ln.startswith("| course |")]
    assert rows and all("| 1,024 |" in ln and ln in whole for ln in rows)
    assert len(rows) == sum(ln.startswith("| course |") and "| 1,024 |" in ln for ln in whole)
    assert "### 1. Which chunker, under your retrieval?" in shown
    costs = [{"benchmark": "course", "configuration": label, "chunks": 1, "chunk_cpu_s": 0.5,
              "index_mb": 1.0, "p50_ms": 2.0, "p95_ms": 3.0, "n_timed": 40}
             for label in ("router+stack", "fixed_chars(250/0)+dense")]
    table = guide.costs_table(costs, [e for e in found if e.budget == 1024])
    assert "| course | router+stack |" in table and "fixed_chars(250/0)+dense" not in table
    assert "fixed_chars(250/0)+dense" in guide.costs_table(costs)
    assert guide.costs_table([], found).startswith("Not measured")


def test_write_saves_in_the_results_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(tmp_path))
    path = guide.write(guide.markdown([], []))
    assert path == tmp_path / "decision_guide.md"
    assert "No chunker comparison in these runs." in path.read_text()


def test_the_guide_budgets_are_the_designs():
    from ragkit.experiments.design import BUDGETS as DESIGN

    assert guide.BUDGETS == DESIGN


def test_budget_chart_draws_lines_and_names_the_single_budget_runs(tmp_path, monkeypatch):
    """A run scored at one budget is a point, not a line: `curve_runs` leaves it out of the
    chart and names it, and still draws the leading runs measured at several budgets and the
    best simple baseline."""
    from ragkit.experiments import Outcome
    from ragkit.report import leaderboard as lb
    from ragkit.report import load_scores

    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(tmp_path))
    rec = Recorder("07_test")
    for strategy, recall in (("fixed_chars(1000/200)", [1.0, 0.0] * 40),
                             ("router", [1.0, 1.0, 1.0, 0.0] * 20)):
        n = len(recall)
        pq = pd.DataFrame({"query_id": [f"q{i}" for i in range(n)], "type": "lookup",
                           "recall": recall, **{f"{m}@B{b}": recall for m in
                                                ("recall", "pass", "iou") for b in (512, 1024)}})
        means = {c: float(pq[c].mean()) for c in pq.columns if c not in ("query_id", "type")}
        Outcome("course", strategy, [], {}, pq, means, [], {"retriever": "dense"}, {}, 12,
                (512, 1024)).record(rec, experiment="x", embedder="all-MiniLM-L6-v2", k=5)
    rec.save()
    rows, scores = load_results(tmp_path), load_scores(tmp_path)
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


def test_one_configuration_measured_twice_is_one_row_even_with_extra_metrics():
    """Two runs with the same per-query values are one board row naming both sources, though
    one of them also scored a metric the other did not (bench code's pass@20)."""
    from ragkit.report import leaderboard as lb

    q = [f"q{i}" for i in range(10)]
    rows = pd.DataFrame([{"run": r, "benchmark": "course", "strategy": "fixed+stack",
                          "embedder": "m", "params": {}, "notebook": nb, "experiment": "x",
                          "flags": [], "metric": "recall@B", "value": 0.5}
                         for r, nb in (("a", "bench_code"), ("b", "bench_design"))])

    def sc(run, extra=()):
        return [{"run": run, "query_id": x, "metric": m, "budget": bud, "value": i % 2}
                for i, x in enumerate(q) for m, bud in
                (("recall", -1), ("recall@B", 1024), ("pass@B", 1024), ("iou@B", 1024),
                 *extra)]
    scores = pd.DataFrame(sc("a", (("pass@20", -1),)) + sc("b"))
    b = lb.board(rows, scores, "course", 1024)
    assert len(b) == 1 and b.notebooks.iloc[0] == "bench_code, bench_design"
    other = scores.assign(value=[v if not (r == "b" and m == "recall") else 1 - v for r, m, v
                                 in zip(scores.run, scores.metric, scores.value)])
    assert len(lb.board(rows, other, "course", 1024)) == 2  # different values: two rows


def test_the_guide_says_where_the_reranker_loses_and_its_tune_pick_rank(tmp_path, monkeypatch):
    """The cross-encoder's line groups its effects by verdict (here it loses on the course at
    every budget) and names the benchmarks it was not measured on; the chunker table says where
    the tune half's pick ranks on the held-out half."""
    runs = _saved(tmp_path, monkeypatch)
    found = effects(runs)
    line = guide.reranker_line(found)
    assert "loses on course at 512, 1,024, 2,048" in line and "beats on" not in line
    assert "Not measured" not in line  # the course is the only benchmark here
    header, rows = guide.chunker_rows(found)
    dense = next(dict(zip(header, r)) for r in rows if r[1] == "dense" and r[2] == 1024)
    # the baselines' levels rise with their index on both halves: the tune pick leads there too
    assert dense["highest baseline on the held-out half (recall@B)"].endswith(
        "the tune half's pick is its leader too there")
    assert line in guide.markdown(found)


def test_pick_changes_say_which_cells_turn_when_read_on_all_questions(tmp_path, monkeypatch):
    """A router that leads on the held-out half and trails on the tune half turns from
    'ragkit ahead' to 'baseline ahead' when the same cell is read on all questions."""
    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(tmp_path))
    rec = Recorder("bench_design")
    enc = "all-MiniLM-L6-v2"
    for i, c in enumerate(SIMPLE):
        _record(rec, Config(c, "dense", "none", enc, True), 0.45, 0.45, i)
    _record(rec, Config("router", "dense", "none", enc), 0.70, 0.05, 20)
    rec.save()
    runs = saved_runs(tmp_path)
    same, n = guide.pick_changes(effects(runs), effects(runs))
    assert same.empty and n > 0
    changed, n = guide.pick_changes(effects(runs), effects(runs, split="all"))
    assert len(changed) == n and changed.turned.all()
    assert (changed["pick a"].map(guide.pick_side) == "ragkit ahead").all()
    assert (changed["pick b"].map(guide.pick_side) == "baseline ahead").all()


def test_chunker_grid_holds_every_cell_the_opening_answer_counts(tmp_path, monkeypatch):
    found = effects(_saved(tmp_path, monkeypatch))
    grid = guide.chunker_grid(found)
    _, rows = guide.chunker_rows(found)
    assert list(grid.columns) == [f"{b:,} tokens" for b in BUDGETS]
    assert grid.size == len(rows)  # one cell per benchmark × retrieval × encoder × budget
    assert list(grid.index.names) == ["benchmark", "retrieval", "encoder"]
    (enc,) = set(grid.index.get_level_values("encoder"))
    assert grid.loc[("course", "dense", enc), "1,024 tokens"].endswith(" ahead")  # router beats
    assert not grid.loc[("course", "stack", enc), "1,024 tokens"].endswith(("ahead", "behind"))


def test_the_grid_and_the_pick_changes_keep_two_encoders_apart():
    """Issue 49: with a second encoder's runs, the same benchmark, retrieval and budget is two
    cells, one per encoder; neither the grid nor the pick comparison folds them together."""
    from types import SimpleNamespace as NS

    from ragkit.evaluate.stats import Comparison

    def cfg(chunker, enc, simple=False):
        return NS(chunker=chunker, first_stage="stack", reranker="none", simple=simple,
                  encoder=enc, label=f"{chunker}+stack")

    up = Comparison(0.95, 0.90, 0.05, 0.02, 0.08, 10, 2, 38, 50)
    flat = Comparison(0.90, 0.90, 0.0, -0.02, 0.02, 5, 5, 40, 50)
    found = [NS(benchmark="course", factor="chunker", budget=1024, complete=True,
                treated=cfg("router", enc), base=cfg("fixed", enc, True), recall=c, pass_=c,
                verdict=v, split_rank=None, split_leader=None)
             for enc, c, v in (("a", up, "beats"), ("b", flat, "no measurable difference"))]
    grid = guide.chunker_grid(found)
    assert grid.loc[("course", "stack", "a"), "1,024 tokens"].endswith(" ahead")
    assert not grid.loc[("course", "stack", "b"), "1,024 tokens"].endswith(" ahead")
    changed, cells = guide.pick_changes(found, found)
    assert cells == 2 and changed.empty


def test_the_opening_count_leaves_weak_pick_wins_out_as_the_calls_do():
    from types import SimpleNamespace as NS

    from ragkit.evaluate.stats import Comparison
    from ragkit.report import closing

    def cfg(chunker, simple=False):
        return NS(chunker=chunker, first_stage="stack", reranker="none", simple=simple,
                  encoder="m", label=f"{chunker}+stack")

    up = Comparison(0.95, 0.90, 0.05, 0.02, 0.08, 10, 2, 38, 50)

    def eff(budget, **kw):
        return NS(benchmark="course", factor="chunker", treated=cfg("router"), budget=budget,
                  base=cfg("fixed", True), complete=True, recall=up, verdict="beats", **kw)

    found = [eff(1024, split_rank=(4, 7), split_leader=("langchain", 0.96)),  # a weak pick
             eff(2048, split_rank=(1, 7), split_leader=("fixed", 0.90))]
    said = closing.guide_findings(found, 1024)[0]
    assert "ragkit's chunker beats it in 1 (it is ahead in 1 more, against a weak pick: not " \
        "counted as wins, as in the calls below), loses in 0" in said


def test_a_win_against_a_weak_pick_reads_as_the_closing_reads_it():
    """The guide's pick column says a weak-pick win is not counted, as the closing's calls do."""
    from types import SimpleNamespace as NS

    from ragkit.evaluate.stats import Comparison

    def cfg(chunker, simple=False):
        return NS(chunker=chunker, first_stage="stack", reranker="none", simple=simple,
                  encoder="m", label=f"{chunker}+stack")

    up = Comparison(0.95, 0.90, 0.05, 0.02, 0.08, 10, 2, 38, 50)
    found = [NS(benchmark="course", factor="chunker", budget=b, complete=True,
                treated=cfg("router"), base=cfg("fixed", True), recall=up, pass_=up,
                verdict="beats", split_rank=rank, split_leader=leader)
             for b, rank, leader in ((1024, (4, 7), ("langchain", 0.96)),
                                     (2048, (1, 7), ("fixed", 0.90)))]
    _, rows = guide.chunker_rows(found)
    picks = {r[2]: r[9] for r in rows}
    assert picks[1024] == "router+stack (ahead of a weak pick: not counted as a win)"
    assert picks[2048] == "router+stack"
