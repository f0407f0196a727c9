"""Output paths: no command writes over a file it reads, and writes are whole or absent.

``ragkit chunk --out``, ``ragkit golden ... OUT`` and ``ragkit eval --results`` given one of
their inputs — the same path, ``./x``, a symlink or a hard link to it, a document of the
corpus folder, the golden file — refuse with one line naming both paths (exit 2, no
traceback) before anything is written. An output that is a symlink is written through to its
target and stays a link (also for appends from two processes, one through the link). A write
that fails leaves the old file whole and no temporary file. Every case compares the bytes of
every file it set up before and after.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Callable

from .base import Area, Context, expect, one_line_error, run_cli, snapshot
from .concurrency import _APPENDER
from .golden import corpus_with_questions


def run(ctx: Context) -> Area:
    return output_paths_area(ctx.folder, quick=ctx.quick)


def _refused(out, *names: str) -> None:
    one_line_error(out, 2, *names)


def output_paths_area(folder: Path, quick: bool = False) -> Area:
    area = Area("output paths")

    def case(label: str, check: Callable[[Path, Path, Path], None],
             changes: Callable[[Path], set] = lambda root: set()) -> None:
        """`check(root, docs, questions)`; afterwards every file set up is byte for byte
        as before, except those `changes(root)` names (the outputs a case means to write)."""
        root = folder / f"o{area.tried}"
        docs, questions = corpus_with_questions(root)

        def run() -> None:
            before = snapshot(root)
            check(root, docs, questions)
            after = snapshot(root)
            allowed = {p.relative_to(root).as_posix() for p in changes(root)}
            changed = sorted(p for p in before if p not in allowed and after.get(p) != before[p])
            expect(not changed, f"files changed or removed: {changed}")
            temp = [p for p in after if p.endswith(".tmp")]
            expect(not temp, f"temporary files left: {temp}")
        area.case(label, run)

    # chunk --out over its own input, however the path is spelled
    def chunk_over(how: str):
        def check(root: Path, docs: Path, questions: Path) -> None:
            target = {"same": "refunds.md", "dot-slash": "./refunds.md", "symlink": "l.md",
                      "hard link": "h.md"}[how]
            if how == "symlink":
                os.symlink("refunds.md", docs / "l.md")
            if how == "hard link":
                os.link(docs / "refunds.md", docs / "h.md")
            out = run_cli(["chunk", "refunds.md", "--out", target], cwd=docs)
            _refused(out, target, "refunds.md")
        return check
    for how in (("same", "symlink") if quick else ("same", "dot-slash", "symlink",
                                                     "hard link")):
        case(f"chunk --out = its input ({how})", chunk_over(how))

    def chunk_folder(root: Path, docs: Path, questions: Path) -> None:
        _refused(run_cli(["chunk", str(docs), "--out", str(docs / "refunds.md")]),
                 str(docs / "refunds.md"))
    case("chunk FOLDER --out = one of its documents", chunk_folder)

    def golden_over(which: str):
        def check(root: Path, docs: Path, questions: Path) -> None:
            target = questions if which == "questions" else docs / "refunds.md"
            _refused(run_cli(["golden", str(docs), str(questions), str(target)]), str(target))
        return check
    case("golden OUT = the questions it reads", golden_over("questions"))
    if not quick:
        case("golden OUT = a document", golden_over("document"))

    def eval_over(which: str):
        def check(root: Path, docs: Path, questions: Path) -> None:
            target = questions if which == "golden" else docs / "refunds.md"
            _refused(run_cli(["eval", "--corpus", str(docs), "--golden", str(questions),
                              "--results", str(target)]), str(target))
        return check
    case("eval --results = the golden file", eval_over("golden"))
    if not quick:
        case("eval --results = a document", eval_over("document"))

    # a symlinked output: written through to its target, the link kept
    def golden_through_link(root: Path, docs: Path, questions: Path) -> None:
        (root / "real").mkdir()
        target = root / "real" / "gold.jsonl"
        target.write_text("old\n")
        os.symlink(target, root / "gold.jsonl")
        out = run_cli(["golden", str(docs), str(questions), str(root / "gold.jsonl")])
        expect(out.returncode == 0 and "Traceback" not in out.stderr,
               f"exit {out.returncode}: {out.stderr[-300:]}")
        expect((root / "gold.jsonl").is_symlink(), "the link was replaced by a file")
        expect(len(target.read_text().splitlines()) == 2, "the target was not written")
    case("golden OUT a symlink: written through, the link kept", golden_through_link,
         lambda root: {root / "real" / "gold.jsonl"})

    def appends_through_link(root: Path, docs: Path, questions: Path) -> None:
        import subprocess

        from ...report.results import read_rows

        (root / "real").mkdir()
        target = root / "real" / "rows.jsonl"
        os.symlink(target, root / "rows.jsonl")
        start = time.time() + 1.5
        n = 5 if quick else 20
        procs = [subprocess.Popen([sys.executable, "-c", _APPENDER, str(path), who, str(n),
                                   str(start)])
                 for who, path in (("link", root / "rows.jsonl"), ("real", target))]
        codes = [p.wait(timeout=120) for p in procs]
        expect(codes == [0, 0], f"exit codes {codes}")
        expect((root / "rows.jsonl").is_symlink(), "the link was replaced by a file")
        rows = read_rows(target)
        expect(len(rows) == 2 * n * 2, f"{len(rows)} rows kept of {2 * n * 2}")
    case("--results a symlink: two processes append, one through the link, every row kept",
         appends_through_link, lambda root: {root / "real" / "rows.jsonl"})

    def failed_write(root: Path, docs: Path, questions: Path) -> None:
        from unittest import mock

        from ...report.results import append_rows, write_rows

        rows = root / "rows.jsonl"
        rows.write_text('{"old": 1}\n')
        before = rows.read_bytes()

        def full(fd):
            raise OSError(28, "No space left on device")

        for write in (lambda: write_rows(rows, [{"new": i} for i in range(1000)]),
                      lambda: append_rows(rows, [{"new": 1}])):
            with mock.patch("os.fsync", full):
                try:
                    write()
                    raise AssertionError("the failed write did not raise")
                except OSError:
                    pass
            expect(rows.read_bytes() == before, "the old file is not whole")
    case("a write that fails leaves the old file and no partial one", failed_write)
    return area
