"""The closing findings of notebooks 06–08, computed from this run's outcomes, rows and scores.

Each function returns numbers (a table, a `ragkit.evaluate.Comparison`) that a notebook renders
into its "What we measured" section with `ragkit.report.finding`, so every sentence there says
what the run measured, in the direction it measured it:

- `step_table`: each step of notebook 07's combinations against the row it builds on
  (breadcrumbs on structure, a preamble on breadcrumbs, BM25 on the preamble), and the
  side-branches (late chunking, parent-child) against plain structure, paired;
- `rank_of`: where a configuration (e.g. the router) ranks on a leaderboard;
- `rerank_pairs`: every rerank stage in the rows against the same stage without it, on Pass@20;
"""

from __future__ import annotations

from typing import Mapping, Sequence

import pandas as pd

from ..evaluate.runs import per_query, versus
from ..evaluate.stats import Comparison
from .decisions import weak_pick

# notebook 07's combinations: (row, the row it is compared with)
STACK = (("structure + breadcrumbs", "structure"),
         ("+ structural preamble", "structure + breadcrumbs"),
         ("+ hybrid BM25", "+ structural preamble"),
         ("late · structure", "structure"),
         ("parent-child · structure", "structure"))


def step_table(outcomes: Mapping[tuple[str, str], object],
               steps: Sequence[tuple[str, str]] = STACK, budget: int = 1024,
               metric: str = "recall") -> pd.DataFrame:
    """One row per benchmark × step: the step, what it is compared with, and the paired
    comparison of `metric` at `budget` tokens, or the fixed-k value when `budget` is None
    (``comparison``; ``diff``, ``low``, ``high``).
    `outcomes` maps (benchmark, label) to a `ragkit.experiments.Outcome`; steps whose rows are
    missing are skipped."""
    out = []
    for bench in dict.fromkeys(b for b, _ in outcomes):
        for a, b in steps:
            if (bench, a) not in outcomes or (bench, b) not in outcomes:
                continue
            c = versus(outcomes[(bench, a)].values(metric, budget),
                       outcomes[(bench, b)].values(metric, budget))
            out.append({"benchmark": bench, "step": a, "against": b, "diff": c.diff,
                        "low": c.low, "high": c.high, "n": c.n, "comparison": c})
    return pd.DataFrame(out)


def rank_of(board: pd.DataFrame, name: str) -> tuple[int, int] | None:
    """(rank, number of rows) of the first board row whose strategy, or one of the names a
    merged row joins with " = ", is `name`; None when absent.

    >>> rank_of(pd.DataFrame({"strategy": ["a", "router = router", "b"]}), "router")
    (2, 3)
    """
    for i, s in enumerate(board.strategy):
        if name in [x.strip(" …") for x in str(s).split(" = ")]:
            return i + 1, len(board)
    return None


def rerank_pairs(rows: pd.DataFrame, scores: pd.DataFrame, metric: str = "pass@20"
                 ) -> list[dict]:
    """Each run whose strategy has a rerank stage (``... + rerank · ...``) against the same
    strategy without it, on `metric` (a fixed-depth metric, budget −1), paired over the
    questions both scored. Empty when no rerank stage ran."""
    runs = rows[rows.run.notna()].drop_duplicates(["benchmark", "strategy", "embedder"])
    out = []
    for r in runs[runs.strategy.str.contains(" + rerank", regex=False)].itertuples():
        base = runs[(runs.benchmark == r.benchmark) & (runs.embedder == r.embedder)
                    & (runs.strategy == r.strategy.replace(" + rerank", ""))]
        if base.empty:
            continue
        c = versus(per_query(scores, r.run, metric), per_query(scores, base.iloc[0].run, metric))
        if c.n:
            out.append({"benchmark": r.benchmark, "with": r.strategy,
                        "without": base.iloc[0].strategy, "comparison": c})
    return out


# --- sentences for notebook 07's closing section (rendered by `report.what_we_measured`) ---

