"""The README's scale section is built from the rows the benches write: the worker ratio read
against one process with every thread, the on-disk table and cap, and the hundred-million
arithmetic from those same rows."""

import sys

import numpy as np
import pytest

pytest.importorskip("faiss")


@pytest.fixture
def results(tmp_path, monkeypatch):
    from ragkit.scale import static
    from ragkit.tools import bench_ondisk, bench_scale

    folder = tmp_path / "results"
    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(folder))
    seconds = {"1 process": 40.0, "1 process, all threads": 20.0, "2 processes": 25.0}

    def throughput(docs, chunker, runners, **kw):
        return ({r: {"seconds": seconds[r], "chars_per_s": 1.0, "chunks_per_s": 1.0,
                     "tokens_per_s": 1.0, "chunks": 500.0, "tokens": 9.0,
                     "same_chunks_as_first": 1.0} for r in runners},
                np.eye(3, 8, dtype=np.float32))

    monkeypatch.setattr("ragkit.scale.measure.throughput", throughput)
    monkeypatch.setitem(sys.modules, "ray", None)
    assert bench_scale.main(["--copies", "1", "--no-ray", "--no-sweep"]) == 0
    real = static.benchmark_texts
    monkeypatch.setattr(static, "benchmark_texts", lambda: real(("course",)))
    assert bench_ondisk.main(["--out", str(tmp_path / "ix"), "--n", "3000", "--nlist", "16",
                              "--nprobes", "1,16", "--window", "16,32", "--queries", "30",
                              "--block", "1000"]) == 0
    return folder


def test_the_section_reads_the_ratio_the_disk_rows_and_the_arithmetic(results):
    from ragkit.tools.readme_scale import scale_section

    text = scale_section(results)
    # 20 s with every thread against 25 s for two one-thread processes
    assert "**0.80x one process with every thread** (slower than it" in text
    assert "1.60x the one-thread process" in text
    assert "| 16 | 1.000 |" in text  # every cell probed: exact
    assert "nprobe 16 is the fastest setting here with recall@10 >= 0.95" in text
    assert ": held." in text
    # the course's documents made 500 chunks (the fake runners say): 100M x 500 / documents
    from ragkit.config import get_settings
    from ragkit.text.corpus import load_corpus

    docs = len(load_corpus(get_settings().data_dir / "corpus").documents)
    assert f"| vectors | {round(100_000_000 * 500 / docs):,} |" in text
    assert "A calculation, not a run" in text


def test_a_bench_that_has_not_run_is_named_not_invented(tmp_path):
    from ragkit.tools.readme_scale import scale_section

    text = scale_section(tmp_path)
    assert "not measured with the all-threads baseline yet" in text
    assert "`ragkit bench ondisk` has not run" in text
    assert "the arithmetic needs both rows above" in text
