"""How far a cheaper encoder format moves retrieval: the paired span recall@B difference
against float32 on the three benchmarks (``ragkit bench precision`` for bf16, ``ragkit bench
int8`` for int8)."""

from __future__ import annotations

BUDGETS = (512, 1024, 2048)


def recall_drift(rec, experiment: str, other: str, emb, fp32, smoke: bool = False) -> list[list]:
    """The same chunks (fixed 1,000/200 characters, the course's tutorial baseline) embedded by
    `emb` (the format named `other`) and by `fp32`, dense search, and the paired span recall@B
    difference (other − fp32) with its 95 % interval on each benchmark at `BUDGETS` (all
    questions: nothing is tuned). Each difference is added to `rec` as a row of `experiment`;
    the table rows (benchmark, budget, difference and interval, wins/losses/ties, n) are
    returned."""
    from ..chunkers import FixedCharChunker
    from ..evaluate.benchmarks import load
    from ..evaluate.runs import Metric, versus
    from ..report.prose import ci
    from .pipeline import run_experiment

    chunker, rows = FixedCharChunker(1000, 200), []
    for name in ("course", "chroma", "anthropic"):
        bench = load(name)
        bench = bench.for_profile() if not smoke else bench.restrict(
            [d.id for d in bench.documents[:3]])
        outs = {p: run_experiment(bench, chunker, e, k=5, label=f"{chunker.label} · {p}")
                for p, e in (("fp32", fp32), (other, emb))}
        for budget in BUDGETS:
            m = Metric("recall", budget=budget)
            c = versus(outs[other].values(m.column), outs["fp32"].values(m.column))
            rows.append([name, budget, f"{100 * c.diff:+.2f} {ci(c.low, c.high, 2)}",
                         f"{c.wins}/{c.losses}/{c.ties}", c.n])
            rec.add(experiment=experiment, benchmark=name, strategy=chunker.label,
                    metric=f"recall@B{budget} {other} - fp32", value=c.diff, budget=budget,
                    embedder=fp32.name, n_queries=c.n,
                    params={"low": c.low, "high": c.high, "wins": c.wins,
                            "losses": c.losses, "ties": c.ties,
                            "fp32": c.mean_b, other: c.mean_a})
    return rows
