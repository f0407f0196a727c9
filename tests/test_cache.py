"""Caches and results files: line splitting on "\n" only, bad bytes, unwritable folders, and
concurrent appends from real processes."""

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

from ragkit.cache import CacheWarning, JsonlCache, VectorCache
from ragkit.report import ResultsFileError, append_rows, read_rows

SEPARATORS = ["\u2028", "\u2029", "\u0085", "\x0b", "\x0c", "\x1c", "\x1e", "\r"]


@pytest.mark.parametrize("sep", SEPARATORS)
def test_cached_text_with_line_separators_is_not_corrupt(tmp_path, sep):
    c = JsonlCache(tmp_path / "p.jsonl")
    c.put({"key": "a", "preamble": f"one{sep}two"})
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)  # any "corrupt" warning fails the test
        again = JsonlCache(c.path)
        assert again.get("a")["preamble"] == f"one{sep}two" and again.corrupt == 0


def test_one_invalid_byte_costs_one_cache_line(tmp_path):
    c = JsonlCache(tmp_path / "p.jsonl")
    c.put({"key": "a", "preamble": "x"})
    with c.path.open("ab") as f:
        f.write(b'{"key": "b\xff"}\n')
    c.put({"key": "c", "preamble": "z"})
    with pytest.warns(CacheWarning, match=r"p.jsonl:2: corrupt"):
        again = JsonlCache(c.path)
        assert again.get("a") and again.get("c") and again.corrupt == 1


