"""How fast the machinery runs: chunkers in characters per second, the encoder in texts per
second on torch and under ONNX Runtime.

`chunk_speed` (notebook 02, ``ragkit bench chunk-speed``) times ragkit's structure and recursive
chunkers against langchain's and chonkie's recursive splitters on Chroma's corpora;
`encoder_speed` (``ragkit bench encoder-speed``) times all-MiniLM-L6-v2 on both backends over
the same texts. Each prints a table and writes its rows (``results/bench_<name>.jsonl``).
"""

from __future__ import annotations

import time

from ..report.tables import text_table


def chunk_speed(smoke: bool = False, repeats: int | None = None) -> list[list]:
    """Characters per second: ragkit's structure chunker vs langchain's and chonkie's recursive
    splitters on Chroma's corpora, all budgeting MiniLM WordPiece tokens (254 per chunk), plus
    character-budget rows. Best of `repeats` runs each (3, or 1 in the smoke profile; the
    notebook takes one run, ``ragkit bench chunk-speed`` three); ratios against langchain in
    the same unit."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter
    from tokenizers import Tokenizer
    from transformers import AutoTokenizer

    from chonkie import RecursiveChunker as ChonkieRecursive

    from ..chunkers import RecursiveChunker, StructureChunker
    from ..evaluate.benchmarks import load_chroma
    from ..models import bundled_minilm
    from ..report.results import Recorder

    docs = load_chroma().documents
    if smoke:
        docs = [d for d in docs if d.id in ("chatlogs", "state_of_the_union")]
    n_chars = sum(len(d.text) for d in docs)
    hf = AutoTokenizer.from_pretrained(str(bundled_minilm()))
    raw = Tokenizer.from_file(str(bundled_minilm() / "tokenizer.json"))
    raw.no_truncation()
    raw.no_padding()

    def count(s: str) -> int:
        return len(hf(s, add_special_tokens=False, verbose=False)["input_ids"])

    size = 254
    contenders = {
        ("tokens", "ragkit structure"): lambda t: StructureChunker(soft=180, hard=size)
        .chunk(t),
        ("tokens", "langchain recursive"): lambda t: RecursiveCharacterTextSplitter(
            chunk_size=size, chunk_overlap=0, length_function=count).split_text(t.text),
        ("tokens", "chonkie recursive"): lambda t: ChonkieRecursive(
            tokenizer=raw, chunk_size=size).chunk(t.text),
        ("chars", "ragkit recursive"): lambda t: RecursiveChunker(
            1000, 0, "chars", ["\n\n", "\n", " ", ""]).chunk(t),
        ("chars", "langchain recursive"): lambda t: RecursiveCharacterTextSplitter(
            chunk_size=1000, chunk_overlap=0).split_text(t.text),
        ("chars", "chonkie recursive"): lambda t: ChonkieRecursive(
            tokenizer="character", chunk_size=1000).chunk(t.text),
    }
    repeats = repeats or (1 if smoke else 3)
    speed = {}
    for key, fn in contenders.items():
        best = float("inf")
        for _ in range(repeats):
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
                                           else 1000, "chars": n_chars, "chunks": n,
                                           "best_of": repeats})
        rec.add(experiment="chunk_speed", benchmark="chroma", strategy=name,
                metric="speed_vs_langchain", value=ratio, params={"unit": unit})
    rec.save()
    print(f"{n_chars:,} characters of Chroma's corpora; best of {repeats} run(s)")
    print(text_table(["budget", "chunker", "M chars/s", "× langchain", "chunks"], rows))
    return rows


def encoder_speed(smoke: bool = False) -> list[list]:
    """Texts per second of all-MiniLM-L6-v2 on torch and under ONNX Runtime, side by side in
    one process on the same texts (Chroma's 250-token chunks), best of 3; plus the largest
    difference between the two backends' vectors."""
    from ..chunkers.fixed import FixedTokenChunker
    from ..embed.encoders import compare_backends, model_label
    from ..evaluate.benchmarks import load_chroma
    from ..report.results import Recorder

    chunker = FixedTokenChunker(250, 0, "cl100k_base")
    texts = [c.text for d in load_chroma().documents for c in chunker.chunk(d)][:64 if smoke
                                                                                  else 480]
    best_of = 1 if smoke else 3
    timing = compare_backends(texts, repeats=best_of)
    name = model_label(None)
    rec = Recorder("bench_encoder_speed")
    rows = []
    for backend in ("torch", "onnx"):
        secs, ratio = timing[backend], timing["torch"] / timing[backend]
        rows.append([backend, len(texts), secs, len(texts) / secs, f"{ratio:.2f}"])
        rec.add(experiment="encoder_speed", benchmark="chroma", strategy=backend,
                metric="texts_per_s", value=len(texts) / secs, embedder=name,
                params={"texts": len(texts), "chunker": chunker.label, "best_of": best_of})
        rec.add(experiment="encoder_speed", benchmark="chroma", strategy=backend,
                metric="speed_vs_torch", value=ratio, embedder=name)
    rec.add(experiment="encoder_speed", benchmark="chroma", strategy="onnx vs torch",
            metric="max_abs_difference", value=timing["max_abs_difference"], embedder=name)
    rec.save()
    print(text_table(["backend", "texts", "seconds", "texts/s", "× torch"], rows))
    print(f"largest |torch - onnx| over {len(texts)} vectors: "
          f"{timing['max_abs_difference']:.1e}")
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
