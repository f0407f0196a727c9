"""The leaderboard: every configuration the course measured, compared at an equal context budget.

Read from the results rows and the per-query scores (`ragkit.report.results`), never typed:

- `board(rows, scores, benchmark, budget)`: one row per distinct configuration (the same
  strategy, embedder and settings measured by two notebooks is one row, naming both), with
  recall@B, pass@B and IoU@B at `budget` cl100k tokens, each mean with its 95 % bootstrap
  interval, the number of questions scored, and the fixed-k recall@5 as a secondary column;
- `by_type(...)`: recall@B per question type (lookup, aggregation, comparison, …);
- `curves(...)` / `plot_curves(...)`: recall against budget, for the figures;
- `versus(...)`: a paired comparison of two configurations on the same questions.

Per-query values are picked and paired by `ragkit.evaluate.runs` (`per_query`, `versus`).
"""

from __future__ import annotations

import json
from typing import Sequence

import pandas as pd

from ..evaluate.budget import BUDGETS, DEFAULT_BUDGET
from ..evaluate.runs import Metric, per_query
from ..evaluate.runs import versus as _versus
from ..evaluate.stats import Comparison, interval
from .prose import points

MAIN_BENCHMARKS = ("course", "chroma", "anthropic")
# experiments whose runs are the grid points of a tuning sweep (`ragkit bench prose`): left
# out of every board, since ranking them on all questions would pick the best of many
# configurations on the questions they are then scored on; the chosen point is recorded
# under another experiment and is ranked
TUNING_SWEEPS = ("prose_candidates", "code_fusion_candidates")
# the simple baselines every fix must beat (strategy-name prefixes): a run whose chunks come
# from one of these splitters is a baseline, whatever retrieval it was measured with, so the
# bar is the strongest run on simple chunks (a fused stack with a cross-encoder on fixed
# 1000-character windows included), not the weakest
BASELINES = ("fixed_chars", "fixed_tokens", "recursive", "langchain", "chonkie")
BASELINE_LABEL = ("the best run on a simple splitter's chunks: fixed-size, recursive, "
                  "LangChain's or chonkie's, with whatever retrieval it was measured with")


def is_baseline(strategy: str, prefixes: Sequence[str] = BASELINES) -> bool:
    """A simple baseline: a run on the chunks of a splitter named by one of `prefixes`
    (`BASELINES`), whatever retrieval it was measured with (`BASELINE_LABEL`).

    >>> [is_baseline(s) for s in ("fixed_chars(1000/200)", "langchain markdown+recursive(254/0)",
    ...                           "fixed_chars(1000/200)+stack+cross-encoder", "router+stack")]
    [True, True, True, False]
    """
    return str(strategy).startswith(tuple(prefixes))


FINGERPRINT_METRICS = ("recall@B", "pass@B", "iou@B", "tokens@B", "recall", "iou", "precision",
                       "ndcg@10", "mrr@k")


def configurations(rows, scores=None) -> pd.DataFrame:
    """One row per run that has budgeted metrics: run, benchmark, strategy, embedder, params,
    notebook, experiment, flags, and the key that identifies duplicates — two runs of one
    benchmark and embedder whose per-query values are identical in every metric are one
    configuration measured twice (e.g. notebook 02's structure chunker and notebook 07's
    "structure" row; the values compared are `FINGERPRINT_METRICS`, fixed-k and at the default
    budget); without `scores`, the strategy name and settings decide. Runs of the
    `TUNING_SWEEPS` experiments are left out."""
    import hashlib

    sub = rows[(rows.metric == "recall@B") & rows.run.notna()
               & ~rows.experiment.isin(TUNING_SWEEPS)]
    sub = sub.drop_duplicates("run")
    prints = {}
    if scores is not None and len(scores):
        # the fixed-k metrics and those at the default budget: a run that computed only that
        # budget (`bench prose`) still matches a notebook's run of the same configuration
        # a fixed list of metrics every run records: a run that also scored pass@20 (bench
        # code) is still the same configuration as one that did not
        mine = scores[scores.run.isin(set(sub.run))
                      & scores.budget.isin((-1, DEFAULT_BUDGET))
                      & scores.metric.isin(FINGERPRINT_METRICS)]
        for run, g in mine.groupby("run", sort=False):
            g = g.sort_values(["metric", "budget", "query_id"])
            h = hashlib.sha256(pd.util.hash_pandas_object(
                g[["metric", "budget", "query_id", "value"]], index=False).values.tobytes())
            prints[run] = h.hexdigest()[:16]
    key = [json.dumps([r.benchmark, r.embedder, prints.get(r.run) or [
        r.strategy, {k: v for k, v in (r.params or {}).items()
                     if k not in ("generator", "chunks", "n_chunks")}
        if isinstance(r.params, dict) else r.params]], sort_keys=True, default=str)
        for r in sub.itertuples()]
    return sub.assign(config=key)[["run", "benchmark", "strategy", "embedder", "params",
                                   "notebook", "experiment", "flags", "config"]]


TUNED = ("router", "prose(", "code(")  # chunkers whose settings were chosen on tune halves


