"""The ONNX Runtime backend of `ragkit.embed.Embedder`: a sentence-transformers model's
Transformer module exported to ONNX in memory (never written to disk), run by ONNX Runtime on
the CPU, and checked against torch before it is used.

`Embedder` decides when it applies (``RAGKIT_EMBED_BACKEND``, see `ragkit.embed`); this module
holds the export, the check and the per-process graph cache.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, Sequence

import numpy as np

ONNX_MODEL_TYPES = ("bert",)  # what `auto` runs under ONNX Runtime (exported and checked)
ONNX_TOLERANCE = 1e-4        # largest |torch - onnx| allowed on the probe batches


class OnnxFallbackWarning(UserWarning):
    """The ONNX Runtime graph could not be built or disagreed with torch; torch is used."""


class OnnxTransformer:
    """A sentence-transformers model's Transformer module, exported to ONNX in memory and run by
    ONNX Runtime on the CPU. Called with tokenizer features, it returns the token embeddings
    the torch module would (batch x tokens x hidden, as a torch tensor)."""

    def __init__(self, auto_model: Any, input_names: Sequence[str]):
        import io

        import onnxruntime as ort
        import torch

        names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in input_names]

        class _States(torch.nn.Module):
            def __init__(self, model):
                super().__init__()
                self.model = model

            def forward(self, *tensors):
                return self.model(**dict(zip(names, tensors))).last_hidden_state

        # trace with a padded batch: with an all-ones mask transformers may drop the mask
        ids = torch.tensor([[1, 5, 6, 7, 2], [1, 5, 2, 0, 0]])
        example = {"input_ids": ids, "attention_mask": (ids > 0).long(),
                   "token_type_ids": torch.zeros_like(ids)}
        buf = io.BytesIO()
        # the eager attention graph runs ~1.2x faster under ONNX Runtime than the SDPA one
        attn = getattr(auto_model.config, "_attn_implementation", None)
        switch = getattr(auto_model, "set_attn_implementation", None)
        swap = switch is not None and attn not in (None, "eager")
        with warnings.catch_warnings(), torch.inference_mode():
            warnings.simplefilter("ignore")
            if swap:
                switch("eager")
            try:
                torch.onnx.export(_States(auto_model).eval(), tuple(example[n] for n in names),
                                  buf, input_names=names, output_names=["token_embeddings"],
                                  dynamic_axes={n: {0: "batch", 1: "tokens"}
                                                for n in [*names, "token_embeddings"]},
                                  opset_version=17, dynamo=False)
            finally:
                if swap:
                    switch(attn)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = torch.get_num_threads()
        opts.inter_op_num_threads = 1
        self.names = names
        self.session = ort.InferenceSession(buf.getvalue(), opts,
                                            providers=["CPUExecutionProvider"])

    def __call__(self, features: dict) -> "Any":
        import torch

        ids = features["input_ids"]
        feed = {n: (features[n] if n in features else torch.zeros_like(ids)).cpu().numpy()
                .astype(np.int64) for n in self.names}
        (states,) = self.session.run(None, feed)
        return torch.from_numpy(states)


GRAPHS: dict[str, OnnxTransformer] = {}  # one exported graph per model fingerprint and process

PROBES = ["refund", "Refunds are issued within 14 days, for unused services only. " * 6,
          "Rate limits: 600 requests per minute per key."]


def onnx_runtime_missing() -> str | None:
    """Why the ONNX backend cannot run here for want of packages (None: it can)."""
    try:
        import onnx  # noqa: F401  (the exporter needs it)
        import onnxruntime  # noqa: F401
    except ImportError:
        return "onnxruntime and onnx are not installed (pip install 'ragkit[cpu]')"
    return None


def checked_graph(fingerprint: str, auto_model: Any, input_names: Sequence[str],
                  run: Callable[[Sequence[str], Callable], np.ndarray],
                  torch_states: Callable) -> OnnxTransformer:
    """The model's transformer exported once per process (keyed by `fingerprint`), checked
    against torch on padded and unpadded probe batches: ``run(texts, states)`` must give the same
    unit vectors (within `ONNX_TOLERANCE`) with the graph as with `torch_states`, else
    RuntimeError."""
    if fingerprint in GRAPHS:
        return GRAPHS[fingerprint]
    graph = OnnxTransformer(auto_model, input_names)
    for batch in (PROBES, PROBES[1:2]):
        gap = float(np.abs(run(batch, torch_states) - run(batch, graph)).max())
        if not gap <= ONNX_TOLERANCE:
            raise RuntimeError(f"exported graph differs from torch by {gap:.1e}")
    GRAPHS[fingerprint] = graph
    return graph


