"""``ragkit bench design``: the runs the experiment design compares, one factor at a time.

    ragkit bench design [--benchmarks course,chroma,anthropic] [--rerank course] [--smoke]
    ragkit bench design --benchmarks financebench [--financebench-chars 5000000]
    ragkit bench design --costs            # chunking time, index size, query latency
    ragkit bench design --steps            # the stack built one change at a time
    ragkit bench design --second-encoder   # EmbeddingGemma, on --benchmarks (all three by default)
    ragkit bench design --costs --second-encoder  # each encoder's cost on the router's chunks
    ragkit bench design --second-encoder --all-chunkers   # ... every chunker, not the router only

Every run is one configuration of four factors (`ragkit.experiments.design.Config`), scored at budgets of
512 / 1,024 / 2,048 cl100k tokens (and k = 5) on every question of the benchmark:

- **chunker**: every simple baseline the course measures (`ragkit.experiments.design.simple_baselines`:
  fixed characters 250/0 and 1,000/200, fixed tokens 512/64 in MiniLM's and cl100k's tokens,
  recursive 1,000/200, langchain's Markdown + recursive splitter, chonkie's recursive chunker)
  and ragkit's default `Router`;
- **first stage**: dense (all-MiniLM-L6-v2, the chunk as the encoder reads it) and ragkit's
  stack (`ragkit.retrieve.stack_retriever`: dense over windows, so no chunk is cut, fused
  0.5 / 0.5 with BM25 over identifier words), each for *every* chunker, so a chunker is always
  compared with the best baseline under its own retrieval;
- **reranker**: none; with ``--rerank BENCHMARKS`` also the packaged cross-encoder over the
  stack's top 20 for the router's chunks there (the reranker's effect, on the same chunks and
  first stage; it costs minutes per benchmark on 2 CPUs);
- **encoder**: MiniLM; with ``--second-encoder`` (and ``RAGKIT_GEMMA_DIR``), EmbeddingGemma
  on the router's chunks under both first stages (the encoder's effect, same chunks and
  retrieval; on 2 CPUs with a cold cache, about 2 min for the course and 9 min for Chroma).

Rows go to ``results/bench_design.jsonl``, each with its factors in ``params``; what they
show (effects, best baseline chosen on the tune half and quoted on the held-out half) is
computed by `ragkit.experiments.design` and printed here, in the README and in notebook 07. A run on some
benchmarks keeps the saved rows of the others.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Sequence

from .common import add_smoke, bounded, names, run_script

BENCHMARKS = ("course", "chroma", "anthropic")
ALL_BENCHMARKS = (*BENCHMARKS, "financebench")  # FinanceBench's PDFs: ask for it by name


def load_bench(name: str, smoke: bool = False, financebench_chars: int | None = None):
    """The benchmark in the smoke or full profile; FinanceBench cut to whole companies within
    `financebench_chars` characters of filings when given (`company_sample`)."""
    from ..evaluate.benchmarks import load

    bench = load(name).for_profile("smoke" if smoke else "full")
    if name == "financebench" and financebench_chars:
        from ..evaluate.financebench import company_sample

        bench = company_sample(bench, financebench_chars)
    return bench


def sample_flags(bench) -> list[str]:
    """What a row must say when its benchmark is a sample of FinanceBench's filings."""
    info = bench.info
    if "sample_chars" not in info:
        return []
    return [f"sample:{len(bench.documents)} filings of {len(info['sample_companies'])} "
            f"companies ({info['sample_text_chars']:,} chars, sha256 order of the company), "
            f"{len(bench.queries)} questions"]


def rewritten_by_design(row: dict, benchmarks: Sequence[str], rerank: Sequence[str],
                        encoder: str) -> bool:
    """Whether `run_design` writes `row` again, so the saved copy goes: a design row of one of
    `benchmarks`, with `encoder`, under dense search or the stack, with no reranker (or the
    cross-encoder where `rerank` names the benchmark). Every other row stays: other
    benchmarks, the second encoder's rows, the stack's steps and the measured costs, which
    other options of the bench write."""
    p = row.get("params") or {}
    return (row.get("benchmark") in benchmarks and row.get("experiment") == "design"
            and p.get("factor_encoder") == encoder
            and p.get("factor_first_stage") in ("dense", "stack")
            and (p.get("factor_reranker") == "none" or row.get("benchmark") in rerank))