def guide_findings(found, budget: int = 1024) -> list[str]:
    """Sentences from the experiment design's effects (`ragkit.experiments.design.effects`): a count of
    the chunker comparisons ragkit's chunker wins, loses or ties against the best simple
    baseline under the same retrieval, then, per benchmark at `budget`, the chunker under the
    stack and the stack on the router's chunks, each with its held-out interval."""
    from .guide import questions
    from .prose import finding

    q = questions(found)
    chunker = [e for e in q["chunker"] if e.complete]
    if not chunker:
        return ["The experiment design has no complete chunker comparison in these results "
                "(`ragkit bench design`)."]
    count = {v: sum(e.verdict == v for e in chunker)
             for v in ("beats", "loses", "no measurable difference")}
    weak = sum(e.verdict == "beats" and weak_pick(e) for e in chunker)  # not counted as wins
    out = [f"Against the best of every simple baseline under the same retrieval (seven; eight "
           f"with one chunk per page on PDFs), "
           f"ragkit's chunker beats it in {count['beats'] - weak}"
           + (f" (it is ahead in {weak} more, against a weak pick: not counted as wins, as in the "
              "calls below)" if weak else "")
           + f", loses in {count['loses']} and shows "
           f"no measurable difference in {count['no measurable difference']} of {len(chunker)} "
           + ("benchmark × retrieval × encoder × budget cells"
              if len({e.treated.encoder for e in chunker}) > 1
              else "benchmark × retrieval × budget cells") + " (held-out questions)."
           + _wins_read(chunker)]
    metric = f"recall@B{budget} (held-out)"
    for e in chunker:
        if e.budget == budget and e.treated.first_stage == "stack":
            out.append(f"On **{e.benchmark}** at {budget:,} tokens, under the stack: "
                       + after_colon(finding(e.recall, e.treated.label, e.base.label, metric)))
    for e in q["retrieval"]:
        if e.budget == budget and not e.treated.simple and e.factor == "first_stage":
            out.append(f"On **{e.benchmark}** at {budget:,} tokens, on the router's chunks: "
                       + after_colon(finding(e.recall, e.treated.label, e.base.label, metric)))
    return out


FEW_QUESTIONS = 30  # below this many held-out questions a win is said to rest on few


def _wins_read(chunker) -> str:
    """The chunker's wins one by one, each with what weakens it: a tune-half pick that the
    held-out half's own best baseline outscores ragkit's chunker (a win that leader would not
    give), or fewer than `FEW_QUESTIONS` questions. "" when there is no win."""
    wins = [e for e in chunker if e.verdict == "beats"]
    if not wins:
        return ""
    parts, weak = [], 0
    encoders = {e.treated.encoder for e in chunker}  # named where the cells have several
    for e in wins:
        c, why = e.recall, []
        if weak_pick(e):  # the same test as the closing's leader note
            (rank, of), leader = e.split_rank, e.split_leader
            why.append(f"against a pick that is {rank} of {of} baselines on the "
                       f"held-out half, whose leader there ({leader[0]}) has {100 * leader[1]:.1f} "
                       f"against ragkit's {100 * c.mean_a:.1f}")
        if c.n < FEW_QUESTIONS:
            why.append(f"on {c.n} questions")
        enc = f" with {e.treated.encoder}" if len(encoders) > 1 else ""
        parts.append(f"{e.benchmark} under {e.treated.first_stage}{enc} at {e.budget:,} tokens, "
                     f"{100 * c.diff:+.1f} [{100 * c.low:+.1f}, {100 * c.high:+.1f}]"
                     + (f" ({'; '.join(why)})" if why else ""))
        weak += bool(why)
    return (f" Where it is ahead: {'; '.join(parts)}"
            + (f"; {weak} of the {len(wins)} rest on a weak pick or few questions."
               if weak else "."))


def after_colon(sentence: str) -> str:
    """`report.finding`'s sentence continued after a colon or semicolon: "No measurable ..."
    becomes "no measurable ..."."""
    return sentence[:1].lower() + sentence[1:] if sentence.startswith("No ") else sentence


def _effect(c: Comparison) -> str:
    return "raises" if c.low > 0 else "lowers" if c.high < 0 else "does not measurably change"


