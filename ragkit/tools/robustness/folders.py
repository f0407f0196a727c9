"""Corpus folders: every file loaded, or skipped with its reason and counted.

Besides the files that fail, a load leaves some out by rule, and counts and names each in its
summary (`left_out_cases`): a README, hidden files and folders (``.git``,
``.ipynb_checkpoints``) and backup files unless ``--include-hidden``, and every second path to
a file already read (a symlinked copy is one document). ``--corpus ""`` is a usage error, not
the current folder. No case changes a byte of the folder it reads."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from .base import Area, Context, expect, snapshot


def run(ctx: Context) -> Area:
    return folders_area(ctx.folder, quick=ctx.quick)


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
        ("link to a file", both(files(t__txt=b"target text\n"), link("l.md", "t.txt")), 2, ""),
        ("cr-only endings", files(c__md=b"---\rtitle: CR\r---\r# CR\r\rText.\r"), 2, ""),
        ("pdf corrupt", files(x__pdf=b"%PDF-1.4"), 1, "not a readable PDF"),
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
        # issue 51: front matter whose aliases expand to 10^9 values (MemoryError for the
        # whole folder), an alias inside its own anchor, a name that is not UTF-8 (a
        # UnicodeEncodeError ended the run); folders 1,100 deep: `deep_folders_case`
        ("yaml alias bomb", files(bomb__md=yaml_bomb(9)), 1, "through its aliases"),
        ("yaml alias loop", files(loop__md=b"---\na: &a [x, *a]\n---\nbody\n"), 1, "a loop"),
        ("name not UTF-8", lambda d: (d / os.fsdecode(b"bad\xffname.md")).write_bytes(GOOD_MD),
         1, "not valid UTF-8"),
    ]


def yaml_bomb(levels: int) -> bytes:
    """Front matter of `levels` levels of aliases, each ten of the level below (a few hundred
    bytes that stand for 10^levels values), and a body."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, levels + 1)]
    return ("---\n" + "\n".join(lines) + "\n---\n# Bomb\n\nbody\n").encode()


def deep_folders(root: Path, depth: int) -> Path:
    """A chain of `depth` nested folders under `root`, made one by one (``os.makedirs``
    recurses), with one document at the bottom; the bottom folder."""
    import os

    here = os.fspath(root)
    for _ in range(depth):
        here = os.path.join(here, "d")
        os.mkdir(here)
    Path(here, "deep.md").write_bytes(b"# Deep\n\nat the bottom\n")
    return Path(here)


def remove_deep(root: Path) -> None:
    """Remove what `deep_folders` made under `root`, bottom up (``shutil.rmtree`` recurses)."""
    import os

    here = os.path.join(os.fspath(root), "d")
    chain = []
    while os.path.isdir(here):
        chain.append(here)
        here = os.path.join(here, "d")
    for folder in reversed(chain):
        for name in os.listdir(folder):
            if name != "d":
                os.unlink(os.path.join(folder, name))
        os.rmdir(folder)


def deep_folders_case(area: Area, folder: Path) -> None:
    """Folders nested 1,100 deep (past Python's recursion limit): every document read
    (the walk recursed: RecursionError), through the CLI too."""
    from ...text.corpus import load_corpus
    from .base import run_cli

    def check() -> None:
        root = folder / "deep"
        root.mkdir()
        (root / "good.md").write_bytes(GOOD_MD)
        try:
            deep_folders(root, 1100)
            corpus = load_corpus(root, strict=False)
            expect(len(corpus.documents) == 2 and not corpus.errors,
                   f"{len(corpus.documents)} documents, problems {corpus.errors[:2]}")
            out = run_cli(["chunk", str(root), "--limit", "0"])
            expect(out.returncode == 0 and "Traceback" not in out.stderr,
                   f"chunk: exit {out.returncode}: {out.stderr[-300:]}")
        finally:
            remove_deep(root)
    area.case("folders 1,100 deep: every document read", check)


def _load_with_faults(folder: Path, unreadable: set[str]):
    """load_corpus with reads of the named files or folders failing (as for a file without
    read permission; root ignores permission bits, so the failure is injected)."""
    import os
    from unittest import mock

    from ...text.corpus import load_corpus

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


def _left_out_tree(root: Path) -> None:
    """good.md, plus everything a load leaves out by rule: a README, a stale checkpoint copy of
    good.md with its doc_id, a .git folder, a hidden file, backups, two links to good.md."""
    import os

    (root / ".ipynb_checkpoints").mkdir(parents=True)
    (root / "good.md").write_bytes(GOOD_MD)
    (root / ".ipynb_checkpoints" / "good-checkpoint.md").write_bytes(
        b"---\ndoc_id: good\n---\n# Stale\n\nGold pays 9%.\n")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD.md").write_bytes(b"# ref\n\nrefs/heads/main\n")
    (root / ".notes.md").write_bytes(b"# Notes\n\nprivate\n")
    (root / "README.md").write_bytes(b"# About\n\nthis folder\n")
    for name in ("good.md~", "good.md.bak", "good.md.orig", "#good.md#"):
        (root / name).write_bytes(b"# Old\n\nold\n")
    os.symlink("good.md", root / "copy.md")
    os.symlink("good.md", root / "another.md")


