"""``ragkit bench code``: the code chunker against fixed 1000/200 characters on Anthropic's set.

    ragkit bench code [--sizes 800,1200,1600] [--smoke]

One run, all-MiniLM-L6-v2, dense retrieval, budgets of 512 / 1,024 / 2,048 cl100k tokens:

1. **Tune** the code chunker's size, then packing, the import prefix and the overlap (one at a
   time, each kept if it helps) on the *tune* half of the questions only: a question belongs to the tune half when the sha256 of
   its id is even (`split_of`), so the split is fixed by the ids, not by a seed. The score is
   the mean over the three budgets of Pass@B and span recall@B.
2. **Compare**, side by side: fixed 1000/200 characters, the tuned code chunker and the default
   router (which sends every one of these code files to its code chunker, capped at MiniLM's
   254-token window), on the *held-out* half and on all questions, with paired 95 % bootstrap
   intervals of code minus fixed per budget.

Rows go to ``results/bench_code.jsonl``; each names its split (``params.split``) and the split
the code chunker's settings were tuned on (``params.tuned_on``).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Sequence

from ..stats import split_of
from ..tables import text_table
from .common import run_script

BUDGETS = (512, 1024, 2048)
METRICS = ("pass", "recall")
SPLITS = ("tune", "held-out")


def score(out, ids: Sequence[str]) -> float:
    """The tuning objective: mean over `BUDGETS` of Pass@B and recall@B on the queries `ids`."""
    pq = out.per_query.set_index("query_id").loc[list(ids)]
    return float(sum(pq[f"{m}@B{b}"].mean() for m in METRICS for b in BUDGETS)
                 / (len(METRICS) * len(BUDGETS)))


def compare_code(sizes: Sequence[int] = (800, 1200, 1600), smoke: bool = False
                 ) -> dict[str, Any]:
    from ..benchmarks import load_anthropic
    from ..chunkers import FixedCharChunker, Router
    from ..chunkers.code import CodeChunker
    from ..embed import Embedder
    from ..pipeline import run_experiment
    from ..results import Recorder
    from ..stats import paired

    bench = load_anthropic()
    if smoke:
        bench = bench.for_profile("smoke")
    emb = Embedder()
    ids = {s: [q.id for q in bench.queries if q.gold and split_of(q.id) == s] for s in SPLITS}
    everyone = [q.id for q in bench.queries if q.gold]
    print(f"Anthropic: {len(bench.documents)} files, {len(everyone)} questions "
          f"(tune {len(ids['tune'])}, held-out {len(ids['held-out'])}); {emb.name}")

    runs: dict[str, Any] = {}

    def run(chunker, label: str | None = None):
        out = run_experiment(bench, chunker, emb, k=5, budgets=BUDGETS, label=label)
        runs[out.strategy] = out
        return out

    # 1. tune on the tune half, one setting at a time, each step keeping the best so far
    tuning: list[list[Any]] = []

    def trial(size: int, pack: bool, imports: int, overlap: int) -> list[Any]:
        out = run(CodeChunker(size=size, pack=pack, import_chars=imports, overlap=overlap))
        tuning.append([out.strategy, size, pack, imports, overlap, score(out, ids["tune"]),
                       int(out.means["n_chunks"])])
        return tuning[-1]

    best = max((trial(size, True, 200, 0) for size in sizes), key=lambda r: r[5])
    for change in ({"pack": False}, {"imports": 0}, {"overlap": 200}, {"size": 1000}):
        now = dict(zip(("size", "pack", "imports", "overlap"), best[1:5]))
        if change.get("size") == now["size"] or (change.get("size") and not now["overlap"]):
            continue  # 1,000 characters: the fixed windows' size, tried once overlap is on
        row = trial(**{**now, **change})
        best = max(best, row, key=lambda r: r[5])
    print("\nTuning on the tune half (score = mean of Pass@B and recall@B over "
          f"B = {', '.join(map(str, BUDGETS))}):")
    print(text_table(["config", "size", "pack", "import chars", "overlap", "score", "chunks"],
                     [[*r[:5], 100 * r[5], r[6]] for r in tuning], ".1f"))
    tuned = CodeChunker(size=best[1], pack=best[2], import_chars=best[3], overlap=best[4])
    print(f"chosen: {tuned.label}")

    # 2. compare side by side
    fixed = run(FixedCharChunker(1000, 200))
    code = runs[tuned.label]
    router = run(Router())  # the default router: its code chunker also fits MiniLM's window
    rec = Recorder("bench_code")
    table, cis = [], []
    for split, qids in (("held-out", ids["held-out"]), ("all", everyone)):
        for name, out in (("fixed_chars(1000/200)", fixed), (tuned.label, code),
                          (router.strategy, router)):
            pq = out.per_query.set_index("query_id").loc[qids]
            row = [split, name]
            for b in BUDGETS:
                for m in METRICS:
                    value = float(pq[f"{m}@B{b}"].mean())
                    row.append(100 * value)
                    rec.add(experiment="code_vs_fixed", benchmark="anthropic", strategy=name,
                            metric=f"{m}@B", value=value, budget=b, embedder=emb.name,
                            n_queries=len(qids), flags=out.flags,
                            params={**out.params, "split": split, "tuned_on": "tune"
                                    if out is not fixed else "none"})
            table.append(row)
        fq = fixed.per_query.set_index("query_id").loc[qids]
        cq = code.per_query.set_index("query_id").loc[qids]
        for b in BUDGETS:
            for m in METRICS:
                c = paired(cq[f"{m}@B{b}"].to_numpy(), fq[f"{m}@B{b}"].to_numpy())
                cis.append([split, f"{m}@B{b}", 100 * c.diff, 100 * c.low, 100 * c.high,
                            f"{c.wins}/{c.losses}/{c.ties}",
                            "yes" if c.low > 0 else "no" if c.high < 0 else "tie (CI spans 0)"])
                rec.add(experiment="code_vs_fixed", benchmark="anthropic",
                        strategy=f"{tuned.label} - fixed_chars(1000/200)",
                        metric=f"diff_{m}@B", value=c.diff, budget=b, embedder=emb.name,
                        n_queries=c.n, params={"split": split, "tuned_on": "tune",
                                               "ci95": [c.low, c.high]})
    rec.save()
    head = ["split", "strategy"] + [f"{m}@{b}" for b in BUDGETS for m in METRICS]
    print(f"\nSide by side ({emb.name}, dense; the code chunker tuned on the tune half):")
    print(text_table(head, table, ".1f"))
    print(f"\n{tuned.label} minus fixed_chars(1000/200), paired 95 % bootstrap CI (points):")
    print(text_table(["split", "metric", "diff", "low", "high", "wins/losses/ties",
                      "code ahead?"], cis, "+.1f"))
    flags = {name: out.flags for name, out in (("fixed", fixed), ("code", code),
                                               ("router", router))}
    print("\nflags:", flags)
    return {"tuning": tuning, "table": table, "cis": cis, "chosen": tuned.label}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sizes", default="800,1200,1600",
                   help="code chunk sizes (characters) tried on the tune half")
    p.add_argument("--smoke", action="store_true", help="a small slice, to check the machinery")


def run_args(args: argparse.Namespace) -> dict[str, Any]:
    return compare_code([int(s) for s in args.sizes.split(",")], smoke=args.smoke)


def main(argv: list[str] | None = None, prog: str = "ragkit bench code") -> int:
    return run_script(__doc__, prog, add_arguments, run_args, argv)


if __name__ == "__main__":
    sys.exit(main())
