"""The one runs API (`ragkit.evaluate.runs`): typed metric keys, one run's values out of a long
table, the paired comparison on the questions both runs scored, the tune-half choice; and
that nothing else in the library or the notebooks pairs runs for a bootstrap on its own."""

import ast
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ragkit.evaluate.runs as R
from ragkit.evaluate.runs import Metric, Run, choose_on_tune, common, per_query, versus
from ragkit.evaluate.stats import paired

ROOT = Path(__file__).resolve().parents[1]
IDS = [f"q{i:02d}" for i in range(12)]
SIDE = {q: ("tune" if i % 2 else "held-out") for i, q in enumerate(IDS)}


@pytest.fixture
def toy_split(monkeypatch):
    monkeypatch.setattr(R, "side_of", SIDE.__getitem__)


def series(values, ids):
    return pd.Series(np.asarray(values, dtype=float), index=pd.Index(ids, name="query_id"))


# --- versus ---------------------------------------------------------------------------------

def test_versus_pairs_on_the_common_ids_only():
    a = series([1, 0, 1, 1], ["q1", "q2", "q3", "q4"])
    b = series([0, 0, 1, 9], ["q3", "q1", "q2", "q9"])  # q9 only in b; q4 only in a
    c = versus(a, b)
    # q1: 1 - 0, q2: 0 - 1, q3: 1 - 0
    assert c.n == 3
    assert c.diff == pytest.approx(1 / 3)
    assert (c.wins, c.losses, c.ties) == (2, 1, 0)
    assert c.mean_a == pytest.approx(2 / 3) and c.mean_b == pytest.approx(1 / 3)
    assert c == paired([1, 0, 1], [0, 1, 0])  # a's order, b looked up by id


def test_versus_is_a_minus_b_and_counts_wins_losses_and_ties():
    a = series([1, 1, 1, 0, 0.5, 0.25], IDS[:6])
    b = series([0, 1, 0, 0, 0.5, 0.75], IDS[:6])
    c = versus(a, b)
    assert c.diff == pytest.approx((1 + 1 - 0.5) / 6)
    assert (c.wins, c.losses, c.ties, c.n) == (2, 1, 3, 6)
    flipped = versus(b, a)
    assert flipped.diff == pytest.approx(-c.diff)
    assert (flipped.wins, flipped.losses, flipped.ties) == (1, 2, 3)
    assert flipped.low == pytest.approx(-c.high) and flipped.high == pytest.approx(-c.low)


def test_the_order_of_the_index_does_not_change_the_pairing():
    rng = np.random.default_rng(3)
    a = series(rng.random(12), IDS)
    b = series(rng.random(12), IDS)
    shuffled_b = b.sample(frac=1, random_state=1)
    assert versus(a, shuffled_b) == versus(a, b)  # b is looked up by id, whatever its order
    shuffled_a = a.sample(frac=1, random_state=2)
    x, y = versus(shuffled_a, b), versus(a, b)
    # the same pairs: the same difference and counts (the resampled positions follow a's order)
    assert x.diff == pytest.approx(y.diff)
    assert (x.wins, x.losses, x.ties, x.n) == (y.wins, y.losses, y.ties, y.n)
    assert versus(shuffled_a.sort_index(), shuffled_b.sort_index()) == versus(a, b)


def test_versus_takes_runs_and_a_metric_a_split_and_chosen_ids(toy_split):
    cols = {"recall@B1024": np.linspace(0, 1, 12), "ndcg@10": np.ones(12)}
    a = Run("toy", "a", pd.DataFrame(cols, index=pd.Index(IDS, name="query_id")))
    b = Run("toy", "b", pd.DataFrame({k: v[::-1] for k, v in cols.items()},
                                     index=pd.Index(IDS, name="query_id")))
    m = Metric("recall", budget=1024)
    assert versus(a, b, m) == versus(a.values(m), b.values(m))
    assert versus(a, b, "recall@B1024") == versus(a, b, m)
    tune = versus(a, b, m, split="tune")
    assert tune.n == 6 and tune == versus(a.values(m, "tune"), b.values(m, "tune"))
    chosen = ["q05", "q01", "q03"]
    assert versus(a, b, m, on=chosen) == paired(a.values(m)[chosen], b.values(m)[chosen])
    assert versus(a, b, "ndcg@10").ties == 12
    with pytest.raises(ValueError, match="needs a metric"):
        versus(a, b)
    x, y = common(a, b, m, split="held-out")
    assert list(x.index) == list(y.index) == [q for q in IDS if SIDE[q] == "held-out"]


