"""The experiment design: every effect changes one factor, against the best baseline measured
under the same conditions, chosen on the tune half and quoted on the held-out half."""

import itertools
import zlib

import numpy as np
import pandas as pd
import pytest

import ragkit.evaluate.runs as R
import ragkit.experiments.design as D
from ragkit.experiments.design import Config, Metric, Run, effects, headline
from ragkit.experiments.title import title_numbers

IDS = [f"q{i:03d}" for i in range(60)]
SIDE = {q: ("tune" if i % 2 else "held-out") for i, q in enumerate(IDS)}
SIMPLE = [c.label for c in D.simple_baselines()]
REAL_SIDE = R.side_of  # the committed split, for the test on the committed runs


@pytest.fixture(autouse=True)
def _toy_split(monkeypatch):
    monkeypatch.setattr(R, "side_of", SIDE.__getitem__)  # every split of ragkit.evaluate.runs


def run(chunker, first="dense", reranker="none", encoder="all-MiniLM-L6-v2", level=0.5,
        simple=None, tune=None, bench="toy"):
    """A run whose recall@B and pass@B are `level` on every question (`tune` on the tune half
    when given), plus a little per-question noise from a fixed seed."""
    rng = np.random.default_rng(zlib.crc32(f"{chunker}|{first}|{reranker}|{encoder}".encode()))
    vals = np.array([tune if (tune is not None and SIDE[q] == "tune") else level for q in IDS])
    vals = np.clip(vals + rng.normal(0, 0.01, len(IDS)), 0, 1)
    cols = {Metric(m, b).column: vals for m in ("recall", "pass") for b in D.BUDGETS}
    cfg = Config(chunker, first, reranker, encoder, chunker in SIMPLE if simple is None
                 else simple)
    return Run(bench, cfg.label, pd.DataFrame(cols, index=pd.Index(IDS, name="query_id")), cfg)


def grid():
    runs = []
    for i, c in enumerate(SIMPLE):
        runs.append(run(c, "dense", level=0.40 + 0.02 * i))
        # under the stack another baseline is best, and on the tune half a third one looks best
        runs.append(run(c, "stack", level=0.70 - 0.02 * i, tune=0.9 if i == 3 else None))
    runs += [run("router", "dense", level=0.55), run("router", "stack", level=0.72),
             run("router", "stack", "cross-encoder", level=0.65),
             run("router", "stack", encoder="embeddinggemma", level=0.8)]
    return runs


def test_no_effect_differs_from_its_baseline_in_another_factor():
    found = effects(grid())
    assert found
    for e in found:
        assert e.treated.differs(e.base) == {e.factor}
    assert {e.factor for e in found} == {"chunker", "first_stage", "reranker", "encoder"}


def test_a_chunker_is_compared_with_the_best_baseline_under_its_own_retrieval():
    runs = grid()
    for e in (e for e in effects(runs) if e.factor == "chunker"):
        assert e.base.simple and e.complete
        same = [r for r in runs if r.config.simple and
                r.config.held("chunker") == e.treated.held("chunker")]
        assert len(same) == len(SIMPLE)  # every simple baseline was in the running
        best = max(same, key=lambda r: r.values(Metric("recall", e.budget), "tune").mean())
        assert e.base == best.config  # chosen on the tune half ...
        assert e.recall.n == sum(s == "held-out" for s in SIDE.values())  # ... quoted held-out
    stack = next(e for e in effects(runs) if e.factor == "chunker"
                 and e.treated.first_stage == "stack")
    assert stack.base.chunker == SIMPLE[3]  # best on the tune half, not on all questions


def test_a_missing_baseline_makes_the_chunker_effect_incomplete():
    runs = [r for r in grid() if r.config.chunker != SIMPLE[0]]
    chunker = [e for e in effects(runs) if e.factor == "chunker"]
    assert chunker and all(not e.complete and e.verdict == "incomplete" for e in chunker)
    assert all(SIMPLE[0] in e.note for e in chunker)


def test_verdicts_follow_the_interval():
    found = {(e.factor, e.treated.label, e.budget): e for e in effects(grid())}
    rerank = found[("reranker", "router+stack+cross-encoder", 1024)]
    assert rerank.verdict == "loses" and rerank.recall.high < 0
    enc = found[("encoder", "router+stack (embeddinggemma)", 1024)]
    assert enc.treated.encoder == "embeddinggemma" and enc.verdict == "beats"


def test_a_two_factor_pair_is_never_an_effect():
    runs = [run("router", "stack", "cross-encoder"), run(SIMPLE[1], "dense")]
    assert [e for e in effects(runs) if e.factor != "chunker"] == []
    with pytest.raises(AssertionError, match="changes"):
        D._effect("chunker", runs[0], runs[1], 1024, "held-out", "")