def run_design(benchmarks: Sequence[str] = BENCHMARKS, rerank: Sequence[str] = (),
               smoke: bool = False, financebench_chars: int | None = None) -> list:
    from ..experiments.design import (BUDGETS, CANDIDATES, Config, load_runs, ragkit_chunker,
                                      simple_baselines)
    from ..experiments.title import print_effects
    from ..embed.encoders import Embedder
    from ..experiments.pipeline import run_experiment
    from ..retrieve.stack import stack_retriever
    from ..report.results import Recorder

    emb = Embedder()
    rec = Recorder("bench_design")
    for name in benchmarks:
        bench = load_bench(name, smoke, financebench_chars)
        print(f"\n== {name}: {len(bench.documents)} documents, {len(bench.queries)} questions")
        paged = any(d.metadata.get("pages") for d in bench.documents)
        chunkers = [*simple_baselines(paged), ragkit_chunker()]
        for chunker in chunkers:
            chunks = chunker.chunk_all(bench.documents, progress=True)
            simple = chunker is not chunkers[-1]
            stages: list[tuple[str, str, Any]] = [("dense", "none", "dense"),
                                                  ("stack", "none", None)]
            if not simple and name in rerank:
                stages.append(("stack", "cross-encoder", "rerank"))
            for first, reranker, how in stages:
                if how == "dense":
                    retriever: Any = "dense"
                elif how == "rerank":
                    retriever = stack_retriever(chunks, emb, rerank="packaged",
                                                candidates=CANDIDATES)
                else:
                    retriever = stack_retriever(chunks, emb)
                cfg = Config(chunker.label, first, reranker, emb.name, simple)
                out = run_experiment(bench, chunker, emb, k=5, chunks=chunks,
                                     retriever=retriever, budgets=BUDGETS, label=cfg.label)
                out.flags = [*out.flags, *sample_flags(bench)]
                out.record(rec, experiment="design", embedder=emb.name, k=5,
                           **cfg.params())
                print(f"  {cfg.label}: recall@B1024 {100 * out.means['recall@B1024']:.1f}")
    kept = rec.keep_saved(lambda r: not rewritten_by_design(r, benchmarks, rerank, emb.name))
    if kept:
        print(f"\nkept {kept} saved rows (other benchmarks, other encoders, the stack's steps, "
              "measured costs)")
    rec.save()
    rows, scores = rec.frames()
    runs = load_runs(rows, scores)
    return print_effects(runs)


def run_costs(benchmarks: Sequence[str], n_queries: int = 40) -> list:
    """Chunking time, index size and query latency of the router (dense, stack, stack with
    the cross-encoder) and of every simple baseline (dense, stack), per benchmark."""
    from ..evaluate.benchmarks import load
    from ..experiments.design import Config, ragkit_chunker, simple_baselines
    from ..experiments.design_costs import COST_METRICS, load_costs, measure_costs
    from ..embed.encoders import Embedder
    from ..report.results import Recorder

    emb = Embedder(show_progress=False)
    rec = Recorder("bench_design")
    rec.keep_saved(lambda r: r.get("experiment") != "design_costs"
                   or r.get("benchmark") not in benchmarks)
    for name in benchmarks:
        bench = load(name)
        for chunker in [*simple_baselines(), ragkit_chunker()]:
            simple = chunker.label != ragkit_chunker().label
            stages = [("dense", "none"), ("stack", "none")] + (
                [] if simple else [("stack", "cross-encoder")])
            for first, reranker in stages:
                cfg = Config(chunker.label, first, reranker, emb.name, simple)
                got = measure_costs(bench, chunker, emb, cfg, n_queries)
                for m in COST_METRICS:
                    rec.add(experiment="design_costs", benchmark=name, strategy=cfg.label,
                            metric=m, value=float(got[m]), embedder=emb.name,
                            n_queries=got["n_timed"], params=cfg.params())
                print(f"  {name} {cfg.label}: chunking {got['chunk_cpu_s']:.1f} s CPU, "
                      f"index {got['index_mb']:.1f} MB, p50 {got['query_p50_ms']:.1f} ms, "
                      f"p95 {got['query_p95_ms']:.1f} ms")
    rec.save()
    return load_costs(rec.frames()[0])


