"""The pipeline beyond one process, and an index beyond exact search, measured in one run.

    ragkit bench scale                  # course corpus x2; index sweep 10k, 100k, 1M vectors
    ragkit bench scale --smoke          # a small slice: the machinery, not the figures

1. **Throughput.** The course corpus, repeated ``--copies`` times under new document ids, goes
   through the same stages (recursive:250/0 chunks on MiniLM tokens, MiniLM vectors) in one
   process, under ``datasets.map(num_proc=2)`` and under Ray Data with two encoder actors
   (`ragkit.scale.run_ray`: Parquet shards in and out, on a Ray started here or on the cluster
   ``RAY_ADDRESS`` names); each worker's encoder has one CPU thread (`ragkit.scale.throughput`).
   One process whose encoder has every thread runs beside them: torch and ONNX Runtime already
   spread one process's matrix products over the cores, so that, not the one-thread process,
   is what a second worker has to beat. Printed: chars/s, chunks/s, tokens/s, the speed-up
   over one process with one thread and over one process with every thread, and the load
   average before and after (the ratio needs an otherwise idle machine). ``--no-sweep`` stops
   here and keeps the saved sweep rows.
2. **Index sweep.** Synthetic vectors drawn from the real chunk vectors of step 1
   (`ragkit.scale.synthetic_vectors`) are written as shards at each ``--sizes``; an IVF-Flat
   index is built from the shards in a fresh process (its peak RSS printed: target < 4 GB at
   1M) and searched at several ``nprobe`` beside exact search on the same queries: recall@10
   against exact, ms per query, speed-up (target at 1M: recall >= 0.95 at >= 10x).

Rows go to ``results/bench_scale.jsonl``. The shards are written under a temporary folder
(``--workdir`` to choose it) and removed afterwards.

Ray comes with ``make setup`` (the ``scale`` extra: ``pip install -e '.[scale]'`` in the project
folder). Without it the command says so in one line, with the install, and exits with status 3
before any work (``--no-ray`` runs the rest without the Ray runner). The index sweep without
faiss is left out with one line, and the rest runs; when nothing asked for can run, the command
says what is missing and exits with status 3.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

from .bench_ann import _load_average
from .common import EXIT_FATAL, add_smoke, bounded, run_script

INSTALL_RAY = "make setup, or pip install -e '.[scale]' in the ragkit folder"


def _installed(module: str) -> bool:
    from importlib.util import find_spec

    try:
        return find_spec(module) is not None
    except (ImportError, ValueError):  # a broken or half-removed install
        return False


def plan(ray: bool) -> tuple[list[str], bool, list[str]]:
    """(throughput runners that can run here, whether the index sweep can, one line per part
    left out and why). The index sweep draws its vectors from the first runner's, so it needs
    one."""
    runners, notes = ["1 process", "1 process, all threads"], []
    if _installed("datasets"):
        runners.append("2 processes")
    else:
        notes.append("datasets is not installed: the 2-process runner is left out")
    if ray:  # `run` has checked that Ray is installed
        runners.append("ray 2 actors")
    sweep = _installed("faiss")
    if not sweep:
        notes.append("faiss is not installed: the index sweep is left out (make setup installs "
                     "faiss-cpu)")
    if not _installed("sentence_transformers"):
        runners, sweep = [], False
        notes.append("sentence-transformers is not installed: no runner can embed (make setup)")
    return runners, sweep and bool(runners), notes


def _rows_for(vectors: np.ndarray, start: int) -> dict:
    n = len(vectors)
    ids = range(start, start + n)
    return {"chunk_id": [f"s{i}" for i in ids], "doc_id": [f"doc{i // 20}" for i in ids],
            "start": [0] * n, "end": [0] * n, "text": [""] * n, "prefix": [""] * n,
            "strategy": ["synthetic"] * n,
            "metadata": [f'{{"part": {i % 3}}}' for i in ids], "vector": vectors}


def _throughput_rows(rec, rates: dict, copies: int, docs: list, emb_name: str,
                     load: str) -> None:
    """Print the runners' table and record one row set a runner."""
    import os

    chars = sum(len(d.text) for d in docs)
    print(f"throughput: chunk (recursive:250/0) + embed ({emb_name}), {len(docs)} documents, "
          f"{chars:,} chars, {int(rates['1 process']['chunks'])} chunks; load average {load}")
    print(f"  {'runner':<24}{'threads':>8}{'seconds':>9}{'chars/s':>11}{'chunks/s':>10}"
          f"{'tokens/s':>10}{'x 1 thread':>11}{'x all threads':>14}  same chunks")
    one = rates["1 process"]["seconds"]
    every = rates.get("1 process, all threads", {}).get("seconds")
    for runner, r in rates.items():
        threads = (os.cpu_count() or 1) if runner == "1 process, all threads" else 1
        versus_all = every / r["seconds"] if every else float("nan")
        print(f"  {runner:<24}{threads:>8}{r['seconds']:9.1f}{r['chars_per_s']:11,.0f}"
              f"{r['chunks_per_s']:10,.1f}{r['tokens_per_s']:10,.0f}{one / r['seconds']:10.2f}x"
              f"{versus_all:13.2f}x  {'yes' if r['same_chunks_as_first'] else 'NO'}")
        metrics = {**{k: v for k, v in r.items() if k.endswith("_per_s") or k == "seconds"},
                   "speedup_vs_one": one / r["seconds"]}
        if every:
            metrics["speedup_vs_all_threads"] = versus_all
        rec.add_metrics(metrics, experiment="throughput", benchmark=f"course_corpus_x{copies}",
                        strategy=runner, embedder=emb_name,
                        params={"chunker": "recursive:250/0", "threads_per_worker": threads,
                                "workers": 2 if runner.startswith(("2 ", "ray 2")) else 1,
                                "cpus": os.cpu_count(), "documents": len(docs),
                                "chars": chars, "chunks": int(r["chunks"]),
                                "tokens": int(r["tokens"]), "load_average": load})
    if every and "2 processes" in rates:
        ratio = every / rates["2 processes"]["seconds"]
        word = "faster" if ratio >= 1.05 else "slower" if ratio <= 0.95 else "no faster"
        print(f"  two one-thread processes against one process with every thread: {ratio:.2f}x "
              f"({word}, within 5 % counted as no faster; on an idle machine only)")


