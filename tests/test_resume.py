"""`kill_and_resume`: a real child process running `build_shards` is sent SIGKILL after a
shard is recorded; the second run keeps the recorded shards untouched, makes the rest, and
ends with the bytes of an uninterrupted run."""

import pytest

from ragkit.scale import kill_and_resume, resume_reading
from ragkit.types import Document


def test_a_killed_shard_job_resumes_after_its_last_recorded_shard(tmp_path):
    docs = [Document(f"d{i}", f"Document {i}. " + "Refunds are paid within ten days. " * 30,
                     {"n": i}) for i in range(3)]
    r = kill_and_resume(docs, kill_after=0, workdir=tmp_path)
    assert r["recorded_at_kill"] == [0] and r["kept"] == [0] and r["made_again"] == [1, 2]
    assert r["kept_untouched"] and r["same_as_uninterrupted"] and r["complete"]
    assert not r["journal_left"] and r["shards"] == 3 and r["chunks"] >= 3
    text = resume_reading(r)
    assert "kept shards 0 (files untouched), made shards 1, 2" in text and ": yes;" in text
    assert not list(tmp_path.iterdir())  # its working folder is removed


def test_a_kill_that_leaves_nothing_to_resume_is_refused():
    docs = [Document(f"d{i}", "text") for i in range(2)]
    with pytest.raises(ValueError, match="kill_after"):
        kill_and_resume(docs, kill_after=1)
