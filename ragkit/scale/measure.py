"""Measurements for running the pipeline at scale: throughput per runner, an index size sweep,
the memory of building from shards, and cost fitted against corpus size.

- `throughput`: the same corpus through the same stages (chunk + embed) in one process, under
  ``datasets.map(num_proc=2)`` and under Ray Data with two encoder actors; wall-clock seconds
  from cold stage objects (each worker loads its own encoder) to the last vector, as chars/s,
  chunks/s and encoder tokens/s. Every worker's encoder gets one CPU thread, so one process
  uses one core and two use two; the runner ``"1 process, all threads"`` gives one process's
  encoder every core (as the course runs it), the baseline a second worker has to beat, since
  the encoder's matrix products already spread over the cores in one process.
- `runner_reading`: what the runners' times say, in one sentence, against both baselines;
- `synthetic_vectors`: vectors for a size sweep, drawn from real chunk vectors: each is a real
  vector, plus a random fraction (up to a half) of a second real vector, plus Gaussian noise,
  renormalised: it stays in the region real chunks occupy without copying them.
- `index_sweep`: for each size, the exact index (`IndexFlatIP`) and IVF-Flat at several
  ``nprobe``: recall@k of the approximate hits against the exact ones, and the time per query
  of each, both measured on the same batch of queries in the same process.
- `sweep_reading`: what a sweep's rows show, written from them: whether recall moved with
  nprobe and size at all (on near-copies of a few real vectors it may not), and the latency
  range;
- `build_peak_memory`: the peak resident memory of a *fresh process* that builds an index from
  a shard folder (so this process's own arrays do not count).
- `fit_cost`: a least-squares line seconds = a + b * size through measured points, and what it
  predicts for another size (arithmetic, stated as such).
"""

from __future__ import annotations

import os
import resource
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from ..types import Document


def repeat_corpus(docs: Sequence[Document], copies: int) -> list[Document]:
    """`copies` of each document under new ids (``<id>#2`` ...): a bigger corpus of real text."""
    return [d if c == 0 else Document(f"{d.id}#{c + 1}", d.text, d.metadata, d.path)
            for c in range(copies) for d in docs]


def _rates(rows: dict[str, Any], docs: Sequence[Document], seconds: float) -> dict[str, float]:
    chars = sum(len(d.text) for d in docs)
    n = len(rows.get("chunk_id", []))
    tokens = int(sum(rows.get("tokens", [])))
    return {"seconds": seconds, "chars_per_s": chars / seconds, "chunks_per_s": n / seconds,
            "tokens_per_s": tokens / seconds, "chunks": float(n), "tokens": float(tokens),
            "chars": float(chars)}


def throughput(docs: Sequence[Document], chunker: str = "recursive:250/0",
               runners: Sequence[str] = ("1 process", "1 process, all threads", "2 processes",
                                         "ray 2 actors"),
               batch_size: int = 16, **chunk_params: Any
               ) -> tuple[dict[str, dict[str, float]], np.ndarray]:
    """({runner: rates}, the first runner's chunk vectors) for chunk + embed over `docs` (see
    the module docstring)."""
    import torch

    from .stages import ChunkStage, EmbedStage

    def stages(threads: int = 1):
        return [ChunkStage(chunker, **chunk_params), EmbedStage(threads=threads)]

    threads_before = torch.get_num_threads()  # the in-process runners set it; put back after
    try:
        return _run_runners(stages, docs, runners, batch_size)
    finally:
        torch.set_num_threads(threads_before)


def _run_runners(stages: Callable[..., list], docs: Sequence[Document], runners: Sequence[str],
                 batch_size: int) -> tuple[dict[str, dict[str, float]], np.ndarray]:
    from .batches import run_datasets, run_local
    from .raydata import run_ray

    warm = stages()  # the encoder's one-off set-up (its ONNX export) is not a runner's cost
    run_local(warm, docs[:1])
    out: dict[str, dict[str, float]] = {}
    reference, vectors = None, np.zeros((0, 0), np.float32)
    for runner in runners:
        t0 = time.perf_counter()
        if runner == "1 process":
            rows = run_local(stages(), docs, batch_size=batch_size)
        elif runner == "1 process, all threads":
            rows = run_local(stages(os.cpu_count() or 1), docs, batch_size=batch_size)
        elif runner == "2 processes":
            rows = run_datasets(stages(), docs, num_proc=2, batch_size=batch_size)
        elif runner == "ray 2 actors":
            ray_was_up = _ray_is_up()
            rows = run_ray(stages(), docs, concurrency=2, batch_size=batch_size)
        else:
            raise ValueError(f"unknown runner {runner!r}")
        out[runner] = _rates(rows, docs, time.perf_counter() - t0)
        if runner == "ray 2 actors" and not ray_was_up:
            _stop_ray()
        ids = [str(i) for i in rows["chunk_id"]]
        if reference is None:
            reference, vectors = ids, np.asarray(rows["vector"], np.float32)
        out[runner]["same_chunks_as_first"] = float(ids == reference)
    return out, vectors


