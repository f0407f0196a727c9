"""Output paths: no command writes over a file it reads or over a reader's file or folder,
and writes are whole or absent.

``ragkit chunk --out``, ``ragkit golden ... OUT`` and ``ragkit eval --results`` given one of
their inputs — the same path, ``./x``, a symlink or a hard link to it, a document of the
corpus folder, the golden file — refuse with one line naming both paths (exit 2, no
traceback) before anything is written. An output that is a symlink is written through to its
target and stays a link (also for appends from two processes, one through the link). A write
that fails leaves the old file whole and no temporary file. Every case compares the bytes of
every file it set up before and after.

The one rule of `ragkit.tools.outputs` for every output (issue 51): ``docs --out`` and ``index
--out`` given a folder of the reader's (or a file) refuse it and remove nothing; ``chunk
--out`` and ``golden OUT`` given a named pipe or a device refuse it and leave it what it was;
an output under a path whose parent is a file is refused up front naming that file (``eval
--results`` before the run, not after it); an OUT whose folder cannot be made is one line;
appending rows keeps the file's mode, its inode (a hard link sees the new rows) and its old
rows byte for byte.
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

    _reader_folders(case)
    _special_files(case)
    _file_parents(case, quick)

    def appends_in_place(root: Path, docs: Path, questions: Path) -> None:
        from ...report.results import append_rows

        rows = root / "rows.jsonl"
        rows.write_text('{"z": 1, "a": 2}\n{"old": 1}', encoding="utf-8")  # unsorted, no \n
        os.chmod(rows, 0o664)
        os.link(rows, root / "link.jsonl")
        before, inode = rows.read_bytes(), rows.stat().st_ino
        append_rows(rows, [{"new": 1}])
        after = rows.read_bytes()
        expect(after.startswith(before), "the old rows were rewritten")
        expect(after == before + b'\n{"new": 1}\n', f"not appended as one line: {after!r}")
        expect(rows.stat().st_ino == inode, "the file was replaced (a new inode)")
        expect((rows.stat().st_mode & 0o777) == 0o664,
               f"mode {rows.stat().st_mode & 0o777:o}, was 664")
        expect((root / "link.jsonl").read_bytes() == after, "the hard link kept the old rows")
    case("--results appended in place: mode, inode (hard link) and old rows kept",
         appends_in_place, lambda root: {root / "rows.jsonl", root / "link.jsonl"})

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


Case = Callable[..., None]


def _reader_folders(case: Case) -> None:
    """docs --out and index --out given a folder of the reader's, or a file: refused, one
    line naming it, nothing removed or written (ragkit docs removed the folder)."""
    def folder_out(command: str, what: str):
        def check(root: Path, docs: Path, questions: Path) -> None:
            target = root / "mywork"
            if what == "folder":
                target.mkdir()
                (target / "notes.txt").write_text("notes\n")
            else:
                target.write_text("notes\n")
            args = (["docs", "--out", str(target)] if command == "docs"
                    else ["index", str(docs), "--out", str(target)])
            _refused(run_cli(args), str(target))
            expect(sorted(p.name for p in root.iterdir()) == sorted(
                ["docs", "mywork", "questions.jsonl"]), "something was written")
        return check
    for command in ("docs", "index"):
        for what in ("folder", "file"):
            case(f"{command} --out a {what} of the reader's: refused, nothing removed",
                 folder_out(command, what))


def _special_files(case: Case) -> None:
    """chunk --out and golden OUT given a named pipe or a character device (a copy of
    /dev/null's node, where the system lets us make one): refused, left what they were (they
    were replaced by a regular file)."""
    import stat

    def special(command: str, kind: str):
        def check(root: Path, docs: Path, questions: Path) -> None:
            target = root / "out.jsonl"
            if kind == "fifo":
                os.mkfifo(target)
            else:
                try:
                    os.mknod(target, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
                except OSError:  # not root, or not allowed here: the pipe case stands for it
                    return
            args = (["chunk", str(docs / "refunds.md"), "--out", str(target)]
                    if command == "chunk" else ["golden", str(docs), str(questions),
                                                str(target)])
            _refused(run_cli(args), str(target))
            mode = os.lstat(target).st_mode
            expect((stat.S_ISFIFO if kind == "fifo" else stat.S_ISCHR)(mode),
                   "it was replaced by a regular file")
        return check
    for command in ("chunk", "golden"):
        for kind in ("fifo", "device"):
            case(f"{command} --out a {'named pipe' if kind == 'fifo' else 'device'}: refused, "
                 "left as it was", special(command, kind))


def _file_parents(case: Case, quick: bool) -> None:
    """An output whose parent is a file: refused before any work, one line naming the file
    (golden: FileExistsError; chunk: 'File exists'; eval --results: after the whole run).
    golden OUT under a folder that cannot be made: one line, exit 3."""
    def under_file(command: str):
        def check(root: Path, docs: Path, questions: Path) -> None:
            blocker = root / "FILE"
            blocker.write_text("mine\n")
            out = blocker / "sub" / "x.jsonl"
            args = {"chunk": ["chunk", str(docs / "refunds.md"), "--out", str(out)],
                    "golden": ["golden", str(docs), str(questions), str(out)],
                    "eval": ["eval", "--corpus", str(docs), "--golden", str(questions),
                             "--results", str(out)]}[command]
            t0 = time.perf_counter()
            got = run_cli(args)
            _refused(got, str(blocker), "is a file")
            expect(command != "eval" or time.perf_counter() - t0 < 20,
                   "refused only after the run")
        return check
    for command in ("chunk", "golden", "eval"):
        case(f"{command}: an output whose parent is a file is refused naming it",
             under_file(command))

    def cannot_make(root: Path, docs: Path, questions: Path) -> None:
        out = "/proc/self/nope/out.jsonl"
        one_line_error(run_cli(["golden", str(docs), str(questions), out]), 3, out)
    if Path("/proc/self").is_dir():
        case("golden OUT in a folder that cannot be made: one line", cannot_make)
