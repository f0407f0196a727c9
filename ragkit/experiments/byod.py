"""Notebook 08's paired table without selection bias: the best strategy is picked on one half
of the questions and compared with the others on the other half.

Picking the strategy with the highest mean on all the questions and then comparing it with
the rest on those same questions favours it: the pick and the test read the same noise, so
the pick's lead is larger there than on new questions. Here:

- `halves`: each question's half, ``tune`` or ``held-out``: the committed grouped split
  (`ragkit.evaluate.splits`, ``results/splits.json``) where it knows every question of the
  benchmark, else the same grouped split computed from the loaded benchmark (your own
  documents), so the halves share no gold unit and no gold text;
- `pick_on_tune`: the strategy with the highest mean of a metric on the tune half (the
  held-out half is never read);
- `held_out_steps`: that pick against each other strategy, paired over the held-out half, in
  the columns of `ragkit.report.step_table` (``step_display`` shows it);
- `budget_depth`: where one question's gold sits in one strategy's ranking against what the
  top k and the packed budget read (is a gap depth, how many chunks fit, or ranking?);
- `headline`: the closing's first line, from the held-out comparisons: the strategies tied
  with the pick and its margin over the window baselines, each with its interval.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

SIDES = ("tune", "held-out")


def halves(bench) -> dict[str, str]:
    """query id -> ``"tune"`` or ``"held-out"`` for every question of `bench` (a loaded
    `ragkit.evaluate.Benchmark`): the committed split when it holds them all, else
    `ragkit.evaluate.splits.grouped_split` of the benchmark."""
    from ..evaluate.splits import grouped_split, load_splits

    try:
        known = load_splits()
    except FileNotFoundError:
        known = {}
    ids = [q.id for q in bench.queries]
    if ids and all(q in known for q in ids):
        return {q: known[q] for q in ids}
    return dict(grouped_split(bench.name, bench.queries, len(bench.documents)).side)


def _on(values, side: Mapping[str, str], half: str):
    values = values.dropna()
    return values[[side.get(q) == half for q in values.index]]


def pick_on_tune(outcomes: Mapping[tuple[str, str], Any], bench: str, strategies: Sequence[str],
                 side: Mapping[str, str], metric: str = "recall", budget: int | None = 1024
                 ) -> tuple[str, dict[str, float]]:
    """The strategy of `strategies` with the highest mean `metric` (at `budget` tokens, or at
    k when None) on the tune half of `side`, the first in `strategies` on a tie; and every
    strategy's tune-half mean, for the sentence that states the pick."""
    means = {s: float(_on(outcomes[(bench, s)].values(metric, budget), side, "tune").mean())
             for s in strategies}
    best = max(strategies, key=lambda s: (means[s], -list(strategies).index(s)))
    return best, means


def held_out_steps(outcomes: Mapping[tuple[str, str], Any], bench: str, pick: str,
                   others: Sequence[str], side: Mapping[str, str], budget: int | None = 1024,
                   metric: str = "recall"):
    """`pick` against each of `others` on `bench`, paired over the held-out questions both
    scored: one row each with the columns of `ragkit.report.step_table` (benchmark, step,
    against, diff, low, high, n, comparison)."""
    import pandas as pd

    from ..evaluate.runs import versus

    a = _on(outcomes[(bench, pick)].values(metric, budget), side, "held-out")
    rows = []
    for other in others:
        b = _on(outcomes[(bench, other)].values(metric, budget), side, "held-out")
        c = versus(a, b, on=[q for q in a.index if q in b.index])
        rows.append({"benchmark": bench, "step": pick, "against": other, "diff": c.diff,
                     "low": c.low, "high": c.high, "n": c.n, "comparison": c})
    return pd.DataFrame(rows, columns=["benchmark", "step", "against", "diff", "low", "high",
                                       "n", "comparison"])


