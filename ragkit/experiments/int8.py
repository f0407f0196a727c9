"""int8 weights for the encoder, measured like the bfloat16 opt-in (``ragkit bench int8``).

Issue 48 asked for int8 to be measured the way bf16 was, and offered only if it passes the
same check. This module measures it; it is not a setting. The encoder's ONNX graph (the
float32 one every recorded row uses) is quantized by ONNX Runtime's `quantize_dynamic`: the
weights of its matrix products in int8, one scale per output channel, the activations
quantized on the fly with a scale computed over each batch. Three readings, side by side:

- **speed**: texts per second of the int8 graph against the float32 graph, on the same texts,
  in one process, the two taking turns (best of 3);
- **batch drift** (`ragkit.embed.checks.batch_drift`): the largest difference between a text's vectors embedded in one batch, in
  batches of four in reverse order and one at a time (the float32 graph gives 0, which is why
  it is the CPU default: a rerun writes the same rows however its batches fall);
- **retrieval drift**: the paired span recall@B difference (int8 − float32) with its 95 %
  interval on the three benchmarks at 512 / 1,024 / 2,048 tokens, on the same chunks
  (fixed 1,000/200 characters) with dense search, as ``ragkit bench precision`` reads bf16.

Rows go to ``results/bench_int8.jsonl``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path


def quantized_graph(graph: bytes) -> bytes:
    """`graph` (ONNX bytes) with its MatMul weights in int8, per output channel, and its
    activations quantized dynamically (`onnxruntime.quantization.quantize_dynamic`)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory() as folder:
        src, dst = Path(folder) / "fp32.onnx", Path(folder) / "int8.onnx"
        src.write_bytes(graph)
        quantize_dynamic(src, dst, per_channel=True, weight_type=QuantType.QInt8,
                         op_types_to_quantize=["MatMul"])
        return dst.read_bytes()


def int8_embedder(batch_size: int = 32):
    """An uncached MiniLM `Embedder` on ONNX Runtime whose graph is `quantized_graph` of the
    checked float32 one. Its vectors are never cached, so they cannot mix with the record's."""
    from ..embed.encoders import Embedder
    from ..embed.onnx import OnnxTransformer

    emb = Embedder(backend="onnx", precision="fp32", cache=False, show_progress=False,
                   batch_size=batch_size)
    fp32 = emb._graph()  # the checked float32 graph; the int8 one replaces it on this object
    emb._onnx = OnnxTransformer(None, fp32.names, graph=quantized_graph(fp32.graph))
    return emb


def int8_check(smoke: bool = False) -> dict:
    """The three readings of the module docstring, printed and written to
    ``results/bench_int8.jsonl``; returns each run's seconds, the lowest cosine, the batch
    drift of each graph and the drift table's rows."""
    from ..chunkers.fixed import FixedTokenChunker
    from ..embed.checks import batch_drift, timed_turns
    from ..embed.encoders import Embedder
    from ..evaluate.benchmarks import load, load_chroma
    from ..report.prose import speed_sentence
    from ..report.results import Recorder
    from ..report.tables import text_table
    from .drift import recall_drift

    rec, name = Recorder("bench_int8"), "all-MiniLM-L6-v2"
    fp32 = lambda b=32: Embedder(backend="onnx", precision="fp32", cache=False,  # noqa: E731
                                 show_progress=False, batch_size=b)
    chunker = FixedTokenChunker(250, 0, "cl100k_base")
    texts = [c.text for d in load_chroma().documents for c in chunker.chunk(d)][:64 if smoke
                                                                                  else 480]
    runs, vecs = timed_turns({"int8": int8_embedder(), "fp32": fp32()}, texts, 1 if smoke else 3)
    runs8, runs32 = runs["int8"], runs["fp32"]
    cos = float((vecs["int8"] * vecs["fp32"]).sum(axis=1).min())
    print(speed_sentence("int8", runs8, "float32", runs32,
                         what=f"the same {len(texts)} Chroma chunks (ONNX Runtime)"))
    print(f"lowest cosine between a text's int8 and float32 vectors: {cos:.4f}")
    common = {"experiment": "int8", "benchmark": "chroma", "embedder": name}
    rec.add(**common, strategy="onnx int8", metric="speed_vs_fp32",
            value=min(runs32) / min(runs8),
            params={"texts": len(texts), "int8_runs": runs8, "fp32_runs": runs32})
    rec.add(**common, strategy="onnx int8", metric="min_cosine_to_fp32", value=cos)

    course = load("course")  # the drift check's paragraphs
    mixed = [p for d in course.documents for p in d.text.split("\n\n") if len(p) > 50][:24]
    drift = {"fp32": batch_drift(fp32, mixed), "int8": batch_drift(int8_embedder, mixed)}
    print(f"largest difference across batchings ({len(mixed)} course paragraphs): "
          f"float32 {drift['fp32']:.1e} · int8 {drift['int8']:.1e}")
    for label, value in drift.items():
        rec.add(experiment="int8", benchmark="course", embedder=name, strategy=f"onnx {label}",
                metric="batch_drift", value=value, params={"texts": len(mixed)})

    rows = recall_drift(rec, "int8_drift", "int8", int8_embedder(), Embedder(show_progress=False),
                        smoke)
    rec.save()
    print(text_table(["benchmark", "budget", "int8 − fp32 recall@B (pts) [95 % CI]",
                      "wins/losses/ties", "n"], rows))
    return {"int8_runs": runs8, "fp32_runs": runs32, "min_cosine": cos, "drift": drift,
            "rows": rows}
