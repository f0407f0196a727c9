"""Two checks on an encoder, shared by notebook 00 and the benches: `timed_turns` (every run's
seconds of several embedders on the same texts, taking turns, so a busy moment slows them all)
and `batch_drift` (whether a text's vector depends on the batch it shares); `compare_backends`
applies the first to torch against ONNX Runtime."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np


def timed_turns(embedders: Mapping[str, object], texts: Sequence[str], repeats: int = 1
                ) -> tuple[dict[str, list[float]], dict[str, np.ndarray]]:
    """Encode `texts` `repeats` times with each of `embedders` (name -> embedder), the
    embedders taking turns; each is loaded (and an ONNX graph exported) on two texts before the
    clock starts. Returns every run's seconds per name and each one's last vectors."""
    texts = list(texts)
    runs: dict[str, list[float]] = {name: [] for name in embedders}
    vecs: dict[str, np.ndarray] = {}
    for emb in embedders.values():
        emb.encode(texts[:2])
    for _ in range(repeats):
        for name, emb in embedders.items():
            t0 = time.perf_counter()
            vecs[name] = emb.encode(texts)
            runs[name].append(time.perf_counter() - t0)
    return runs, vecs


def compare_backends(texts: Sequence[str], model: str | Path | None = None,
                     repeats: int = 1) -> dict:
    """Encode the same texts on torch and under ONNX Runtime (`timed_turns`): each backend's
    best seconds, every run's seconds (``torch_runs``, ``onnx_runs``), and the largest
    difference between their vectors. Both run in float32 (the exported graph's precision),
    whatever ``RAGKIT_EMBED_PRECISION`` says; nothing is cached."""
    from .encoders import Embedder

    runs, vecs = timed_turns({b: Embedder(model, backend=b, cache=False, show_progress=False,
                                          precision="fp32") for b in ("torch", "onnx")},
                             texts, repeats)
    return {**{b: min(r) for b, r in runs.items()}, **{f"{b}_runs": r for b, r in runs.items()},
            "max_abs_difference": float(np.abs(vecs["torch"] - vecs["onnx"]).max())}


def batch_drift(make: Callable[[int], object], texts: Sequence[str], alone: int = 6) -> float:
    """Largest difference between a text's vectors embedded in one batch, in batches of four in
    reverse order and (the first `alone`) one at a time; `make(batch_size)` gives the
    embedder. 0 means a text's vector does not depend on the batch it shares."""
    texts = list(texts)
    one = make(len(texts)).encode(texts)
    small = make(4)
    fours = small.encode(texts[::-1])[::-1]
    single = np.stack([small.encode([t])[0] for t in texts[:alone]])
    return float(max(np.abs(one - fours).max(), np.abs(one[:alone] - single).max()))
