"""``ragkit bench NAME``: the benchmark scripts, each printing its table (and writing its rows).

    ragkit bench chroma-repro        # Chroma's MiniLM table, ours beside theirs
    ragkit bench anthropic-baseline  # Pass@5/10/20 on upstream's own chunks
    ragkit bench chunk-speed         # chars/s: structure vs langchain vs chonkie
    ragkit bench encoder-speed       # MiniLM on torch, ONNX Runtime and bf16, same texts
    ragkit bench batch-order         # batches sorted by tokens vs characters: time, padding
    ragkit bench precision           # bf16 vs fp32 vectors: paired recall@B on 3 benchmarks
    ragkit bench int8                # int8 ONNX vs fp32: speed, batch drift, recall@B drift
    ragkit bench threads             # 2 kernels encoding at once: all threads vs a CPU share
    ragkit bench floor               # the encoder's minutes for every vector a cold run made
    ragkit bench rerank-speed        # cross-encoder pairs/s: one at a time vs batches of 16
    ragkit bench late --device cpu   # late chunking vs a plain forward pass, peak memory
    ragkit bench context-speed       # preambles/s per generator, prefix-reuse speed-up
    ragkit bench scale               # 1 vs 2 processes vs Ray; IVF recall/latency to 1M
    ragkit bench filter-speed        # metadata pre-filter at 1M rows: per-record loop vs mask
    ragkit bench ann                 # flat / IVF / HNSW / IVF-PQ on 1M windows of real text:
                                     # recall@10 vs latency, memory, build; the default it picks
    ragkit bench ondisk --out DIR    # IVF-Flat with its lists on disk at 10M windows: recall,
                                     # latency and the searching process's memory
    ragkit bench code                # code chunker vs fixed 1000/200 on Anthropic, tuned on a
                                     # split; Pass@k on their chunks
    ragkit bench prose               # Chroma: recall 82.4 and IoU 7.2 at once, tuned on a split
    ragkit bench late-quality        # late vs naive per window and special-token pooling
    ragkit bench design              # the runs every stated effect is read from
    ragkit bench rerank-why          # why the cross-encoder lowers recall@B; variants tuned on
                                     # the tune half, quoted on the held-out half
    ragkit bench splits              # the grouped tune / held-out halves of each benchmark
    ragkit bench answer-floor        # can each local model answer from the gold alone?

The first five write ``results/bench_<name>.jsonl``; add ``--smoke`` to run a small slice (a
quick check that the machinery works, not a reproduction). The measurements themselves live in
the library (`ragkit.experiments.reproductions`, `ragkit.experiments.speed`); `late`,
`context-speed`, `scale`, `filter-speed` and `code` are `ragkit.tools.bench_late`,
`ragkit.tools.bench_context`, `ragkit.tools.bench_scale`, `ragkit.tools.bench_filter` and
`ragkit.tools.bench_code` (``ragkit bench late --help``); `ann` is `ragkit.tools.bench_ann`; `ondisk` is
`ragkit.tools.bench_ondisk`.
"""

from __future__ import annotations

import argparse
import sys

from .common import Parser, add_smoke, prepare


def _measurements() -> dict:
    from ..experiments.reproductions import anthropic_baseline, chroma_repro
    from ..experiments.speed import (chunk_speed, encoder_speed, precision_drift, rerank_speed,
                                     thread_share, encoder_floor)
    from ..experiments.batch_order import run as batch_order
    from ..experiments.int8 import int8_check

    return {"chroma-repro": chroma_repro, "anthropic-baseline": anthropic_baseline,
            "chunk-speed": chunk_speed, "encoder-speed": encoder_speed,
            "rerank-speed": rerank_speed, "precision": precision_drift,
            "threads": thread_share, "floor": encoder_floor, "batch-order": batch_order,
            "int8": int8_check}


MEASUREMENTS = {
    "chroma-repro": "Chroma's MiniLM table, ours beside theirs",
    "anthropic-baseline": "Pass@5/10/20 on upstream's own chunks",
    "chunk-speed": "chars/s: structure vs langchain vs chonkie",
    "encoder-speed": "MiniLM on torch, ONNX Runtime and bf16, against the matmul rate",
    "rerank-speed": "cross-encoder pairs/s: one at a time vs batches of 16",
    "precision": "bf16 vs fp32 vectors: paired recall@B drift on the three benchmarks",
    "threads": "two kernels encoding at once: every thread each vs a share of the CPUs",
    "floor": "the encoder's time alone for every vector in the cache (after make reproduce)",
    "batch-order": "encoder batches sorted by tokens vs by characters: seconds and padding",
    "int8": "int8 ONNX encoder vs float32: speed, batch drift, paired recall@B drift",
}


def build_parser(prog: str = "ragkit bench") -> argparse.ArgumentParser:
    from . import (bench_ann, bench_code, bench_context, bench_filter, bench_late,
                   bench_late_quality, bench_prose, bench_scale, bench_splits)
    from . import bench_answer_floor, bench_design, bench_ondisk, bench_rerank

    p = Parser(prog=prog, description=__doc__,
               formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True, metavar="NAME", parser_class=Parser)
    for name, help_line in MEASUREMENTS.items():
        s = sub.add_parser(name, help=help_line)
        add_smoke(s)
    for name, module, help_line in (
            ("late", bench_late, "late chunking vs a plain forward pass, peak memory"),
            ("context-speed", bench_context, "preambles/s per generator, prefix-reuse speed-up"),
            ("scale", bench_scale, "1 vs 2 processes vs Ray; IVF recall/latency to 1M"),
            ("filter-speed", bench_filter,
             "metadata pre-filter at 1M rows: per-record loop vs column mask"),
            ("ann", bench_ann,
             "flat / IVF / HNSW / IVF-PQ on 1M windows of real text: recall@10 vs latency"),
            ("ondisk", bench_ondisk,
             "IVF-Flat with its lists on disk at 10M windows: recall, latency, memory"),
            ("code", bench_code, "code chunker vs fixed 1000/200 on Anthropic, tuned on a split"),
            ("late-quality", bench_late_quality,
             "late vs naive chunk vectors per window and special-token pooling"),
            ("prose", bench_prose,
             "Chroma's prose: both of its MiniLM bests at once, tuned on a split"),
            ("design", bench_design,
             "every chunker, first stage and reranker; effects one factor at a time"),
            ("splits", bench_splits,
             "the grouped tune / held-out halves (results/splits.json)"),
            ("rerank-why", bench_rerank,
             "why the cross-encoder lowers recall@B; variants chosen on the tune half"),
            ("answer-floor", bench_answer_floor,
             "each local model's accuracy from the gold passage alone, with a Wilson interval")):
        s = sub.add_parser(name, help=help_line, description=module.__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(s)
        s.set_defaults(run=module.run_args)
    return p


def main(argv: list[str] | None = None, prog: str = "ragkit bench") -> int:
    args = build_parser(prog).parse_args(argv)
    prepare()
    if hasattr(args, "run"):
        code = args.run(args)
        return code if isinstance(code, int) else 0  # a tool may return an exit status
    else:
        _measurements()[args.command](smoke=args.smoke)
    return 0


if __name__ == "__main__":
    sys.exit(main())