def test_versus_of_nothing_in_common_is_empty():
    c = versus(series([1.0], ["q1"]), series([0.0], ["q2"]))
    assert c.n == 0 and c.diff != c.diff


# --- Metric ---------------------------------------------------------------------------------

names = st.from_regex(r"[a-z_][a-z0-9_]{0,12}", fullmatch=True)
metrics = st.one_of(
    st.builds(lambda n: Metric(n), names),
    st.builds(lambda n: Metric(n + "@k"), names),
    st.builds(lambda n, b: Metric(n, budget=b), names, st.integers(0, 10**6)),
    st.builds(lambda n, k: Metric(n, k=k), names, st.integers(0, 10**4)))


@settings(max_examples=300, deadline=None)
@given(metrics)
def test_parse_is_the_inverse_of_column(m):
    assert Metric.parse(m.column) == m
    assert Metric.parse(m.column).column == m.column
    assert Metric.from_long(*m.long) == m


@pytest.mark.parametrize("key, expected", [
    ("recall@B1024", Metric("recall", budget=1024)),
    ("ndcg@10", Metric("ndcg", k=10)),
    ("recall", Metric("recall")),
    ("pass@k", Metric("pass@k")),
    ("precision_omega", Metric("precision_omega")),
    ("tokens@B512", Metric("tokens", budget=512)),
])
def test_parse_reads_the_keys_the_course_writes(key, expected):
    assert Metric.parse(key) == expected and expected.column == key


@pytest.mark.parametrize("key", ["", "recall@", "recall@B", "recall@Bx", "recall@-3",
                                 "@B1024", "recall@B1024@5", "recall@B01", "re call",
                                 "pass@k@5", "recall@K", None, 3])
def test_parse_rejects_a_bad_key_clearly(key):
    with pytest.raises(ValueError, match="not a metric key"):
        Metric.parse(key)


def test_a_metric_is_checked_when_made():
    with pytest.raises(ValueError, match="not both"):
        Metric("recall", budget=1024, k=5)
    with pytest.raises(ValueError, match="integer"):
        Metric("recall", budget=-1)
    with pytest.raises(ValueError, match="name"):
        Metric("recall@B")
    with pytest.raises(ValueError, match="budgeted"):
        Metric.from_long("recall", 1024)
    assert Metric.from_long("recall@B", 1024) == Metric("recall", budget=1024)
    assert Metric.from_long("pass@20", -1) == Metric("pass", k=20)


def test_every_claim_and_every_saved_metric_key_parses():
    from ragkit.report.claims import CLAIMS
    from ragkit.report.results import load_scores

    for c in CLAIMS:
        assert Metric.from_long(c.metric, c.budget).long == (c.metric, c.budget)
    scores = load_scores(ROOT / "results")
    pairs = scores[["metric", "budget"]].drop_duplicates()
    assert len(pairs)
    for m, b in zip(pairs.metric, pairs.budget):
        assert Metric.from_long(m, int(b)).long == (m, int(b))


# --- per_query --------------------------------------------------------------------------------

def long_table():
    rows = []
    for run, shift in (("r1", 0.0), ("r2", 0.5)):
        for i, q in enumerate(["q3", "q1", "q2"]):
            rows += [(run, q, "recall@B", 1024, shift + i / 10),
                     (run, q, "recall@B", 512, shift + i / 20),
                     (run, q, "recall", -1, shift + i / 30),
                     (run, q, "pass@20", -1, shift + i / 40)]
    return pd.DataFrame(rows, columns=["run", "query_id", "metric", "budget", "value"])