def is_tuned(strategy: str, params: dict | None = None) -> bool:
    """A configuration with settings chosen on a tune half: the router (its prose size and
    code chunker), the prose and code chunkers, or a row recording ``tuned_on``.

    >>> is_tuned("router+stack"), is_tuned("fixed_chars(1000/200)+stack")
    (True, False)
    """
    return (any(t in str(strategy) for t in TUNED)
            or bool(isinstance(params, dict) and params.get("tuned_on")))


GOLD_UNITS = "upstream"  # a benchmark's own chunks, which are also its gold units


def is_gold_units(strategy: str) -> bool:
    """A configuration that retrieves the benchmark's own chunks, which are its gold units
    (Anthropic's code set): close to an oracle for pass@k, so a board marks it.

    >>> is_gold_units("upstream+stack"), is_gold_units("router+stack")
    (True, False)
    """
    return str(strategy).startswith(GOLD_UNITS)


def board(rows, scores, benchmark: str, budget: int = DEFAULT_BUDGET,
          metrics: Sequence[str] = ("recall@B", "pass@B", "iou@B"),
          full_only: bool = True, split: str = "all") -> pd.DataFrame:
    """The leaderboard of one benchmark at `budget` tokens, best recall first.

    `split` ``"held-out"`` scores every row on the held-out half of the questions
    (`ragkit.evaluate.splits`), the half no setting was tuned on, so a tuned row and an untuned one are
    ranked on the same questions; the ``tuned`` column marks rows with tuned settings.

    With `full_only` (the default) only runs over the benchmark's whole question set are
    ranked — a run on a subset (e.g. the files one generator covers) is not comparable — and
    "oracle" rows, which filter with the gold's own metadata (an upper bound, not a
    configuration a reader can deploy), are left out."""
    confs = configurations(rows, scores)
    confs = confs[confs.benchmark == benchmark]
    if full_only:
        confs = confs[~confs.strategy.astype(str).str.contains("oracle", regex=False)]
    out = []
    for key, group in confs.groupby("config", sort=False):
        first = group.sort_values(["notebook", "experiment"]).iloc[0]
        names = list(dict.fromkeys(group.sort_values(["notebook", "experiment"]).strategy))
        row = {"strategy": " = ".join(names[:2]) + (" …" if len(names) > 2 else ""),
               "embedder": first.embedder,
               "notebooks": ", ".join(sorted(set(group.notebook))), "run": first.run}
        row["tuned"] = is_tuned(first.strategy, first.get("params"))
        for m in metrics:
            metric = Metric.from_long(m, budget)
            v = _held(per_query(scores, first.run, metric), split)
            mean, lo, hi = interval(v.to_numpy())
            name = metric.name
            row |= {name: mean, f"{name}_low": lo, f"{name}_high": hi}
            row["n"] = len(v)
        k5 = _held(per_query(scores, first.run, "recall"), split)
        row["recall@5"] = float(k5.mean()) if len(k5) else float("nan")
        flags = first["flags"]
        row["flags"] = ";".join(str(f) for f in (flags if len(flags) else []))
        out.append(row)
    df = pd.DataFrame(out)
    if df.empty:
        return df
    if full_only:
        df = df[df.n == df.n.max()]
    return df.sort_values(["recall", "strategy"], ascending=[False, True]).reset_index(drop=True)


def _held(values: pd.Series, split: str) -> pd.Series:
    if split == "all" or not len(values):
        return values
    from ..evaluate.splits import split_of

    return values[[split_of(q) == split for q in values.index]]


def by_type(rows, scores, benchmark: str = "course", budget: int = DEFAULT_BUDGET,
            top: int = 8) -> pd.DataFrame:
    """recall@B by question type for the `top` configurations of `benchmark` (a wide table)."""
    b = board(rows, scores, benchmark, budget).head(top)
    parts = []
    for r in b.itertuples():
        sub = scores[(scores.run == r.run) & (scores.metric == "recall@B")
                     & (scores.budget == budget)]
        means = sub.groupby("type").value.mean()
        counts = sub.groupby("type").value.size()
        parts.append({"strategy": r.strategy, "embedder": r.embedder,
                      **{f"{t} (n={counts[t]})": v for t, v in means.items()}})
    return pd.DataFrame(parts)


def curves(rows, scores, benchmark: str, runs: Sequence[str] | None = None,
           budgets: Sequence[int] = BUDGETS) -> pd.DataFrame:
    """Mean recall@B (and its interval) per budget for each run: run, strategy, budget, mean,
    low, high."""
    confs = configurations(rows, scores)
    confs = confs[confs.benchmark == benchmark]
    if runs is not None:  # the runs asked for, even when another run of their config is first
        confs = confs[confs.run.isin(runs)]
    confs = confs.drop_duplicates("config")
    out = []
    for r in confs.itertuples():
        for b in budgets:
            v = per_query(scores, r.run, Metric("recall", budget=b))
            if len(v):
                mean, lo, hi = interval(v.to_numpy())
                out.append({"run": r.run, "strategy": r.strategy, "embedder": r.embedder,
                            "budget": b, "mean": mean, "low": lo, "high": hi})
    return pd.DataFrame(out)


