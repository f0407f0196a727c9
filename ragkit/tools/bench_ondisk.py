"""An on-disk IVF index at ten million vectors of real text: build cost, recall@10 against exact
search, query latency and the memory of a process that answers from it.

    ragkit bench ondisk --out DIR               # 10,000,000 windows, nlist 4096
    ragkit bench ondisk --out DIR --n 2000000   # a smaller run
    ragkit bench ondisk --out DIR --smoke       # 200,000 windows, nlist 256: the machinery

**Vectors.** As `ragkit bench ann`: windows of the course, Chroma and Anthropic corpora, each
the static token-mean of MiniLM's input embeddings (`ragkit.scale.static`), here of widths 8,
16, ... 256 tokens (``--window``) at the largest stride that still gives ``--n`` windows,
``--n`` of them evenly spaced; the queries are every benchmark question (973), embedded the
same way. The vectors are made a block at a time (``--block``, default 1,000,000) and never
held together.

**Index** (`ragkit.scale.ondisk`): IVF-Flat, inner product, ``--nlist`` cells (default 4,096:
the 1M sweep's choice, whose rule would say about 4 sqrt(N) = 16,384 cells at 10M; k-means
over 16,384 cells costs four times as much to train on two cores, so the cell count is held
and the nprobe sweep shows the recall it buys) trained on 64 vectors a cell evenly spaced over
the windows; the blocks are added to copies of the trained index, written to disk, and merged
into one inverted-lists file that the search maps from disk (faiss ``OnDiskInvertedLists``).
Exact top-10 is computed block by block as the blocks pass, the truth for recall.

**Searching** happens in a fresh Python process that opens the index and searches every query
alone at each ``--nprobes``: p50 / p95 latency, recall@10 against exact search (a tie with the
10th neighbour counts, as in `ragkit bench ann`) and the id overlap; its memory after opening
and at the end, as resident pages (``VmRSS``), the process's own memory (``RssAnon``) and the
mapped index pages (``RssFile``: page cache, which the kernel reclaims under pressure), and
the peak. ``--cap`` (MiB, default 1,024) is the stated cap on the searching process's own
memory; the row says whether it held.

Rows go to ``results/bench_ondisk.jsonl`` (rows of other sizes kept). ``--out`` must be a new
or empty folder; it keeps the index (``--keep``) or is removed at the end.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from .bench_ann import _load_average, _peak_rss_mib, _spread, _widths
from .common import EXIT_USAGE, add_smoke, bounded, numbers, run_script

DEFAULT_WINDOWS = tuple(range(8, 257, 8))


def _blocks(emb: Any, windows: Any, block: int, top: Any, spent: dict[str, float]
            ) -> Iterator[np.ndarray]:
    """The windows' vectors a block at a time, each fed to the running exact top-k first;
    the seconds spent making vectors and on exact search are added to `spent`, so the index's
    own add time is what is left."""
    for start in range(0, len(windows), block):
        t0 = time.perf_counter()
        vectors = emb.window_vectors(windows.rows(slice(start, start + block)))
        t1 = time.perf_counter()
        top.add(vectors)
        spent["vectors_s"] += t1 - t0
        spent["exact_s"] += time.perf_counter() - t1
        yield vectors


def _recall(ids: np.ndarray, scores: np.ndarray, truth: np.ndarray, emb: Any, windows: Any,
            queries: np.ndarray) -> tuple[float, float]:
    """(recall@k with ties as in `ragkit.scale.ann.recall_at_k`, plain id overlap); the
    returned windows' vectors are made again from their tokens."""
    from ..scale.ann import recall_ids

    k = truth.shape[1]
    flat = ids.ravel()
    vecs = emb.window_vectors(windows.rows(np.clip(flat, 0, None))).reshape(*ids.shape, -1)
    found = np.einsum("qkd,qd->qk", vecs, queries, dtype=np.float64)
    hit = (found >= scores[:, -1:] - 1e-5) & (ids >= 0)
    return float(hit.sum(axis=1).mean() / k), recall_ids(ids, truth)


