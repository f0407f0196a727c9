"""What late chunking costs: its throughput beside a plain forward pass, and its peak memory.

    ragkit bench late                       # 100,000 tokens, bundled MiniLM, auto device
    ragkit bench late --device cuda --tokens 100000 --model /tmp/embeddinggemma

(``python -m ragkit.tools.bench_late`` takes the same options.)

One synthetic document of exactly ``--tokens`` model tokens (the course corpus repeated, in file
order; generated sentences with a fixed seed when the corpus is absent) is cut into paragraph
chunks. Late chunking embeds it end to end (tokenise, plan windows, forward, pool per chunk,
post-pooling modules); the plain run feeds the *same windows* through the same model and
mean-pools each window; the naive run embeds each chunk alone, which is what late chunking
replaces (a chunk longer than the encoder's limit is cut there, and counted). Both are reported in document tokens per
second (best of ``--repeats`` alternating runs, since a shared machine's load varies), with
their ratio (target >= 0.8); on CPU also by process CPU time, which other processes' load
leaves alone; and the peak memory: the process's peak RSS on CPU
(target < 2 GB for 100,000 tokens with MiniLM), ``torch.cuda.max_memory_allocated`` on CUDA.
It also times mapping chunks onto token ranges (`chunk_token_ranges`), for the paragraphs and
with every word a chunk of its own (once a unit-test bound: 10,000 chunks in under 2 s).
Rows go to ``results/bench_late.jsonl``.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import re
import resource
import sys
import time
import warnings
from typing import Any

import numpy as np

from .common import bounded, run_script


def synthetic_text(tokenizer: Any, n_tokens: int, seed: int = 13) -> tuple[str, str]:
    """(text of exactly n_tokens tokens without special tokens, where it came from)."""
    from ..config import get_settings

    corpus = sorted((get_settings().data_dir / "corpus").glob("*.md"))
    if corpus:
        parts = [p.read_text(encoding="utf-8").strip() for p in corpus]
        source = f"corpus:{len(parts)}_files"
    else:  # a fallback that needs no files: sentences from a fixed vocabulary
        rng = random.Random(seed)
        vocab = ("refund policy members invoice account records retention backup gateway "
                 "firmware encryption access support window days customer data").split()
        parts = [" ".join(rng.choice(vocab) for _ in range(rng.randint(40, 120))) + "."
                 for _ in range(200)]
        source = f"generated:seed{seed}"
    block = "\n\n".join(parts)
    per_block = len(tokenizer(block, add_special_tokens=False, verbose=False)["input_ids"])
    text = "\n\n".join([block] * (n_tokens // max(per_block, 1) + 1))
    offsets = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True,
                        verbose=False)["offset_mapping"]
    if len(offsets) < n_tokens:
        raise ValueError(f"could only build {len(offsets)} tokens")
    return text[: offsets[n_tokens - 1][1]], source


def paragraph_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the blank-line-separated paragraphs (whitespace trimmed)."""
    return [(m.start(), m.end()) for m in re.finditer(r"\S(?:.*\S)?(?:\n(?!\s*\n).*\S)*", text)]


