"""An encoder's cost on a benchmark's chunks, measured on a sample, with the real MiniLM."""

import pandas as pd

from ragkit.chunkers import FixedCharChunker
from ragkit.embed import Embedder
from ragkit.evaluate.benchmarks import Benchmark
from ragkit.experiments.design_costs import (ENCODER_COST_METRICS, load_encoder_costs,
                                            measure_encoder_costs)
from ragkit.types import Document, Query


def test_encoder_costs_time_a_sample_and_size_the_whole_index(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGKIT_CACHE_DIR", str(tmp_path / "cache"))
    docs = [Document(f"d{i}", " ".join(f"Sentence {j} of document {i}." for j in range(40)))
            for i in range(3)]
    bench = Benchmark("tiny", docs, [Query(f"q{i}", f"What does document {i} say?", gold=())
                                     for i in range(6)])
    chunker = FixedCharChunker(200, 0)
    got = measure_encoder_costs(bench, chunker, Embedder(show_progress=False), n_chunks=5,
                                n_queries=4)
    n = len(chunker.chunk_all(docs))
    assert got["chunks"] == n > 5 and got["n_sampled"] == 5 and got["n_timed"] == 4
    assert got["dim"] == 384 and got["index_mb"] == n * 384 * 4 / 2**20
    assert got["chunk_encode_ms"] > 0
    assert 0 < got["query_encode_p50_ms"] <= got["query_encode_p95_ms"]
    assert not list((tmp_path / "cache").rglob("*.npz"))  # nothing read from or written to it
    rows = pd.DataFrame([{"experiment": "encoder_costs", "benchmark": "tiny", "strategy": "m",
                          "metric": m, "value": float(got[m])} for m in ENCODER_COST_METRICS]
                        + [{"experiment": "design", "benchmark": "tiny", "strategy": "x",
                            "metric": "recall", "value": 0.5}])
    assert load_encoder_costs(rows) == [{"benchmark": "tiny", "encoder": "m",
                                         **{m: float(got[m]) for m in ENCODER_COST_METRICS}}]
