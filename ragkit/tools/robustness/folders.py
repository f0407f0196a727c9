"""Corpus folders: every file loaded, or skipped with its reason and counted."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from .base import Area, Context, expect


def run(ctx: Context) -> Area:
    return folders_area(ctx.folder)


GOOD_MD = b"---\ntitle: Good\n---\n# Good\n\nGold pays 2%.\n"


def _folder_cases() -> list[tuple[str, Callable[[Path], None], int, str]]:
    """(name, make(folder), documents expected, text of the one expected problem or "")."""
    import os

    def files(**named: bytes) -> Callable[[Path], None]:
        def make(d: Path) -> None:
            for n, data in named.items():
                (d / n.replace("__", ".")).write_bytes(data)
        return make

    def link(name: str, target: str) -> Callable[[Path], None]:
        return lambda d: os.symlink(target, d / name)

    def both(*makers) -> Callable[[Path], None]:
        def make(d: Path) -> None:
            for m in makers:
                m(d)
        return make

    sidecar = b"path,doc_type,effective_date\n"
    return [
        ("good only", files(), 1, ""),
        ("bad yaml", files(bad__md=b"---\ntitle: [unclosed\n---\nbody\n"), 1, "not valid YAML"),
        ("impossible date", files(d__md=b"---\neffective_date: 2024-02-30\n---\nbody\n"), 1,
         "not a valid date"),
        ("impossible quoted date", files(d__md=b"---\neffective_date: '2023-02-29'\n---\nb\n"),
         1, "not a valid date"),
        ("latin-1", files(l__md="caf\xe9\n".encode("latin-1")), 1, "not valid UTF-8"),
        ("utf-16 without bom", files(u__txt="hello world\n".encode("utf-16-le")), 1, "UTF-16"),
        ("utf-16 with bom", files(u__txt="hello world\n".encode("utf-16")), 2, ""),
        ("nul-filled markdown", files(n__md=b"\x00" * 64), 1, "binary"),
        ("empty file", files(e__md=b""), 1, "empty"),
        ("unclosed front matter", files(o__md=b"---\ntitle: x\nbody\n"), 1, "never closed"),
        ("doc_id a list", files(i__md=b"---\ndoc_id: [1]\n---\nbody\n"), 1, "must be a string"),
        ("duplicate doc_id", files(a__md=b"---\ndoc_id: good\n---\nx\n"), 1, "already used"),
        ("dangling link", link("gone.md", "nowhere.md"), 1, "dangling"),
        ("self loop link", link("loop.md", "loop.md"), 1, "loops"),
        ("folder loop", lambda d: (d / "sub").mkdir() or os.symlink("..", d / "sub" / "up"), 1,
         "loop"),
        ("link to a file", both(files(t__txt=b"target text\n"), link("l.md", "t.txt")), 3, ""),
        ("cr-only endings", files(c__md=b"---\rtitle: CR\r---\r# CR\r\rText.\r"), 2, ""),
        ("pdf ignored", files(x__pdf=b"%PDF-1.4"), 1, ""),
        ("readme skipped", files(README__md=b"# Readme\n"), 1, ""),
        ("sidecar undecodable", files(metadata__csv=b"path,title\nx.py,caf\xe9\n",
                                      x__py=b"x = 1\n"), 2, "not valid UTF-8"),
        ("sidecar bad date", files(metadata__csv=sidecar + b"x.py,code,2024-02-30\n",
                                   x__py=b"x = 1\n"), 1, "not a valid date"),
        ("sidecar short row", files(metadata__csv=sidecar + b"x.py\n", x__py=b"x = 1\n"), 1,
         "fields"),
        ("sidecar with bom", files(metadata__csv=b"\xef\xbb\xbf" + sidecar
                                   + b"x.py,code,2024-02-01\n", x__py=b"x = 1\n"), 2, ""),
        ("sidecar row for a missing file", files(metadata__csv=sidecar + b"y.py,code,\n"), 1,
         "no such file"),
        ("sidecar without path column", files(metadata__csv=b"file,title\nx.py,X\n",
                                              x__py=b"x = 1\n"), 2, "no 'path' column"),
        ("fifo", lambda d: os.mkfifo(d / "pipe.md"), 1, "not a regular file"),
    ]


def _load_with_faults(folder: Path, unreadable: set[str]):
    """load_corpus with reads of the named files or folders failing (as for a file without
    read permission; root ignores permission bits, so the failure is injected)."""
    import os
    from unittest import mock

    from ...documents import load_corpus

    real_read, real_scandir = Path.read_bytes, os.scandir

    def read_bytes(self):
        if self.name in unreadable:
            raise PermissionError(13, "Permission denied", str(self))
        return real_read(self)

    def scandir(path="."):
        if Path(path).name in unreadable:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    with mock.patch.object(Path, "read_bytes", read_bytes), \
            mock.patch("os.scandir", scandir):
        return load_corpus(folder, strict=False)


def folders_area(folder: Path) -> Area:
    from ...documents import DocumentError, load_corpus

    area = Area("folders")
    folder.mkdir(parents=True, exist_ok=True)
    n = 0
    for nested in (False, True):
        for name, make, want_docs, want_error in _folder_cases():
            n += 1
            root = folder / f"f{n}"
            root.mkdir()
            (root / "good.md").write_bytes(GOOD_MD)
            target = root / "nested" if nested and not name.startswith("sidecar") else root
            target.mkdir(exist_ok=True)

            def check(root=root, target=target, make=make, want_docs=want_docs,
                      want_error=want_error):
                make(target)
                corpus = load_corpus(root, strict=False)
                expect(len(corpus.documents) == want_docs,
                        f"{len(corpus.documents)} documents, expected {want_docs}; "
                        f"errors: {corpus.errors}")
                if want_error:
                    expect(len(corpus.errors) == 1 and want_error in corpus.errors[0],
                            f"expected one problem with {want_error!r}, got {corpus.errors}")
                    head = corpus.errors[0].split(": ", 1)[0]
                    expect(head.rsplit(":", 1)[-1].isdigit(),
                            f"problem does not name file:line: {corpus.errors[0]}")
                    try:
                        load_corpus(root, strict=True)
                        raise AssertionError("strict load did not raise")
                    except DocumentError as e:
                        expect(want_error in str(e), f"strict error lacks the reason: {e}")
                else:
                    expect(not corpus.errors, f"unexpected problems: {corpus.errors}")
            area.case(f"{'nested ' if nested else ''}{name}", check)
    for what in ("file", "folder"):
        for nested in (False, True):
            n += 1
            root = folder / f"f{n}"
            (root / "sub").mkdir(parents=True)
            (root / "good.md").write_bytes(GOOD_MD)
            where = root / "sub" if nested else root
            (where / "locked.md").write_bytes(b"# Locked\n\ntext\n")
            (where / "lockeddir").mkdir()
            (where / "lockeddir" / "inside.md").write_bytes(b"# Inside\n\ntext\n")

            def check(root=root, what=what):
                name = "locked.md" if what == "file" else "lockeddir"
                corpus = _load_with_faults(root, {name})
                expect(len(corpus.documents) == 2, f"{len(corpus.documents)} documents")
                expect(len(corpus.errors) == 1 and "cannot be read" in corpus.errors[0],
                        f"expected one 'cannot be read' problem, got {corpus.errors}")
            area.case(f"unreadable {what}{' (nested)' if nested else ''}", check)
    return area