def run_encoder_costs(benchmarks: Sequence[str]) -> list:
    """What each encoder costs on the router's chunks, MiniLM and EmbeddingGemma
    (``RAGKIT_GEMMA_DIR``) side by side in one run (`measure_encoder_costs`): the cost the
    encoder factor's decision states."""
    from ..config import get_settings
    from ..embed.encoders import Embedder
    from ..evaluate.benchmarks import load
    from ..experiments.design import ragkit_chunker
    from ..experiments.design_costs import (ENCODER_COST_METRICS, load_encoder_costs,
                                            measure_encoder_costs)
    from ..report.results import Recorder

    folder = get_settings().gemma_dir
    if not folder:
        raise SystemExit("ragkit bench design --costs --second-encoder: set RAGKIT_GEMMA_DIR to "
                         "an assembled EmbeddingGemma folder")
    encoders = [Embedder(show_progress=False), Embedder(folder, show_progress=False)]
    rec = Recorder("bench_design")
    rec.keep_saved(lambda r: r.get("experiment") != "encoder_costs"
                   or r.get("benchmark") not in benchmarks)
    for name in benchmarks:
        bench = load(name)
        for emb in encoders:
            got = measure_encoder_costs(bench, ragkit_chunker(), emb)
            for m in ENCODER_COST_METRICS:
                rec.add(experiment="encoder_costs", benchmark=name, strategy=emb.name, metric=m,
                        value=float(got[m]), embedder=emb.name, n_queries=got["n_timed"],
                        params={"chunker": ragkit_chunker().label,
                                "sampled_chunks": got["n_sampled"]})
            print(f"  {name} {emb.name}: {got['chunk_encode_ms']:.1f} ms a chunk, question "
                  f"p50 {got['query_encode_p50_ms']:.1f} ms, index {got['index_mb']:.1f} MiB "
                  f"({got['chunks']:,} x {got['dim']})")
    rec.save()
    return load_encoder_costs(rec.frames()[0])


def run_second_encoder(benchmarks: Sequence[str], all_chunkers: bool = False) -> list:
    """The router's chunks (with `all_chunkers`, the seven simple baselines' too) under dense
    and the stack with EmbeddingGemma (``RAGKIT_GEMMA_DIR``): the encoder's effect on the same
    chunks and retrieval, and with every chunker, the chunker's effect and the title's cells
    under this encoder. The saved rows are kept but for this encoder's runs on these
    benchmarks (with `all_chunkers`) or its router runs there (without)."""
    from ..evaluate.benchmarks import load
    from ..config import get_settings
    from ..experiments.design import (BUDGETS, Config, load_runs, ragkit_chunker,
                                      simple_baselines)
    from ..experiments.title import print_effects
    from ..embed.encoders import Embedder
    from ..experiments.pipeline import run_experiment
    from ..retrieve.stack import stack_retriever
    from ..report.results import Recorder

    folder = get_settings().gemma_dir
    if not folder:
        raise SystemExit("ragkit bench design --second-encoder: set RAGKIT_GEMMA_DIR to an "
                         "assembled EmbeddingGemma folder")
    emb = Embedder(folder)
    rec = Recorder("bench_design")
    router = ragkit_chunker().label
    rec.keep_saved(lambda r: not (r.get("benchmark") in benchmarks
                                  and (r.get("params") or {}).get("factor_encoder") == emb.name
                                  and (all_chunkers or (r.get("params") or {}).get(
                                      "factor_chunker") == router)))
    for name in benchmarks:
        bench = load(name)
        for chunker in [*(simple_baselines() if all_chunkers else []), ragkit_chunker()]:
            simple = chunker.label != router
            chunks = chunker.chunk_all(bench.documents, progress=True)
            for first in ("dense", "stack"):
                cfg = Config(chunker.label, first, "none", emb.name, simple)
                retriever = "dense" if first == "dense" else stack_retriever(chunks, emb)
                out = run_experiment(bench, chunker, emb, k=5, chunks=chunks,
                                     retriever=retriever, budgets=BUDGETS, label=cfg.label)
                out.flags = [*out.flags, *sample_flags(bench)]
                out.record(rec, experiment="design", embedder=emb.name, k=5, **cfg.params())
                print(f"  {name} {cfg.label} ({emb.name}): recall@B1024 "
                      f"{100 * out.means['recall@B1024']:.1f}")
    rec.save()
    rows, scores = rec.frames()
    return print_effects(load_runs(rows, scores))


