"""`ragkit bench answer-floor`: accuracy from the gold passage alone, per model, with Wilson's
interval; a model that is not installed is skipped and said so; rows through the Recorder."""

import json

import pytest

from ragkit.evaluate import answer as answer_mod
from ragkit.evaluate.answer import (answer_floor, gold_passages, key_fact,
                                    strongest_answer_model)
from ragkit.evaluate.stats import wilson
from ragkit.tools import bench_answer_floor as bench
from ragkit.types import Chunk, Document, Query, Span


class Oracle:
    """A stand-in model that answers right (the expected answer) for the questions in
    `right` and with no number for the others; it records the passages it was given."""

    def __init__(self, answers, right, model=None, **kw):
        self.answers, self.right, self.seen = answers, set(right), {}
        self.max_tokens = 48
        self.stats = {"cache_hits": 0, "generated": 0}

    def answer(self, question, passages):
        self.stats["generated"] += 1
        self.seen[question] = list(passages)
        return self.answers[question] if question in self.right else "I do not know."


def test_answer_floor_scores_the_key_fact_and_skips_questions_without_one():
    doc = Document("d", "Intro. Gold refunds take 14 days. Silver refunds take 7 days. Bye.")
    chunks = [Chunk.make(doc, 0, 7, "s"), Chunk.make(doc, 7, 34, "s"),
              Chunk.make(doc, 34, 66, "s")]
    qs = [Query("a", "Gold?", gold=(Span("d", 14, 33),), answer="14 days"),
          Query("b", "Silver?", gold=(Span("d", 35, 60),), answer="7 days"),
          Query("c", "Refunds at all?", gold=(Span("d", 7, 33),), answer="Yes."),  # no number
          Query("r", "Bronze?", answer="30 days")]                                  # no gold
    passages = {q.id: gold_passages(q, {"d": doc}, chunks) for q in qs}
    assert passages["a"] == ["Gold refunds take 14 days. "] and passages["r"] == []
    model = Oracle({q.text: q.answer for q in qs}, right={"Gold?"})
    res = answer_floor(qs, passages, model)
    assert [(r.query_id, r.fact, r.correct) for r in res] == [("a", "14", True),
                                                             ("b", "7", False)]
    assert model.seen["Silver?"] == ["Silver refunds take 7 days. Bye."]  # the gold alone
    rows = bench.accuracy_rows(res, {"all": qs, "one": qs[1:2]})
    assert rows["all"]["n"] == 2 and rows["all"]["correct"] == 1
    assert (rows["all"]["accuracy"], rows["all"]["low"], rows["all"]["high"]) == wilson(1, 2)
    assert rows["one"]["accuracy"] == 0.0 and rows["one"]["high"] > 0


def test_gold_passage_holds_a_span_the_chunking_cut():
    doc = Document("d", "aaaa bbbb cccc dddd")
    chunks = [Chunk.make(doc, 0, 5, "s"), Chunk.make(doc, 5, 10, "s"), Chunk.make(doc, 10, 19, "s")]
    q = Query("q", "?", gold=(Span("d", 2, 12),), answer="1")
    assert gold_passages(q, {"d": doc}, chunks) == ["aaaa bbbb cccc dddd"]


def test_the_strongest_model_is_the_best_of_those_that_clear_the_floor():
    s = {"small": {"staged": {"accuracy": 0.75}, "golden-numeric": {"accuracy": 0.5}},
         "large": {"staged": {"accuracy": 0.7}, "golden-numeric": {"accuracy": 0.8}},
         "tiny": {"staged": {"accuracy": 0.1}, "golden-numeric": {"accuracy": 0.95}}}
    assert strongest_answer_model(s) == "large"  # tiny answers more golden, fails staged
    assert strongest_answer_model({k: v for k, v in s.items() if k == "tiny"}) is None