def test_per_query_picks_one_run_and_one_metric_in_row_order():
    t = long_table()
    v = per_query(t, "r2", Metric("recall", budget=1024))
    assert v.name == "value" and v.index.name == "query_id"
    assert list(v.index) == ["q3", "q1", "q2"]
    assert v.tolist() == pytest.approx([0.5, 0.6, 0.7])
    assert per_query(t, "r1", "recall@B512").tolist() == pytest.approx([0, 0.05, 0.1])
    assert per_query(t, "r1", "recall").tolist() == pytest.approx([0, 1 / 30, 2 / 30])
    assert per_query(t, "r1", "pass@20").tolist() == pytest.approx([0, 0.025, 0.05])
    assert per_query(t, "r3", "recall").empty and per_query(t, "r1", "iou@B1024").empty
    for run in ("r1", "r2"):
        for m in ("recall@B1024", "recall@B512", "recall", "pass@20"):
            name, budget = Metric.parse(m).long
            mine = t[(t.run == run) & (t.metric == name) & (t.budget == budget)]
            assert per_query(t, run, m).equals(mine.set_index("query_id")["value"])


def test_per_query_reads_each_table_it_is_given():
    a, b = long_table(), long_table()
    b["value"] = b["value"] + 1
    assert per_query(a, "r1", "recall").iloc[0] == 0
    assert per_query(b, "r1", "recall").iloc[0] == 1
    assert per_query(a, "r1", "recall").iloc[0] == 0


def test_a_run_from_a_long_table_has_one_column_per_metric_key():
    run = Run.from_table(long_table(), "r1", "toy")
    assert sorted(run.scores.columns) == ["pass@20", "recall", "recall@B1024", "recall@B512"]
    assert list(run.scores.index) == ["q1", "q2", "q3"]
    assert run.values("recall@B1024")["q2"] == pytest.approx(0.2)
    assert run.label == "r1" and run.mean("recall@B512") == pytest.approx(0.05)


# --- choose_on_tune ---------------------------------------------------------------------------

def test_the_choice_reads_only_the_tune_half(toy_split):
    """a is best on the held-out half, b on the tune half: the choice is b, and the score
    never sees a held-out question."""
    values = {"a": {q: 1.0 if SIDE[q] == "held-out" else 0.2 for q in IDS},
              "b": {q: 0.5 for q in IDS}}
    seen = set()

    def score(name, ids):
        seen.update(ids)
        return float(np.mean([values[name][q] for q in ids]))

    assert choose_on_tune(["a", "b"], score, IDS) == "b"
    assert seen == {q for q in IDS if SIDE[q] == "tune"}
    assert choose_on_tune(["a", "b"], score, IDS, half="held-out") == "a"
    assert choose_on_tune(["a", "b"], score, IDS, half="all") == "a"  # 0.6 against 0.5


def test_the_tune_ids_keep_their_order(toy_split):
    got = []
    choose_on_tune(["x"], lambda c, ids: got.append(ids) or 0.0, IDS[::-1] + IDS)
    assert got == [[q for q in IDS[::-1] if SIDE[q] == "tune"]]


def test_ties_go_by_the_stated_order_else_to_the_first(toy_split):
    sizes = [(1500, 0), (1000, 200), (1000, 0), (2000, 0)]
    flat = {(1500, 0): 0.5, (1000, 200): 0.5, (1000, 0): 0.5, (2000, 0): 0.4}

    def score(c, ids):
        return flat[c]

    assert choose_on_tune(sizes, score, IDS) == (1500, 0)  # no order stated: the first
    # the smaller size, then no overlap
    assert choose_on_tune(sizes, score, IDS, ties=lambda c: (-c[0], -c[1])) == (1000, 0)
    # rounding: float noise does not break a tie
    noisy = {c: v + (1e-13 if c == (1000, 200) else 0.0) for c, v in flat.items()}
    assert choose_on_tune(sizes, lambda c, ids: noisy[c], IDS) == (1000, 200)
    assert choose_on_tune(sizes, lambda c, ids: noisy[c], IDS, digits=9) == (1500, 0)
    with pytest.raises(ValueError, match="no candidates"):
        choose_on_tune([], score, IDS)


