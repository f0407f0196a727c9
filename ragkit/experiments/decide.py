"""The decisions a notebook closes on, built from its own outcomes under the course's rules.

`ragkit.report.decisions` renders and ranks decisions; this module makes them from a
notebook's `Outcome`s (``{(benchmark, strategy): Outcome}``, as `compare` returns them), so
each call compares like for like:

- `against_best`: a technique against the **best of every simple baseline the notebook
  measured** under the same retrieval, per benchmark. The best is the one with the highest mean
  on the *tune* half of the questions (`ragkit.evaluate.splits`), and the difference is quoted
  on the *held-out* half, which shares no gold unit and no gold text with it. Questions the
  committed split does not know (your own documents, notebook 08) have no tune half: the best
  is then chosen and quoted on the same questions, and the decision says so;
- `against`: a technique against one named alternative (the step it replaces: children for
  small-to-big, naive vectors for late chunking), on the held-out half where the split knows
  the questions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..report.decisions import Decision
from .design import versus

Outcomes = Mapping[tuple[str, str], Any]


def _side(values, side: str):
    from ..evaluate.splits import split_of

    try:
        keep = [split_of(q) == side for q in values.index]
    except KeyError:
        return None
    return values[keep]


def _values(out, metric: str, budget: int | None):
    return out.values(metric, budget).dropna()


def _metric_name(metric: str, budget: int | None) -> str:
    return f"{metric}@B{budget}" if budget is not None else metric


def against_best(outcomes: Outcomes, treated: str, baselines: Sequence[str], *,
                 metric: str = "recall", budget: int | None = 1024,
                 technique: str | None = None) -> Decision | None:
    """`treated` against the best of `baselines` on each benchmark that has both (None when
    none has)."""
    by: dict[str, Any] = {}
    bases: dict[str, str] = {}
    split_known = True
    for bench in sorted({b for b, _ in outcomes}):
        present = [b for b in baselines if (bench, b) in outcomes]
        if (bench, treated) not in outcomes or not present:
            continue
        t = _values(outcomes[(bench, treated)], metric, budget)
        best, on_tune = _best(outcomes, bench, present, metric, budget)
        bases[bench] = best
        if not on_tune or _side(t, "held-out") is None:
            split_known = False
            if on_tune:  # the treated run's questions have no split: choose as it is quoted
                best = bases[bench] = _best(outcomes, bench, present, metric, budget, False)[0]
            by[bench] = versus(t, _values(outcomes[(bench, best)], metric, budget))
            continue
        by[bench] = versus(_side(t, "held-out"),
                           _side(_values(outcomes[(bench, best)], metric, budget), "held-out"))
    if not by:
        return None
    where = ("chosen on the tune half" if split_known
             else "chosen and quoted on the same questions: they have no tune half")
    d = Decision(technique or treated,
                 f"the best of the {len(baselines)} simple baselines measured here ({where})",
                 _metric_name(metric, budget), by,
                 "held-out half" if split_known else "all questions",
                 _encoders(outcomes, treated))
    return _with_truncation(_with_cost(d, outcomes, treated, bases), outcomes, treated, bases)


def _best(outcomes: Outcomes, bench: str, present: Sequence[str], metric: str,
          budget: int | None, tune: bool = True) -> tuple[str, bool]:
    """(the best of `present` on `bench`, whether it was chosen on the tune half): the highest
    tune-half mean, or the highest mean over all questions where a baseline's questions have no
    tune half (or `tune` is False); ties go to the later name."""
    halves = {b: _side(_values(outcomes[(bench, b)], metric, budget), "tune") for b in present}
    on_tune = tune and all(v is not None for v in halves.values())
    score = ({b: v.mean() for b, v in halves.items()} if on_tune else
             {b: _values(outcomes[(bench, b)], metric, budget).mean() for b in present})
    return max(present, key=lambda b: (score[b], b)), on_tune


def tune_picks(outcomes: Outcomes, baselines: Sequence[str], *, metric: str = "recall",
               budget: int | None = 1024) -> dict[str, str]:
    """The baseline `against_best` sets against a chunker on each benchmark: the best of
    `baselines` on the tune half (on all questions where a benchmark has no split)."""
    picks: dict[str, str] = {}
    for bench in sorted({b for b, _ in outcomes}):
        present = [b for b in baselines if (bench, b) in outcomes]
        if present:
            picks[bench] = _best(outcomes, bench, present, metric, budget)[0]
    return picks


def _with_cost(d: Decision, outcomes: Outcomes, treated: str, bases: Mapping[str, str]
               ) -> Decision:
    """`d` with its measured cost on its deciding benchmark: the units each side embeds and
    indexes (the index grows, and a cold run's encoding time with it, with their count)."""
    bench = d.decisive[0]
    t, b = outcomes.get((bench, treated)), outcomes.get((bench, bases.get(bench, "")))
    # what each side embeds and indexes (`Outcome.n_indexed`), else the units it returns
    n_t, n_b = (getattr(o, "n_indexed", 0) or getattr(o, "means", {}).get("n_chunks")
                for o in (t, b))
    if n_t is None or n_b is None or n_t == n_b:  # the same units: their count says nothing
        return d
    return replace(d, cost=f"{int(n_t):,} chunks to embed and index against {int(n_b):,} on "
                           f"{bench}")


def _with_truncation(d: Decision, outcomes: Outcomes, treated: str,
                     bases: Mapping[str, str]) -> Decision:
    """`d` with a note when, on its deciding benchmark, the encoder cut a larger share of the
    texts on the side that is behind than on the side ahead (their runs' ``truncated:N`` flags
    over the chunks each returns; the counts where a run does not say how many it returns):
    the difference is then partly what the encoder never read. When the side ahead was cut as
    much or more, truncation cannot explain its lead, and no note is added; nor when both
    sides report the same number cut, which a side that searches the other's units (the
    children of small-to-big, returned as parents) does by construction."""
    from .pipeline import flag_count

    bench = d.decisive[0]
    t, b = outcomes.get((bench, treated)), outcomes.get((bench, bases.get(bench, "")))
    if t is None or b is None:
        return d
    cut = [flag_count(getattr(o, "flags", ()) or ()) for o in (t, b)]
    if cut[0] == cut[1]:  # as many cut on each side: taken as the same texts (small-to-big
        return d          # embeds its children, so both sides read the very same vectors)
    made = [len(getattr(o, "chunks", None) or ()) for o in (t, b)]
    share = [c / m if m else c for c, m in zip(cut, made)]
    behind = 0 if d.decisive[1].diff < 0 else 1  # the side the deciding difference is against
    if share[behind] <= share[1 - behind]:  # the side ahead was cut as much or more: no excuse
        return d
    first = (f"{cut[0]:,} of the {made[0]:,} texts this side embedded" if made[0] else
             f"{cut[0]:,} of the texts this side embedded")
    second = (f"{cut[1]:,} of the baseline's {made[1]:,}" if made[1] else
              f"{cut[1]:,} of the baseline's")
    return d.with_note(f"on {bench}, the encoder cut {first} and {second} (longer than it "
                       "reads), so part of the difference is text the encoder never saw")


def _encoders(outcomes: Outcomes, treated: str) -> str:
    """The encoder(s) behind `treated`'s runs, named in its closing line."""
    names = sorted({getattr(o, "encoder", "") for (_, s), o in outcomes.items() if s == treated}
                   - {""})
    return ", ".join(names) or "no encoder (BM25)"


def against(outcomes: Outcomes, treated: str, base: str, *, metric: str = "recall",
            budget: int | None = 1024, technique: str | None = None,
            alternative: str | None = None, condition: str = "") -> Decision | None:
    """`treated` against `base` on every benchmark that has both, held-out half where the
    split knows the questions, else all of them (None when no benchmark has both);
    `condition` is the earlier choice the call assumes (`Decision.condition`)."""
    by: dict[str, Any] = {}
    halves = set()
    for bench in sorted({b for b, _ in outcomes}):
        if (bench, treated) not in outcomes or (bench, base) not in outcomes:
            continue
        t, b = (_values(outcomes[(bench, s)], metric, budget) for s in (treated, base))
        ht, hb = _side(t, "held-out"), _side(b, "held-out")
        known = ht is not None and hb is not None
        by[bench] = versus(ht, hb) if known else versus(t, b)
        halves.add("held-out half" if known else "all questions")
    if not by:
        return None
    d = Decision(technique or treated, alternative or base, _metric_name(metric, budget), by,
                 " and ".join(sorted(halves)), _encoders(outcomes, treated),
                 condition=condition)
    bases = {bench: base for bench in by}
    d = _with_cost(d, outcomes, treated, bases)
    d = replace(d, unstable=unstable(outcomes, treated, base, d, metric, budget))
    d = replace(d, note=tune_disagrees(outcomes, treated, base, d, metric, budget))
    return _with_truncation(d, outcomes, treated, bases)


def _tune_versus(outcomes: Outcomes, treated: str, base: str, bench: str, metric: str,
                 budget: int | None):
    t = _side(_values(outcomes[(bench, treated)], metric, budget), "tune")
    b = _side(_values(outcomes[(bench, base)], metric, budget), "tune")
    if t is None or b is None or not len(t) or not len(b):
        return None
    return versus(t, b)


def unstable(outcomes: Outcomes, treated: str, base: str, d: Decision, metric: str,
             budget: int | None) -> tuple[str, ...]:
    """The benchmarks where `d`'s held-out difference is measurable and the same comparison
    on the tune half is measurable the other way (both intervals exclude 0, opposite signs)."""
    out = []
    for bench, held in d.by_benchmark.items():
        if held.low <= 0 <= held.high:
            continue
        tune = _tune_versus(outcomes, treated, base, bench, metric, budget)
        if tune is not None and not tune.low <= 0 <= tune.high and tune.diff * held.diff < 0:
            out.append(bench)
    return tuple(out)


def tune_disagrees(outcomes: Outcomes, treated: str, base: str, d: Decision, metric: str,
                   budget: int | None) -> str:
    """A note for `d` when, on its deciding benchmark, the same comparison on the *tune* half
    points the other way (its mean difference of the opposite sign to the held-out half's):
    a held-out difference the tune half reverses is not a stable one; "" otherwise or where
    there is no split."""
    from ..report.prose import ci

    bench, held = d.decisive
    tune = _tune_versus(outcomes, treated, base, bench, metric, budget)
    if tune is None or tune.diff * held.diff >= 0:
        return ""
    return (f"on {bench}'s tune half the same comparison reads {100 * tune.diff:+.1f} "
            f"{ci(tune.low, tune.high)}, n = {tune.n}: the two halves point in opposite "
            "directions")
