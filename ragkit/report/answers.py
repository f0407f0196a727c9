"""What the course may say about generated answers, read from the measurements, never typed.

- `answer_floor_choice`: the decision of ``ragkit bench answer-floor`` read from its rows: the
  strongest local model that answers at least the floor share of the staged questions from
  the gold passage alone, or none; `FloorChoice.line` says in one sentence why an answer
  demo is not shown (the best measured accuracy with its interval, under the floor; or that a
  model now clears it);
- `refusal_line`: a refusal threshold's held-out balanced accuracy with its interval, and
  whether that interval lies above chance.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

import pandas as pd

from .prose import ci, pct

BENCH = "bench_answer_floor"
COMMAND = "`ragkit bench answer-floor`"


def answer_floor_rows(path: str | Path | None = None) -> list[dict[str, Any]]:
    """The rows of ``ragkit bench answer-floor``: `path`, else ``bench_answer_floor.jsonl`` in
    the results folder, else the committed one in ``results/`` (a smoke run's folder has no
    bench rows); empty when there is none."""
    from ..config import PROJECT_ROOT
    from .results import read_rows, results_path

    for p in ([Path(path)] if path else [results_path(BENCH),
                                         PROJECT_ROOT / "results" / f"{BENCH}.jsonl"]):
        if p.exists():
            return read_rows(p)
    return []


def answer_floor_table(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """One line per model and question set with a measured accuracy: model (key), name,
    questions, n, correct, accuracy, low, high, floor."""
    out = []
    for r in rows:
        p = r.get("params") or {}
        if r.get("experiment") != "answer_floor" or r.get("value") is None:
            continue
        low, high = p.get("ci95") or (float("nan"), float("nan"))
        out.append({"model": p.get("model"), "name": r.get("embedder"),
                    "questions": p.get("questions"), "n": r.get("n_queries"),
                    "correct": p.get("correct"), "accuracy": r["value"], "low": low,
                    "high": high, "floor": p.get("floor")})
    return pd.DataFrame(out, columns=["model", "name", "questions", "n", "correct", "accuracy",
                                      "low", "high", "floor"])


@dataclass(frozen=True)
class FloorChoice:
    """The answer model the measurements allow (`model`, a key of
    `ragkit.evaluate.ANSWER_MODELS`), or None; `table` is `answer_floor_table`."""

    model: str | None
    floor: float
    table: pd.DataFrame

    def row(self, model: str | None = None, questions: str = "staged") -> pd.Series | None:
        """`model`'s line for `questions` (default: the chosen model; with no choice, the model
        with the highest staged accuracy)."""
        t = self.table[self.table.questions == questions]
        if model is None:
            model = self.model
        if model is None:
            if t.empty:
                return None
            return t.sort_values(["accuracy", "model"], ascending=[False, True]).iloc[0]
        t = t[t.model == model]
        return None if t.empty else t.iloc[0]

    def accuracy_text(self, model: str | None = None, questions: str = "staged") -> str:
        """`model`'s count and accuracy with its interval, as ``'12 of the 18 questions of the
        staged cases (66.7 %, 95 % Wilson interval [43.7, 83.7]; a case can ask more than one
        question)'``."""
        r = self.row(model, questions)
        what = ("questions of the staged cases" if questions == "staged"
                else "golden questions with a key number")
        return (f"{int(r.correct)} of the {int(r.n)} {what} ({pct(r.accuracy)}, 95 % Wilson "
                f"interval {ci(r.low, r.high, signed=False)}"
                + ("; a case can ask more than one question" if questions == "staged" else "")
                + ")")

    def line(self, demo: str) -> str:
        """One sentence for a notebook whose `demo` (an answer experiment) was cut because no
        local model cleared the floor: the best measured accuracy from the gold alone and why
        the demo is not shown; or, once a model clears it, that the demo can come back."""
        floor = pct(self.floor, 0)
        head = f"{demo[:1].upper()}{demo[1:]} is not shown"
        if self.table.empty:
            return (f"{head}: no local model has been measured ({COMMAND} has no rows), and an "
                    "answer experiment says something only about a model that can answer from "
                    "the gold passage alone.")
        r = self.row()
        if self.model is not None:
            return (f"{head}, although {r['name']} now clears the {floor} floor: from the gold "
                    f"passage alone it answers {self.accuracy_text()} ({COMMAND}). The demo was "
                    "cut when no local model did, and can come back with this one.")
        return (f"{head}: no local model clears the {floor} floor. The best, {r['name']}, "
                f"answers {self.accuracy_text(r.model)} from the gold passage alone "
                f"({COMMAND}), so its answers from retrieved chunks would measure the model, "
                "not the chunks.")


def answer_floor_choice(rows: Iterable[Mapping[str, Any]] | None = None,
                        floor: float | None = None) -> FloorChoice:
    """The decision ``ragkit bench answer-floor`` prints, from its rows (default:
    `answer_floor_rows`): among the models whose staged accuracy from the gold alone is at
    least `floor` (default: the bench's), the one with the highest golden accuracy."""
    from ..evaluate.answer import ANSWER_FLOOR, strongest_answer_model

    table = answer_floor_table(answer_floor_rows() if rows is None else rows)
    floor = ANSWER_FLOOR if floor is None else floor
    summary: dict[str, dict] = {}
    for r in table.itertuples():
        summary.setdefault(r.model, {})[r.questions] = {"accuracy": r.accuracy}
    summary = {m: s for m, s in summary.items() if {"staged", "golden-numeric"} <= set(s)}
    return FloorChoice(strongest_answer_model(summary, floor), floor, table)


def refusal_line(r: Mapping[str, float], chance: float = 0.5) -> str:
    """A refusal threshold chosen on the tune half, said on the held-out half
    (`ragkit.evaluate.refusal_scores`' output): its balanced accuracy with the 95 % interval,
    and whether the interval lies wholly above chance (`chance`), includes it, or lies below.

    >>> line = refusal_line({"balanced_accuracy": 0.6, "balanced_accuracy_low": 0.52,
    ...   "balanced_accuracy_high": 0.7, "n_answerable": 116, "n_unanswerable": 10})
    >>> line.split(": ")[-1]
    'it beats chance (50 %), since the whole interval lies above it.'
    """
    ba, low, high = (r["balanced_accuracy"], r["balanced_accuracy_low"],
                     r["balanced_accuracy_high"])
    head = (f"On the held-out half ({r['n_answerable']} answerable, {r['n_unanswerable']} "
            f"unanswerable questions) the threshold chosen on the tune half has a balanced "
            f"accuracy of {pct(ba)} (95 % interval {ci(low, high, signed=False)}): ")
    if low > chance:
        return head + f"it beats chance ({pct(chance, 0)}), since the whole interval lies above it."
    if high < chance:
        return head + (f"it does worse than chance ({pct(chance, 0)}): the whole interval "
                       "lies below it.")
    return head + (f"it does not beat chance ({pct(chance, 0)}), which lies inside the "
                   "interval, so the top retrieval score is not shown to be a usable "
                   "abstention signal here.")
