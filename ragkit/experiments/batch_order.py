"""Why the encoder sorts its batches by tokens (``ragkit bench batch-order``).

A batch is padded to its longest text, so the padding a run encodes depends on which texts
share a batch. Sorting by characters groups fixed-size chunks together, yet code and prose
differ in characters per token, so equal characters are not equal tokens. `batch_order` encodes
the same mixed texts (three benchmarks, three chunkers) with batches formed both ways, in one
process, alternating the two orders for `best_of` rounds, and reports each order's seconds,
the padding it encoded (tokens of padding over tokens of text) and the largest difference
between the two orders' vectors (0: the order changes the time only).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def mixed_texts(n: int = 600) -> list[str]:
    """`n` chunk texts, an equal share from each of course, chroma and anthropic, each share
    cut by fixed 1000/200 characters, recursive 1000/200 characters and the structure chunker,
    taken at even steps through each benchmark's chunks (deterministic)."""
    from ..chunkers import FixedCharChunker, RecursiveChunker, StructureChunker
    from ..evaluate.benchmarks import load

    chunkers = [FixedCharChunker(1000, 200), RecursiveChunker(1000, 200, tokenizer="chars"),
                StructureChunker()]
    parts = [(name, c) for name in ("course", "chroma", "anthropic") for c in chunkers]
    per = -(-n // len(parts))
    out: list[str] = []
    for name, chunker in parts:
        texts = [c.text for c in chunker.chunk_all(load(name).documents) if c.text.strip()]
        step = max(1, len(texts) // per)
        out += texts[::step][:per]
    return out[:n]


def char_batches(texts: Sequence[str], size: int) -> list[np.ndarray]:
    """Positions cut into batches of `size`, longest first by characters (ties keep order)."""
    order = np.argsort(-np.array([len(t) for t in texts]), kind="stable")
    return [order[i: i + size] for i in range(0, len(order), size)]


def padding_share(batches: Sequence[np.ndarray], counts: Sequence[int], limit: int) -> float:
    """Padding tokens over text tokens when each batch is padded to its longest member (each
    count capped at the encoder's `limit`).

    >>> round(padding_share([np.array([0, 1]), np.array([2])], [4, 2, 3], 512), 4)
    0.2222
    """
    capped = np.minimum(np.asarray(counts), limit)
    padded = sum(int(capped[b].max()) * len(b) for b in batches)
    return padded / int(capped.sum()) - 1


def batch_order(texts: Sequence[str], best_of: int = 3, batch_size: int = 32) -> dict:
    """{order: {"seconds", "padding"}} for batches by tokens (the encoder's) and by characters,
    plus "max_abs_difference" between their vectors and "texts"; ONNX Runtime, float32, no
    cache, one process, the two orders alternating."""
    import time

    from ..embed.encoders import Embedder

    emb = Embedder(backend="onnx", cache=False, show_progress=False, batch_size=batch_size,
                   precision="fp32")
    texts = list(texts)
    counts = emb.count_tokens(texts)
    by_tokens = emb.batches
    orders = {"tokens": by_tokens, "characters": lambda _counts: char_batches(texts, batch_size)}
    emb.encode(texts[:2])  # load and export before the clock starts
    best = {k: float("inf") for k in orders}
    vectors = {}
    try:
        for _ in range(best_of):
            for name, batches in orders.items():
                emb.batches = batches  # the one thing that differs between the two runs
                t0 = time.perf_counter()
                # the encoder's own batch loop over these texts in this order, no cache
                vectors[name] = emb._encode_batches(texts, counts, "document")
                best[name] = min(best[name], time.perf_counter() - t0)
    finally:
        emb.batches = by_tokens
    limit = emb.max_tokens
    out = {name: {"seconds": best[name],
                  "padding": padding_share(orders[name](counts), counts, limit)}
           for name in orders}
    return {**out, "texts": len(texts),
            "max_abs_difference": float(np.abs(vectors["tokens"] - vectors["characters"]).max())}


def run(smoke: bool = False) -> dict:
    """Measure, print and record (``results/bench_batch_order.jsonl``)."""
    from ..embed.encoders import model_label
    from ..report.results import Recorder
    from ..report.tables import text_table

    texts = mixed_texts(96 if smoke else 600)
    got = batch_order(texts, best_of=1 if smoke else 3)
    rec = Recorder("bench_batch_order")
    rows = []
    for name in ("characters", "tokens"):
        r = got[name]
        rows.append([f"by {name}", got["texts"], f"{r['seconds']:.1f}",
                     f"{100 * r['padding']:.1f} %",
                     f"{got['characters']['seconds'] / r['seconds']:.2f}x"])
        common = {"experiment": "batch_order", "benchmark": "course+chroma+anthropic",
                  "strategy": f"by {name}", "embedder": model_label(None),
                  "params": {"texts": got["texts"], "batch_size": 32,
                             "best_of": 1 if smoke else 3}}
        rec.add(**common, metric="seconds", value=r["seconds"])
        rec.add(**common, metric="padding_share", value=r["padding"])
    rec.add(experiment="batch_order", benchmark="course+chroma+anthropic", strategy="by tokens",
            metric="max_abs_difference_vs_characters", value=got["max_abs_difference"],
            embedder=model_label(None))
    rec.save()
    print(text_table(["batches", "texts", "seconds (best)", "padding", "speed vs characters"],
                     rows))
    print(f"largest vector difference between the two orders: {got['max_abs_difference']:.1e}")
    return got


def readme_lines(folder) -> list[str]:
    """The speed page's sentence from ``bench_batch_order.jsonl`` (none where it is absent)."""
    from ..report.results import read_rows

    path = folder / "bench_batch_order.jsonl"
    if not path.exists():
        return []
    by = {(r["strategy"], r["metric"]): r for r in read_rows(path)}
    chars, tokens = by[("by characters", "seconds")], by[("by tokens", "seconds")]
    pad = {k: by[(k, "padding_share")]["value"] for k in ("by characters", "by tokens")}
    diff = by[("by tokens", "max_abs_difference_vs_characters")]["value"]
    p = tokens["params"]
    return ["", f"Why the encoder sorts its batches by tokens (`ragkit bench batch-order`: "
            f"{p['texts']} chunks of three benchmarks and three chunkers, batches of "
            f"{p['batch_size']}, best of {p['best_of']}, one process): by tokens "
            f"{tokens['value']:.1f} s with {100 * pad['by tokens']:.1f} % padding, by characters "
            f"{chars['value']:.1f} s with {100 * pad['by characters']:.1f} % "
            f"({chars['value'] / tokens['value']:.2f}x); the largest vector difference between "
            f"the two orders is {diff:.1e}; measured {tokens['timestamp'][:10]} at commit "
            f"{tokens['git_sha'][:7]}."]