def test_the_design_chooses_its_baseline_with_it(toy_split):
    """`ragkit.experiments.design` picks the best simple baseline on the tune half: equal
    means go to the larger chunker name, as before the move."""
    from ragkit.experiments.design import Config, _best

    def run(chunker, tune, held):
        v = [tune if SIDE[q] == "tune" else held for q in IDS]
        cfg = Config(chunker, "dense", "none", "m", True)
        return Run("toy", chunker, pd.DataFrame({"recall@B1024": v},
                                                index=pd.Index(IDS, name="query_id")), cfg)

    runs = [run("a", 0.5, 0.9), run("c", 0.7, 0.1), run("b", 0.7, 0.2)]
    m = Metric("recall", budget=1024)
    assert _best(runs, m, "tune").name == "c"  # c and b tie on the tune half: the larger name
    assert _best(runs, m, "held-out").name == "a"


# --- an outcome's summary row -----------------------------------------------------------------

def test_an_outcome_summarises_as_one_row():
    from ragkit.experiments.pipeline import Outcome

    o = Outcome("course", "fixed", [], {}, None, {"recall": 0.5, "iou": 0.1}, ["a:1", "b"])
    assert o.row(["recall", "ndcg@10"]) == {"benchmark": "course", "strategy": "fixed",
                                            "recall": 0.5, "ndcg@10": None, "flags": "a:1;b"}
    assert list(o.row(["iou"], strict=True, benchmark="x", mode="late")) == [
        "benchmark", "mode", "iou", "flags"]
    assert o.row(["iou"], flags=False, filter="oracle") == {"filter": "oracle", "iou": 0.1}
    with pytest.raises(KeyError):
        o.row(["ndcg@10"], strict=True)


# --- one home ---------------------------------------------------------------------------------

HOMES = {"ragkit/evaluate/runs.py", "ragkit/evaluate/stats.py"}


def sources():
    return sorted([*(ROOT / "ragkit").rglob("*.py"), *(ROOT / "notebooks").glob("*.py")])


def test_no_module_or_notebook_pairs_runs_on_its_own():
    """`grep -rn "paired(" ragkit notebooks/*.py` finds calls only in the two homes: elsewhere
    a line naming ``paired(`` is a doctest or docstring line, or `ragkit.report.plots.paired`
    (a chart of paired values) being defined."""
    found = []
    for path in sources():
        rel = path.relative_to(ROOT).as_posix()
        if rel in HOMES:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if "paired(" in line and not re.match(r"\s*(>>>|\.\.\.|def paired\()", line):
                found.append(f"{rel}:{n}: {line.strip()}")
    assert not found, found


def test_no_module_or_notebook_calls_or_imports_the_bootstrap_outside_its_homes():
    """The same, read with `ast` (an alias or a call split over lines counts): only
    ``ragkit.evaluate.runs`` and ``ragkit.evaluate.stats`` call or import `paired`."""
    found = []
    for path in sources():
        rel = path.relative_to(ROOT).as_posix()
        if rel in HOMES:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=rel)):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.id if isinstance(f, ast.Name) else getattr(f, "attr", None)
                if name == "paired":
                    found.append(f"{rel}:{node.lineno}: call")
            elif isinstance(node, ast.ImportFrom) and any(a.name == "paired" for a in node.names):
                found.append(f"{rel}:{node.lineno}: import")
    assert not found, found


def test_a_set_of_question_ids_is_compared_in_one_order_whatever_the_set_order():
    """A set has no order (string hashing differs between processes), and the bootstrap
    resamples by position: `common` sorts a set of ids, so the interval is the same in every
    run."""
    import pandas as pd

    from ragkit.evaluate.runs import common, versus

    ids = [f"q{i:03d}" for i in range(40)]
    a = pd.Series([float(i % 3 == 0) for i in range(40)], index=ids)
    b = pd.Series([float(i % 5 == 0) for i in range(40)], index=ids)
    x, _ = common(a, b, on=set(reversed(ids)))
    assert list(x.index) == sorted(ids)
    forward, backward = versus(a, b, on=set(ids)), versus(a, b, on=frozenset(reversed(ids)))
    assert (forward.low, forward.high) == (backward.low, backward.high)