def step_findings(steps: pd.DataFrame, budget: int = 1024) -> list[str]:
    """One sentence per step of `step_table`: on which benchmarks it raises, lowers or does
    not measurably change recall, each with its difference and interval."""
    from .prose import ci

    out = []
    for (a, b), g in steps.groupby(["step", "against"], sort=False):
        parts = {}
        for r in g.itertuples():
            c = r.comparison
            parts.setdefault(_effect(c), []).append(
                f"{r.benchmark} ({100 * c.diff:+.1f} points, 95 % CI {ci(c.low, c.high)}, "
                f"n = {c.n})")
        said = "; it ".join(f"{effect} it on {', '.join(where)}"
                            for effect, where in parts.items())
        out.append(f"**{a}** against {b}, recall@{budget}: it {said}.")
    return out


def claims_finding(claims: pd.DataFrame) -> str:
    """How the pre-registered claims came out: counts per verdict."""
    mine = claims[claims.role == "claim"] if "role" in claims else claims
    counts = mine.verdict.value_counts()
    said = ", ".join(f"{n} {v}" for v, n in counts.items())
    return f"Of the {len(mine)} quantitative claims the course checks: {said}."


def rerank_findings(pairs: list[dict]) -> list[str]:
    """One sentence per rerank stage (`rerank_pairs`), or one saying that none ran."""
    from .prose import finding

    if not pairs:
        return ["The contextual pipeline's optional rerank stage (notebook 04; it needs "
                "`RAGKIT_RERANK_MODEL` or `RAGKIT_GEMMA_DIR`) did not run in these rows; the "
                "cross-encoder reranker's effects are the experiment design's, above."]
    return [f"On **{p['benchmark']}**, the rerank stage (EmbeddingGemma, a bi-encoder, unless "
            "`RAGKIT_RERANK_MODEL` names a cross-encoder): "
            + after_colon(finding(p["comparison"], p["with"], p["without"], "Pass@20"))
            for p in pairs]


def step_display(steps: pd.DataFrame, columns: Sequence[str] = ("benchmark", "step", "against"),
                 name: str = "difference") -> pd.DataFrame:
    """`step_table` for reading: the difference in points with its interval in one column
    (``+3.8 [+0.8, +8.4]``), headed `name` (say what it measures: "recall@B1024, points"),
    and n, beside the named `columns`."""
    from .prose import ci

    shown = [f"{100 * d:+.1f} {ci(lo, hi)}" for d, lo, hi in
             zip(steps["diff"], steps.low, steps.high)] if len(steps) else []
    return steps.assign(**{name: shown})[[*columns, name, "n"]]


def metric_agreement(first: pd.DataFrame, second: pd.DataFrame, first_name: str = "recall",
                     second_name: str = "IoU") -> str:
    """Whether two `step_table`s of the same steps (two metrics) move the same way: per step,
    each metric's measured direction (its 95 % interval above or below 0, else none), counted,
    with every step whose two metrics move measurably in opposite directions named."""
    from .prose import ci, verdict

    def way(lo: float, hi: float) -> int:
        return {"beats": 1, "loses": -1}.get(verdict(lo, hi), 0)

    keys = ["benchmark", "step", "against"]
    both = first.merge(second, on=keys, suffixes=("_a", "_b"))
    counts = {"same": 0, "opposite": 0, "first": 0, "second": 0, "neither": 0}
    opposite = []
    for r in both.itertuples():
        a, b = way(r.low_a, r.high_a), way(r.low_b, r.high_b)
        kind = ("neither" if not a and not b else "first" if not b else "second" if not a
                else "same" if a == b else "opposite")
        counts[kind] += 1
        if kind == "opposite":
            opposite.append(f"  {r.benchmark}, {r.step} against {r.against}: {first_name} "
                            f"{100 * r.diff_a:+.1f} {ci(r.low_a, r.high_a)}, {second_name} "
                            f"{100 * r.diff_b:+.1f} {ci(r.low_b, r.high_b)}")
    head = (f"Of {len(both)} steps, {first_name} and {second_name} move measurably the same "
            f"way in {counts['same']} and in opposite ways in {counts['opposite']}; only "
            f"{first_name} moves measurably in {counts['first']}, only {second_name} in "
            f"{counts['second']}, neither in {counts['neither']}.")
    return "\n".join([head, *opposite])
