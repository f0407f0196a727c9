"""The cost fit of notebook 09 from one pass: the one-process runner's per-batch
checkpoints, the line through them with bootstrap intervals, and the Ray runner's time read in
parts (start-up, a job's fixed cost, the rest)."""

import numpy as np
import pytest

from ragkit.scale import fit_cost, fit_cost_interval, ray_reading, throughput
from ragkit.types import Document


def test_an_exact_line_is_found_with_an_interval_of_width_zero():
    sizes = list(range(11))
    r = fit_cost_interval(sizes, [2.0 + 0.25 * n for n in sizes])
    assert r["fixed_seconds"] == pytest.approx(2.0) and r["seconds_per_document"] == pytest.approx(0.25)
    assert r["seconds_per_document_low"] == pytest.approx(0.25)
    assert r["seconds_per_document_high"] == pytest.approx(0.25)
    assert r["fixed_seconds_low"] == pytest.approx(2.0) and r["points"] == 11


def test_the_interval_holds_the_true_cost_and_narrows_with_more_documents():
    rng = np.random.default_rng(3)

    def one_pass(n):  # 1.5 s start-up, then documents of 0.4 s on average, of varied length
        steps = rng.gamma(4.0, 0.1, n)
        return list(range(n + 1)), [1.5, *(1.5 + np.cumsum(steps))]

    widths = []
    for n in (20, 400):
        sizes, seconds = one_pass(n)
        r = fit_cost_interval(sizes, seconds, seed=0)
        assert (r["fixed_seconds"], r["seconds_per_document"]) == fit_cost(sizes, seconds)
        assert r["seconds_per_document_low"] < 0.4 < r["seconds_per_document_high"]
        assert r["fixed_seconds_low"] <= r["fixed_seconds"] <= r["fixed_seconds_high"]
        widths.append(r["seconds_per_document_high"] - r["seconds_per_document_low"])
    assert widths[1] < widths[0] / 2
    assert fit_cost_interval(sizes, seconds, seed=0) == r  # a fixed seed: the same interval


def test_fewer_than_three_checkpoints_or_unordered_sizes_are_refused():
    with pytest.raises(ValueError, match="three or more"):
        fit_cost_interval([0, 1], [1.0, 2.0])
    with pytest.raises(ValueError, match="increasing"):
        fit_cost_interval([0, 2, 1], [1.0, 2.0, 3.0])


def test_the_one_process_runner_reads_the_clock_after_each_batch_of_documents():
    docs = [Document(f"d{i}", "Refunds are paid within ten days of the request. " * (4 + i))
            for i in range(5)]
    rates, vectors = throughput(docs, runners=("1 process",), tokenizer="minilm", batch_size=2)
    r = rates["1 process"]
    assert r["checkpoint_docs"] == [2, 4, 5]  # the batches every runner takes
    assert len(r["checkpoints"]) == 3 and len(vectors) == r["chunks"]
    assert 0 < r["startup_seconds"] < r["checkpoints"][0]
    assert list(r["checkpoints"]) == sorted(r["checkpoints"])
    assert r["checkpoints"][-1] <= r["seconds"]


def test_unequal_steps_are_resampled_with_their_documents():
    """Batches of 4 documents and a last one of 2: an exact line stays exact under resampling,
    since each step keeps its own documents with its seconds."""
    sizes = [0, 4, 8, 12, 14]
    r = fit_cost_interval(sizes, [1.0 + 0.5 * n for n in sizes])
    assert r["seconds_per_document_low"] == pytest.approx(0.5)
    assert r["seconds_per_document_high"] == pytest.approx(0.5)
    assert r["fixed_seconds_low"] == pytest.approx(1.0) == r["fixed_seconds_high"]


def ray_rates(one_doc_job, warm_job):
    return {"2 processes": {"seconds": 16.0},
            "ray 2 actors": {"seconds": 40.0, "init_seconds": 10.0, "job_seconds": 30.0,
                             "one_doc_job_seconds": one_doc_job, "warm_job_seconds": warm_job}}


def test_ray_reading_splits_fixed_cost_from_the_documents_and_says_when_ray_catches_up():
    slow = ray_reading(ray_rates(4.0, 20.0), 51)  # documents 16 s over 50: 0.32 s > 16/51
    assert "10.0 s of one-time costs of its first job" in slow  # 30 cold - 20 warm
    assert "24.0 s of fixed cost" in slow and "the documents themselves took 16.0 s" in slow
    assert "no corpus size at which it catches up" in slow
    assert "is not measured here" in slow  # what Ray would add on a cluster is not measured
    fast = ray_reading(ray_rates(15.0, 20.0), 51)  # documents 5 s: 0.100 s against 0.314
    assert "35.0 s of fixed cost" in fast
    assert f"past about {35.0 / (16.0 / 51 - 5.0 / 50):,.0f} documents" in fast
    assert ray_reading({"1 process": {"seconds": 3.0}}, 5) == "Ray did not run in this profile."