def curve_runs(b: pd.DataFrame, scores, top: int = 3, budgets: Sequence[int] = BUDGETS,
               min_budgets: int = 3) -> tuple[list[str], list[str]]:
    """The runs a recall-against-budget chart can draw as lines: the `top` leading runs of a
    board measured at `min_budgets` or more of `budgets`, then the best simple baseline
    (`is_baseline`) measured that widely. Returns (runs, skipped): `skipped` names the
    better-ranked configurations left out because they were measured at fewer budgets (a
    tuning script that scored only the default budget is one point, not a line), so a caption
    can say so."""
    def full(run: str) -> bool:
        return sum(bool(len(per_query(scores, run, Metric("recall", budget=x))))
                   for x in budgets) >= min(min_budgets, len(budgets))

    runs, skipped = [], []
    for r in b.itertuples():
        if len(runs) == top:
            break
        if full(r.run):
            runs.append(r.run)
        else:
            skipped.append(r.strategy)
    base = [r.run for r in b.itertuples() if is_baseline(r.strategy) and full(r.run)]
    return runs + [x for x in base[:1] if x not in runs], skipped


def plot_curves(table: pd.DataFrame, title: str):
    """Recall against budget (log2 x axis), one line per configuration, shaded intervals; a
    simple baseline is dashed and says so in the legend, and a run on the benchmark's own
    gold units says that."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.8))
    for (strategy, embedder), g in table.groupby(["strategy", "embedder"], sort=False):
        g = g.sort_values("budget")
        label = strategy if len(strategy) <= 60 else strategy[:58] + "…"
        if embedder and embedder != "all-MiniLM-L6-v2" and f"({embedder})" not in strategy:
            label += f" · {embedder}"  # two encoders' runs share a name
        if is_gold_units(strategy):
            label += " (gold units as chunks)"
        simple = bool(is_baseline(strategy))
        if simple:
            label += " (simple baseline)"
        line, = ax.plot(g.budget, 100 * g["mean"], marker="o", label=label,
                        ls="--" if simple else "-")
        ax.fill_between(g.budget, 100 * g.low, 100 * g.high, alpha=0.12,
                        color=line.get_color())
    ax.set_xscale("log", base=2)
    ax.set_xticks(sorted(table.budget.unique()))
    ax.set_xticklabels([f"{b:,}" for b in sorted(table.budget.unique())])
    ax.set_xlabel("context budget (cl100k tokens)")
    ax.set_ylabel("span recall (%)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


def versus(scores, run_a: str, run_b: str, metric: str = "recall@B",
           budget: int = DEFAULT_BUDGET) -> Comparison:
    """A paired comparison of two runs of a long per-query table on the questions both scored
    (`ragkit.evaluate.runs.versus`); `metric` and `budget` as the table names them."""
    m = Metric.from_long(metric, budget)
    return _versus(per_query(scores, run_a, m), per_query(scores, run_b, m))


def best_against_baseline(rows, scores, benchmark: str, budget: int = DEFAULT_BUDGET
                          ) -> dict | None:
    """The best ragkit configuration against the best simple baseline at `budget`, paired."""
    b = board(rows, scores, benchmark, budget)
    if b.empty:
        return None
    is_base = b.strategy.map(is_baseline).astype(bool)
    if not is_base.any() or is_base.all():
        return None
    best, base = b[~is_base].iloc[0], b[is_base].iloc[0]
    c = versus(scores, best.run, base.run, "recall@B", budget)
    return {"benchmark": benchmark, "budget": budget, "best": best.strategy,
            "best_embedder": best.embedder, "baseline": base.strategy, "comparison": c}


def fmt_ci(mean: float, low: float, high: float, scale: float = 100.0) -> str:
    """``"83.5 [80.1, 86.6]"``: a mean with its interval, in percent."""
    if mean != mean:
        return "–"
    return f"{scale * mean:.1f} [{scale * low:.1f}, {scale * high:.1f}]"


def markdown(b: pd.DataFrame, max_rows: int = 12) -> str:
    """A board as a Markdown table (percent, intervals)."""
    if b.empty:
        return "_no budgeted runs yet_"
    lines = ["| strategy | embedder | measured in | recall@B | pass@B | IoU@B | recall@5 | n |",
             "|---|---|---|---|---|---|---|---|"]
    for r in b.head(max_rows).to_dict("records"):
        tuned = (" *(tuned)*" if r.get("tuned") else "") + (
            " *(gold units as chunks)*" if is_gold_units(r["strategy"]) else "")
        lines.append(f"| {r['strategy']}{tuned} | {r['embedder']} | {r['notebooks']} | "
                     f"{fmt_ci(r['recall'], r['recall_low'], r['recall_high'])} | "
                     f"{fmt_ci(r['pass'], r['pass_low'], r['pass_high'])} | "
                     f"{fmt_ci(r['iou'], r['iou_low'], r['iou_high'])} | "
                     f"{points(r['recall@5'])} | {r['n']} |")
    return "\n".join(lines)
