"""The decision guide: which strategy to use, at which context budget, on which kind of corpus.

Written from the results rows and per-query scores of a run (`ragkit.report.load_results`,
`load_scores`), never typed. For each benchmark — the course corpus (policies, handbooks and
memos in Markdown, with tables), Chroma's corpora (web, wiki, chat and finance text) and
Anthropic's (a code base) stand in for three document classes — and each budget of
`BUDGETS` cl100k tokens:

- the **baseline** is the best run on a simple splitter's chunks on that board (fixed-size,
  recursive, LangChain's or chonkie's, with whatever retrieval it was measured with, a fused
  stack and a cross-encoder included: `ragkit.report.leaderboard.is_baseline`), so a fix is measured
  against the strongest simple run, not the weakest;
- every other configuration is compared with it, paired over the same questions
  (`ragkit.evaluate.paired`, 95 % bootstrap interval of the difference in span recall);
- the **pick** is the configuration with the highest recall among those whose interval lies
  above 0; when none does, the guide says "nothing beats the simple baseline" and the pick is
  the baseline itself.

Beside each pick, what it costs, as far as the rows record it (`costs`): the chunks indexed
(one vector each), the tokens embedded (estimated from the characters, `CHARS_PER_TOKEN`),
the LLM calls a generated preamble needs (one per chunk) and their estimated price
(`PRICE_PER_MILLION_TOKENS`). Chunking time, index size and query latency are not recorded per
configuration by the notebooks, so the guide says "not measured" rather than guessing.

`by_type` breaks one benchmark's comparison down by question type (the course's questions
are typed: lookup, comparison, aggregation …); `markdown` renders everything, `write` saves it
as ``results/decision_guide.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Sequence

import pandas as pd

from ..evaluate.stats import paired
from . import leaderboard as lb

BUDGETS = (512, 1024, 2048)  # cl100k tokens reaching the model
# The published one-time cost of writing contextual preambles (Claude 3 Haiku with prompt
# caching), in US dollars per million document tokens (source: Anthropic, "Introducing
# Contextual Retrieval", 2024). Used to price the LLM calls of a generated-preamble pick.
PRICE_PER_MILLION_TOKENS = 1.02
CHARS_PER_TOKEN = 4.0          # English text in cl100k, roughly; tokens embedded are estimated
LLM_GENERATORS = ("gemma", "smollm2", "anthropic")  # as ragkit.experiments.LLM_GENERATORS
NOT_MEASURED = "not measured"
NOTHING = "nothing beats the simple baseline"
COLUMNS = ["benchmark", "budget", "baseline", "baseline_run", "baseline_recall", "baseline_low",
           "baseline_high", "pick", "pick_run", "pick_embedder", "leader", "leader_run",
           "recall", "diff", "low", "high", "n", "wins", "losses", "comparison",
           "n_configurations", "n_beat_baseline", "n_below_baseline", "chunks",
           "tokens_embedded", "llm_calls", "llm_cost_usd", "chunking_time", "index_size",
           "query_latency"]


def _run_rows(rows: pd.DataFrame, run: str) -> pd.DataFrame:
    return rows[rows.run == run]


def costs(rows: pd.DataFrame, run: str) -> dict:
    """What one run's configuration costs, from its rows: ``chunks`` (vectors indexed),
    ``tokens_embedded`` (chunk characters / `CHARS_PER_TOKEN`; prefixes not counted),
    ``llm_calls`` (one per chunk when an LLM wrote the preambles, else 0), ``llm_cost_usd``
    (those chunks' tokens at `PRICE_PER_MILLION_TOKENS`), and "not measured" for chunking
    time, index size and query latency. A value the rows do not carry is None.

    >>> rows = pd.DataFrame([
    ...     {"run": "r", "metric": "n_chunks", "value": 1000.0, "params": {"generator": "gemma"}},
    ...     {"run": "r", "metric": "mean_chunk_chars", "value": 800.0, "params": {}}])
    >>> c = costs(rows, "r")
    >>> c["chunks"], c["tokens_embedded"], c["llm_calls"], round(c["llm_cost_usd"], 3)
    (1000, 200000, 1000, 0.204)
    """
    mine = _run_rows(rows, run)
    values = dict(zip(mine.metric, mine.value))
    n, chars = values.get("n_chunks"), values.get("mean_chunk_chars")
    generators = {p.get("generator") for p in mine.params if isinstance(p, dict)}
    llm = bool(generators & set(LLM_GENERATORS))
    tokens = (round(n * chars / CHARS_PER_TOKEN) if n is not None and chars is not None
              and n == n and chars == chars else None)
    out = {"chunks": int(n) if n is not None and n == n else None, "tokens_embedded": tokens,
           "llm_calls": (int(n) if llm else 0) if n is not None and n == n else None,
           "llm_cost_usd": (tokens * PRICE_PER_MILLION_TOKENS / 1e6 if llm else 0.0)
           if tokens is not None else None}
    return out | {"chunking_time": NOT_MEASURED, "index_size": NOT_MEASURED,
                  "query_latency": NOT_MEASURED}


def _is_baseline(strategy: str, baselines: Sequence[str]) -> bool:
    return lb.is_baseline(strategy, baselines)


def _decide(rows, scores, board: pd.DataFrame, budget: int, baselines: Sequence[str]) -> dict:
    """The pick on one board: every configuration against the best baseline, paired."""
    is_base = board.strategy.map(lambda s: _is_baseline(s, baselines))
    base = board[is_base].iloc[0]
    tried = []
    for r in board[~is_base].itertuples():
        c = lb.versus(scores, r.run, base.run, "recall@B", budget)
        tried.append((r, c))
    winners = [(r, c) for r, c in tried if c.low > 0]
    leader, lead_c = (max(tried, key=lambda t: (t[0].recall, -t[0].Index)) if tried
                      else (None, None))
    pick, c = (max(winners, key=lambda t: (t[0].recall, -t[0].Index)) if winners
               else (leader, lead_c))
    ahead = sum(1 for _, x in tried if x.high < 0)
    chosen_run = pick.run if winners else base.run
    return {"baseline": base.strategy, "baseline_run": base.run,
            "baseline_recall": base.recall, "baseline_low": base.recall_low,
            "baseline_high": base.recall_high,
            "pick": pick.strategy if winners else NOTHING,
            "pick_run": pick.run if winners else None,
            "pick_embedder": pick.embedder if winners else base.embedder,
            "leader": leader.strategy if leader is not None else None,
            "leader_run": leader.run if leader is not None else None,
            "recall": pick.recall if winners else (leader.recall if leader is not None
                                                    else float("nan")),
            "diff": c.diff if c else float("nan"), "low": c.low if c else float("nan"),
            "high": c.high if c else float("nan"), "n": c.n if c else int(base.n),
            "wins": c.wins if c else 0, "losses": c.losses if c else 0,
            "comparison": c, "n_configurations": len(tried), "n_beat_baseline": len(winners),
            "n_below_baseline": ahead, **costs(rows, chosen_run)}


def decision_guide(rows: pd.DataFrame, scores: pd.DataFrame,
                   benchmarks: Iterable[str] = lb.MAIN_BENCHMARKS,
                   budgets: Iterable[int] = BUDGETS,
                   baselines: Sequence[str] = lb.BASELINES) -> pd.DataFrame:
    """One row per benchmark × budget that has both a baseline and another configuration
    (see the module docstring): the pick, its paired comparison with the baseline (``diff``,
    ``low``, ``high`` in recall, ``n`` questions), how many configurations beat or trail
    the baseline, and the pick's costs."""
    out = []
    for name in benchmarks:
        for budget in budgets:
            board = lb.board(rows, scores, name, budget)
            if board.empty or not (board.n > 0).any():  # no per-query scores at this budget
                continue
            board = board[board.n > 0]
            is_base = board.strategy.map(lambda s: _is_baseline(s, baselines))
            if not is_base.any() or is_base.all():
                continue
            out.append({"benchmark": name, "budget": budget,
                        **_decide(rows, scores, board, budget, baselines)})
    return pd.DataFrame(out, columns=COLUMNS)


def by_type(rows: pd.DataFrame, scores: pd.DataFrame, guide: pd.DataFrame,
            benchmark: str = "course", budget: int = 1024) -> pd.DataFrame:
    """The `guide`'s pick (or, when nothing beats the baseline, its leader) against the
    baseline on `benchmark` at `budget`, per question type: n, both means and the paired
    interval of the difference. Empty when the questions carry one type only."""
    if guide.empty:
        return pd.DataFrame()
    row = guide[(guide.benchmark == benchmark) & (guide.budget == budget)]
    if row.empty:
        return pd.DataFrame()
    row = row.iloc[0]
    run = row.pick_run or row.leader_run
    name = row.pick if row.pick_run else row.leader
    mine = scores[(scores.metric == "recall@B") & (scores.budget == budget)]
    a = mine[mine.run == run].set_index("query_id")
    b = mine[mine.run == row.baseline_run].set_index("query_id")
    common = a.index.intersection(b.index)
    types = a.loc[common, "type"]
    if types.nunique() < 2:
        return pd.DataFrame()
    out = []
    for t in sorted(types.unique()):
        ids = types[types == t].index
        c = paired(a.loc[ids, "value"].to_numpy(), b.loc[ids, "value"].to_numpy())
        out.append({"type": t, "n": c.n, "strategy": name, "recall": c.mean_a,
                    "baseline": row.baseline, "baseline_recall": c.mean_b, "diff": c.diff,
                    "low": c.low, "high": c.high})
    return pd.DataFrame(out)


def _pct(x) -> str:
    return "–" if x is None or x != x else f"{100 * x:.1f} %"


def _points(diff, low, high) -> str:
    if diff != diff:
        return "–"
    return f"{100 * diff:+.1f} [{100 * low:+.1f}, {100 * high:+.1f}]"


def _verdict(r) -> str:
    if r.pick != NOTHING:
        return f"**{r.pick}** beats the baseline"
    if r.high < 0:
        return f"{NOTHING} (its best challenger, {r.leader}, is below it)"
    return f"{NOTHING} (best challenger: {r.leader})"


def _cost_cells(r) -> list[str]:
    def n(v):
        return "not recorded" if v is None or v != v else f"{int(v):,}"

    cost = ("not recorded" if r.llm_cost_usd is None or r.llm_cost_usd != r.llm_cost_usd
            else f"${r.llm_cost_usd:,.2f}")
    return [n(r.chunks), n(r.tokens_embedded), n(r.llm_calls), cost]


def markdown(guide: pd.DataFrame, types: pd.DataFrame | None = None,
             types_title: str = "course") -> str:
    """The guide as Markdown: how it was decided, one table row per benchmark × budget, the
    per-type breakdown, and what is not measured."""
    head = ["# Decision guide", "",
            "Generated from this run's results rows by `ragkit.report.guide` (notebook 07). For each "
            "benchmark and context budget (cl100k tokens reaching the model), every "
            f"configuration is compared with the best simple baseline ({lb.BASELINE_LABEL}) "
            "on span recall, paired over the same questions; the pick is the best "
            "configuration whose 95 % interval lies above 0, otherwise the simple baseline. "
            f"Costs are the pick's (the baseline's when nothing beats it): chunks indexed, "
            f"tokens embedded (characters / {CHARS_PER_TOKEN:g}), LLM calls for generated "
            f"preambles and their price at ${PRICE_PER_MILLION_TOKENS:.2f} per million tokens "
            "(Anthropic's published cost of contextual preambles, 2024). With dozens of "
            "configurations compared, about one in twenty could clear the interval by chance: "
            "a pick that wins at one budget only is weak evidence.", ""]
    if guide.empty:
        return "\n".join(head + ["_No benchmark has both a baseline and another configuration "
                                 "in these rows; run `make reproduce`._"])
    lines = ["| benchmark | budget | verdict | recall (pick or best challenger) | baseline (recall) | difference, points "
             "[95 % CI] | beat / trail the baseline | n | chunks | tokens embedded | LLM calls "
             "| LLM cost |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in guide.itertuples():
        lines.append("| " + " | ".join([
            r.benchmark, f"{r.budget:,}", _verdict(r), _pct(r.recall),
            f"{r.baseline} ({_pct(r.baseline_recall)})", _points(r.diff, r.low, r.high),
            f"{r.n_beat_baseline} / {r.n_below_baseline} of {r.n_configurations}", str(r.n),
            *_cost_cells(r)]) + " |")
    body = head + lines + [""]
    if types is not None and not types.empty:
        t0 = types.iloc[0]
        body += [f"## By question type ({types_title}, {t0.strategy} against {t0.baseline})", "",
                 "| type | n | recall | baseline | difference, points [95 % CI] |",
                 "|---|---|---|---|---|"]
        body += [f"| {t.type} | {t.n} | {_pct(t.recall)} | {_pct(t.baseline_recall)} | "
                 f"{_points(t.diff, t.low, t.high)} |" for t in types.itertuples()]
        body.append("")
    body += ["Not measured per configuration: chunking time, index size and query latency (the "
             "notebooks do not record them; `ragkit bench chunk-speed` and notebook 09 measure "
             "throughput and index scale separately). The rows carry no document class beyond "
             "the benchmark, so the three benchmarks stand in for three kinds of corpus; only "
             "the course's questions carry a type."]
    return "\n".join(body)


def write(text: str, path: str | Path | None = None) -> Path:
    """Save the guide (default ``<results dir>/decision_guide.md``) and return the path."""
    from ..cache import atomic_write_text
    from ..config import get_settings

    path = Path(path or get_settings().results_dir / "decision_guide.md")
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, text + "\n")
    return path


def summary(guide: pd.DataFrame) -> pd.DataFrame:
    """The guide for reading in a notebook: benchmark, budget, verdict, baseline and the
    paired difference in points with its interval (the pick's, or the best challenger's)."""
    return pd.DataFrame({
        "benchmark": guide.benchmark, "budget": guide.budget,
        "verdict": [_verdict(r) for r in guide.itertuples()],
        "baseline": [f"{r.baseline} ({_pct(r.baseline_recall)})" for r in guide.itertuples()],
        "difference, points [95 % CI]": [_points(r.diff, r.low, r.high)
                                         for r in guide.itertuples()]})