def run(copies: int, sizes: list[int], nprobes: list[int], n_queries: int,
        workdir: str | None, ray: bool, noise: float = 0.5, sweep_too: bool = True) -> None:
    if ray and not _installed("ray"):
        print(f"ragkit bench scale: Ray is not installed ({INSTALL_RAY}); --no-ray runs the "
              "rest without the Ray runner", file=sys.stderr)
        raise SystemExit(EXIT_FATAL)
    runners, sweep, notes = plan(ray)
    sweep = sweep and sweep_too
    for note in notes:
        print(f"ragkit bench scale: {note}", file=sys.stderr)
    if not runners:
        raise SystemExit(EXIT_FATAL)
    from ..config import get_settings
    from ..embed.encoders import Embedder
    from ..report.results import Recorder
    from ..scale.index import ScaledIndex
    from ..scale.measure import (build_peak_memory, index_sweep, repeat_corpus, synthetic_vectors,
                                 throughput)
    from ..scale.shards import ShardSet, write_row_shards
    from ..text.corpus import load_corpus

    rec = Recorder("bench_scale")
    if not sweep:
        kept = rec.keep_saved(lambda r: r.get("experiment") != "throughput")
        print(f"ragkit bench scale: the index sweep is not run; {kept} saved sweep rows kept")
    docs = repeat_corpus(load_corpus(get_settings().data_dir / "corpus").documents, copies)
    load = _load_average()
    rates, base = throughput(docs, "recursive:250/0", runners, tokenizer="minilm")
    emb_name = Embedder(cache=False).name
    _throughput_rows(rec, rates, copies, docs, emb_name, f"{load} before, {_load_average()} after")
    if not sweep:
        print(f"rows: {rec.save()}")
        return

    root = Path(tempfile.mkdtemp(prefix="ragkit-scale-", dir=workdir))
    try:
        print(f"\nIVF-Flat vs exact search: synthetic vectors from {len(base)} real chunk "
              f"vectors (real + up to 0.5 x another + noise of norm {noise}), {n_queries} queries "
              "of the same kind, k=10")
        print(f"  {'vectors':>9}{'nlist':>7}{'nprobe':>7}{'recall@10':>10}{'exact ms/q':>11}"
              f"{'ivf ms/q':>9}{'speed-up':>9}")
        queries = next(synthetic_vectors(base, n_queries, seed=99, noise=noise))
        for size in sizes:
            folder = root / f"shards_{size}"
            blocks = synthetic_vectors(base, size, seed=13, noise=noise, block=100_000)
            write_row_shards((_rows_for(b, i * 100_000) for i, b in enumerate(blocks)), folder,
                             {"synthetic_from": len(base), "seed": 13, "n": size})
            built = build_peak_memory(folder, root / f"ivf_{size}", kind="ivf_flat")
            index = ScaledIndex.load(root / f"ivf_{size}.faiss", folder)
            vectors = ShardSet(folder).vectors()
            table = index_sweep(vectors, queries, index, k=10, nprobes=nprobes)
            del vectors, index
            for row in table:
                print(f"  {size:>9,}{built['params']['nlist']:>7}{int(row['nprobe']):>7}"
                      f"{row['recall']:>10.3f}{row['exact_ms']:>11.2f}{row['approx_ms']:>9.3f}"
                      f"{row['speedup']:>8.1f}x")
                params = {"n": size, "nlist": built["params"]["nlist"],
                          "nprobe": int(row["nprobe"]), "queries": n_queries,
                          "base_vectors": len(base), "noise": noise}
                rec.add_metrics({"recall@10_vs_exact": row["recall"],
                                 "exact_ms_per_query": row["exact_ms"],
                                 "ivf_ms_per_query": row["approx_ms"],
                                 "speedup_vs_exact": row["speedup"]},
                                experiment="index_sweep", benchmark=f"synthetic_{size}",
                                strategy="ivf_flat", embedder=emb_name, params=params,
                                k=10, n_queries=n_queries)
            print(f"  {'':>9} built from {len(ShardSet(folder).shards)} shards in a fresh "
                  f"process: {built['build_seconds']:.1f} s, peak RSS "
                  f"{built['peak_rss_mb']:,.0f} MiB (target < 4096 at 1M)")
            rec.add_metrics({"build_peak_rss_mb": built["peak_rss_mb"],
                             "build_seconds": built["build_seconds"]},
                            experiment="index_build", benchmark=f"synthetic_{size}",
                            strategy="ivf_flat", embedder=emb_name,
                            params={"n": size, **built["params"]})
            shutil.rmtree(folder)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"rows: {rec.save()}")


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_smoke(p)
    p.add_argument("--copies", type=bounded(1, 1000), default=None,
                   help="course corpus copies (default 2)")
    p.add_argument("--sizes", default=None,
                   help="index sizes, comma-separated (default 10000,100000,1000000)")
    p.add_argument("--nprobes", default="4,8,16,32", help="IVF cells probed, comma-separated")
    p.add_argument("--queries", type=bounded(1, 100_000), default=200,
                   help="queries for the index sweep")
    p.add_argument("--no-ray", action="store_true", help="skip the Ray Data runner")
    p.add_argument("--no-sweep", action="store_true",
                   help="the throughput runners only (the saved sweep rows are kept)")
    p.add_argument("--workdir", default=None, help="where the temporary shards go")
    p.add_argument("--noise", type=float, default=0.5,
                   help="norm of the Gaussian part of each synthetic vector (more: harder)")


def run_args(args: argparse.Namespace) -> None:
    copies = args.copies or (1 if args.smoke else 2)
    sizes = [int(s) for s in (args.sizes or ("2000,5000,10000" if args.smoke else
                                             "10000,100000,1000000")).split(",")]
    nprobes = [int(s) for s in args.nprobes.split(",")]
    run(copies, sizes, nprobes, args.queries, args.workdir, not args.no_ray, args.noise,
        not args.no_sweep)


def main(argv: list[str] | None = None, prog: str = "ragkit bench scale") -> int:
    return run_script(__doc__, prog, add_arguments, run_args, argv)


if __name__ == "__main__":
    sys.exit(main())
