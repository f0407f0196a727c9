"""The ONNX Runtime backend of `ragkit.embed.Embedder`: a sentence-transformers model's
Transformer module exported to ONNX, run by ONNX Runtime on the CPU, and checked against torch
before it is first used.

`Embedder` decides when it applies (``RAGKIT_EMBED_BACKEND``, see `ragkit.embed`); this module
holds the export, the check, the per-process graph cache and the on-disk one: the exported
graph (an ``.onnx`` file, no pickle) is kept under ``<cache>/onnx/``, keyed by `graph_key` (the
weights' fingerprint and the exporter's versions and settings) with the sha256 of the bytes
that passed the check, because exporting and checking cost about 4 s of each new process
(every notebook kernel, every ``ragkit`` command). A cached graph whose bytes differ from the
recorded ones, or that does not load, is exported again, with an `OnnxCacheWarning`.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

ONNX_MODEL_TYPES = ("bert",)  # what `auto` runs under ONNX Runtime (exported and checked)
ONNX_TOLERANCE = 1e-4        # largest |torch - onnx| allowed on the probe batches
OPSET = 17


class OnnxFallbackWarning(UserWarning):
    """The ONNX Runtime graph could not be built or disagreed with torch; torch is used."""


class OnnxCacheWarning(UserWarning):
    """A cached ONNX graph did not load or failed the check against torch; it is re-exported."""


class OnnxTransformer:
    """A sentence-transformers model's Transformer module as an ONNX graph (`export_graph`, or
    the bytes of one exported before), run by ONNX Runtime on the CPU. Called with tokenizer
    features, it returns the token embeddings
    the torch module would (batch x tokens x hidden, as a torch tensor)."""

    def __init__(self, auto_model: Any, input_names: Sequence[str], graph: bytes | None = None):
        import onnxruntime as ort
        import torch

        names = graph_inputs(input_names)
        self.graph = graph if graph is not None else export_graph(auto_model, names)
        self.names = names
        self.base_threads = torch.get_num_threads()
        self.sessions: dict[int, Any] = {}  # by thread count (see `ragkit.environment.cpu_share`)
        self.session = self.session_for(self.base_threads)

    def session_for(self, threads: int) -> Any:
        """An ONNX Runtime session on `threads` intra-op threads (made once per count)."""
        if threads not in self.sessions:
            import onnxruntime as ort

            opts = ort.SessionOptions()
            opts.intra_op_num_threads = threads
            opts.inter_op_num_threads = 1
            self.sessions[threads] = ort.InferenceSession(self.graph, opts,
                                                          providers=["CPUExecutionProvider"])
        return self.sessions[threads]

    def __call__(self, features: dict) -> "Any":
        import torch

        from ..environment import cpu_share

        ids = features["input_ids"]
        feed = {n: (features[n] if n in features else torch.zeros_like(ids)).cpu().numpy()
                .astype(np.int64) for n in self.names}
        # torch's thread count now, not at export: the graph is shared by every Embedder of
        # the process, and a stage may set the count after another made the graph
        (states,) = self.session_for(cpu_share(torch.get_num_threads())).run(None, feed)
        return torch.from_numpy(states)


def graph_inputs(input_names: Sequence[str]) -> list[str]:
    """The tokenizer inputs the graph takes, in a fixed order."""
    return [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in input_names]


def export_graph(auto_model: Any, names: Sequence[str]) -> bytes:
    """The transformer (``last_hidden_state``) as ONNX bytes, batch and token axes dynamic."""
    import io

    import torch

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
                              opset_version=OPSET, dynamo=False)
        finally:
            if swap:
                switch(attn)
    return buf.getvalue()


def graph_key(fingerprint: str, input_names: Sequence[str]) -> str:
    """What an exported graph depends on: the weights' fingerprint, the inputs, the opset and
    the versions of the libraries that trace and serialize it (a new torch, transformers or
    onnx exports afresh)."""
    from importlib.metadata import version

    parts = {"fingerprint": fingerprint, "inputs": graph_inputs(input_names), "opset": OPSET,
             "attention": "eager", **{lib: version(lib) for lib in ("torch", "transformers",
                                                                    "onnx", "onnxruntime")}}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:24]


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
                  torch_states: Callable, folder: str | Path | None = None) -> OnnxTransformer:
    """The model's transformer as an ONNX graph, once per process (keyed by `fingerprint`).
    A graph exported here is checked against torch on padded and unpadded probe batches:
    ``run(texts, states)`` must give the same unit vectors (within `ONNX_TOLERANCE`) with the
    graph as with `torch_states`, else RuntimeError. With `folder`, a checked graph is written
    to ``folder/<graph_key>.onnx`` with a ``.json`` record of its sha256 and the gap measured;
    a later process uses that file when its sha256 matches (the check was made on those bytes,
    with the same weights and library versions) and exports afresh, with an
    `OnnxCacheWarning`, when it does not or the file does not load."""
    if fingerprint in GRAPHS:
        return GRAPHS[fingerprint]
    path = Path(folder) / f"{graph_key(fingerprint, input_names)}.onnx" if folder else None
    if folder is not None:  # a 90 MB half-written export of a process killed mid-write
        from ..cache import sweep_temporaries

        sweep_temporaries(folder)
    graph = _cached_graph(path, auto_model, input_names) if path is not None else None
    if graph is None:
        graph = OnnxTransformer(auto_model, input_names)
        gap = 0.0
        for batch in (PROBES, PROBES[1:2]):
            gap = max(gap, float(np.abs(run(batch, torch_states) - run(batch, graph)).max()))
            if not gap <= ONNX_TOLERANCE:
                raise RuntimeError(f"exported graph differs from torch by {gap:.1e}")
        if path is not None:
            _save_graph(path, graph.graph, gap)
    GRAPHS[fingerprint] = graph
    return graph


def _cached_graph(path: Path, auto_model: Any, input_names: Sequence[str]
                  ) -> OnnxTransformer | None:
    """The graph saved at `path`, if its bytes are the ones that passed the check."""
    record = path.with_suffix(".json")
    if not (path.is_file() and record.is_file()):
        return None
    try:
        data = path.read_bytes()
        want = json.loads(record.read_text(encoding="utf-8"))["sha256"]
        if hashlib.sha256(data).hexdigest() != want:
            raise ValueError("its sha256 differs from the one recorded when it was checked")
        return OnnxTransformer(auto_model, input_names, graph=data)
    except Exception as e:  # noqa: BLE001 - a damaged or unreadable copy: export afresh
        warnings.warn(f"cached ONNX graph {path} not used ({type(e).__name__}: {e}); "
                      "exporting it again", OnnxCacheWarning, stacklevel=4)
        return None


def _save_graph(path: Path, data: bytes, gap: float) -> None:
    """The checked graph and its record (sha256, the gap to torch), each written atomically."""
    from ..cache import atomic_write_bytes, atomic_write_text

    record = {"sha256": hashlib.sha256(data).hexdigest(), "max_gap_to_torch": gap,
              "tolerance": ONNX_TOLERANCE}
    try:
        atomic_write_bytes(path, data)
        atomic_write_text(path.with_suffix(".json"), json.dumps(record, indent=1))
    except OSError as e:  # a read-only cache: the graph still serves this process
        warnings.warn(f"ONNX graph not cached at {path} ({e.strerror or e}); the next "
                      "process exports it again", OnnxCacheWarning, stacklevel=4)
