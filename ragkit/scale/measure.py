"""Measurements for running the pipeline at scale: throughput per runner, an index size sweep,
the memory of building from shards, and cost fitted against corpus size.

- `throughput`: the same corpus through the same stages (chunk + embed) in one process, under
  ``datasets.map(num_proc=2)`` and under Ray Data with two encoder actors; wall-clock seconds
  from cold stage objects (each worker loads its own encoder) to the last vector, as chars/s,
  chunks/s and encoder tokens/s. Every worker's encoder gets one CPU thread, so one process
  uses one core and two use two; the runner ``"1 process, all threads"`` gives one process's
  encoder every core (as the course runs it), the baseline a second worker has to beat, since
  the encoder's matrix products already spread over the cores in one process. Every runner
  takes the same batches of documents; the one-process runner reads the clock after each
  (``checkpoints``); the Ray runner also times ``ray.init`` apart, then a one-document job
  and the whole job again on the Ray its first job warmed up (`ray_reading` reads the parts).
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
- `fit_cost`: a least-squares line seconds = a + b * size through measured points;
  `fit_cost_interval` the same through the per-batch checkpoints of one pass (the one-process
  runner of `throughput` records them), with bootstrap intervals on both;
- `ray_reading`: the Ray runner's time split into start-up (``ray.init``), its first job's
  one-time costs, each job's fixed cost (a one-document job: actors created, encoders loaded)
  and the documents, against 2 processes.
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
            rows, curve = _one_process_curve(stages(), docs, t0, batch_size)
        elif runner == "1 process, all threads":
            rows = run_local(stages(os.cpu_count() or 1), docs, batch_size=batch_size)
        elif runner == "2 processes":
            rows = run_datasets(stages(), docs, num_proc=2, batch_size=batch_size)
        elif runner == "ray 2 actors":
            ray_was_up = _ray_is_up()
            if not ray_was_up:
                from .raydata import connect

                connect(3)  # what run_ray would start: two actors and the shard tasks
            up = time.perf_counter()
            rows = run_ray(stages(), docs, concurrency=2, batch_size=batch_size)
            job = time.perf_counter() - up
        else:
            raise ValueError(f"unknown runner {runner!r}")
        out[runner] = _rates(rows, docs, time.perf_counter() - t0)
        if runner == "1 process":
            out[runner].update(curve)
        if runner == "ray 2 actors":
            out[runner].update(_ray_phases(stages, docs, up - t0, job, batch_size))
            if not ray_was_up:
                _stop_ray()
        ids = [str(i) for i in rows["chunk_id"]]
        if reference is None:
            reference, vectors = ids, np.asarray(rows["vector"], np.float32)
        out[runner]["same_chunks_as_first"] = float(ids == reference)
    return out, vectors


def _one_process_curve(stages: list, docs: Sequence[Document], t0: float, batch_size: int
                       ) -> tuple[dict[str, Any], dict[str, Any]]:
    """(rows, curve) of the stages over `docs` in this process, `batch_size` documents at a
    time as every other runner takes them, the clock read once the encoder is loaded
    (``startup_seconds``) and after each batch (``checkpoints``: cumulative seconds from `t0`;
    ``checkpoint_docs``: the documents done by then): the points of the cost fit, from the
    same pass the throughput table times."""
    from .batches import chain, concat, documents_to_batch

    for stage in stages:  # the encoder loads on first use: load it here, on the clock
        getattr(stage, "embedder", None)
    startup = time.perf_counter() - t0
    parts, checkpoints, done = [], [], []
    for i in range(0, len(docs), batch_size):
        parts.append(chain(stages, documents_to_batch(docs[i: i + batch_size])))
        checkpoints.append(time.perf_counter() - t0)
        done.append(min(i + batch_size, len(docs)))
    return concat(parts), {"startup_seconds": startup, "checkpoints": checkpoints,
                           "checkpoint_docs": done}


def _ray_phases(stages: Callable[..., list], docs: Sequence[Document], init: float,
                job: float, batch_size: int) -> dict[str, float]:
    """Ray's time in parts: ``init_seconds`` (`init`: ``ray.init``, about 0 when Ray was up),
    ``job_seconds`` (`job`: the whole job, the first on this Ray), then, on the Ray the first
    job warmed up, ``one_doc_job_seconds``, a job over one document (it pays each job's fixed
    costs: two actors created, each loading its encoder; Ray Data's planning; the shard tasks)
    and ``warm_job_seconds``, the whole job again."""
    from .raydata import run_ray

    out = {"init_seconds": init, "job_seconds": job}
    for key, part in (("one_doc_job_seconds", docs[:1]), ("warm_job_seconds", docs)):
        t0 = time.perf_counter()
        run_ray(stages(), part, concurrency=2, batch_size=batch_size)
        out[key] = time.perf_counter() - t0
    return out


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
    >>> rows[2]["recall"] = 0.97  # nprobe 4 at 100,000 vectors
    >>> sweep_reading(rows, 266).split("; ")[1]
    'at nprobe 4 it falls as the index grows (1.000 at 10,000, 0.970 at 100,000), so a setting chosen on a small index keeps less at a larger one'
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
    fewest = min(int(r["nprobe"]) for r in rows)  # the cheapest probe, size by size
    trend = sorted((int(r["size"]), float(r["recall"])) for r in rows
                   if int(r["nprobe"]) == fewest)
    falls = len(trend) > 1 and trend[-1][1] < trend[0][1]
    return (f"recall@{k} against exact search ranges from {low['recall']:.3f} (nprobe "
            f"{int(low['nprobe'])}, {low['size']:,} vectors) to {high['recall']:.3f} (nprobe "
            f"{int(high['nprobe'])}, {high['size']:,} vectors)"
            + (f"; at nprobe {fewest} it falls as the index grows ("
               + ", ".join(f"{v:.3f} at {n:,}" for n, v in trend)
               + "), so a setting chosen on a small index keeps less at a larger one"
               if falls else "") + f"; {latency}.")


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


def fit_cost_interval(sizes: Sequence[float], seconds: Sequence[float], draws: int = 2000,
                      seed: int = 0, confidence: float = 0.95) -> dict[str, float]:
    """`fit_cost`'s line through the checkpoints of one pass (`sizes` increasing, `seconds`
    the clock at each, cumulative), with bootstrap intervals: each draw keeps the first point
    (the start-up) and resamples the steps between consecutive checkpoints with replacement
    (each step's documents and seconds together: documents of different lengths), rebuilds
    the cumulative sizes and times and refits.
    The interval covers the spread among the documents of this one pass, not a busier
    machine on another run. (Ordinary least-squares standard errors would be too narrow here:
    cumulative times share their errors.)

    >>> r = fit_cost_interval([0, 1, 2, 3, 4], [1.0, 1.5, 2.0, 2.5, 3.0])
    >>> r["fixed_seconds"], r["seconds_per_document"], r["seconds_per_document_low"]
    (1.0, 0.5, 0.5)
    """
    x = np.asarray(sizes, float)
    y = np.asarray(seconds, float)
    if len(x) < 3 or np.any(np.diff(x) <= 0):
        raise ValueError("need three or more checkpoints with increasing sizes")
    a, b = fit_cost(x, y)
    rng = np.random.default_rng(seed)
    dx, dy = np.diff(x), np.diff(y)
    fits = []
    for _ in range(draws):
        pick = rng.integers(0, len(dx), len(dx))
        x_star = np.concatenate([[x[0]], x[0] + np.cumsum(dx[pick])])
        y_star = np.concatenate([[y[0]], y[0] + np.cumsum(dy[pick])])
        slope, intercept = np.polyfit(x_star, y_star, 1)
        fits.append((intercept, slope))
    lo, hi = 100 * (1 - confidence) / 2, 100 * (1 + confidence) / 2
    (a_lo, b_lo), (a_hi, b_hi) = np.percentile(np.asarray(fits), [lo, hi], axis=0)
    return {"fixed_seconds": a, "fixed_seconds_low": round(float(a_lo), 12),
            "fixed_seconds_high": round(float(a_hi), 12), "seconds_per_document": b,
            "seconds_per_document_low": round(float(b_lo), 12),
            "seconds_per_document_high": round(float(b_hi), 12), "points": float(len(x))}


def ray_reading(rates: dict[str, dict[str, float]], documents: int) -> str:
    """What the Ray runner's time is made of (`throughput`'s ``init_seconds``,
    ``job_seconds``, ``one_doc_job_seconds`` and ``warm_job_seconds``), set against the
    two-process runner, and whether a larger corpus would let Ray catch up, from these rates.

    >>> r = {"2 processes": {"seconds": 16.0},
    ...      "ray 2 actors": {"seconds": 64.0, "init_seconds": 10.0, "job_seconds": 54.0,
    ...                       "one_doc_job_seconds": 20.0, "warm_job_seconds": 34.0}}
    >>> ray_reading(r, 52).split(", ")[1]
    '20.0 s of one-time costs of its first job (the whole job run first'
    >>> r["ray 2 actors"]["warm_job_seconds"] = 56.9  # the second job slower: noise, said so
    >>> ray_reading(r, 52).split(", ")[1][:78]
    'no one-time cost of its first job to see (the same job run again took 2.9 s lo'
    """
    ray, two = rates.get("ray 2 actors"), rates.get("2 processes")
    if not ray or "warm_job_seconds" not in ray:
        return "Ray did not run in this profile."
    gap = ray["job_seconds"] - ray["warm_job_seconds"]
    first = max(gap, 0.0)
    per_job = ray["one_doc_job_seconds"]
    rest = max(ray["warm_job_seconds"] - per_job, 0.0)
    fixed = ray["init_seconds"] + first + per_job
    first_said = (f"{first:.1f} s of one-time costs of its first job (the whole job run first, "
                  "less the same job run again: worker processes started, modules imported)"
                  if gap >= 0 else
                  f"no one-time cost of its first job to see (the same job run again took "
                  f"{-gap:.1f} s longer than the first: run-to-run noise, so the parts below, "
                  "each from its own job, do not add up to the total)")
    out = (f"Ray took {ray['seconds']:.1f} s: {ray['init_seconds']:.1f} s to start (ray.init), "
           f"{first_said}, {per_job:.1f}"
           f" s that every job pays (a one-document job: two actors created, each loading its "
           f"encoder, Ray Data's planning), so {fixed:.1f} s of fixed cost in all; the "
           f"documents themselves took {rest:.1f} s (the job run again, less the one-document "
           f"job: {max(documents - 1, 1)} documents)")
    if not two:
        return out + "."
    ray_doc = rest / max(documents - 1, 1)
    two_doc = two["seconds"] / documents  # its own start-up included: an upper bound
    if ray_doc < two_doc:
        size = fixed / (two_doc - ray_doc)
        return out + (f", {ray_doc:.3f} s a document against at most {two_doc:.3f} s for 2 "
                      f"processes: at these rates Ray would catch up past about {size:,.0f} "
                      "documents on this machine.")
    return out + (f", {ray_doc:.3f} s a document, no less than the {two_doc:.3f} s a document "
                  "of 2 processes (start-up included): on one machine these rates give Ray no "
                  "corpus size at which it catches up; what it would add, actors spread over "
                  "a cluster's machines and GPUs, is not measured here.")


if __name__ == "__main__":  # the fresh process of `build_peak_memory`
    import json

    print(json.dumps(_build_in_this_process(sys.argv[1], sys.argv[3], sys.argv[2],
                                            json.loads(sys.argv[4]))))
