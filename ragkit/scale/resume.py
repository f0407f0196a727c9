"""A long shard job killed and restarted, on a small case: what `build_shards` promises, shown.

`kill_and_resume` starts `build_shards` over a few documents (one document a shard; chunking
and MiniLM vectors, one encoder thread) in a child process (``python -m
ragkit.scale.resume``), which prints a line as each shard is recorded. Once the line of shard
`kill_after` arrives the child is sent SIGKILL (no clean-up runs: it is cut off while it works
on the next shard). The same command is then run again here, over the same folder, and once
more into a fresh folder without a kill. The report says which shards the killed run had
recorded, which the second run kept (their files untouched: same bytes, same modification
time) and which it made, and whether the resumed folder ends with the same shard files and
manifest entries as the uninterrupted run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

from ..types import Document


def demo_stages() -> list:
    """Recursive 250-token chunks on MiniLM's tokens, then MiniLM vectors on one thread (the
    same settings in the child and here, so the bytes can match)."""
    from .stages import ChunkStage, EmbedStage

    return [ChunkStage("recursive:250/0", tokenizer="minilm"), EmbedStage(threads=1)]


def _build(docs: Sequence[Document], folder: Path, after_shard=None):
    from .shards import build_shards

    return build_shards(docs, folder, demo_stages(), shard_docs=1, batch_size=1,
                        after_shard=after_shard)


def _files(folder: Path) -> dict[str, tuple[str, int]]:
    """{shard file: (sha256, modification time in ns)} of a shard folder."""
    from .shards import file_digest

    return {p.name: (file_digest(p), p.stat().st_mtime_ns)
            for p in sorted(folder.glob("shard-*.parquet"))}


def _start_and_kill(docs_path: Path, folder: Path, kill_after: int, log: Path) -> list[str]:
    """Run the child until it reports shard `kill_after`, then SIGKILL it; the lines it
    printed. A child that ends first, or fails, is an error naming its log."""
    from ..config import PROJECT_ROOT

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(PROJECT_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    with open(log, "wb") as err:
        child = subprocess.Popen([sys.executable, "-m", "ragkit.scale.resume", str(folder),
                                  str(docs_path)], stdout=subprocess.PIPE, stderr=err,
                                 env=env, text=True)
        lines = []
        assert child.stdout is not None
        with child.stdout:
            for line in child.stdout:
                lines.append(line.strip())
                if line.strip() == f"shard {kill_after} recorded":
                    child.kill()  # SIGKILL: no finally, no atexit
                    break
        child.wait()
    if not lines or lines[-1] != f"shard {kill_after} recorded" or child.returncode != -9:
        raise RuntimeError(f"the child was not killed after shard {kill_after} (exit "
                           f"{child.returncode}, printed {lines}); see {log}")
    return lines


def kill_and_resume(docs: Sequence[Document], kill_after: int = 1,
                    workdir: str | Path | None = None) -> dict[str, Any]:
    """Kill a shard job after shard `kill_after` is recorded, run it again, and compare with an
    uninterrupted run (see the module docstring). Returns ``shards``, ``recorded_at_kill``
    (shard numbers the journal held), ``kept`` and ``made_again`` by the second run,
    ``kept_untouched`` (their bytes and modification times unchanged), ``same_as_uninterrupted``
    (every shard file's sha256 and manifest entry equal), ``complete`` and the seconds of each
    run (``killed_seconds``, child start-up included; ``resume_seconds``;
    ``uninterrupted_seconds``)."""
    import torch

    from .shards import JOURNAL, ShardSet, _read_journal

    docs = list(docs)
    if not 0 <= kill_after < len(docs) - 1:
        raise ValueError(f"kill_after must leave shards to make: 0 <= {kill_after} < "
                         f"{len(docs) - 1}")
    threads = torch.get_num_threads()  # EmbedStage(threads=1) sets it here; put back after
    with tempfile.TemporaryDirectory(dir=workdir, prefix="ragkit-resume-") as tmp:
        work = Path(tmp)
        docs_path = work / "docs.json"
        docs_path.write_text(json.dumps([{"id": d.id, "text": d.text, "metadata": d.metadata}
                                         for d in docs]), encoding="utf-8")
        docs = _read_docs(docs_path)  # as the child reads them (JSON's types), same digests
        folder, whole = work / "killed", work / "whole"
        t0 = time.perf_counter()
        _start_and_kill(docs_path, folder, kill_after, work / "child.log")
        killed_s = time.perf_counter() - t0
        recorded = sorted(e["name"] for e in _read_journal(folder)[0])
        before = _files(folder)
        try:
            t0 = time.perf_counter()
            resumed = _build(docs, folder)
            resume_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            plain = _build(docs, whole)
            whole_s = time.perf_counter() - t0
        finally:
            torch.set_num_threads(threads)
        after = _files(folder)
        kept = [n for n in recorded if before.get(n) == after.get(n)]
        same = (_files(whole).keys() == after.keys()
                and all(_files(whole)[n][0] == after[n][0] for n in after)
                and resumed.manifest["shards"] == ShardSet(whole).manifest["shards"])
        number = lambda name: int(name.split("-")[1].split(".")[0])  # noqa: E731
        return {"shards": len(resumed.shards),
                "recorded_at_kill": [number(n) for n in recorded],
                "kept": [number(n) for n in kept],
                "made_again": [number(p.name) for p in resumed.shards
                               if p.name not in kept],
                "kept_untouched": len(kept) == len(recorded),
                "same_as_uninterrupted": bool(same), "complete": resumed.complete,
                "journal_left": (folder / JOURNAL).exists(),
                "chunks": len(plain), "killed_seconds": killed_s, "resume_seconds": resume_s,
                "uninterrupted_seconds": whole_s}


def resume_reading(r: dict[str, Any]) -> str:
    """`kill_and_resume`'s report in three lines.

    >>> print(resume_reading({"shards": 4, "recorded_at_kill": [0, 1], "kept": [0, 1],
    ...     "made_again": [2, 3], "kept_untouched": True, "same_as_uninterrupted": True,
    ...     "complete": True, "chunks": 9, "killed_seconds": 6.0, "resume_seconds": 1.5,
    ...     "uninterrupted_seconds": 3.0}))
    killed: the journal held shards 0, 1 of 4 when SIGKILL arrived (6.0 s after the start)
    run again: kept shards 0, 1 (files untouched), made shards 2, 3 (1.5 s; the uninterrupted run took 3.0 s)
    same 4 shard files (sha256) and manifest entries as the uninterrupted run: yes; folder complete: yes
    """
    def listed(ks: list) -> str:
        return ", ".join(map(str, ks)) or "none"

    return "\n".join([
        f"killed: the journal held shards {listed(r['recorded_at_kill'])} of {r['shards']} "
        f"when SIGKILL arrived ({r['killed_seconds']:.1f} s after the start)",
        f"run again: kept shards {listed(r['kept'])} "
        f"({'files untouched' if r['kept_untouched'] else 'some rewritten'}), made shards "
        f"{listed(r['made_again'])} ({r['resume_seconds']:.1f} s; the uninterrupted run took "
        f"{r['uninterrupted_seconds']:.1f} s)",
        f"same {r['shards']} shard files (sha256) and manifest entries as the uninterrupted "
        f"run: {'yes' if r['same_as_uninterrupted'] else 'NO'}; folder complete: "
        f"{'yes' if r['complete'] else 'NO'}"])


def _read_docs(path: Path) -> list[Document]:
    return [Document(d["id"], d["text"], d["metadata"])
            for d in json.loads(path.read_text(encoding="utf-8"))]


if __name__ == "__main__":  # the child of `kill_and_resume`: python -m ragkit.scale.resume
    _build(_read_docs(Path(sys.argv[2])), Path(sys.argv[1]),
           after_shard=lambda k: print(f"shard {k} recorded", flush=True))
