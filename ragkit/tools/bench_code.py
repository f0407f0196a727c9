"""``ragkit bench code``: code on Anthropic's set — the code chunker against fixed 1,000/200
characters at an equal context budget, and Anthropic's own metric on their own chunks.

    ragkit bench code [--sizes 1000,1500,2000] [--smoke]

One run, all-MiniLM-L6-v2 (and EmbeddingGemma beside it when ``RAGKIT_GEMMA_DIR`` is set: on
upstream's chunks, and the MiniLM-tuned code chunker under the stack), budgets of 512 / 1,024 /
2,048 cl100k tokens. Fixed before a number is read:

- **retrieval**: the baselines' dense search, and ragkit's stack (`ragkit.retrieve.
  stack_retriever`: dense over windows, so no chunk is truncated, plus BM25 over identifier
  words, fused 0.5 / 0.5; its cross-encoder never rescores code, so on this set the stack is
  the fusion alone);
- **tuning**: the code chunker's size (each of ``--sizes``) and overlap (none, or a fifth of
  the size) under the stack, on the *tune* half of the questions only (the grouped split of
  `ragkit.evaluate.splits`: no file and no gold chunk on both halves); the score is the mean over the three
  budgets of Pass@B and span recall@B; ties go to the smaller size, then no overlap;
- **the comparison**: fixed 1,000/200 and the tuned code chunker under the same retrieval
  (dense, then the stack), on the *held-out* half and on all questions, with paired 95 %
  bootstrap intervals of code minus fixed per budget; the default `Router` (which sends every
  file here to its code chunker) under the stack beside them;
- **their metric on their chunks**: Pass@5/10/20 on Anthropic's 737 chunks (every system
  then returns the same units, so only the ranking differs), dense and stack, and the stack
  over contextual chunks (each of ``--contextual``'s preambles after its chunk, as upstream
  places it; the stack's windows read chunk and preamble whole, so no preamble is cut),
  beside the cookbook's published rows (voyage-2 embeddings, Claude 3 Haiku contexts, Cohere
  reranker);
- **ragkit's chunks scored by span**: the tuned code chunker under the stack with each encoder
  (its size stays MiniLM's choice), the stack's fusion (`FUSION_GRID`: dense weight and
  reciprocal-rank constant) chosen per encoder on the tune half by the same score as the size;
  Pass@k on the held-out half and on all questions (the points not chosen are recorded as
  ``code_fusion_candidates``, which leaderboards leave out).

Rows go to ``results/bench_code.jsonl``; each names its split (``params.split``) and what its
settings were tuned on (``params.tuned_on``).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from typing import Any, Sequence

from ..evaluate.splits import split_of
from ..report.tables import text_table
from .common import MAX_SIZE, add_smoke, names, numbers, run_script

BUDGETS = (512, 1024, 2048)
METRICS = ("pass", "recall")
SPLITS = ("tune", "held-out")
KS = (5, 10, 20)
# the stack's fusion tried per encoder for the tuned code chunker: (dense weight, reciprocal-
# rank constant), BM25 taking the rest of the weight; the stack's default first
FUSION_GRID = ((0.5, 0), (0.3, 0), (0.7, 0), (0.5, 60), (0.3, 60), (0.7, 60))


def score(out, ids: Sequence[str]) -> float:
    """The tuning objective: mean over `BUDGETS` of Pass@B and recall@B on the queries `ids`."""
    pq = out.per_query.set_index("query_id").loc[list(ids)]
    return float(sum(pq[f"{m}@B{b}"].mean() for m in METRICS for b in BUDGETS)
                 / (len(METRICS) * len(BUDGETS)))


def grid(sizes: Sequence[int]) -> list[tuple[int, int]]:
    """(size, overlap) pairs tried, in tie-break order (smaller first, no overlap first).

    >>> grid([1500, 1000])
    [(1000, 0), (1000, 200), (1500, 0), (1500, 300)]
    """
    return [(s, o) for s in sorted(set(sizes)) for o in (0, s // 5)]


def languages(chunks) -> Counter:
    """Files per language, as the code chunker parsed (or detected) them."""
    seen: dict[str, str] = {}
    for c in chunks:
        seen.setdefault(c.doc_id, f"{c.metadata.get('language', '?')} "
                                  f"({c.metadata.get('parsed_by', '?')})")
    return Counter(seen.values())


def compare_code(sizes: Sequence[int] = (1000, 1500, 2000), smoke: bool = False,
                 contextual: Sequence[str] = ("structural", "gemma"),
                 gemma_contextual: bool = False) -> dict[str, Any]:
    from ..chunkers import FixedCharChunker, Router
    from ..chunkers.code import CodeChunker
    from ..config import get_settings
    from ..contextualize import contextualize, make_contextualizer, preamble_cache
    from ..embed.encoders import Embedder
    from ..evaluate.benchmarks import load_anthropic
    from ..evaluate.runs import choose_on_tune, versus
    from ..experiments.contextual import LLM_GENERATORS
    from ..experiments.pipeline import recall_at, run_experiment
    from ..report.prose import mean_ci
    from ..report.published import ANTHROPIC_PUBLISHED
    from ..report.results import Recorder
    from ..retrieve.stack import stack_retriever

    bench = load_anthropic()
    if smoke:
        bench = bench.for_profile("smoke")
    emb = Embedder()
    ids = {s: [q.id for q in bench.queries if q.gold and split_of(q.id) == s] for s in SPLITS}
    everyone = [q.id for q in bench.queries if q.gold]
    print(f"Anthropic: {len(bench.documents)} files, {len(everyone)} questions "
          f"(tune {len(ids['tune'])}, held-out {len(ids['held-out'])}); {emb.name}")

    def run(chunks, retrieval, label: str, embedder=emb, placement="before"):
        # "stack", "dense", or a retriever already built (a fusion variant of the stack)
        r = stack_retriever(chunks, embedder, placement=placement) if retrieval == "stack" \
            else retrieval
        out = run_experiment(bench, embedder=embedder, chunks=chunks, retriever=r, k=5,
                             budgets=BUDGETS, depth=max(KS), label=label, placement=placement)
        recall_at(out, bench.queries, KS, per_query=True)
        return out

    # 1. tune (size, overlap) on the tune half, under the stack
    tuning, runs = [], {}
    for size, overlap in grid(sizes):
        chunker = CodeChunker(size=size, overlap=overlap)
        chunks = chunker.chunk_all(bench.documents)
        out = run(chunks, "stack", f"{chunker.label}+stack")
        out.flags = sorted(set(out.flags) | set(chunker.flags))
        runs[(size, overlap)] = (chunker, chunks, out)
        tuning.append([chunker.label, size, overlap, 100 * score(out, ids["tune"]),
                       len(chunks), round(sum(c.end - c.start for c in chunks) / len(chunks))])
    print("\nTuning on the tune half, ragkit's stack (score = mean of Pass@B and recall@B over "
          f"B = {', '.join(map(str, BUDGETS))}):")
    print(text_table(["config", "size", "overlap", "score", "chunks", "mean chars"], tuning,
                     ".1f"))
    # the tuning row with the best score on the tune half (rounded: float noise decides no
    # tie); equal scores go to the smaller size, then to no overlap
    best = choose_on_tune(tuning, lambda r, tune: 100 * score(runs[(r[1], r[2])][2], tune),
                          everyone, ties=lambda r: (-r[1], -r[2]), digits=9)
    tuned, code_chunks, code_stack = runs[(best[1], best[2])]
    print(f"chosen: {tuned.label}")
    print("languages (files):", ", ".join(f"{k} {v}" for k, v in
                                          sorted(languages(code_chunks).items())))

    # 2. side by side, same retrieval for both chunkers
    fixed_chunks = FixedCharChunker(1000, 200).chunk_all(bench.documents)
    router_chunks = Router().chunk_all(bench.documents)
    outs = {"fixed_chars(1000/200) dense": run(fixed_chunks, "dense", "fixed_chars(1000/200)"),
            f"{tuned.label} dense": run(code_chunks, "dense", tuned.label),
            "fixed_chars(1000/200)+stack": run(fixed_chunks, "stack",
                                               "fixed_chars(1000/200)+stack"),
            f"{tuned.label}+stack": code_stack,
            "router+stack": run(router_chunks, "stack", "router+stack")}
    rec = Recorder("bench_code")
    table, cis = [], []
    for split, qids in (("held-out", ids["held-out"]), ("all", everyone)):
        for name, out in outs.items():
            pq = out.per_query.set_index("query_id").loc[qids]
            row = [split, name]
            for b in BUDGETS:
                for m in METRICS:
                    value = float(pq[f"{m}@B{b}"].mean())
                    row.append(100 * value)
                    rec.add(experiment="code_vs_fixed", benchmark="anthropic", strategy=name,
                            metric=f"{m}@B", value=value, budget=b, embedder=emb.name,
                            n_queries=len(qids), flags=out.flags, depth=out.depth,
                            params={**out.params, "split": split,
                                    "tuned_on": "tune" if "code(" in name or "router" in name
                                    else "none"})
            table.append(row)
        for what, a, b_ in (("dense", f"{tuned.label} dense", "fixed_chars(1000/200) dense"),
                            ("stack", f"{tuned.label}+stack", "fixed_chars(1000/200)+stack"),
                            ("stack vs dense", f"{tuned.label}+stack",
                             "fixed_chars(1000/200) dense")):
            for b in BUDGETS:
                for m in METRICS:
                    c = versus(outs[a].values(m, b), outs[b_].values(m, b), on=qids)
                    cis.append([split, what, f"{m}@B{b}", 100 * c.diff, 100 * c.low,
                                100 * c.high, f"{c.wins}/{c.losses}/{c.ties}",
                                "yes" if c.low > 0 else "no" if c.high < 0 else
                                "no measurable difference"])
                    rec.add(experiment="code_vs_fixed", benchmark="anthropic",
                            strategy=f"{a} - {b_}", metric=f"diff_{m}@B", value=c.diff,
                            budget=b, embedder=emb.name, n_queries=c.n,
                            params={"split": split, "tuned_on": "tune", "retrieval": what,
                                    "ci95": [c.low, c.high], "wins": c.wins,
                                    "losses": c.losses, "ties": c.ties})
    head = ["split", "strategy"] + [f"{m}@{b}" for b in BUDGETS for m in METRICS]
    print(f"\nSide by side ({emb.name}; the code chunker tuned on the tune half):")
    print(text_table(head, table, ".1f"))
    print(f"\n{tuned.label} minus fixed_chars(1000/200), same retrieval, paired 95 % bootstrap "
          "CI (points); 'stack vs dense': the whole configuration against the baseline:")
    print(text_table(["split", "retrieval", "metric", "diff", "low", "high",
                      "wins/losses/ties", "code ahead?"], cis, "+.1f"))

    # 3. their metric, their chunks
    encoders = [emb]
    gemma = get_settings().gemma_dir
    if gemma:
        encoders.append(Embedder(gemma))
    # contextual retrieval done so that nothing is cut: each chunk with a preamble after it
    # (upstream's placement), read whole by the stack's windows; made once, for every encoder
    with_preambles = {g: contextualize(bench.documents, bench.chunks, make_contextualizer(g),
                                       placement="after", cache=preamble_cache(bench.name, g)
                                       if g in LLM_GENERATORS else None)
                      for g in contextual}
    passk = []
    for e in encoders:
        for retrieval in ("dense", "stack"):
            out = run(bench.chunks, retrieval, f"upstream+{retrieval}", embedder=e)
            out.record(rec, experiment="their_chunks", embedder=e.name, k=5)
            passk.append([f"{e.name}, {retrieval}",
                          *(mean_ci(out.per_query[f"pass@{k}"]) for k in KS)])
        for generator in contextual if (e is emb or gemma_contextual) else ():
            out = run(with_preambles[generator], "stack",
                      f"upstream+stack+{generator} preambles", embedder=e, placement="after")
            out.record(rec, experiment="their_chunks", embedder=e.name, k=5,
                       generator=generator)
            passk.append([f"{e.name}, stack, {generator} preambles after the chunk",
                          *(mean_ci(out.per_query[f"pass@{k}"]) for k in KS)])
    # the tuned code chunker under the stack, scored by span, for each encoder (the size stays
    # MiniLM's choice); the stack's fusion chosen per encoder on the tune half, by the same
    # score as the size (`FUSION_GRID`; ties go to the earlier point, the default first)
    by_span, fusion = [], []
    for e in encoders:
        base = stack_retriever(code_chunks, e)
        tried = []
        for w, c in FUSION_GRID:
            if e is emb and (w, c) == FUSION_GRID[0]:
                out = code_stack  # the tuning's run: the same configuration
            else:
                out = run(code_chunks, base.with_fusion((w, round(1 - w, 6)), c),
                          f"{tuned.label}+stack", embedder=e)
                out.flags = sorted(set(out.flags) | set(tuned.flags))
                if (w, c) != FUSION_GRID[0]:
                    out.strategy = f"{tuned.label}+stack(dense {w:g},rrf {c:g})"
            tried.append(((w, c), out, score(out, ids["tune"])))
        chosen = choose_on_tune(tried, lambda t, tune: score(t[1], tune), everyone,
                                digits=9)[1]  # the first of equals
        for (w, c), out, sc in tried:
            fusion.append([e.name, w, c, 100 * sc, "chosen" if out is chosen else ""])
            if out is not chosen:
                out.record(rec, experiment="code_fusion_candidates", embedder=e.name, k=5,
                           tuned_on="none")
        by_span.append((e, chosen))
    print("\nThe stack's fusion per encoder on the tune half (the code chunker's score):")
    print(text_table(["encoder", "dense weight", "rrf constant", "score", ""], fusion, ".1f"))
    if not gemma:
        passk.append(["EmbeddingGemma", *(["not run: set RAGKIT_GEMMA_DIR"] * len(KS))])
    for name, vals in ANTHROPIC_PUBLISHED.items():
        passk.append([f"{name} (published)", *(f"{v:.2f}" for v in vals)])
    upstream_chars = round(sum(len(c.text) for c in bench.chunks) / len(bench.chunks))
    for e, out in by_span:
        for split, qids in (("held-out", ids["held-out"]), ("all", everyone)):
            pq = out.per_query.set_index("query_id").loc[qids]
            passk.append([f"{e.name}, {out.strategy}, scored by span, {split} (mean chunk "
                          f"{best[5]} characters against upstream's {upstream_chars})",
                          *(mean_ci(pq[f"pass@{k}"]) for k in KS)])
    for out in outs.values():
        out.record(rec, experiment="code_runs", embedder=emb.name, k=5)
    for e, out in by_span:
        if out is not code_stack:  # the tuning's run is recorded among `outs`
            out.record(rec, experiment="code_runs", embedder=e.name, k=5, tuned_on="tune")
    rec.save()
    print(f"\nAnthropic's metric (Pass@k: gold chunks wholly in the top k) on their 737 chunks, "
          "with 95 % bootstrap intervals:")
    print(text_table(["run", *(f"Pass@{k}" for k in KS)], passk))
    return {"tuning": tuning, "table": table, "cis": cis, "chosen": tuned.label,
            "passk": passk}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sizes", type=numbers(50, MAX_SIZE), default=[1000, 1500, 2000],
                   help="code chunk sizes (characters, at least 50) tried on the tune half, "
                        "comma-separated (default 1000,1500,2000)")
    from ..contextualize import GENERATORS

    p.add_argument("--contextual", type=names(tuple(GENERATORS), "generator(s)"),
                   default="structural,gemma",
                   help="preamble generators tried on Anthropic's chunks (LLM ones from the "
                        "committed cache); empty for none")
    p.add_argument("--gemma-contextual", action="store_true",
                   help="also embed the contextual chunks with EmbeddingGemma (slow on a CPU)")
    add_smoke(p)


def run_args(args: argparse.Namespace) -> dict[str, Any]:
    return compare_code(args.sizes, smoke=args.smoke, contextual=args.contextual,
                        gemma_contextual=args.gemma_contextual)


def main(argv: list[str] | None = None, prog: str = "ragkit bench code") -> int:
    return run_script(__doc__, prog, add_arguments, run_args, argv)


if __name__ == "__main__":
    sys.exit(main())