def test_an_unwritable_cache_keeps_working_in_memory(tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("x")  # a folder cannot be made below a file (root ignores chmod)
    v = VectorCache(blocked / "embeddings")
    with pytest.warns(CacheWarning, match="cannot be written"):
        v.put(["a"], np.ones((1, 3), dtype=np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)  # warned once, not per write
        v.put(["b"], np.zeros((1, 3), dtype=np.float32))
    found, missing = v.get(["a", "b"])
    assert missing == [] and v.unwritable
    j = JsonlCache(blocked / "pre.jsonl")
    with pytest.warns(CacheWarning, match="cannot be written"):
        j.put({"key": "a"})
    assert j.get("a") and j.unwritable


def test_results_rows_with_line_separators_read_back(tmp_path):
    p = tmp_path / "rows.jsonl"
    append_rows(p, [{"strategy": "a\u2028b", "value": 1}, {"strategy": "c\u0085", "value": 2}])
    assert [r["strategy"] for r in read_rows(p)] == ["a\u2028b", "c\u0085"]


@pytest.mark.parametrize("data, line", [(b'{"a": 1}\n{broken\n', 2), (b'{"a": 1}\n\n[1]\n', 3),
                                        (b'{"a": "\xff"}\n', 1)])
def test_a_corrupt_results_file_names_file_and_line(tmp_path, data, line):
    p = tmp_path / "rows.jsonl"
    p.write_bytes(data)
    with pytest.raises(ResultsFileError, match=rf"rows.jsonl:{line}: "):
        read_rows(p)


APPENDER = """
import sys, time
from ragkit.report.results import append_rows
path, who, start = sys.argv[1], sys.argv[2], float(sys.argv[3])
while time.time() < start:
    time.sleep(0.001)
for i in range(25):
    append_rows(path, [{"who": who, "i": i, "j": j} for j in range(2)])
"""


def test_two_processes_appending_to_one_results_file_keep_every_row(tmp_path):
    import time

    p = tmp_path / "rows.jsonl"
    start = time.time() + 2
    procs = [subprocess.Popen([sys.executable, "-c", APPENDER, str(p), who, str(start)])
             for who in ("a", "b", "c")]
    assert [x.wait(timeout=120) for x in procs] == [0, 0, 0]
    rows = read_rows(p)
    assert len(rows) == 3 * 25 * 2
    assert {(r["who"], r["i"], r["j"]) for r in rows} == {
        (w, i, j) for w in "abc" for i in range(25) for j in range(2)}
    json.dumps(rows)


def test_writes_go_through_a_symlink_to_its_target(tmp_path):
    """A symlinked results file stays a link: the rows land in its target (issue 36)."""
    from ragkit.cache import atomic_write_text

    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "rows.jsonl"
    target.write_text('{"a": 1}\n')
    link = tmp_path / "rows.jsonl"
    os.symlink(target, link)
    append_rows(link, [{"b": 2}])
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert [r for r in read_rows(target)] == [{"a": 1}, {"b": 2}]
    atomic_write_text(link, "x\n")
    assert link.is_symlink() and target.read_text() == "x\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["real", "rows.jsonl"]
    assert [p.name for p in (tmp_path / "real").iterdir() if not p.name.startswith(".")] == [
        "rows.jsonl"]


def test_a_whole_file_write_gives_the_mode_a_plain_write_would(tmp_path):
    """Results and caches are written through a temporary file (made 0600), but the file
    that lands has the mode `open` would give a new file (0666 less the umask), and a
    rewritten file keeps its own mode."""
    import stat

    from ragkit.cache import atomic_write_text

    old = os.umask(0o027)
    try:
        atomic_write_text(tmp_path / "new.jsonl", "x\n")
        assert stat.S_IMODE((tmp_path / "new.jsonl").stat().st_mode) == 0o640
        kept = tmp_path / "kept.jsonl"
        kept.write_text("old\n")
        kept.chmod(0o604)
        atomic_write_text(kept, "new\n")
        assert stat.S_IMODE(kept.stat().st_mode) == 0o604 and kept.read_text() == "new\n"
    finally:
        os.umask(old)


def test_a_write_that_fails_leaves_the_old_file_and_no_partial_file(tmp_path, monkeypatch):
    from ragkit.cache import atomic_write_text

    path = tmp_path / "rows.jsonl"
    path.write_text("old\n")

    def full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError):
        atomic_write_text(path, "new\n" * 1000)
    assert path.read_text() == "old\n" and os.listdir(tmp_path) == ["rows.jsonl"]


def test_a_symlinked_parquet_run_file_stays_a_link(tmp_path):
    import pandas as pd

    from ragkit.report.results import write_parquet

    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real" / "x.hits.parquet", tmp_path / "x.hits.parquet")
    write_parquet(tmp_path / "x.hits.parquet", {"r": pd.DataFrame({"run": ["r"], "rank": [1]})})
    assert (tmp_path / "x.hits.parquet").is_symlink()
    assert pd.read_parquet(tmp_path / "real" / "x.hits.parquet")["rank"].tolist() == [1]
    assert sorted(os.listdir(tmp_path)) == ["real", "x.hits.parquet"]


def test_a_shard_is_verified_once_per_process_until_it_changes(tmp_path, monkeypatch):
    import ragkit.cache as cache

    VectorCache(tmp_path).put(["a", "b"], np.arange(6, dtype=np.float32).reshape(2, 3))
    reads = []
    real_load = np.load
    monkeypatch.setattr(cache.np, "load", lambda *a, **k: reads.append(a[0]) or real_load(*a, **k))
    first, second = VectorCache(tmp_path), VectorCache(tmp_path)
    assert first.get(["a"])[1] == [] and second.get(["b"])[1] == []
    assert len(reads) == 1  # the second instance reuses the verified entries
    np.testing.assert_array_equal(second.get(["b"])[0]["b"], [3, 4, 5])
    shard = next(tmp_path.glob("*.npz"))
    shard.write_bytes(b"PK\x03\x04garbage")  # edited in place: another identity
    with pytest.warns(CacheWarning, match="corrupt"):
        third = VectorCache(tmp_path)
        assert third.get(["a"])[1] == ["a"] and third.corrupt == [shard.name]
    assert len(reads) == 2


def test_fill_waits_for_a_key_another_process_claimed_and_never_computes_it(tmp_path):
    """`VectorCache.fill` computes what is unclaimed and, for a key another live process has
    claimed, waits for that process's shard instead of computing it too."""
    import json
    import os
    import threading
    import time

    from ragkit.cache import Claims, VectorCache

    cache = VectorCache(tmp_path)
    claims = Claims(tmp_path)
    claims.folder.mkdir(parents=True)
    other = claims.folder / "other.json"  # the parent process stands for a live other kernel
    other.write_text(json.dumps({"pid": os.getppid(), "keys": ["theirs"]}))

    def deliver():
        time.sleep(0.5)
        VectorCache(tmp_path).put(["theirs"], np.full((1, 2), 7, np.float32))
        other.unlink()

    computed, delivered = [], []
    thread = threading.Thread(target=deliver)
    thread.start()
    out = cache.fill(["a", "theirs", "b"],
                     lambda keys: computed.append(keys) or np.ones((len(keys), 2), np.float32),
                     slice_size=1, progress=delivered.append)
    thread.join()
    assert computed == [["a"], ["b"]] and delivered == [1]
    np.testing.assert_array_equal(out["theirs"], [7, 7])
    assert sorted(out) == ["a", "b", "theirs"]
    assert VectorCache(tmp_path).get(["a", "b", "theirs"])[1] == []


def test_temporaries_left_by_a_killed_writer_are_swept_and_live_ones_kept(tmp_path):
    """A writer killed by SIGTERM mid-write leaves its ``.<name>.<random>.tmp`` (a 90 MB one
    for the ONNX graph); the next process to read the folder removes those an hour old."""
    import time

    from ragkit.cache import STALE_TEMPORARY_S, sweep_temporaries

    killed = subprocess.run(
        [sys.executable, "-c", "import os, signal, tempfile; "
         f"fd, p = tempfile.mkstemp(dir={str(tmp_path)!r}, prefix='.g.onnx.', suffix='.tmp'); "
         "os.write(fd, b'x' * 1000); os.kill(os.getpid(), signal.SIGTERM)"])
    assert killed.returncode != 0
    (left,) = tmp_path.glob(".*.tmp")
    old = time.time() - STALE_TEMPORARY_S - 5
    os.utime(left, (old, old))
    live = tmp_path / ".h.npz.abc.tmp"
    live.write_bytes(b"being written")
    keep = tmp_path / "g.onnx"
    keep.write_bytes(b"graph")
    store = VectorCache(tmp_path)
    store.get(["k"])  # the first read of the folder sweeps it
    assert not left.exists() and live.exists() and keep.exists()
    assert sweep_temporaries(tmp_path, older_than=-1) == 1 and not live.exists()


def test_renamed_metrics_read_under_their_current_name(tmp_path):
    """Rows and per-query tables written when pass@k was stored as "recall@k" read as pass@k;
    span recall ("recall") and every other name are left alone."""
    import pandas as pd

    from ragkit.report.results import RENAMED_METRICS, read_scores

    p = tmp_path / "old.jsonl"
    p.write_text('{"metric": "recall@k", "value": 0.5}\n{"metric": "recall", "value": 0.7}\n'
                 '{"metric": "diff_recall@k", "value": -0.1}\n')
    assert [r["metric"] for r in read_rows(p)] == ["pass@k", "recall", "diff_pass@k"]
    q = tmp_path / "old.scores.parquet"
    pd.DataFrame({"metric": ["recall@k", "recall@B", "recall"], "value": [1.0, 0.5, 0.2]}
                 ).to_parquet(q)
    assert read_scores(q).metric.tolist() == ["pass@k", "recall@B", "recall"]
    assert set(RENAMED_METRICS.values()).isdisjoint(RENAMED_METRICS)
