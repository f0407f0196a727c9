"""Where a command may write: one rule for every output path, checked before any work.

Every command that writes a file (``ragkit chunk --out``, ``ragkit golden ... OUT``, ``ragkit
eval --results``) calls `check_output` before it writes anything, and every command that writes
a folder (``ragkit docs --out``, ``ragkit index --out``, ``ragkit bench ondisk --out``) calls
`check_folder`. The rule (`OutputError`, one line, exit 2):

- a file output is a regular file or a new path: a folder, a device, a named pipe is refused;
- a folder output is new, empty, or was made by the same command (its marker file, `MARKERS`):
  no command replaces or writes into a folder of the reader's;
- a parent of the path that is a file is refused up front, naming it;
- an output that is one of the command's inputs — the same path, the same path written
  another way (``./x.md``), a symlink to it, a hard link to it — is refused naming both paths.

Writes go through `ragkit.files.write_whole` (a temporary file renamed into place, through a
symlink to its target, the old file's mode kept) and appends through
`ragkit.report.append_rows` (in place, under a lock: the file's mode and inode kept). Paths in
messages are printed with `ragkit.files.shown` (escapes for newlines and terminal codes).

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp(); doc = os.path.join(d, "x.md"); open(doc, "w").close()
    >>> check_output(os.path.join(d, ".", "x.md"), [doc], "--out")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ragkit.tools.outputs.OutputError: --out .../x.md would overwrite the input .../x.md ...
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from ..files import not_regular, shown

# The marker file each folder-writing command leaves in its output: a folder holding it was
# made by that command, which may replace (docs) or resume (index) it.
MARKERS = {"docs": ".ragkit-docs", "index": ".ragkit-index"}


class OutputError(ValueError):
    """An output path that cannot be used (it is an input, a folder, a device, under a
    file); one line."""


def file_parent(out: str | Path) -> Path | None:
    """The first ancestor of `out` that exists and is not a folder (a file standing where a
    folder of the path should be), or None."""
    for parent in Path(os.path.abspath(out)).parents:
        try:
            if os.path.exists(parent):
                return None if os.path.isdir(parent) else parent
        except (OSError, ValueError):
            return None
    return None


def check_target(out: str | Path, flag: str, folder: bool = False) -> None:
    """The path rules that do not depend on the inputs: not empty, no parent that is a file,
    and (`folder` False) a regular file or a new path; `OutputError` otherwise."""
    text = os.fspath(out)
    if not text:
        raise OutputError(f"{flag}: the path is empty")
    blocked = file_parent(out)
    if blocked is not None:
        raise OutputError(f"{flag} {shown(text)}: {shown(blocked)} is a file, not a folder; "
                          "nothing was written: give another path")
    what = not_regular(out)
    if not folder and what:
        give = "a file" if what == "a folder" else "a regular file or a new path"
        raise OutputError(f"{flag} {shown(text)}: is {what}; give {give}")


def check_folder(out: str | Path, flag: str, command: str,
                 also: Iterable[str] = ()) -> Path:
    """`out` as a folder `command` may write: new, empty, or holding the command's marker
    (`MARKERS`) or, for a folder made before markers, one of the names in `also`. A command
    with no marker (``bench ondisk``, which removes its folder at the end) takes a new or empty
    folder only. Anything else (a file, a device, a folder of the reader's) is an `OutputError`
    naming it."""
    check_target(out, flag, folder=True)
    path, text = Path(out), shown(os.fspath(out))
    what = not_regular(path)
    if what is None and path.exists():
        raise OutputError(f"{flag} {text}: is a file; give a folder (a new or empty one)")
    if what and what != "a folder":
        raise OutputError(f"{flag} {text}: is {what}; give a folder (a new or empty one)")
    if what == "a folder":
        try:
            names = {p.name for p in path.iterdir()}
        except OSError as e:
            raise OutputError(f"{flag} {text}: cannot be read ({e.strerror or e})") from None
        marker = MARKERS.get(command)
        if names and marker is None:
            raise OutputError(f"{flag} {text}: is not a new or empty folder (it holds "
                              f"{len(names)} entr{'y' if len(names) == 1 else 'ies'}); "
                              "nothing was written or removed: give another path")
        if names and marker not in names and not names & set(also):
            raise OutputError(
                f"{flag} {text}: is a folder that ragkit {command} did not make (it holds "
                f"{len(names)} entr{'y' if len(names) == 1 else 'ies'}, and no "
                f"{MARKERS[command]}); nothing was written or "
                "removed: give a new or empty folder")
    return path


def mark_folder(out: str | Path, command: str) -> None:
    """Leave `command`'s marker in the folder it wrote (`check_folder` lets it replace it)."""
    marker = Path(out) / MARKERS[command]
    if not marker.exists():
        marker.write_text(f"made by ragkit {command}; ragkit {command} may replace this "
                          "folder\n")


def _identity(path: str | Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)  # follows links
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


def check_output(out: str | Path, inputs: Iterable[str | Path], flag: str = "--out") -> Path:
    """`out`, when writing it cannot overwrite any of `inputs` (files; a folder stands for
    every file under it); else `OutputError` naming both paths. An `out` that does not exist
    yet is never an input; one that exists is compared by what it is on disk (device and
    inode), so a symlink, a hard link or another spelling of an input's path is caught."""
    check_target(out, flag)
    given = shown(os.fspath(out))  # as the user wrote it (Path drops a leading "./")
    out = Path(out)
    me = _identity(out)
    if me is None:
        return out
    for inp in inputs:
        files: Iterable[str | Path] = [inp]
        if Path(inp).is_dir():
            from ..text.corpus import walk_files

            files = walk_files(Path(inp))[0]
        for f in files:
            if _identity(f) == me:
                how = ("the same file" if os.path.realpath(out) == os.path.realpath(f)
                       else "a hard link to it")
                raise OutputError(f"{flag} {given} would overwrite the input {shown(f)} "
                                  f"({how}); "
                                  "nothing was written: give another path")
    return out
