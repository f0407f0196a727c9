"""The title question, as computed: does the chunker move recall@B more than the retrieval does?

Per benchmark, budget and encoder, on the held-out half (`title_numbers`):

- **chunker** (under dense search, and under the stack): the best simple baseline, chosen on
  the tune half, minus the median simple baseline, under that retrieval;
- **first stage**: the stack minus dense on the same chunks, the median over every chunker
  measured under both with this encoder;
- **margin** under each retrieval: chunker minus first stage, with a 95 % bootstrap interval
  over the held-out questions (the same resampled questions for every run, so the median
  baseline and the median lift are recomputed on each resample; the best baseline stays the
  one the tune half chose);
- **encoder** (MiniLM rows): another encoder minus MiniLM on the same chunks and retrieval, the
  median over what was measured; shown beside the rule, not part of it.

The rule, fixed before the full runs were read: the title "RAG quality is mostly chunking
quality" holds in a cell when the chunker moves recall@B more than the stack does under *both*
dense search and the stack. With intervals, a cell is **supported** when both margins'
intervals lie above 0, **not supported** when either lies below 0, and otherwise **not
decided** (an interval holding 0: the questions cannot tell).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..evaluate.runs import Metric, Run
from ..evaluate.stats import statistic_interval
from .design import REFERENCE_ENCODER, Effect, _best, effect_table, effects, headline

STAGES = ("dense", "stack")
STATES = ("supported", "not supported", "not decided")


def _state(low: float, high: float) -> str:
    return "supported" if low > 0 else "not supported" if high < 0 else "not decided"


def cell_state(margins: dict[str, tuple[float, float]]) -> str:
    """A cell's state from its margins' intervals (stage -> (low, high)): the rule above.

    >>> cell_state({"dense": (0.01, 0.05), "stack": (0.02, 0.04)})
    'supported'
    >>> cell_state({"dense": (-0.05, -0.01), "stack": (0.02, 0.04)})
    'not supported'
    >>> cell_state({"dense": (-0.05, 0.01), "stack": (0.02, 0.04)})
    'not decided'
    """
    states = [_state(lo, hi) for lo, hi in margins.values()]
    if "not supported" in states:
        return "not supported"
    return "supported" if states and all(s == "supported" for s in states) else "not decided"


def _margin(n_simple: int, n_pairs: int):
    """The margin statistic over arrays (resamples x questions): best, the simple baselines,
    then (stack, dense) per chunker."""
    def stat(best, *rest):
        simple = np.stack([a.mean(-1) for a in rest[:n_simple]])
        pairs = rest[n_simple:]
        lifts = np.stack([pairs[2 * i].mean(-1) - pairs[2 * i + 1].mean(-1)
                          for i in range(n_pairs)])
        return best.mean(-1) - np.median(simple, axis=0) - np.median(lifts, axis=0)
    return stat


def _cell(mine: Sequence[Run], m: Metric, split: str, chosen_on: str) -> dict[str, Any]:
    row: dict[str, Any] = {}
    pairs = []
    for r in mine:
        if r.config.first_stage != "stack":
            continue
        twin = [d for d in mine if d.config.differs(r.config) == {"first_stage"}
                and d.config.first_stage == "dense"]
        if twin:
            pairs.append((r, twin[0]))
    lifts = [r.mean(m, split) - d.mean(m, split) for r, d in pairs]
    if lifts:
        row["first_stage"] = float(np.median(lifts))
        row["first_stage_range"] = (float(min(lifts)), float(max(lifts)))
    for stage in STAGES:
        simple = [r for r in mine if r.config.simple and r.config.first_stage == stage]
        if len(simple) < 2:
            continue
        best = _best(simple, m, chosen_on)
        row[f"chunker_{stage}"] = (best.mean(m, split)
                                   - float(np.median([r.mean(m, split) for r in simple])))
        if not pairs:
            continue
        involved = [best, *simple, *(x for p in pairs for x in p)]
        values = [r.values(m, split) for r in involved]
        ids = values[0].index
        for v in values[1:]:
            ids = ids.intersection(v.index)
        arrays = [v.loc[ids].to_numpy(float) for v in values]
        point, low, high = statistic_interval(_margin(len(simple), len(pairs)), *arrays)
        row[f"margin_{stage}"] = (point, low, high)
        row["n"] = len(ids)
    margins = {s: row[f"margin_{s}"][1:] for s in STAGES if f"margin_{s}" in row}
    if margins:
        row["title"] = cell_state(margins)
    return row


def title_numbers(runs: Sequence[Run], budgets: Sequence[int] = (512, 1024, 2048),
                  split: str = "held-out") -> list[dict[str, Any]]:
    """One row per benchmark, budget and encoder with runs: the chunker's and the stack's
    movements in recall@B (fractions), the margins with their intervals, the cell's state
    (`title`, by the intervals) and, on MiniLM
    rows, the encoder's movement (module doc)."""
    out = []
    chosen_on = "tune" if split == "held-out" else split
    for bench in sorted({r.benchmark for r in runs}):
        here = [r for r in runs if r.benchmark == bench and r.config.reranker == "none"]
        encoders = sorted({r.config.encoder for r in here},
                          key=lambda e: (e != REFERENCE_ENCODER, e))
        for enc in encoders:
            mine = [r for r in here if r.config.encoder == enc]
            for b in budgets:
                m = Metric("recall", b)
                row = {"benchmark": bench, "budget": b, "encoder_name": enc,
                       **_cell(mine, m, split, chosen_on)}
                if enc == REFERENCE_ENCODER:
                    moves = [o.mean(m, split) - r.mean(m, split) for o in here for r in mine
                             if o.config.encoder != enc
                             and o.config.differs(r.config) == {"encoder"}]
                    if moves:
                        row["encoder"] = float(np.median(moves))
                if any(k.startswith(("chunker_", "first_stage")) for k in row):
                    out.append(row)
    return out


def counts(numbers: Sequence[dict[str, Any]]) -> dict[str, int]:
    """How many cells are in each state (`STATES`), over the rows that have one."""
    return {s: sum(r.get("title") == s for r in numbers) for s in STATES}


def print_effects(runs: Sequence[Run]) -> list[Effect]:
    """Print the headline effects and the title's cells (``ragkit bench design``)."""
    from ..report.tables import text_table

    found = effects(runs)
    header, rows = effect_table(headline(found))
    print(f"\nOne factor at a time, held-out half ({len(runs)} runs):")
    print(text_table(header, rows))
    numbers = title_numbers(runs)
    print("\nHow much recall@B moves with each factor (held-out half, points):")
    print(text_table(["benchmark", "budget", "encoder", "chunker (dense)", "chunker (stack)",
                      "first stage", "title"],
                     [[r["benchmark"], r["budget"], r["encoder_name"],
                       *(f"{100 * r[k]:+.1f}" if k in r else "–"
                         for k in ("chunker_dense", "chunker_stack", "first_stage")),
                       r.get("title", "–")] for r in numbers]))
    print("(the title's state per cell: the margin's 95 % interval under each retrieval)")
    return found