def chunking_costs(bench, chunkers: Sequence[Any]):
    """What each chunker costs to build an index of `bench` before any embedding: the chunks
    it cuts (each one embedded and stored) and the CPU seconds of one pass over the documents,
    timed cold (the shared parse and token-count caches cleared first). One row per chunker,
    in order: ``strategy``, ``n_chunks``, ``seconds``."""
    import time

    import pandas as pd

    from ..chunkers.structure import clear_cache

    rows = []
    for chunker in chunkers:
        clear_cache()
        t = time.process_time()
        chunks = chunker.chunk_all(bench.documents)
        rows.append({"strategy": chunker.label, "n_chunks": len(chunks),
                     "seconds": time.process_time() - t})
    return pd.DataFrame(rows, columns=["strategy", "n_chunks", "seconds"])


def budget_depth(outcome: Any, query: Any, budget: int, k: int) -> dict[str, Any]:
    """Where `query`'s gold sits in `outcome`'s ranking: ``ranks`` (1-based ranks of the hits
    touching the gold), ``units`` (hits the `budget`-token context holds, `pack_context`),
    ``held`` (the gold ranks among them) and ``cause``: ``"held"`` when the packed context
    holds a gold chunk, ``"depth"`` when the first gold chunk is within the top `k` but past
    the chunks the budget holds (fewer, larger chunks fit), ``"ranking"`` when it is past both
    (or nowhere in the ranking)."""
    from ..evaluate.budget import pack_context
    from ..evaluate.spans import overlaps

    ranks = [i for i, h in enumerate(outcome.hits[query.id], 1)
             if overlaps(h.chunk, query.gold, query.copies)]
    units = pack_context(outcome.retrieved(query.id), budget).units
    held = [r for r in ranks if r <= units]
    cause = ("held" if held else "depth" if ranks and ranks[0] <= k else "ranking")
    return {"ranks": ranks, "units": units, "held": held, "cause": cause}


def _points(r: Any) -> str:
    return f"{100 * r.diff:+.1f} [{100 * r.low:+.1f}, {100 * r.high:+.1f}]"


def headline(steps: Any, pick: str, windows: Sequence[str], metric: str) -> str:
    """One sentence from `held_out_steps` rows (pick minus each other strategy): the
    strategies whose paired interval holds 0 (no measurable difference from `pick`: no
    evidence either way), then `pick`'s difference from each of `windows` (the fixed and
    recursive window baselines), then from every other strategy that differs from it
    measurably (a library splitter, say), each in points with its 95 % interval, the verdict
    read from the interval's sign: every strategy compared is named once."""
    rows = list(steps.itertuples())
    n = max((r.n for r in rows), default=0)
    tied = [r for r in rows if r.low <= 0 <= r.high]
    win = [r for r in rows if r.against in set(windows)]
    out = f"On the held-out half ({metric}, n = {n}), **{pick}** "
    names = [f"**{r.against}** ({_points(r)})" for r in tied]
    out += ("shows no measurable difference from "
            + " and ".join(filter(None, [", ".join(names[:-1]), names[-1]]))
            + " (no evidence either way, not a tie)" if tied else
            "differs measurably from every other strategy")
    if win:
        ahead = [r for r in win if r.low > 0]
        behind = [r for r in win if r.high < 0]
        out += (f"; against the {len(win)} window baselines (fixed and recursive windows) it "
                f"is ahead of {len(ahead)}, behind {len(behind)} and not measurably different "
                f"from {len(win) - len(ahead) - len(behind)}: "
                + "; ".join(f"{r.against} {_points(r)} points" for r in
                            sorted(win, key=lambda r: r.diff)))
    rest = [r for r in rows if r not in tied and r.against not in set(windows)]
    if rest:  # the library splitters and the rest, so every strategy compared is named
        out += ("; against the other strategies: " + "; ".join(
            f"{'ahead of' if r.low > 0 else 'behind'} {r.against} {_points(r)} points"
            for r in sorted(rest, key=lambda r: r.diff)))
    return out + "."