def _ray_is_up() -> bool:
    return "ray" in sys.modules and sys.modules["ray"].is_initialized()


def _stop_ray() -> None:
    """Stop the Ray that the Ray runner started here (its start-up is part of its time; its
    shutdown is not). Left up, it is stopped at the interpreter's exit, which under load takes
    longer than a notebook runner waits for a kernel to exit: the kernel is then sent SIGTERM
    and Ray prints a stack dump for it."""
    import ray

    ray.shutdown()


def runner_reading(rates: dict[str, dict[str, float]], cpus: int) -> str:
    """One sentence from `throughput`'s rates: two one-thread workers set against one process
    whose encoder has every thread (the honest baseline), and against the one-thread process.

    >>> r = {"1 process": {"seconds": 40.0}, "1 process, all threads": {"seconds": 25.0},
    ...      "2 processes": {"seconds": 24.0}}
    >>> runner_reading(r, 2)
    '2 processes took 24.0 s against 25.0 s for one process with every thread (2): 1.04x, and 1.67x the one-thread process (40.0 s).'
    """
    one = rates["1 process"]["seconds"]
    every = rates.get("1 process, all threads", {}).get("seconds")
    others = [name for name in rates if name not in ("1 process", "1 process, all threads")]
    if not others:
        return (f"one process took {one:.1f} s with one encoder thread"
                + (f" and {every:.1f} s with every thread ({cpus})" if every else "")
                + "; no second worker ran in this profile.")
    parts = []
    for name in others:
        s = rates[name]["seconds"]
        against = (f" against {every:.1f} s for one process with every thread ({cpus}): "
                   f"{every / s:.2f}x, and" if every else ":")
        parts.append(f"{name} took {s:.1f} s{against} {one / s:.2f}x the one-thread process "
                     f"({one:.1f} s)")
    return "; ".join(parts) + "."