def run_steps(benchmarks: Sequence[str]) -> list:
    """The stack lesson's runs: the router's chunks under each intermediate step of
    `ragkit.experiments.design.STACK_STEPS` (dense and the full stack are the grid's own runs), keeping
    every saved run but earlier step runs on these benchmarks."""
    from ..evaluate.benchmarks import load
    from ..experiments.design import (BUDGETS, STACK_STEPS, Config, load_runs, ragkit_chunker,
                          stack_steps, step_retriever)
    from ..embed.encoders import Embedder
    from ..experiments.pipeline import run_experiment
    from ..report.results import Recorder
    from ..report.tables import text_table

    emb = Embedder()
    steps = [s for s, _ in STACK_STEPS[1:-1]]
    rec = Recorder("bench_design")
    rec.keep_saved(lambda r: not (r.get("benchmark") in benchmarks
                                  and (r.get("params") or {}).get("factor_first_stage")
                                  in steps))
    for name in benchmarks:
        bench = load(name)
        chunker = ragkit_chunker()
        chunks = chunker.chunk_all(bench.documents, progress=True)
        for step in steps:
            cfg = Config(chunker.label, step, "none", emb.name, False)
            out = run_experiment(bench, chunker, emb, k=5, chunks=chunks,
                                 retriever=step_retriever(chunks, emb, step), budgets=BUDGETS,
                                 label=cfg.label)
            out.record(rec, experiment="design", embedder=emb.name, k=5, **cfg.params())
            print(f"  {name} {cfg.label}: recall@B1024 {100 * out.means['recall@B1024']:.1f}")
    rec.save()
    found = stack_steps(load_runs(*rec.frames()))
    print(text_table(["benchmark", "budget", "step", "against", "recall@B diff", "n"],
                     [[e.benchmark, e.budget, e.treated.label, e.base.label,
                       f"{100 * e.recall.diff:+.1f} [{100 * e.recall.low:+.1f}, "
                       f"{100 * e.recall.high:+.1f}]", e.recall.n] for e in found]))
    return found


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--benchmarks", type=names(ALL_BENCHMARKS, "benchmark(s)"),
                   default=",".join(BENCHMARKS),
                   help="comma-separated: course, chroma, anthropic (the default), financebench")
    p.add_argument("--financebench-chars", type=bounded(1, 10**9), default=None, metavar="N",
                   help="FinanceBench: whole companies' filings within N characters "
                        "(sha256 order of the company; all 74 filings, 34 M characters, "
                        "by default)")
    p.add_argument("--rerank", type=names(BENCHMARKS, "benchmark(s)"), default="",
                   help="benchmarks on which the router's stack is also run with the "
                        "cross-encoder (comma-separated; none by default)")
    add_smoke(p)
    p.add_argument("--second-encoder", action="store_true",
                   help="run the router's chunks with EmbeddingGemma (RAGKIT_GEMMA_DIR) on "
                        "--benchmarks instead, keeping the other saved runs")
    p.add_argument("--all-chunkers", action="store_true",
                   help="with --second-encoder: the seven simple baselines as well as the "
                        "router, so the chunker's effect and the title are measured under "
                        "that encoder too (about 8 times the router's cost)")
    p.add_argument("--steps", action="store_true",
                   help="run the stack lesson's intermediate steps on the router's chunks "
                        "instead, keeping the other saved runs")
    p.add_argument("--costs", action="store_true",
                   help="measure chunking time, index size and query latency instead")
    p.add_argument("--report", action="store_true",
                   help="print the effects from the saved runs; run nothing")


def run_args(args: argparse.Namespace) -> list:
    if args.report:
        from ..experiments.design import saved_runs
        from ..experiments.title import print_effects

        return print_effects(saved_runs())
    if args.costs and args.second_encoder:
        return run_encoder_costs(args.benchmarks)
    if args.costs:
        return run_costs(args.benchmarks)
    if args.steps:
        return run_steps(args.benchmarks)
    if args.all_chunkers and not args.second_encoder:
        raise SystemExit("ragkit bench design: --all-chunkers goes with --second-encoder")
    if args.second_encoder:
        return run_second_encoder(args.benchmarks, args.all_chunkers)
    return run_design(args.benchmarks, args.rerank, smoke=args.smoke,
                      financebench_chars=args.financebench_chars)


def main(argv: list[str] | None = None, prog: str = "ragkit bench design") -> int:
    return run_script(__doc__, prog, add_arguments, run_args, argv)


if __name__ == "__main__":
    sys.exit(main())
