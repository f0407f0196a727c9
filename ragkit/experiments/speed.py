"""How fast the machinery runs: chunkers in characters per second, the encoder in texts per
second on torch and under ONNX Runtime.

`chunk_speed` (notebook 02, ``ragkit bench chunk-speed``) times ragkit's structure and recursive
chunkers against langchain's and chonkie's recursive splitters on Chroma's corpora;
`encoder_speed` (``ragkit bench encoder-speed``) times all-MiniLM-L6-v2 on torch, ONNX Runtime
and torch under bfloat16 over the same texts, against the CPU's measured matmul rate. Each prints a table and writes its rows (``results/bench_<name>.jsonl``).
"""

from __future__ import annotations

import time

from ..report.tables import text_table

# chunk_speed's caps: MiniLM tokens (structure: hard, soft) and characters a chunk
TOKEN_CAP, SOFT_CAP, CHAR_CAP = 254, 180, 1000


def chunk_speed(smoke: bool = False, repeats: int | None = None,
                quiet: bool = False) -> list[list]:
    """Characters per second: ragkit's structure chunker vs langchain's and chonkie's recursive
    splitters on Chroma's corpora at `TOKEN_CAP` MiniLM tokens, plus rows at `CHAR_CAP`
    characters. Best of `repeats` cold runs each (3, or 1 in smoke: 02 and ``ragkit bench
    chunk-speed`` alike; ragkit's caches emptied first); ratios against langchain in the same
    unit. langchain and chonkie get the same fast `tokenizers` WordPiece. Printed unless `quiet`."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter
    from tokenizers import Tokenizer

    from chonkie import RecursiveChunker as ChonkieRecursive

    from ..chunkers import RecursiveChunker, StructureChunker
    from ..chunkers.structure import clear_cache
    from ..evaluate.benchmarks import load_chroma
    from ..models import bundled_minilm
    from ..report.results import Recorder

    docs = load_chroma().documents
    if smoke:
        docs = [d for d in docs if d.id in ("chatlogs", "state_of_the_union")]
    n_chars = sum(len(d.text) for d in docs)
    raw = Tokenizer.from_file(str(bundled_minilm() / "tokenizer.json"))
    raw.no_truncation()
    raw.no_padding()

    def count(s: str) -> int:  # langchain's length function: one call per piece it weighs
        return len(raw.encode(s, add_special_tokens=False).ids)

    size = TOKEN_CAP
    contenders = {
        ("tokens", "ragkit structure"): lambda t: StructureChunker(soft=SOFT_CAP, hard=size)
        .chunk(t),
        ("tokens", "langchain recursive"): lambda t: RecursiveCharacterTextSplitter(
            chunk_size=size, chunk_overlap=0, length_function=count).split_text(t.text),
        ("tokens", "chonkie recursive"): lambda t: ChonkieRecursive(
            tokenizer=raw, chunk_size=size).chunk(t.text),
        ("chars", "ragkit recursive"): lambda t: RecursiveChunker(
            CHAR_CAP, 0, "chars", ["\n\n", "\n", " ", ""]).chunk(t),
        ("chars", "langchain recursive"): lambda t: RecursiveCharacterTextSplitter(
            chunk_size=CHAR_CAP, chunk_overlap=0).split_text(t.text),
        ("chars", "chonkie recursive"): lambda t: ChonkieRecursive(
            tokenizer="character", chunk_size=CHAR_CAP).chunk(t.text),
    }
    repeats = repeats or (1 if smoke else 3)
    speed = {}
    for key, fn in contenders.items():
        best = float("inf")
        for _ in range(repeats):
            clear_cache()  # a cold pass: no parse or count kept from an earlier run
            t0 = time.perf_counter()
            n = sum(len(fn(d)) for d in docs)
            best = min(best, time.perf_counter() - t0)
        speed[key] = (n_chars / best, n)
    rec = Recorder("bench_chunk_speed")
    rows = []
    for (unit, name), (cps, n) in speed.items():
        ratio = cps / speed[(unit, "langchain recursive")][0]
        rows.append([unit, name, f"{cps / 1e6:.2f}", f"{ratio:.2f}", n])
        rec.add(experiment="chunk_speed", benchmark="chroma", strategy=name, metric="chars_per_s",
                value=cps, k=None, params={"unit": unit, "size": size if unit == "tokens"
                                           else CHAR_CAP, "chars": n_chars, "chunks": n,
                                           "best_of": repeats})
        rec.add(experiment="chunk_speed", benchmark="chroma", strategy=name,
                metric="speed_vs_langchain", value=ratio, params={"unit": unit})
    rec.save()
    if not quiet:  # the command line's table; a notebook shows the rows itself
        print(f"{n_chars:,} characters of Chroma's corpora; best of {repeats} run(s)")
        print(text_table(["budget", "chunker", "M chars/s", "× langchain", "chunks"], rows))
    return rows


def matmul_gflops(n: int = 2048, repeats: int = 10) -> float:
    """The CPU's float32 matrix-multiply rate in this process, GFLOP/s: best of `repeats`
    ``n x n`` products with torch (the library that runs the encoder), 2 n^3 flops each."""
    import torch

    a, b = torch.rand(n, n), torch.rand(n, n)
    torch.mm(a, b)  # warm-up
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - t0)
    return 2 * n ** 3 / best / 1e9


def encoder_flops(emb, texts) -> float:
    """Floating-point operations of one forward pass of a BERT-style encoder over `texts`
    (each at its own token length, as the length-sorted batches pad little): per layer and
    token, 8 h^2 (the four attention projections) + 4 h i (the feed-forward), plus 4 n h per
    token for the attention scores and their weighted sum over its n tokens."""
    cfg = emb.model[0].auto_model.config
    h, inner, layers = cfg.hidden_size, cfg.intermediate_size, cfg.num_hidden_layers
    total = 0.0
    for n in emb.count_tokens(texts):
        n = min(n, emb.max_tokens)
        total += layers * n * (8 * h * h + 4 * h * inner + 4 * n * h)
    return total


def _timed(emb, texts, repeats: int):
    emb.encode(texts[:2])  # load, export and check before the clock starts
    best, vecs = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        vecs = emb.encode(texts)
        best = min(best, time.perf_counter() - t0)
    return best, vecs


def encoder_speed(smoke: bool = False) -> list[list]:
    """Texts per second of all-MiniLM-L6-v2 on torch (float32), under ONNX Runtime (float32)
    and on torch under bfloat16 autocast (the ``RAGKIT_EMBED_PRECISION=bf16`` opt-in), side by
    side in one process on the same texts (Chroma's 250-token chunks), best of 3; each
    backend's largest vector difference from torch float32 and its lowest cosine; and each
    one's achieved GFLOP/s as a fraction of the CPU's float32 matmul rate measured in the same
    process (`matmul_gflops`), so a reader sees how near the CPU's ceiling the encoder runs."""
    import numpy as np

    from ..chunkers.fixed import FixedTokenChunker
    from ..embed.encoders import Embedder, model_label
    from ..evaluate.benchmarks import load_chroma
    from ..report.results import Recorder

    chunker = FixedTokenChunker(250, 0, "cl100k_base")
    texts = [c.text for d in load_chroma().documents for c in chunker.chunk(d)][:64 if smoke
                                                                                  else 480]
    best_of = 1 if smoke else 3
    variants = {"torch": ("torch", "fp32"), "onnx": ("onnx", "fp32"),
                "torch bf16": ("torch", "bf16")}
    timed = {}
    for label, (backend, precision) in variants.items():
        emb = Embedder(backend=backend, precision=precision, cache=False, show_progress=False)
        timed[label] = _timed(emb, texts, best_of)
    flops = encoder_flops(emb, texts)
    peak = matmul_gflops()
    name = model_label(None)
    rec = Recorder("bench_encoder_speed")
    rows = []
    ref_secs, ref = timed["torch"]
    for label, (secs, vecs) in timed.items():
        ratio, achieved = ref_secs / secs, flops / secs / 1e9
        diff = float(np.abs(vecs - ref).max())
        cos = float((vecs * ref).sum(axis=1).min())
        rows.append([label, len(texts), f"{secs:.2f}", f"{len(texts) / secs:.1f}",
                     f"{ratio:.2f}", f"{diff:.1e}", f"{cos:.6f}", f"{achieved:.1f}",
                     f"{achieved / peak:.0%}"])
        common = {"experiment": "encoder_speed", "benchmark": "chroma", "strategy": label,
                  "embedder": name}
        rec.add(**common, metric="texts_per_s", value=len(texts) / secs,
                params={"texts": len(texts), "chunker": chunker.label, "best_of": best_of})
        rec.add(**common, metric="speed_vs_torch", value=ratio)
        rec.add(**common, metric="gflops", value=achieved, params={"flops": flops})
        rec.add(**common, metric="fraction_of_matmul_rate", value=achieved / peak,
                params={"matmul_gflops": peak})
        if label != "torch":
            rec.add(**common, metric="max_abs_difference", value=diff)
            rec.add(**common, metric="min_cosine_to_fp32", value=cos)
    rec.add(experiment="encoder_speed", benchmark="cpu", strategy="torch.mm 2048",
            metric="matmul_gflops", value=peak, embedder="")
    rec.save()
    print(text_table(["encoder", "texts", "seconds", "texts/s", "× torch", "max |Δ| vs fp32",
                      "min cos", "GFLOP/s", "of matmul"], rows))
    print(f"float32 matmul in this process: {peak:.1f} GFLOP/s (torch.mm, 2048 x 2048, best of "
          "10)")
    return rows


def rerank_speed(smoke: bool = False) -> list[list]:
    """Pairs per second of the packaged cross-encoder (ms-marco-MiniLM-L-12-v2, int8 ONNX) one
    pair at a time (its default) and in batches of 16 sorted by length, side by side in one
    process on the same pairs (one question against 24 chunks of 50 and 24 of 250 cl100k
    tokens from Chroma's first corpus; best of 3), and the largest score difference between the two: the int8 model's dynamic
    scales span a batch, so batching moves scores."""
    import numpy as np

    from ..chunkers.fixed import FixedTokenChunker
    from ..evaluate.benchmarks import load_chroma
    from ..models import packaged_cross_encoder
    from ..report.results import Recorder
    from ..retrieve.rerank import OnnxCrossEncoderScorer

    chunks = [c.text for size in (50, 250) for d in load_chroma().documents[:1]
              for c in FixedTokenChunker(size, 0, "cl100k_base").chunk(d)[:24]]
    pairs = [("how do refunds work for annual plans?", t) for t in chunks][:16 if smoke else 48]
    best_of = 1 if smoke else 3
    folder = packaged_cross_encoder()
    out, scores = {}, {}
    for batch in (1, 16):
        scorer = OnnxCrossEncoderScorer(folder, batch_size=batch, cache=False)
        scorer._run(pairs[:2])  # warm the session
        best = float("inf")
        for _ in range(best_of):
            t0 = time.perf_counter()
            scores[batch] = scorer._run(pairs)[:, 0]
            best = min(best, time.perf_counter() - t0)
        out[batch] = len(pairs) / best
    diff = float(np.abs(scores[1] - scores[16]).max())
    rec = Recorder("bench_rerank_speed")
    rows = []
    for batch, rate in out.items():
        rows.append([batch, len(pairs), f"{rate:.1f}", f"{rate / out[1]:.2f}"])
        rec.add(experiment="rerank_speed", benchmark="chroma", strategy=f"batch {batch}",
                metric="pairs_per_s", value=rate, embedder=folder.name,
                params={"pairs": len(pairs), "best_of": best_of, "max_length": 256})
    rec.add(experiment="rerank_speed", benchmark="chroma", strategy="batch 16 vs batch 1",
            metric="max_abs_score_difference", value=diff, embedder=folder.name)
    rec.save()
    print(text_table(["batch", "pairs", "pairs/s", "× one at a time"], rows))
    print(f"largest |score(batch 1) - score(batch 16)| over {len(pairs)} pairs: {diff:.3f}")
    return rows


def precision_drift(smoke: bool = False) -> list[list]:
    """What ``RAGKIT_EMBED_PRECISION=bf16`` does to retrieval: the paired span recall@B
    difference (bf16 − fp32) on the three benchmarks (`ragkit.experiments.drift.recall_drift`).
    Rows go to ``results/bench_precision.jsonl``."""
    from ..embed.encoders import Embedder
    from ..report.results import Recorder
    from .drift import recall_drift

    rec = Recorder("bench_precision")
    rows = recall_drift(rec, "precision_drift", "bf16",
                        Embedder(precision="bf16", show_progress=False),
                        Embedder(show_progress=False), smoke)
    rec.save()
    print(text_table(["benchmark", "budget", "bf16 − fp32 recall@B (pts) [95 % CI]",
                      "wins/losses/ties", "n"], rows))
    return rows


def _share_child(folder: str, part: int, parts: int, n: int) -> None:
    """One kernel of `thread_share`: encode its share of the texts once every kernel is ready
    (a file per kernel in `folder`), then write its seconds and vectors there."""
    import json
    from pathlib import Path

    import numpy as np

    from ..embed.encoders import Embedder

    texts = _share_texts(n)[part::parts]
    emb = Embedder(cache=False, show_progress=False)
    emb.encode(texts[:2])  # load, export and check before the clock starts
    out = Path(folder)
    (out / f"ready{part}").write_text("1", encoding="utf-8")
    while len(list(out.glob("ready*"))) < parts:
        time.sleep(0.01)
    t0 = time.perf_counter()
    vecs = emb.encode(texts)
    secs = time.perf_counter() - t0
    np.save(out / f"vectors{part}.npy", vecs)
    (out / f"seconds{part}.json").write_text(json.dumps(secs), encoding="utf-8")


def _share_texts(n: int) -> list[str]:
    from ..chunkers.fixed import FixedTokenChunker
    from ..evaluate.benchmarks import load_chroma

    chunker = FixedTokenChunker(250, 0, "cl100k_base")
    return [c.text for d in load_chroma().documents for c in chunker.chunk(d)][:n]


def _share_run(parts: int, n: int, running: int | None) -> tuple[float, "object"]:
    """Wall seconds of `parts` kernels encoding n texts between them at once (the slowest
    one's), and their vectors in text order; `running` is written to the file
    ``RAGKIT_RUNNING_KERNELS`` names (None: the variable is unset, each takes every thread)."""
    import json
    import os
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    import numpy as np

    from ..environment import RUNNING_KERNELS

    with tempfile.TemporaryDirectory(prefix="ragkit-share-") as tmp:
        env = {k: v for k, v in os.environ.items() if k != RUNNING_KERNELS}
        if running is not None:
            share = Path(tmp) / "running"
            share.write_text(str(running), encoding="utf-8")
            env[RUNNING_KERNELS] = str(share)
        code = ("import sys; from ragkit.experiments.speed import _share_child; "
                "_share_child(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))")
        procs = [subprocess.Popen([sys.executable, "-c", code, tmp, str(i), str(parts), str(n)],
                                  env=env, stderr=subprocess.PIPE, text=True)
                 for i in range(parts)]
        for p in procs:
            _, err = p.communicate()
            if p.returncode:
                raise RuntimeError(f"a thread_share kernel failed:\n{err[-2000:]}")
        secs = max(json.loads((Path(tmp) / f"seconds{i}.json").read_text()) for i in range(parts))
        pieces = [np.load(Path(tmp) / f"vectors{i}.npy") for i in range(parts)]
    vecs = np.empty((sum(len(p) for p in pieces), pieces[0].shape[1]), dtype=np.float32)
    for i, piece in enumerate(pieces):  # kernel i took texts i, i + parts, ...
        vecs[i::parts] = piece
    return secs, vecs


def thread_share(smoke: bool = False) -> list[list]:
    """Two notebook kernels encoding at once on this machine, as ``ragkit reproduce --jobs 2``
    runs them: each with every thread (each kernel's default), and each with its share of the
    CPUs (`ragkit.environment.cpu_share`, what the runner now sets), against one kernel encoding
    all the texts alone with every thread. Same texts (Chroma's 250-token chunks) split between
    the two; the vectors of every arrangement are compared with the lone kernel's, bit for bit."""
    import os

    import numpy as np

    from ..embed.encoders import model_label
    from ..report.results import Recorder

    n = 64 if smoke else 480
    ref_secs, ref = _share_run(1, n, None)
    arrangements = {"1 kernel, every thread (reference)": (ref_secs, ref),
                    "2 kernels, every thread each": _share_run(2, n, None),
                    "2 kernels, CPU share each": _share_run(2, n, 2)}
    rec, rows = Recorder("bench_threads"), []
    cpus = os.cpu_count() or 1
    for label, (secs, vecs) in arrangements.items():
        same = bool(np.array_equal(vecs, ref))
        rows.append([label, n, f"{secs:.1f}", f"{n / secs:.1f}", f"{secs / ref_secs:.2f}",
                     "yes" if same else f"no (max |Δ| {np.abs(vecs - ref).max():.1e})"])
        common = {"experiment": "thread_share", "benchmark": "chroma", "strategy": label,
                  "embedder": model_label(None), "params": {"texts": n, "cpus": cpus}}
        rec.add(**common, metric="seconds", value=secs)
        rec.add(**common, metric="time_vs_alone", value=secs / ref_secs)
        rec.add(**common, metric="vectors_identical", value=float(same))
    rec.save()
    print(text_table(["arrangement", "texts", "wall s", "texts/s", "time × alone",
                      "vectors identical"], rows))
    return rows


def _cached_lengths(cache_dir) -> list[int]:
    """Token counts (prompt and special tokens included) of every text whose vector is in the
    embedding cache under `cache_dir` (`Embedder` keys both caches by the same text key)."""
    from ..cache import VectorCache

    vectors, counts = VectorCache(cache_dir / "embeddings"), VectorCache(cache_dir / "token_counts")
    found, _ = counts.get(vectors.keys())
    return [int(v[0]) for v in found.values()]


def _texts_of_lengths(tokenizer, source: str, lengths, specials: int) -> list[str]:
    """A window of `source` for each length: about that many of `tokenizer`'s tokens, specials
    included (each starts where the one before ended, wrapping round)."""
    enc = tokenizer(source, add_special_tokens=False, return_offsets_mapping=True,
                    truncation=False, verbose=False)
    offsets, out, at = enc["offset_mapping"], [], 0
    for n in lengths:
        n = max(1, int(n) - specials)
        if at + n > len(offsets):
            at = 0
        out.append(source[offsets[at][0]:offsets[at + n - 1][1]])
        at += n
    return out


def encoder_floor(smoke: bool = False) -> list[list]:
    """How long the encoder alone needs for what the cache holds: after ``make reproduce`` on a
    fresh clone, the texts of every vector the course computed. The tokens the encoder reads
    (each text's count, cut at the model's limit) are summed, and the default encoder's rate is
    measured here on Chroma text cut to lengths drawn from the same counts; the floor is their
    quotient, the wall time of a cold run whose every other step took no time. (The cache's
    keys do not name their model: a cache that also holds another encoder's vectors, such as
    EmbeddingGemma's from ``RAGKIT_GEMMA_DIR``, overstates the count.)"""
    import os

    import numpy as np

    from ..config import get_settings
    from ..embed.encoders import Embedder, model_label
    from ..evaluate.benchmarks import load_chroma
    from ..report.results import Recorder

    cache_dir = get_settings().cache_dir
    lengths = np.asarray(_cached_lengths(cache_dir), dtype=np.int64)
    if not len(lengths):
        raise SystemExit(f"{cache_dir}: no cached vectors with token counts; run make reproduce "
                         "first (the floor is read from what it embedded)")
    emb = Embedder(cache=False, show_progress=False)
    limit = emb.max_tokens
    read = np.minimum(lengths, limit)
    rng = np.random.default_rng(0)
    sample = rng.choice(read, size=64 if smoke else 960, replace=True)
    source = "\n\n".join(d.text for d in load_chroma().documents)
    specials = emb.count_tokens([""])[0]  # the prompt and special tokens of an empty text
    texts = _texts_of_lengths(emb.tokenizer, source, sample, specials)
    measured = np.minimum(emb.count_tokens(texts), limit)
    secs, _ = _timed(emb, texts, 1)
    rate = float(measured.sum()) / secs
    floor = float(read.sum()) / rate
    name = model_label(None)
    rows = [[name, len(lengths), f"{int(read.sum()):,}", f"{rate:,.0f}", f"{floor / 60:.1f}",
             os.cpu_count()]]
    rec = Recorder("bench_floor")
    common = {"experiment": "encoder_floor", "benchmark": "cache", "strategy": emb.backend,
              "embedder": name, "params": {"texts": int(len(lengths)), "tokens": int(read.sum()),
                                           "limit": limit, "sample": int(len(texts)),
                                           "cpus": os.cpu_count()}}
    rec.add(**common, metric="tokens_per_s", value=rate)
    rec.add(**common, metric="floor_minutes", value=floor / 60)
    rec.save()
    print(text_table(["encoder", "cached texts", "tokens read", "tokens/s", "floor (min)",
                      "CPUs"], rows))
    return rows
