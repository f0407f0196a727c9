"""A folder of documents read as a corpus: every supported file loaded or skipped with its
reason, never silently.

`load_corpus` walks a folder in a fixed order (`walk_files`), reads each file with
`ragkit.text.documents.load_document` and its metadata from the ``metadata.csv`` sidecar, and
returns a `Corpus`: the documents, the files that failed (``path:line: reason``), the files of
types ragkit does not read, and those left out by rule (`Skipped`: a README, hidden and backup
files, a second path to a file already read), summarised by `summarize_left_out`.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ..files import shown
from ..types import Document
from .documents import (CODE_SUFFIXES, HTML_SUFFIXES, MARKDOWN_SUFFIXES, PDF_SUFFIXES, SIDECAR,
                        TEXT_SUFFIXES, CsvQuoteError, DocumentError, csv_table, date_problem, decode_text,
                        load_document, normalize_newlines)


def _read_sidecar(folder: Path) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """metadata.csv: one row per non-Markdown file (column `path`), other columns = metadata.

    Returns (metadata by relative path, problems). The file of a row that is wrong is skipped
    (not loaded without its metadata), with the row's problem as its reason; a sidecar that
    cannot be read at all is one problem (its files load without sidecar metadata).
    """
    side = folder / SIDECAR
    if not side.is_file():
        return {}, []
    try:
        text = normalize_newlines(decode_text(side.read_bytes(), str(side)))
    except OSError as e:
        return {}, [f"{shown(side)}:1: cannot be read ({e.strerror or e})"]
    except DocumentError as e:
        return {}, [str(e)]
    where = shown(side)
    rows: dict[str, dict[str, Any]] = {}
    bad: dict[str, str] = {}
    header, lines = csv_table(text)
    if isinstance(header, csv.Error):
        return {}, [f"{where}:1: not a readable CSV file ({header})"]
    if not header or "path" not in [h.strip() for h in header]:
        return {}, [f"{where}:1: the header has no 'path' column (got {header!r})"]
    header = [h.strip() for h in header]
    problems = []
    for line_no, row in lines:
        if isinstance(row, CsvQuoteError):
            problems.append(f"{where}:{line_no}: {row}")
            continue
        if isinstance(row, csv.Error):
            problems.append(f"{where}:{line_no}: not a readable CSV row ({row})")
            break
        if len(row) != len(header):
            why = f"{where}:{line_no}: {len(row)} fields, but the header has {len(header)}"
            rel = row[header.index("path")].strip() if header.index("path") < len(row) else ""
            if rel:
                bad[rel] = why
            else:
                problems.append(why)
            continue
        rec = dict(zip(header, row))
        rel = rec.pop("path").strip()
        if not rel:
            problems.append(f"{where}:{line_no}: row has no 'path'")
            continue
        rec = {k: (v if v not in ("", "null") else None) for k, v in rec.items()}
        date = date_problem(rec.get("effective_date"))
        if date:
            bad[rel] = f"{where}:{line_no}: {date}"
            continue
        if rel in rows:
            problems.append(f"{where}:{line_no}: a second row for {rel!r}")
            continue
        rows[rel] = rec
    for rel, where in bad.items():
        rows.pop(rel, None)
        rows[rel] = {"__bad_sidecar_row__": where}
    return rows, problems


BACKUP_SUFFIXES = (".bak", ".orig", ".rej", ".swp", ".swo")
NAMES_SHOWN = 8  # file names a summary line lists before "... and N more"


def hidden_or_backup(rel: str) -> str | None:
    """'hidden' when a part of the relative path `rel` starts with a dot (``.git/``,
    ``.ipynb_checkpoints/``, ``.notes.md``), 'backup' for an editor's or tool's backup copy
    (``x.md~``, ``#x.md#``, ``x.md.bak``, ``.orig``, ``.rej``, ``.swp``), else None.

    >>> hidden_or_backup(".ipynb_checkpoints/a-checkpoint.md"), hidden_or_backup("a.md~")
    ('hidden', 'backup')
    """
    parts = rel.split("/")
    if any(p.startswith(".") and p not in (".", "..") for p in parts):
        return "hidden"
    name = parts[-1]
    if (name.endswith("~") or (len(name) > 1 and name.startswith("#") and name.endswith("#"))
            or Path(name).suffix.lower() in BACKUP_SUFFIXES):
        return "backup"
    return None


@dataclass(frozen=True)
class Skipped:
    """A file (or a folder of `files` files) a folder load left out by rule, not by error:
    kind 'readme', 'hidden', 'backup' or 'duplicate' (a second path to a file or folder
    already read: a link, a hard link); `note` says why, for the summary."""

    path: str
    kind: str
    note: str = ""
    files: int = 1


@dataclass
class Corpus:
    """Documents loaded from a folder, plus the per-file errors met on the way.

    `errors` are files (or sidecar rows) that were skipped, each ``path:line: reason``;
    `ignored` are files of types ragkit does not read (e.g. ``.docx``), for information;
    `skipped` are the files left out by rule (`Skipped`: a README, hidden and backup files,
    second paths to a file already read); `inputs` every file the load read or considered
    reading (all but `ignored`), which no output may overwrite."""

    documents: list[Document]
    errors: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)

    def by_id(self) -> dict[str, Document]:
        return {d.id: d for d in self.documents}

    def summary(self) -> list[str]:
        """One line per kind of file left out (`ignored`, `skipped`), counted and named."""
        return summarize_left_out(self.ignored, self.skipped)


def _names(items: list[str]) -> str:
    listed = ", ".join(shown(i) for i in items[:NAMES_SHOWN])
    return listed + (f", ... and {len(items) - NAMES_SHOWN} more" if len(items) > NAMES_SHOWN
                    else "")


def summarize_left_out(ignored: Iterable[str], skipped: Iterable[Skipped]) -> list[str]:
    """The summary lines of what a folder load left out: files of types ragkit does not read
    (counted by type), READMEs, hidden and backup files, duplicates — each counted and named."""
    from collections import Counter

    ignored, skipped = list(ignored), list(skipped)
    out = []
    if ignored:
        kinds = Counter(Path(p).suffix.lower() or "(no suffix)" for p in ignored)
        out.append(f"ignored {len(ignored)} file(s) of types ragkit does not read: "
                   + ", ".join(f"{k} ({n})" for k, n in sorted(kinds.items())))
    readmes = [s.path for s in skipped if s.kind == "readme"]
    if readmes:
        out.append(f"{len(readmes)} README file(s) not read as documents (a folder's README is "
                   f"taken as notes about it; rename it to read it): {_names(readmes)}")
    hidden = [s for s in skipped if s.kind in ("hidden", "backup")]
    if hidden:
        n = sum(s.files for s in hidden)
        out.append(f"{n} hidden/backup file(s) excluded (--include-hidden reads them): "
                   + _names([s.path + (f" ({s.files} files)" if s.files != 1 else "")
                             for s in hidden]))
    dups = [s for s in skipped if s.kind == "duplicate"]
    if dups:
        out.append(f"{len(dups)} duplicate(s) of files already read, each read once: "
                   + _names([f"{s.path} ({s.note})" for s in dups]))
    return out


def _count_files(folder: str | Path) -> int:
    """Files under `folder`, counted without recursion (a folder 1,100 deep is counted)."""
    import os

    count, stack = 0, [os.fspath(folder)]
    while stack:
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
                        else:
                            count += 1
                    except OSError:
                        continue
        except OSError:
            continue
    return count


def _not_utf8(name: str) -> bool:
    """A name holding bytes that are not UTF-8 (read by Python as lone surrogates)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _walk(folder: Path, include_hidden: bool = True
          ) -> tuple[list[Path], list[str], list[Skipped]]:
    """(files, problems, skipped): every file under `folder`, sorted, following links to files
    and folders. Real folders are walked (depth first, without recursion: a folder 1,100 deep
    is walked) before links to folders, so a folder reached twice is read from its real path
    and the link is listed in `skipped` as a duplicate. Without `include_hidden`, hidden
    entries and backup files are listed in `skipped`, not walked. A name that is not UTF-8 is
    a problem (the file is skipped), printed escaped (`ragkit.files.shown`)."""
    import os

    files: list[Path] = []
    problems: list[str] = []
    skipped: list[Skipped] = []
    seen_dirs: dict[str, Path] = {}
    linked: list[Path] = []

    def walk(top: Path) -> None:
        stack: list[tuple[Path, str | None]] = [(top, None)]
        while stack:
            d, real = stack.pop()
            try:
                # a real (not linked) subfolder's real path is its parent's and its name:
                # realpath on each of 1,100 nested folders would be quadratic
                real = real or os.path.realpath(d)
                if real in seen_dirs:
                    skipped.append(Skipped(str(d), "duplicate",
                                           f"same folder as {shown(seen_dirs[real])}",
                                           _count_files(real)))
                    continue
                seen_dirs[real] = d
                entries = sorted(os.scandir(d), key=lambda e: e.name)
            except OSError as e:
                problems.append(f"{shown(d)}:1: folder cannot be read ({e.strerror or e}); its "
                                "files were skipped")
                continue
            subfolders: list[Path] = []
            for entry in entries:
                _entry(entry, subfolders)
            stack.extend((sub, os.path.join(real, sub.name))  # in name order, depth first
                         for sub in reversed(subfolders))

    def _entry(entry: os.DirEntry, subfolders: list[Path]) -> None:
        p = Path(entry.path)
        try:
            if _not_utf8(entry.name):
                problems.append(f"{shown(p)}:1: the name is not valid UTF-8; skipped (rename "
                                "it to read it)")
                return
            is_link = entry.is_symlink()
            if not include_hidden:
                kind = hidden_or_backup(entry.name)
                if kind:
                    is_dir = entry.is_dir(follow_symlinks=False)
                    skipped.append(Skipped(str(p) + ("/" if is_dir else ""), kind,
                                           files=_count_files(p) if is_dir else 1))
                    return
            if is_link and _bad_link(p, problems):
                return
            if entry.is_dir():
                if is_link and os.path.realpath(p) in {os.path.realpath(x) for x in p.parents}:
                    problems.append(f"{shown(p)}:1: link to a folder above it (a loop); not "
                                    "followed")
                elif is_link:
                    linked.append(p)  # after the real folders
                else:
                    subfolders.append(p)
            elif entry.is_file():
                files.append(p)
            else:
                problems.append(f"{shown(p)}:1: not a regular file (a pipe, socket or device)")
        except OSError as e:
            problems.append(f"{shown(p)}:1: cannot be read ({e.strerror or e})")

    walk(folder)
    while linked:
        walk(linked.pop(0))
    return sorted(files), problems, skipped


def _bad_link(p: Path, problems: list[str]) -> bool:
    """True (and the problem noted) for a link that cannot be followed: dangling, looping."""
    import errno
    import os

    try:
        os.stat(p)
    except FileNotFoundError:
        problems.append(f"{shown(p)}:1: link to {shown(repr(os.readlink(p)))}, which does not "
                        "exist (dangling link)")
    except OSError as e:
        problems.append(f"{shown(p)}:1: link that loops back on itself" if e.errno == errno.ELOOP
                        else f"{shown(p)}:1: link cannot be followed ({e.strerror or e})")
    else:
        return False
    return True


def walk_files(folder: Path) -> tuple[list[Path], list[str]]:
    """Every file under `folder`, sorted, following links to files and folders, and the
    problems met on the way (``path:1: reason``): a folder or link that cannot be read, a link
    whose target does not exist, a link that loops. A folder reached twice (through a link)
    is walked once."""
    files, problems, _ = _walk(folder)
    return files, problems


def _one_path_per_file(folder: Path, files: list[Path]) -> tuple[list[Path], list[Skipped]]:
    """Each real file once: paths to one file (links, hard links) keep the path without a link
    in it (else the first, sorted); the others are `Skipped` duplicates naming it."""
    import os

    root = os.path.realpath(folder)
    groups: dict[tuple[int, int], list[Path]] = {}
    for p in files:
        try:
            st = os.stat(p)
        except OSError:
            groups[(-1, len(groups))] = [p]  # load_document reports it
            continue
        groups.setdefault((st.st_dev, st.st_ino), []).append(p)
    keep, dups = [], []
    for paths in groups.values():
        direct = [p for p in paths if os.path.realpath(p)
                  == os.path.join(root, p.relative_to(folder))]
        first = (direct or paths)[0]
        keep.append(first)
        for p in paths:
            if p != first:
                how = "a link to" if os.path.islink(p) else "same file as"
                dups.append(Skipped(str(p), "duplicate", f"{how} {shown(first)}"))
    return sorted(keep), sorted(dups, key=lambda s: s.path)


def load_corpus(folder: str | Path, strict: bool = True,
                suffixes: Iterable[str] | None = None, include_hidden: bool = False) -> Corpus:
    """Load every supported file under `folder` (sorted, so the order is deterministic).

    Every file is loaded or skipped with its reason: bad front matter, undecodable, unreadable,
    binary, a duplicate doc_id, a bad sidecar row, a dangling or looping link, an unreadable
    folder. With ``strict=True`` any such problem raises one `DocumentError` listing them all;
    with ``strict=False`` they are listed in ``Corpus.errors``. Files of other types are
    listed in ``Corpus.ignored``. Left out by rule, and listed in ``Corpus.skipped``: a README
    (``README.md``), hidden files and folders and backup files (unless `include_hidden`), and
    every path but one to the same file (links, hard links: each real file is one document).
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise DocumentError(f"{shown(folder)}: not a folder")
    allowed = set(suffixes) if suffixes else (MARKDOWN_SUFFIXES | TEXT_SUFFIXES | CODE_SUFFIXES
                                              | HTML_SUFFIXES | PDF_SUFFIXES)
    sidecar, errors = _read_sidecar(folder)
    all_files, walk_errors, skipped = _walk(folder, include_hidden)
    errors.extend(walk_errors)
    files, dups = _one_path_per_file(folder, all_files)
    skipped.extend(dups)
    docs, seen, ignored = [], {}, []
    rels = {p.relative_to(folder).as_posix() for p in all_files}
    inputs = [s.path for s in skipped if s.files == 1 and not s.path.endswith("/")]
    for path in files:
        rel = path.relative_to(folder).as_posix()
        if rel == SIDECAR:
            inputs.append(str(path))
            continue
        if path.name.upper() == "README.MD":
            skipped.append(Skipped(str(path), "readme"))
            inputs.append(str(path))
            continue
        if path.suffix.lower() not in allowed:
            ignored.append(str(path))
            continue
        inputs.append(str(path))
        meta = sidecar.get(rel)
        if meta and "__bad_sidecar_row__" in meta:
            errors.append(f"{shown(path)}:1: skipped, its metadata row is wrong: "
                          f"{meta['__bad_sidecar_row__']}")
            continue
        try:
            doc = load_document(path, metadata=meta)
        except DocumentError as e:
            errors.append(str(e))
            continue
        if doc.id in seen:
            errors.append(f"{shown(path)}:1: doc_id {shown(repr(doc.id))} is already used by "
                          f"{shown(seen[doc.id])}")
            continue
        seen[doc.id] = path
        docs.append(doc)
    missing = sorted(m for m in sidecar if m not in rels)
    errors.extend(sidecar[m]["__bad_sidecar_row__"] if "__bad_sidecar_row__" in sidecar[m]
                  else f"{shown(folder / SIDECAR)}:1: row for {shown(repr(m))}, but no such file"
                  for m in missing)
    if strict and errors:
        raise DocumentError(f"{len(errors)} problem(s) in {shown(folder)}:\n" + "\n".join(errors))
    return Corpus(docs, errors, ignored, skipped, sorted(inputs))
