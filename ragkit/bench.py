"""Benchmark scripts that print their figures (and write results rows).

    python -m ragkit.bench chroma-repro        # Chroma's MiniLM table, ours beside theirs
    python -m ragkit.bench anthropic-baseline  # Pass@5/10/20 on upstream's own chunks
    python -m ragkit.bench chunk-speed         # chars/s: structure vs langchain vs chonkie
    python -m ragkit.bench encoder-speed       # MiniLM on torch vs ONNX Runtime, same texts

Each prints one table and writes its rows to ``results/bench_<name>.jsonl``. Add
``--smoke`` to run a small slice (a quick check that the machinery works, not a reproduction).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from .published import ANTHROPIC_PUBLISHED, CHROMA_PUBLISHED, chroma_best  # noqa: F401


def _table(headers: list[str], rows: list[list]) -> str:
    cols = [headers] + [[f"{v:.1f}" if isinstance(v, float) else str(v) for v in r] for r in rows]
    widths = [max(len(r[i]) for r in cols) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in cols]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def chroma_repro(smoke: bool = False) -> list[list]:
    from .benchmarks import load_chroma
    from .chunkers.fixed import FixedTokenChunker
    from .chunkers.recursive import RecursiveChunker
    from .embed import Embedder
    from .pipeline import run_experiment
    from .results import Recorder

    bench = load_chroma()
    if smoke:
        bench = bench.for_profile("smoke")
    emb = Embedder()  # all-MiniLM-L6-v2, max_seq_length 256 as upstream
    rec = Recorder("bench_chroma_repro")
    rows = []
    for (kind, size, overlap), pub in CHROMA_PUBLISHED.items():
        if kind == "cluster":  # embeds every sentence (minutes each); notebook 02 measures it
            continue
        chunker = (RecursiveChunker(size, overlap, "cl100k_base") if kind == "recursive"
                   else FixedTokenChunker(size, overlap, "cl100k_base"))
        t0 = time.time()
        out = run_experiment(bench, chunker, emb, k=5)
        m = out.means
        ours = [100 * m["recall"], 100 * m["precision"], 100 * m["precision_omega"],
                100 * m["iou"]]
        out.record(rec, experiment="chroma_repro", embedder=emb.name, k=5)
        for name, value in zip(("published_recall", "published_precision",
                                "published_precision_omega", "published_iou"), pub):
            rec.add(experiment="chroma_repro", benchmark="chroma", strategy=out.strategy,
                    metric=name, value=value / 100, embedder="all-MiniLM-L6-v2 (Chroma report)",
                    k=5, n_queries=472, params={"source": "Chroma technical report, 2024"})
        rows.append([f"{kind} {size}/{overlap}", ours[0], pub[0], ours[0] - pub[0], ours[3],
                     pub[3], ours[3] - pub[3], ours[1], ours[2], int(m["n_chunks"]),
                     ";".join(out.flags) or "-", f"{time.time() - t0:.0f}s"])
    rec.save()
    print(_table(["chunker (cl100k)", "recall", "pub", "Δ", "IoU", "pub", "Δ", "prec", "prec_Ω",
                  "chunks", "flags", "time"], rows))
    return rows


def anthropic_baseline(smoke: bool = False) -> list[list]:
    from .benchmarks import load_anthropic
    from .embed import Embedder
    from .pipeline import recall_at, run_experiment
    from .results import Recorder

    bench = load_anthropic()
    if smoke:
        bench = bench.for_profile("smoke")
    emb = Embedder()
    rec = Recorder("bench_anthropic_baseline")
    out = run_experiment(bench, embedder=emb, k=5, chunks=bench.chunks, depth=20,
                         label="upstream")
    passk = recall_at(out, bench.queries, (5, 10, 20), per_query=True)
    out.record(rec, experiment="anthropic_baseline", embedder=emb.name, k=5)
    rows = [["upstream chunks + " + emb.name, *(100 * passk[f"pass@{k}"] for k in (5, 10, 20))]]
    for name, vals in list(ANTHROPIC_PUBLISHED.items())[:1]:
        rows.append([name + " (published)", *vals])
        for k, v in zip((5, 10, 20), vals):
            rec.add(experiment="anthropic_baseline", benchmark="anthropic", strategy="upstream",
                    metric=f"published_pass@{k}", value=v / 100, embedder="voyage-2", k=k,
                    n_queries=248, params={"source": "Anthropic contextual-retrieval cookbook"})
    rec.save()
    print(_table(["run", "Pass@5", "Pass@10", "Pass@20"], rows))
    return rows


def chunk_speed(smoke: bool = False) -> list[list]:
    """Characters per second: ragkit's structure chunker vs langchain's and chonkie's recursive
    splitters on Chroma's corpora, all budgeting MiniLM WordPiece tokens (254 per chunk), plus
    character-budget rows. Best of 3 runs each; ratios against langchain in the same unit."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter
    from tokenizers import Tokenizer
    from transformers import AutoTokenizer

    from chonkie import RecursiveChunker as ChonkieRecursive

    from .benchmarks import load_chroma
    from .chunkers import RecursiveChunker, StructureChunker
    from .embed import bundled_minilm
    from .results import Recorder

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
    speed = {}
    for key, fn in contenders.items():
        best = float("inf")
        for _ in range(1 if smoke else 3):
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
                                           else 1000, "chars": n_chars, "chunks": n})
        rec.add(experiment="chunk_speed", benchmark="chroma", strategy=name,
                metric="speed_vs_langchain", value=ratio, params={"unit": unit})
    rec.save()
    print(f"{n_chars:,} characters of Chroma's corpora; best of {1 if smoke else 3} runs")
    print(_table(["budget", "chunker", "M chars/s", "× langchain", "chunks"], rows))
    return rows


def encoder_speed(smoke: bool = False) -> list[list]:
    """Texts per second of all-MiniLM-L6-v2 on torch and under ONNX Runtime, side by side in
    one process on the same texts (Chroma's 250-token chunks), best of 3; plus the largest
    difference between the two backends' vectors."""
    from .benchmarks import load_chroma
    from .chunkers.fixed import FixedTokenChunker
    from .embed import compare_backends, model_label
    from .results import Recorder

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
    print(_table(["backend", "texts", "seconds", "texts/s", "× torch"], rows))
    print(f"largest |torch - onnx| over {len(texts)} vectors: "
          f"{timing['max_abs_difference']:.1e}")
    return rows


COMMANDS = {"chroma-repro": chroma_repro, "anthropic-baseline": anthropic_baseline,
            "chunk-speed": chunk_speed, "encoder-speed": encoder_speed}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ragkit.bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("command", choices=sorted(COMMANDS))
    p.add_argument("--smoke", action="store_true", help="a small slice, to check the machinery")
    args = p.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from .config import seed_everything

    seed_everything()
    COMMANDS[args.command](smoke=args.smoke)
    return 0


if __name__ == "__main__":
    sys.exit(main())
