"""The int8 measurement (``ragkit bench int8``): a quantized copy of the float32 graph."""

import numpy as np


def test_the_int8_graph_is_smaller_and_its_vectors_near_but_not_float32s():
    from ragkit.embed import Embedder
    from ragkit.experiments.int8 import int8_embedder, quantized_graph

    texts = ["Refunds are available within 14 days of purchase.",
             "Inactive accounts are disabled after 90 days. " * 12]
    fp32 = Embedder(backend="onnx", precision="fp32", cache=False, show_progress=False)
    graph = fp32._graph().graph
    # the linear layers in int8; the word-embedding table (no matrix product) stays float32
    assert len(quantized_graph(graph)) < 0.75 * len(graph)
    int8 = int8_embedder()
    a, b = int8.encode(texts), fp32.encode(texts)
    assert a.shape == b.shape and np.allclose(np.linalg.norm(a, axis=1), 1, atol=1e-5)
    cos = (a * b).sum(axis=1)
    assert np.all(cos > 0.9) and not np.array_equal(a, b)
    assert int8._cache is None  # never cached: int8 vectors cannot mix with the record's