@pytest.fixture
def fake_models(monkeypatch):
    """Two fake models in the registry: `good` answers the first half of the questions it is
    asked right, `missing` is not installed. The course is chunked cheaply."""
    from ragkit import chunkers
    from ragkit.chunkers import FixedCharChunker

    def not_installed():
        raise ImportError("fake_model_part1")

    models = {"good": answer_mod.AnswerModel("good", "Good (fake)", lambda: None, True,
                                             "good==1", 1),
              "missing": answer_mod.AnswerModel("missing", "Missing (fake)", not_installed,
                                                True, "missing-part1..2==1", 1)}
    monkeypatch.setattr(answer_mod, "ANSWER_MODELS", models)
    monkeypatch.setattr(chunkers, "SentenceGroupChunker", lambda *a: FixedCharChunker(600, 0))
    made = []

    class Fake(Oracle):
        def __init__(self, model=None, n_threads=None, **kw):
            models[model].path()  # ImportError for `missing`, as LocalAnswerer raises
            from ragkit.evaluate.benchmarks import load

            qs = [q for q in load("course").queries if q.gold and key_fact(q.answer, q.text)]
            super().__init__({q.text: q.answer for q in qs},
                             right={q.text for q in qs[: len(qs) // 2]})
            made.append(self)

    monkeypatch.setattr(answer_mod, "LocalAnswerer", Fake)
    return made


def test_bench_rows_per_model_and_set_and_a_skip_for_a_missing_model(fake_models, capsys):
    from ragkit.report.results import read_rows, results_path

    summary = bench.run(["good", "missing"])
    out = capsys.readouterr().out
    assert "missing: SKIP, not installed: pip install missing-part1..2==1" in out
    good = summary["good"]
    from ragkit.evaluate.benchmarks import load

    course = load("course")
    numeric = [q for q in course.queries if q.gold and key_fact(q.answer, q.text)]
    assert good["golden-numeric"]["n"] == len(numeric)
    assert good["golden-numeric"]["correct"] == len(numeric) // 2  # the oracle's half
    staged = json.loads((course_dir() / "staged_failures.json").read_text())
    ids = {i for c in staged for i in [c["question_id"], *c.get("extra_question_ids", [])]}
    first_half = {q.id for q in numeric[: len(numeric) // 2]}
    in_staged = [q.id for q in numeric if q.id in ids]
    assert good["staged"]["n"] == len(in_staged)
    assert good["staged"]["correct"] == sum(i in first_half for i in in_staged)
    rows = read_rows(results_path(bench.NOTEBOOK))
    by = {(r["params"]["model"], r["params"]["questions"]): r for r in rows}
    assert set(by) == {("good", "staged"), ("good", "golden-numeric"), ("missing", "staged")}
    g = by[("good", "golden-numeric")]
    assert g["metric"] == "answer_accuracy" and g["n_queries"] == len(numeric)
    assert g["params"]["ci95"] == list(wilson(len(numeric) // 2, len(numeric))[1:])
    assert by[("missing", "staged")]["value"] is None
    assert by[("missing", "staged")]["flags"] == ["not installed: pip install missing-part1..2==1"]
    # every question was asked with its gold passages alone, nothing else
    asked = fake_models[0].seen
    assert all(len(p) >= 1 for p in asked.values()) and len(asked) == len(numeric)


def test_a_rerun_keeps_the_rows_of_a_model_it_does_not_measure(fake_models):
    from ragkit.report.results import read_rows, results_path

    bench.run(["good"])
    bench.run(["missing"])  # not installed now: the saved rows of `good` stay, no skip row
    rows = read_rows(results_path(bench.NOTEBOOK))
    assert {(r["params"]["model"], r["params"]["questions"]) for r in rows} == {
        ("good", "staged"), ("good", "golden-numeric"), ("missing", "staged")}


def test_unknown_models_are_refused_before_any_work(capsys):
    with pytest.raises(SystemExit) as e:
        bench.main(["--models", "gpt-9"])
    assert e.value.code == 2
    assert "argument --models: unknown model(s) ['gpt-9']" in capsys.readouterr().err


def course_dir():
    from ragkit.config import get_settings

    return get_settings().data_dir / "golden"


def _row(model, questions, correct, n, name=None):
    p, lo, hi = wilson(correct, n)
    return {"experiment": "answer_floor", "embedder": name or model.upper(), "value": p,
            "n_queries": n, "params": {"model": model, "questions": questions,
                                       "correct": correct, "ci95": [lo, hi], "floor": 0.7}}


def test_the_notebooks_read_the_decision_and_the_floor_from_the_rows():
    from ragkit.report import answer_floor_choice

    rows = [_row("small", "staged", 12, 18), _row("small", "golden-numeric", 30, 40),
            _row("tiny", "staged", 2, 18), _row("tiny", "golden-numeric", 5, 40),
            {"experiment": "answer_floor", "value": None, "embedder": "Missing",
             "params": {"model": "missing", "questions": "staged"}}]
    choice = answer_floor_choice(rows)
    assert choice.model is None  # 12 of 18 is under 70 %
    line = choice.line("the staged-answers demo")
    lo, hi = wilson(12, 18)[1:]
    assert line.startswith("The staged-answers demo is not shown: no local model clears the "
                           "70 % floor. The best, SMALL, answers 12 of the 18 questions of the staged cases "
                           "(66.7 %, 95 % Wilson interval ")
    assert f"[{100 * lo:.1f}, {100 * hi:.1f}]" in line and "would measure the model" in line
    rows[0] = _row("small", "staged", 13, 18)
    cleared = answer_floor_choice(rows)
    assert cleared.model == "small"
    assert "although SMALL now clears the 70 % floor" in cleared.line("the demo")
    assert answer_floor_choice([]).line("the demo").startswith("The demo is not shown: no local")


@pytest.mark.parametrize("low, high, says", [
    (0.52, 0.7, "it beats chance (50 %), since the whole interval lies above it."),
    (0.386, 0.686, "it does not beat chance (50 %), which lies inside the interval"),
    (0.2, 0.45, "it does worse than chance (50 %): the whole interval lies below it."),
])
def test_refusal_line_says_where_the_interval_lies(low, high, says):
    from ragkit.report import refusal_line

    line = refusal_line({"balanced_accuracy": (low + high) / 2, "balanced_accuracy_low": low,
                         "balanced_accuracy_high": high, "n_answerable": 116,
                         "n_unanswerable": 10})
    assert says in line and "116 answerable, 10 unanswerable" in line


def test_ragkit_bench_help_lists_the_bench():
    """The help line is formatted by argparse (a bare percent sign once broke `--help`)."""
    from ragkit.tools import bench as bench_cli

    assert "answer-floor" in bench_cli.build_parser().format_help()