def left_out_cases(area: Area, folder: Path, quick: bool = False) -> None:
    """What a folder load leaves out by rule: the right documents, each file left out counted
    and named in the summary, and the folder unchanged."""
    from ...text.corpus import load_corpus
    from .base import one_line_error, run_cli

    def case(label: str, check: Callable[[Path], None], nested: bool = False) -> None:
        root = folder / f"left-out-{len(list(folder.glob('left-out-*')))}"
        where = root / "sub" if nested else root
        _left_out_tree(where)
        before = snapshot(root)

        def run() -> None:
            check(root)
            expect(snapshot(root) == before, "the folder changed")
        area.case(label + (" (nested)" if nested else ""), run)

    def default(root: Path) -> None:
        c = load_corpus(root, strict=False)
        expect([(d.id, Path(d.path).name) for d in c.documents] == [("good", "good.md")],
               f"documents {[(d.id, d.path) for d in c.documents]}; errors {c.errors}")
        expect(c.errors == [] and c.ignored == [], f"errors {c.errors}, ignored {c.ignored}")
        text = "\n".join(c.summary())
        for needle in ("1 README file(s)", "README.md", "7 hidden/backup file(s) excluded",
                       ".ipynb_checkpoints", ".git", ".notes.md", "good.md~", "#good.md#",
                       "2 duplicate(s)", "copy.md", "another.md"):
            expect(needle in text, f"{needle!r} not in the summary: {text}")

    def hidden(root: Path) -> None:
        c = load_corpus(root, strict=False, include_hidden=True)
        ids = sorted(d.id for d in c.documents)
        expect(ids == [".notes", "HEAD", "good"], f"documents {ids}")
        expect(len(c.errors) == 1 and "doc_id 'good' is already used" in c.errors[0],
               f"the checkpoint's doc_id clash is not reported: {c.errors}")
        expect(not any(s.kind in ("hidden", "backup") for s in c.skipped), f"{c.skipped}")
        expect(len(c.ignored) == 4, f"backups of unread types not listed: {c.ignored}")

    for nested in ((False,) if quick else (False, True)):
        case("README, hidden, backup and linked copies left out, counted, named", default,
             nested)
        case("--include-hidden reads hidden and backup files", hidden, nested)

    def linked_folder(root: Path) -> None:
        import os

        os.symlink("sub", root / "alias")
        c = load_corpus(root, strict=False)
        expect([Path(d.path).parent.name for d in c.documents] == ["sub"],
               f"documents {[d.path for d in c.documents]}")
        expect(any(s.kind == "duplicate" and s.path.endswith("alias") for s in c.skipped),
               f"the linked folder is not named: {c.skipped}")
    case("a linked folder read once, from its real path", linked_folder, nested=True)

    def cli(root: Path) -> None:
        out = run_cli(["chunk", str(root), "--strategy", "fixed_chars:200/0", "--limit", "0"])
        expect("Traceback" not in out.stderr and out.returncode == 0,
               f"exit {out.returncode}: {out.stderr[-300:]}")
        for needle in ("README.md", "7 hidden/backup file(s) excluded", "--include-hidden",
                       "2 duplicate(s)"):
            expect(needle in out.stdout, f"{needle!r} not in the output: {out.stdout[-400:]}")
    if not quick:  # the linter loads the embedder's tokenizer: seconds
        case("ragkit chunk prints what it left out", cli)

    def empty_corpus(root: Path) -> None:
        q = root / "q.jsonl"
        q.write_text('{"id": "1", "question": "?", "evidence": [{"quote": "Gold"}]}\n')
        before = q.read_bytes()
        out = run_cli(["eval", "--corpus", "", "--golden", str(q), "--results",
                       str(root / "rows.jsonl")], cwd=root)
        one_line_error(out, 2, "--corpus", "empty")
        expect(not (root / "rows.jsonl").exists(), "rows were written")
        expect(q.read_bytes() == before, "the golden file changed")
        q.unlink()
    case('--corpus "" is a usage error, not the current folder', empty_corpus)


def folders_area(folder: Path, quick: bool = False) -> Area:
    from ...text.corpus import load_corpus
    from ...text.documents import DocumentError

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
    left_out_cases(area, folder, quick)
    deep_folders_case(area, folder)
    return area
