"""Approximate indexes on a million vectors of real text: recall@10 against latency, memory and
build time, and the default index that follows from the curve.

    ragkit bench ann                    # 1,000,000 windows (widths 64 and 32, stride 1)
    ragkit bench ann --n 100000         # 100,000 windows spread over the same corpora
    ragkit bench ann --smoke            # 20,000 windows, a reduced grid: the machinery

**Vectors.** `ragkit bench scale` sweeps near-copies of 266 real chunk vectors, where recall@10
is 1.000 at every setting: it measures nothing about recall. Here every vector is a window of
real text: the course, Chroma and Anthropic corpora (~527k MiniLM tokens), cut into windows of
``--window`` tokens (default 64 and 32: one width at stride 1 gives ~518k windows, too few for
a million) every ``--stride`` tokens (default: the largest stride that still gives ``--n``
windows), ``--n`` of them taken evenly spaced over the list. The encoder is *static*:
all-MiniLM-L6-v2's input word embeddings averaged over each window's tokens and L2-normalised
(`ragkit.scale.static`), because encoding a million windows with the full MiniLM takes days on
two CPU cores; the neighbours are texts sharing words. The queries are every benchmark question
(973; ``--queries`` caps them, evenly spaced), embedded the same way.

**Not degenerate.** Printed and recorded first: how many vectors are distinct (bytes, and
rounded to 1e-4), and percentiles of the exact top-1 and top-10 inner products beside those of
random pairs.

**The sweep** (`ragkit.scale.ann`): exact flat search (the truth), IVF-Flat (nlist ~ sqrt(N)
and 4 sqrt(N) x nprobe 1, 4, 16, 64), HNSW (M 16, 32 x efSearch 16, 64, 256; efConstruction
80), IVF-PQ (48 one-byte sub-quantizers) with and without exact refinement (k_factor 4). For
each: build seconds (train + add), index bytes (faiss's serialised size), p50 / p95 latency of
single queries, recall@10 against exact search (a tie with the 10th neighbour counts as found)
and the plain id overlap. Rows go to ``results/bench_ann.jsonl`` (rows of other ``--n`` kept),
the recall-latency figure to ``results/figures/bench_ann_recall_latency_<n>.png``.

**The default.** `choose_index`: the fastest setting by p50 with recall@10 >= ``--target``
(0.95), printed with its rule.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

import numpy as np

from .common import add_smoke, bounded, run_script

DEFAULT_WINDOWS = (64, 32)


def _widths(value: str) -> tuple[int, ...]:
    try:
        widths = tuple(int(w) for w in value.replace(" ", "").split(",") if w)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r}: window widths, e.g. 64 or 64,32") from None
    if not widths or any(w < 1 or w > 100_000 for w in widths):
        raise argparse.ArgumentTypeError(f"{value!r}: widths from 1 to 100000")
    return widths


def _fraction(value: str) -> float:
    try:
        x = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
    if not 0 < x <= 1:
        raise argparse.ArgumentTypeError(f"must be above 0 and at most 1, got {value}")
    return x


def _peak_rss_mib() -> float:
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024


def _load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:  # pragma: no cover - not on Linux or macOS
        return "unknown"


def _spread(items: list, n: int | None) -> list:
    """`n` items evenly spaced over `items` (all when `n` is None or not smaller)."""
    if n is None or n >= len(items):
        return list(items)
    return [items[(i * len(items)) // n] for i in range(n)]


def make_vectors(n: int, widths: tuple[int, ...], stride: int | None, queries: int | None
                 ) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """(window vectors, query vectors, what was made: counts, stride, seconds per part)."""
    from ..scale.static import StaticEmbedder, benchmark_texts, stride_for, total_windows

    info: dict[str, Any] = {}
    t0 = time.perf_counter()
    names, texts, questions = benchmark_texts()
    emb = StaticEmbedder()
    lengths = [len(ids) for ids in emb.token_ids(texts)]
    info["load_tokenise_s"] = time.perf_counter() - t0
    stride = stride or stride_for(lengths, widths, n)
    t1 = time.perf_counter()
    windows = emb.windows(names, texts, widths, stride)
    info.update(documents=len(texts), tokens=int(sum(lengths)), stride=stride,
                windows_available=len(windows),
                windows_at_stride_1=total_windows(lengths, widths, 1))
    windows = windows.take(n)
    vectors = emb.window_vectors(windows)
    qs = emb.embed(_spread(questions, queries))
    info.update(n=len(vectors), queries=len(qs), questions=len(questions),
                embed_s=time.perf_counter() - t1)
    return vectors, qs, info


def _print_structure(s: dict[str, Any], seconds: float) -> None:
    n = s["n"]
    print(f"neighbour structure ({seconds:.1f} s): {s['distinct']:,} distinct vectors of {n:,} "
          f"({100 * s['distinct'] / n:.1f} %), {s['distinct_1e-4']:,} after rounding to 1e-4")
    print("  exact inner product, percentiles over the queries:")
    print(f"    {'':<22}" + "".join(f"{'p' + str(p):>8}" for p in s["top1"]))
    for key, label in (("top1", "top-1 neighbour"), ("top10", "10th neighbour"),
                       ("random", "random pairs")):
        print(f"    {label:<22}" + "".join(f"{v:>8.3f}" for v in s[key].values()))


def _print_table(rows: list[dict[str, Any]]) -> None:
    print(f"  {'setting':<46}{'recall@10':>10}{'ids':>7}{'p50 ms':>9}{'p95 ms':>9}"
          f"{'build s':>9}{'MiB':>9}")
    for r in rows:
        print(f"  {r['name']:<46}{r['recall@10']:>10.3f}{r['recall@10_ids']:>7.3f}"
              f"{r['p50_ms']:>9.3f}{r['p95_ms']:>9.3f}{r['build_s']:>9.1f}"
              f"{r['memory_bytes'] / 2**20:>9.1f}")


def _record(rec, rows, structure, info, choice, target: float, threads: int) -> None:
    from ..scale.ann import METRICS
    from ..scale.static import ENCODER

    bench = f"static_windows_{info['n']}"
    common = {"n": info["n"], "window": list(info["widths"]), "stride": info["stride"],
              "queries": info["queries"], "threads": threads}
    for r in rows:
        rec.add_metrics({m: r[m] for m in METRICS}, experiment="ann_sweep", benchmark=bench,
                        strategy=r["name"], embedder=ENCODER, k=10,
                        n_queries=info["queries"],
                        params={**common, "family": r["family"], **r["params"]})
    flat = {"distinct_vectors": structure["distinct"],
            "distinct_vectors_1e-4": structure["distinct_1e-4"]}
    for key in ("top1", "top10", "random"):
        flat.update({f"{key}_ip_p{p}": v for p, v in structure[key].items()})
    rec.add_metrics(flat, experiment="neighbour_structure", benchmark=bench, strategy="exact",
                    embedder=ENCODER, k=10, n_queries=info["queries"], params=common)
    rec.add(metric="chosen_recall@10", value=choice["recall@10"] if choice else float("nan"),
            experiment="choose_index", benchmark=bench,
            strategy=choice["name"] if choice else "none reaches the target",
            embedder=ENCODER, k=10, n_queries=info["queries"],
            params={**common, "target": target, "rule": "fastest p50 with recall@10 >= target",
                    **({"p50_ms": choice["p50_ms"]} if choice else {})})


def run(n: int, widths: tuple[int, ...], stride: int | None, queries: int | None,
        smoke: bool, target: float = 0.95, threads: int | None = None
        ) -> list[dict[str, Any]]:
    import faiss

    from ..report.plots import recall_latency
    from ..report.results import Recorder, save_figure
    from ..scale.ann import Grid, choose_index, exact_neighbours, neighbour_structure, sweep
    from ..scale.static import ENCODER, ENCODER_WHY

    start = time.perf_counter()
    if threads:
        faiss.omp_set_num_threads(threads)
    threads = faiss.omp_get_max_threads()
    print(f"ragkit bench ann: load average {_load_average()}, faiss threads {threads}")
    print(f"encoder: {ENCODER}: {ENCODER_WHY}")
    vectors, qs, info = make_vectors(n, widths, stride, queries)
    info["widths"] = widths
    print(f"vectors: {info['documents']} documents (course, chroma, anthropic), "
          f"{info['tokens']:,} tokens; windows of {'/'.join(map(str, widths))} tokens every "
          f"{info['stride']} -> {info['windows_available']:,} windows "
          f"({info['windows_at_stride_1']:,} at stride 1), {info['n']:,} taken evenly spaced"
          + (f" (fewer than the {n:,} asked)" if info["n"] < n else ""))
    print(f"queries: {info['queries']} of the {info['questions']} benchmark questions, "
          f"embedded the same way")
    print(f"  load + tokenise {info['load_tokenise_s']:.1f} s, windows + embed "
          f"{info['embed_s']:.1f} s")

    t0 = time.perf_counter()
    exact = exact_neighbours(vectors, qs, 10)
    structure = neighbour_structure(vectors, qs, exact[0])
    _print_structure(structure, time.perf_counter() - t0)

    grid = Grid.default(len(vectors), smoke=smoke)
    print(f"\nsweep (k=10, one query at a time, {threads} faiss threads): {grid}")
    t0 = time.perf_counter()
    last = [t0]

    def progress(name: str) -> None:
        now = time.perf_counter()
        print(f"  done {name} ({now - last[0]:.1f} s)", flush=True)
        last[0] = now

    rows = sweep(vectors, qs, grid, k=10, exact=exact, progress=progress)
    sweep_s = time.perf_counter() - t0
    print(f"\nrecall@10 against exact search ({info['n']:,} vectors, {info['queries']} "
          f"queries; 'ids': plain id overlap), sweep {sweep_s:.1f} s:")
    _print_table(rows)
    choice, line = choose_index(rows, target)
    print(line)
    from ..scale.index import DEFAULT_NPROBE, default_nlist

    print(f"  (ScaledIndex's default at this size: IVF-Flat nlist={default_nlist(info['n'])} "
          f"nprobe={DEFAULT_NPROBE}, the rule's choice on the committed 1M rows)")

    rec = Recorder("bench_ann")
    kept = rec.keep_saved(lambda r: r.get("benchmark") != f"static_windows_{info['n']}")
    _record(rec, rows, structure, info, choice, target, threads)
    fig = recall_latency(rows, target, title=(
        f"{info['n']:,} windows of real text ({ENCODER}), {info['queries']} queries, "
        f"{threads} faiss threads"))
    figure = save_figure(fig, f"bench_ann_recall_latency_{info['n']}")
    print(f"rows: {rec.save()} ({kept} rows of other sizes kept); figure: {figure}")
    print(f"total {time.perf_counter() - start:.1f} s; peak RSS {_peak_rss_mib():,.0f} MiB; "
          f"load average {_load_average()}")
    return rows


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--n", type=bounded(1_000, 100_000_000), default=1_000_000,
                   help="vectors (windows), default 1,000,000; all there are when fewer")
    p.add_argument("--window", type=_widths, default=DEFAULT_WINDOWS,
                   help="window widths in tokens, comma-separated (default 64,32)")
    p.add_argument("--stride", type=bounded(1, 100_000), default=None,
                   help="tokens between window starts (default: the largest giving --n)")
    p.add_argument("--queries", type=bounded(1, 100_000), default=None,
                   help="at most this many questions (default all 973)")
    p.add_argument("--target", type=_fraction, default=0.95,
                   help="recall@10 the chosen index must reach (default 0.95)")
    p.add_argument("--threads", type=bounded(1, 1024), default=None,
                   help="faiss threads (default: faiss's own setting, all cores); on a busy "
                        "machine 1 keeps a single exact query from waiting on a second thread")
    add_smoke(p, "20,000 windows and a reduced grid")


def run_args(args: argparse.Namespace) -> list[dict[str, Any]]:
    n = 20_000 if args.smoke else args.n
    return run(n, args.window, args.stride, args.queries, args.smoke, args.target,
               args.threads)


def main(argv: list[str] | None = None, prog: str = "ragkit bench ann") -> int:
    return run_script(__doc__, prog, add_arguments, run_args, argv)


if __name__ == "__main__":
    sys.exit(main())
