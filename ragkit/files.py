"""Writing a reader's files, and printing their names.

`write_whole` replaces a regular file all at once (a temporary file renamed into place, as
`ragkit.cache.atomic_write_bytes`), keeping the mode the file had; it never replaces anything
that is not a regular file (a device, a pipe, a folder). `append_bytes` adds to a file in
place: the same file (inode, hard links, mode) before and after, and a failed append leaves the
file as it was. `shown` is a file name as ragkit prints it: control characters (a newline, a
terminal escape), lone surrogates (bytes that are not UTF-8 in a name) and invisible format
characters are written as escapes, so a name can neither break a one-line message nor drive the
terminal.

    >>> shown("a\\nb\\x1b[2J.md")
    'a\\\\nb\\\\x1b[2J.md'
    >>> shown("bad\\udcffname.md"), shown("plain/x.md")
    ('bad\\\\udcffname.md', 'plain/x.md')
"""

from __future__ import annotations

import os
import stat
import unicodedata
from pathlib import Path


def shown(name: object) -> str:
    """`name` (a path, a string) with every character that is not printable escaped as Python
    writes it in a string literal (``\\n``, ``\\x1b``, ``\\udcff``, ``\\u200b``); printable
    text, spaces included, unchanged."""
    text = os.fspath(name) if isinstance(name, os.PathLike) else str(name)
    if text.isprintable():
        return text
    out = []
    for ch in text:
        if ch.isprintable() or ch == " ":
            out.append(ch)
        elif unicodedata.category(ch) == "Cs" or ord(ch) > 0xFF:
            out.append(f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}")
        else:
            out.append(repr(ch)[1:-1] if ch in "\n\r\t" else f"\\x{ord(ch):02x}")
    return "".join(out)


def not_regular(path: str | Path) -> str | None:
    """What `path` is when it exists and is not a regular file (following links): 'a folder',
    'a character device', ...; None for a regular file or a path that does not exist."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode):
        return None
    for test, what in ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a named pipe"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return what
    return "not a regular file"


def write_whole(path: str | Path, data: bytes) -> None:
    """Write `data` to `path` all at once (a temporary file next to it, renamed into place;
    through a symlink to its target). An existing file keeps its mode; a new one gets the
    usual mode (0666 less the umask). `IsADirectoryError`/`OSError` for a `path` that exists
    and is not a regular file: nothing is replaced."""
    real = Path(os.path.realpath(path))
    what = not_regular(real)
    if what:
        raise OSError(f"{path} is {what}, not a regular file; nothing was written")
    from .cache import atomic_write_bytes

    atomic_write_bytes(real, data)  # keeps an existing file's mode, gives a new one the usual


def append_bytes(path: str | Path, data: bytes) -> None:
    """Add `data` at the end of the regular file `path` (made if new), in place: its inode,
    its hard links and its mode are kept. When the file does not end with a newline, one is
    written first (so a line of `data` never joins the last line). A failed append (a full
    disk) cuts the file back to its old length."""
    what = not_regular(path)
    if what:
        raise OSError(f"{path} is {what}, not a regular file; nothing was written")
    from .cache import new_file_mode

    Path(os.path.realpath(path)).parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, new_file_mode())
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        except BaseException:
            os.ftruncate(fd, size)
            raise
    finally:
        os.close(fd)
