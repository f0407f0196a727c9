"""Embed: texts and chunks to unit vectors.

- `encoders`: `Embedder`, a sentence-transformers model with a disk cache, its truncation
  counted, run on torch or under ONNX Runtime (`onnx`);
- `checks`: `timed_turns` and `compare_backends` (torch against ONNX Runtime, taking turns),
  `batch_drift` (does a text's vector depend on its batch);
- `late`: late chunking (`LateEmbedder`): the encoder runs over the whole document and token
  vectors are mean-pooled per chunk span; `late_plan` holds its token and window bookkeeping.

Where the model files come from is `ragkit.models`. Names load on first use (`ragkit._lazy`), so
importing this package loads neither torch nor a model.
"""

from .._lazy import surface

_EXPORTS = {  # submodule -> the names it gives this package
    "encoders": ("Embedder", "TruncationWarning", "model_label"),
    "checks": ("batch_drift", "compare_backends", "timed_turns"),
    "late": ("LateEmbedder", "late_vectors"),
    "late_plan": ("LateChunkingWarning",),
}
__all__, __getattr__, __dir__ = surface(__name__, _EXPORTS)