def peak_rss_mb() -> float:
    """This process's peak resident set size so far, in MiB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1 << 20) if sys.platform == "darwin" else peak / 1024


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def plain_forward(late: Any, ids: list[list[int]]) -> np.ndarray:
    """Encode windows of token ids as an ordinary embedder would: one mean-pooled vector each,
    through the model's post-pooling modules (same batching as late chunking)."""
    import torch

    jobs = [(len(w), 0, k) for k, w in enumerate(ids)]
    out = []
    for batch in late.batches(jobs):
        rows = [ids[k] for _, _, k in batch]
        states = late.forward(rows)
        mask = torch.zeros(states.shape[:2], device=states.device)
        for i, r in enumerate(rows):
            mask[i, : len(r)] = 1
        pooled = (states.float() * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
        out.append(pooled.cpu().numpy())
    return late.after_pooling(np.concatenate(out))


def token_range_seconds(text: str, tokens: Any, repeats: int = 2
                        ) -> dict[str, tuple[int, float]]:
    """{unit: (chunks, best seconds)} for mapping the document's paragraphs, and every word as
    its own chunk (the many-small-chunks case), onto token ranges with `chunk_token_ranges`."""
    from ..embed.late_plan import chunk_token_ranges

    out = {}
    for unit, spans in (("paragraph", paragraph_spans(text)),
                        ("word", [(m.start(), m.end()) for m in re.finditer(r"\S+", text)])):
        best = float("inf")
        for _ in range(max(1, repeats)):
            t0 = time.perf_counter()
            chunk_token_ranges(text, tokens.starts, tokens.ends, spans)
            best = min(best, time.perf_counter() - t0)
        out[unit] = (len(spans), best)
    return out


def run(device: str | None, n_tokens: int, model: str | None, window: int | None,
        overlap: int | None, repeats: int = 2) -> dict[str, float]:
    import torch

    from ..embed.encoders import Embedder
    from ..embed.late import LateEmbedder
    from ..embed.late_plan import LateChunkingWarning, plan_windows
    from ..report.results import Recorder
    from ..types import Chunk, Document

    emb = Embedder(model, device=device, cache=False, show_progress=False)
    late = LateEmbedder(emb, window=window, overlap=overlap, cache=False, memo=False)
    dev = emb.device
    text, source = synthetic_text(emb.tokenizer, n_tokens)
    doc = Document("synthetic", text)
    chunks = [Chunk.make(doc, s, e, "paragraph") for s, e in paragraph_spans(text)]
    tokens = late.tokenize(text)
    win, ovl = late.limits(tokens)
    windows, _ = plan_windows(len(tokens), win, ovl)
    ids = [list(tokens.head) + tokens.ids[a:b].tolist() + list(tokens.tail) for a, b in windows]
    dtype = late.dtype
    mapping = token_range_seconds(text, tokens, repeats)

    plain_forward(late, ids[: max(1, late.max_batch_tokens // len(ids[0]))])  # warm-up
    if dev.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
    rss_before = peak_rss_mb()
    times: dict[str, list[float]] = {"late": [], "plain": [], "naive": []}
    cpu: dict[str, list[float]] = {"late": [], "plain": [], "naive": []}  # process CPU seconds
    texts = [c.text for c in chunks]
    peak = 0.0
    for r in range(repeats):  # alternate, keep the best of each: robust to a busy machine
        _sync(dev)
        t0, c0 = time.perf_counter(), time.process_time()
        with warnings.catch_warnings():  # the windowed-document flag is printed below
            warnings.simplefilter("ignore", LateChunkingWarning)
            vecs = late.embed([doc], chunks, cache=False)
        _sync(dev)
        times["late"].append(time.perf_counter() - t0)
        cpu["late"].append(time.process_time() - c0)
        if r == 0:  # late chunking's peak, before the plain run could add its own
            peak = (torch.cuda.max_memory_allocated() / (1 << 20) if dev.startswith("cuda")
                    else peak_rss_mb())
        t0, c0 = time.perf_counter(), time.process_time()
        plain = plain_forward(late, ids)
        _sync(dev)
        times["plain"].append(time.perf_counter() - t0)
        cpu["plain"].append(time.process_time() - c0)
        t0, c0 = time.perf_counter(), time.process_time()
        with warnings.catch_warnings():  # the cut count is printed below
            warnings.simplefilter("ignore")
            naive = emb.encode(texts)  # what late chunking replaces: each chunk alone
        _sync(dev)
        times["naive"].append(time.perf_counter() - t0)
        cpu["naive"].append(time.process_time() - c0)
        assert vecs.shape == naive.shape == (len(chunks), emb.dimension)
        assert plain.shape[0] == len(windows)
    t_late, t_plain, t_naive = min(times["late"]), min(times["plain"]), min(times["naive"])

    n = len(tokens)
    figures = {"tokens_per_s_late": n / t_late, "tokens_per_s_plain": n / t_plain,
               "ratio": t_plain / t_late, "seconds_late": t_late, "seconds_plain": t_plain,
               "seconds_naive": t_naive, "tokens_per_s_naive": n / t_naive,
               "naive_chunks_truncated": float(emb.last_truncated)}
    for unit, (n_spans, secs) in mapping.items():
        figures[f"token_ranges_seconds_{unit}"] = secs
        figures[f"token_ranges_chunks_{unit}"] = float(n_spans)
    mem_metric = "peak_cuda_mb" if dev.startswith("cuda") else "peak_rss_mb"
    figures[mem_metric] = peak
    if not dev.startswith("cuda"):  # CPU time is what load on a shared machine leaves alone
        c_late, c_plain = min(cpu["late"]), min(cpu["plain"])
        figures.update({"rss_before_late_mb": rss_before, "cpu_seconds_late": c_late,
                        "cpu_seconds_plain": c_plain, "ratio_cpu_time": c_plain / c_late,
                        "cpu_seconds_naive": min(cpu["naive"])})
    params = {"tokens": n, "chunks": len(chunks), "window": win, "overlap": ovl,
              "windows": len(windows), "forward_tokens": late.stats["forward_tokens"],
              "dtype": dtype, "threads": torch.get_num_threads(), "source": source,
              "repeats": repeats,
              "doc_sha256": hashlib.sha256(text.encode()).hexdigest()[:16]}
    rec = Recorder("bench_late")
    rec.add_metrics(figures, experiment="late_throughput", benchmark=f"synthetic_{n}_tokens",
                    strategy="late", embedder=emb.name, params=params, flags=late.flags,
                    device=dev)
    path = rec.save()

    print(f"late chunking vs plain forward - {emb.name} on {dev} ({dtype}, "
          f"{torch.get_num_threads()} threads)")
    print(f"document: {n:,} tokens ({source}), {len(chunks):,} paragraph chunks; "
          f"{len(windows)} windows of {win} tokens, overlap {ovl} "
          f"({late.stats['forward_tokens']:,} tokens through the model)")
    def runs(name: str) -> str:
        return ", ".join(f"{t:.1f}" for t in times[name])

    print(f"  late : {figures['tokens_per_s_late']:9,.0f} tokens/s  (best of {runs('late')} s)")
    print(f"  plain: {figures['tokens_per_s_plain']:9,.0f} tokens/s  (best of {runs('plain')} s)")
    print(f"  ratio late/plain: {figures['ratio']:.3f}  (target >= 0.8)")
    print(f"  naive: {figures['tokens_per_s_naive']:9,.0f} tokens/s  (best of {runs('naive')} s; "
          f"each of the {len(chunks):,} chunks embedded alone, {emb.last_truncated:,} of them cut "
          f"at {emb.max_tokens} tokens)")
    if not dev.startswith("cuda"):
        print(f"  by process CPU time: late {c_late:.1f} s, plain {c_plain:.1f} s, ratio "
              f"{figures['ratio_cpu_time']:.3f} (steady when other processes share the cores)")
    if dev.startswith("cuda"):
        print(f"  peak CUDA memory allocated during late chunking: {peak:,.0f} MiB")
    else:
        print(f"  peak RSS: {peak:,.0f} MiB after late chunking ({rss_before:,.0f} MiB before it; "
              "target < 2048)")
    print("  chunks -> token ranges (chunk_token_ranges, best of {}): {}".format(
        repeats, "; ".join(f"{n:,} {unit} chunks in {secs:.3f} s"
                           for unit, (n, secs) in mapping.items())))
    print(f"  flags: {';'.join(late.flags) or '-'}   rows: {path}")
    return figures


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", choices=["cpu", "cuda"], default=None,
                   help="default: RAGKIT_DEVICE / auto")
    p.add_argument("--tokens", type=bounded(1, 10_000_000), default=100_000,
                   help="document length in tokens")
    p.add_argument("--model", default=None, help="sentence-transformers folder or hub id")
    p.add_argument("--window", type=bounded(2, 1_000_000), default=None,
                   help="default: the model's limit")
    p.add_argument("--overlap", type=bounded(0, 1_000_000), default=None,
                   help="default: window // 4")
    p.add_argument("--repeats", type=bounded(1, 100), default=2,
                   help="timed runs of each (best kept)")


def run_args(args: argparse.Namespace) -> dict[str, float]:
    return run(args.device, args.tokens, args.model, args.window, args.overlap, args.repeats)


def main(argv: list[str] | None = None, prog: str = "ragkit bench late") -> int:
    return run_script(__doc__, prog, add_arguments, run_args, argv)


if __name__ == "__main__":
    sys.exit(main())