def run_args(args: argparse.Namespace) -> int:
    import faiss

    from ..report.results import Recorder
    from ..scale.ondisk import RunningTopK, build_ondisk, search_in_fresh_process, train_ivf
    from ..scale.static import (ENCODER, ENCODER_WHY, StaticEmbedder, benchmark_texts,
                                stride_for, total_windows)

    n = 200_000 if args.smoke else args.n
    nlist = args.nlist or (256 if args.smoke else 4096)
    out = Path(args.out)
    from .outputs import OutputError, check_folder

    try:  # the rule every folder output follows; with no marker: a new or empty folder only
        check_folder(out, "--out", "bench ondisk")
    except OutputError as e:
        print(f"ragkit bench ondisk: {e}", file=sys.stderr)
        return EXIT_USAGE
    start, load_start = time.perf_counter(), _load_average()
    print(f"ragkit bench ondisk: load average {load_start}, faiss threads "
          f"{faiss.omp_get_max_threads()}; encoder {ENCODER}: {ENCODER_WHY}")
    names, texts, questions = benchmark_texts()
    emb = StaticEmbedder()
    lengths = [len(ids) for ids in emb.token_ids(texts)]
    stride = stride_for(lengths, args.window, n)
    windows = emb.windows(names, texts, args.window, stride).take(n)
    queries = emb.embed(_spread(questions, args.queries))
    print(f"vectors: {len(texts)} documents, {sum(lengths):,} tokens; windows of "
          f"{min(args.window)}-{max(args.window)} tokens ({len(args.window)} widths) every "
          f"{stride} -> {total_windows(lengths, args.window, stride):,}, {len(windows):,} taken "
          f"evenly spaced; {len(queries)} queries")

    sample = emb.window_vectors(windows.take(64 * nlist))
    t0 = time.perf_counter()
    trained = train_ivf(sample, nlist)
    train_s = time.perf_counter() - t0
    print(f"trained {nlist} cells on {len(sample):,} vectors: {train_s:.1f} s")
    del sample
    top = RunningTopK(queries, 10)
    spent = {"vectors_s": 0.0, "exact_s": 0.0}
    info = build_ondisk(trained, _blocks(emb, windows, args.block, top, spent), out,
                        progress=lambda line: print("  " + line, flush=True))
    index_add_s = info["add_s"] - spent["vectors_s"] - spent["exact_s"]
    build_s = train_s + index_add_s + info["merge_s"]
    build_rss = _peak_rss_mib()
    print(f"built on disk: {info['n']:,} vectors in {info['blocks']} blocks, lists "
          f"{info['lists_bytes'] / 2**30:.2f} GiB; making the vectors {spent['vectors_s']:.1f} s "
          f"and exact top-10 {spent['exact_s']:.1f} s (not the index's cost); the index: train "
          f"{train_s:.1f} s + add {index_add_s:.1f} s + merge {info['merge_s']:.1f} s = "
          f"{build_s:.1f} s; build peak RSS {build_rss:,.0f} MiB")
    del trained

    result = search_in_fresh_process(out, queries, 10, tuple(args.nprobes))
    rec = Recorder("bench_ondisk")
    bench = f"static_windows_{info['n']}"
    kept = rec.keep_saved(lambda r: r.get("benchmark") != bench)
    common = {"n": info["n"], "nlist": nlist, "window": [min(args.window), max(args.window),
              len(args.window)], "stride": stride, "queries": len(queries),
              "block": args.block, "dim": info["dim"], "cap_mib": args.cap,
              "load_average": f"{load_start} at the start, {_load_average()} after the search", "engine": "faiss OnDiskInvertedLists"}
    end = result["memory_end"]
    print(f"\nsearch in a fresh process (open {result['open_s']:.2f} s; memory MiB after open: "
          f"RSS {result['memory_open'].get('rss', float('nan')):,.0f}):")
    print(f"  {'nprobe':>7}{'recall@10':>10}{'ids':>7}{'p50 ms':>9}{'p95 ms':>9}"
          f"{'RSS':>9}{'own':>8}{'file':>9}")
    for p in args.nprobes:
        ids, seconds = result["runs"][p]
        recall, overlap = _recall(ids, top.scores, top.ids, emb, windows, queries)
        ms = 1000 * seconds
        mem = result[f"memory_after_{p}"]
        print(f"  {p:>7}{recall:>10.3f}{overlap:>7.3f}{np.percentile(ms, 50):>9.2f}"
              f"{np.percentile(ms, 95):>9.2f}{mem.get('rss', 0):>9,.0f}"
              f"{mem.get('rss_anon', 0):>8,.0f}{mem.get('rss_file', 0):>9,.0f}")
        rec.add_metrics({"recall@10": recall, "recall@10_ids": overlap,
                         "p50_ms": float(np.percentile(ms, 50)),
                         "p95_ms": float(np.percentile(ms, 95)),
                         "rss_mib": mem.get("rss", float("nan")),
                         "rss_anon_mib": mem.get("rss_anon", float("nan")),
                         "rss_file_mib": mem.get("rss_file", float("nan"))},
                        experiment="ondisk_search", benchmark=bench,
                        strategy=f"IVF-Flat on disk nlist={nlist} nprobe={p}", embedder=ENCODER,
                        k=10, n_queries=len(queries), params={**common, "nprobe": p})
    own_peak = max(result[f"memory_after_{p}"].get("rss_anon", 0) for p in args.nprobes)
    held = own_peak <= args.cap
    print(f"  the searching process's own memory peaked at {own_peak:,.0f} MiB against the "
          f"stated cap of {args.cap:,} MiB: {'held' if held else 'NOT held'}; its resident "
          f"peak (with mapped index pages) {end.get('hwm', float('nan')):,.0f} MiB, the lists "
          f"file {info['lists_bytes'] / 2**20:,.0f} MiB")
    rec.add_metrics({"train_s": train_s, "add_s": index_add_s, "merge_s": info["merge_s"],
                     "build_s": build_s, "vectors_s": spent["vectors_s"],
                     "exact_s": spent["exact_s"], "lists_bytes": info["lists_bytes"],
                     "build_peak_rss_mib": build_rss, "search_open_s": result["open_s"],
                     "search_peak_rss_mib": end.get("hwm", float("nan")),
                     "search_own_mib": own_peak, "cap_held": float(held)},
                    experiment="ondisk_build", benchmark=bench,
                    strategy=f"IVF-Flat on disk nlist={nlist}", embedder=ENCODER, k=10,
                    n_queries=len(queries), params=common)
    print(f"rows: {rec.save()} ({kept} rows of other sizes kept)")
    if not args.keep:
        shutil.rmtree(out, ignore_errors=True)
    print(f"total {time.perf_counter() - start:.1f} s; this process's peak RSS "
          f"{_peak_rss_mib():,.0f} MiB; load average {_load_average()}")
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True,
                   help="a new or empty folder for the index (removed at the end unless --keep)")
    p.add_argument("--n", type=bounded(1_000, 1_000_000_000), default=10_000_000,
                   help="vectors (windows), default 10,000,000")
    p.add_argument("--nlist", type=bounded(1, 1 << 20), default=None,
                   help="IVF cells (default 4096; 256 with --smoke)")
    p.add_argument("--nprobes", type=numbers(1, 1 << 20),
                   default=[16, 64, 256], help="cells probed, comma-separated (default 16,64,256)")
    p.add_argument("--window", type=_widths, default=DEFAULT_WINDOWS,
                   help="window widths in tokens (default 8,16,...,256)")
    p.add_argument("--block", type=bounded(1_000, 100_000_000), default=1_000_000,
                   help="vectors made and added at a time (default 1,000,000)")
    p.add_argument("--queries", type=bounded(1, 100_000), default=None,
                   help="at most this many questions (default all 973)")
    p.add_argument("--cap", type=bounded(1, 1 << 30), default=1024,
                   help="the cap (MiB) on the searching process's own memory (default 1024)")
    p.add_argument("--keep", action="store_true", help="keep the index in --out")
    add_smoke(p, "200,000 windows and 256 cells")


def main(argv: list[str] | None = None, prog: str = "ragkit bench ondisk") -> int:
    return run_script(__doc__, prog, add_arguments, run_args, argv)


if __name__ == "__main__":
    sys.exit(main())