def test_headline_and_title_numbers():
    runs = grid()
    head = headline(effects(runs))
    assert {e.factor for e in head} == {"chunker", "first_stage", "reranker", "encoder"}
    assert all(not e.treated.simple for e in head)
    rows = title_numbers(runs)
    assert len(rows) == len(D.BUDGETS)
    r = rows[0]
    # dense: best by tune is SIMPLE[-1] (0.52), median 0.46 -> +6; stack: SIMPLE[3] (0.64 held)
    assert r["chunker_dense"] == pytest.approx(0.06, abs=0.01)
    # stack - dense per chunker: 0.30 - 0.04 i for the baselines, 0.17 for the router
    assert r["first_stage"] == pytest.approx(0.175, abs=0.01)
    assert r["title"] == "not supported"
    # EmbeddingGemma on the router's chunks under the stack: 0.80 - 0.72
    assert r["encoder"] == pytest.approx(0.08, abs=0.01)
    # a second encoder's stack/dense pair does not enter the first stage's median (MiniLM's)
    with_pair = title_numbers(runs + [run("router", "dense", encoder="embeddinggemma",
                                          level=0.1)])[0]
    assert with_pair["first_stage"] == pytest.approx(r["first_stage"])
    assert "encoder" not in title_numbers([x for x in runs if x.config.encoder ==
                                           "all-MiniLM-L6-v2"])[0]


def test_saved_design_runs_keep_the_rule(monkeypatch):
    """On the committed runs: every effect changes one factor; every chunker effect's base is
    a simple baseline under the same retrieval and encoder."""
    from ragkit.config import PROJECT_ROOT

    monkeypatch.setattr(R, "side_of", REAL_SIDE)
    runs = D.saved_runs(PROJECT_ROOT / "results")
    assert len(runs) >= 48  # 8 chunkers x 2 first stages x 3 benchmarks at least
    for e in effects(runs):
        assert e.treated.differs(e.base) == {e.factor}
        if e.factor == "chunker":
            assert e.base.simple and e.base.held("chunker") == e.treated.held("chunker")
    assert all(a.config != b.config or a.benchmark != b.benchmark
               for a, b in itertools.combinations(runs, 2))


def test_the_stack_lesson_compares_each_step_with_the_one_before():
    runs = grid() + [run("router", "dense+bm25 words", level=0.6),
                     run("router", "dense+bm25 identifiers", level=0.62)]
    steps = [e for e in D.stack_steps(runs) if e.budget == 1024]
    assert [(e.treated.first_stage, e.base.first_stage, e.factor) for e in steps] == [
        ("dense+bm25 words", "dense", "first_stage"),
        ("dense+bm25 identifiers", "dense+bm25 words", "first_stage"),
        ("stack", "dense+bm25 identifiers", "first_stage"),
        ("stack", "stack", "reranker")]
    assert all(e.treated.differs(e.base) == {e.factor} for e in steps)
    assert steps[0].recall.diff == pytest.approx(0.05, abs=0.01)
    # the intermediate steps stay out of the guide's effects
    assert all(e.treated.first_stage == "stack" for e in effects(runs)
               if e.factor == "first_stage")


def test_title_cells_carry_margin_intervals_and_read_not_decided_when_they_hold_zero():
    """The title's state comes from the margin's interval under each retrieval: clearly
    negative margins read 'not supported'; a grid where the chunker and the stack move recall
    by about the same amount reads 'not decided', never 'not supported'."""
    r = title_numbers(grid())[0]
    for stage in ("dense", "stack"):
        point, low, high = r[f"margin_{stage}"]
        assert low <= point <= high
        assert point == pytest.approx(r[f"chunker_{stage}"] - r["first_stage"])
    assert r["title"] == "not supported" and r["margin_dense"][2] < 0
    # baselines spread so that best - median = the stack's lift, with per-question noise
    close = []
    for i, c in enumerate(SIMPLE):
        close.append(run(c, "dense", level=0.40 + 0.05 * i))
        close.append(run(c, "stack", level=0.55 + 0.05 * i))
    tie = title_numbers(close)[0]
    assert abs(tie["margin_dense"][0]) < 0.02 and tie["margin_dense"][1] < 0 < tie["margin_dense"][2]
    assert tie["title"] == "not decided"
    from ragkit.experiments.title import counts
    assert counts([tie, r]) == {"supported": 0, "not supported": 1, "not decided": 1}


def test_title_rows_per_encoder():
    """With the simple baselines measured under a second encoder, that encoder gets rows of
    its own; the encoder column stays on MiniLM's rows."""
    runs = grid() + [run(c, s, encoder="embeddinggemma", level=0.5 + 0.01 * i)
                     for i, c in enumerate(SIMPLE) for s in ("dense", "stack")]
    rows = title_numbers(runs)
    assert {r["encoder_name"] for r in rows} == {"all-MiniLM-L6-v2", "embeddinggemma"}
    gemma = [r for r in rows if r["encoder_name"] == "embeddinggemma"]
    assert len(gemma) == len(D.BUDGETS) and all("encoder" not in r for r in gemma)
    assert all("chunker_dense" in r and "title" in r for r in gemma)
