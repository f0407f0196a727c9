"""Where a command may write: never over one of the files it reads.

Every command that writes a file (``ragkit chunk --out``, ``ragkit golden ... OUT``, ``ragkit
eval --results``) calls `check_output` before it writes anything: an output that is one of its
inputs — the same path, the same path written another way (``./x.md``), a symlink to it, a
hard link to it — is refused with one line naming both paths. Writes themselves go through
`ragkit.cache.atomic_write_bytes` (a temporary file next to the target, renamed into place;
through a symlink to its target), and appends through `ragkit.report.append_rows` (under a
lock).

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


class OutputError(ValueError):
    """An output path that cannot be used (it is an input, or a folder); one line."""


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
    shown = os.fspath(out)  # as the user wrote it (Path drops a leading "./")
    if not shown:
        raise OutputError(f"{flag}: the path is empty")
    out = Path(out)
    if out.is_dir():
        raise OutputError(f"{flag} {shown}: is a folder; give a file")
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
                raise OutputError(f"{flag} {shown} would overwrite the input {f} ({how}); "
                                  "nothing was written: give another path")
    return out