def synthetic_vectors(base: np.ndarray, n: int, seed: int = 13, noise: float = 0.5,
                      block: int = 100_000) -> "Any":
    """Yield (n x dim) float32 unit vectors in blocks of `block` rows (see module docstring);
    ``noise`` is the expected norm of the Gaussian part."""
    rng = np.random.default_rng(seed)
    base = np.asarray(base, np.float32)
    dim = base.shape[1]
    for start in range(0, n, block):
        m = min(block, n - start)
        a = base[rng.integers(0, len(base), m)]
        b = base[rng.integers(0, len(base), m)]
        w = rng.uniform(0, 0.5, (m, 1)).astype(np.float32)
        z = rng.standard_normal((m, dim), dtype=np.float32) * (noise / np.sqrt(dim))
        v = a + w * b + z
        yield (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def recall_at(approx: np.ndarray, exact: np.ndarray) -> float:
    """Mean fraction of each query's exact top-k found in its approximate top-k.

    >>> recall_at(np.array([[1, 2, 3]]), np.array([[3, 2, 9]]))
    0.6666666666666666
    """
    k = exact.shape[1]
    return float(np.mean([len(set(a.tolist()) & set(e.tolist())) / k
                          for a, e in zip(approx, exact)]))


def _best_time(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(max(1, repeats)):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def index_sweep(vectors: np.ndarray, queries: np.ndarray, index: Any, k: int = 10,
                nprobes: Sequence[int] = (4, 8, 16, 32), repeats: int = 2
                ) -> list[dict[str, float]]:
    """Rows of recall@k and ms/query, exact vs `index` (a `ScaledIndex` over `vectors`) at
    each nprobe; times are the best of `repeats` runs over the whole query batch."""
    import faiss

    flat = faiss.IndexFlatIP(vectors.shape[1])
    flat.add(vectors)
    t_exact, (_, exact) = _best_time(lambda f=flat: f.search(queries, k), repeats)
    del flat
    rows = []
    for nprobe in nprobes:
        t, (_, ids) = _best_time(lambda: index.search(queries, k, nprobe=nprobe), repeats)
        rows.append({"n": float(len(vectors)), "nprobe": float(nprobe),
                     "recall": recall_at(ids, exact),
                     "exact_ms": 1000 * t_exact / len(queries),
                     "approx_ms": 1000 * t / len(queries), "speedup": t_exact / t})
    return rows


def sweep_reading(rows: Sequence[dict[str, Any]], base_vectors: int, k: int = 10) -> str:
    """What an `index_sweep` over several sizes shows, from its rows (each with ``size``,
    ``nprobe``, ``recall``, ``exact_ms``, ``approx_ms``): when recall@k is the same at every
    nprobe and size, the sweep says nothing about the recall side of the trade (the synthetic
    vectors are drawn from `base_vectors` real ones), and measures latency only.

    >>> rows = [{"size": n, "nprobe": p, "recall": 1.0, "exact_ms": n / 1e4,
    ...          "approx_ms": p / 100} for n in (10_000, 100_000) for p in (4, 16)]
    >>> sweep_reading(rows, 266).split(": ")[0]
    'recall@10 against exact search is 1.000 at every nprobe and every size here'
    """
    recalls = [float(r["recall"]) for r in rows]
    if not rows:
        return "The sweep has no rows."
    exact = [float(r["exact_ms"]) for r in rows]
    approx = [float(r["approx_ms"]) for r in rows]
    latency = (f"IVF took {min(approx):.3f}-{max(approx):.3f} ms a query where exact search "
               f"took {min(exact):.2f}-{max(exact):.2f} ms, over "
               f"{len({r['size'] for r in rows})} sizes and nprobe "
               f"{', '.join(str(int(p)) for p in sorted({r['nprobe'] for r in rows}))}")
    if max(recalls) - min(recalls) < 5e-4:
        return (f"recall@{k} against exact search is {recalls[0]:.3f} at every nprobe and every "
                f"size here: the synthetic vectors are near-copies of {base_vectors:,} real "
                "chunk vectors, tight clusters that any probe finds, so this sweep is not "
                "informative about recall. What it measures is latency and build memory: "
                f"{latency}.")
    low = min(rows, key=lambda r: r["recall"])
    high = max(rows, key=lambda r: r["recall"])
    return (f"recall@{k} against exact search ranges from {low['recall']:.3f} (nprobe "
            f"{int(low['nprobe'])}, {low['size']:,} vectors) to {high['recall']:.3f} (nprobe "
            f"{int(high['nprobe'])}, {high['size']:,} vectors); {latency}.")


def _peak_rss_mb() -> float:
    """This process's peak RSS in MiB: Linux's VmHWM (ru_maxrss would include the parent's
    peak, which a spawned child inherits across fork and exec), else ru_maxrss."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1 << 20) if sys.platform == "darwin" else peak / 1024


def _build_in_this_process(folder: str, kind: str, out: str, kw: dict) -> dict[str, Any]:
    from .index import ScaledIndex

    t0 = time.perf_counter()
    ix = ScaledIndex.from_shards(folder, kind=kind, **kw)
    seconds = time.perf_counter() - t0
    ix.save(out)
    return {"peak_rss_mb": _peak_rss_mb(), "build_seconds": seconds, "params": ix.params}


def build_peak_memory(folder: str | Path, out: str | Path, kind: str = "ivf_flat",
                      **kw: Any) -> dict[str, Any]:
    """Build an index from shards in a fresh Python process (``python -m
    ragkit.scale.measure``); its peak RSS (MiB), build seconds and settings. The index is saved
    to `out` (load it with `ScaledIndex.load`)."""
    import json
    import os
    import subprocess

    from ..config import PROJECT_ROOT

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(PROJECT_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.run([sys.executable, "-m", "ragkit.scale.measure", str(folder), str(out),
                           kind, json.dumps(kw)], capture_output=True, text=True, env=env)
    if proc.returncode:
        raise RuntimeError(f"building the index from {folder} failed: "
                           f"{proc.stderr.strip()[-500:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def fit_cost(sizes: Sequence[float], seconds: Sequence[float]) -> tuple[float, float]:
    """(a, b) of the least-squares line seconds = a + b * size.

    >>> fit_cost([1, 2, 3], [3, 5, 7])
    (1.0, 2.0)
    """
    b, a = np.polyfit(np.asarray(sizes, float), np.asarray(seconds, float), 1)
    return round(float(a), 12), round(float(b), 12)


if __name__ == "__main__":  # the fresh process of `build_peak_memory`
    import json

    print(json.dumps(_build_in_this_process(sys.argv[1], sys.argv[3], sys.argv[2],
                                            json.loads(sys.argv[4]))))
