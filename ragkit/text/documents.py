"""Read one document: its bytes decoded, its newlines normalised, its front matter read.

`load_document` reads a Markdown, text, code or HTML file (HTML becomes Markdown,
`ragkit.text.html`) into a `ragkit.types.Document`. Bytes are decoded as UTF-8 (a UTF-16 or
UTF-32 byte-order mark is honoured), and anything else (binary content, an unknown encoding)
is a `DocumentError` naming the file and line. YAML front matter (``---`` ... ``---`` at the
top of a Markdown file) becomes the document's metadata; the body after it is the document
text, and ``Document.line_offset`` remembers how many lines the front matter took so that
errors name the file's real line numbers. CSV and JSON Lines text is read here too
(`data_lines`, `csv_table`), for the golden files.

The Markdown parser is `ragkit.text.markdown`; a folder of documents is `ragkit.text.corpus`.
"""

from __future__ import annotations

import csv
import datetime as dt
import re
import unicodedata
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

from ..files import shown
from ..types import METADATA_FIELDS, Document, as_date

MARKDOWN_SUFFIXES = {".md", ".markdown"}
TEXT_SUFFIXES = {".txt", ".text", ".rst"}
CODE_SUFFIXES = {".py", ".ts", ".js", ".go", ".java", ".rs", ".c", ".cpp", ".h", ".rb", ".sh",
                 ".tsx"}
HTML_SUFFIXES = {".html", ".htm"}
PDF_SUFFIXES = {".pdf"}
SIDECAR = "metadata.csv"


class DocumentError(ValueError):
    """A document could not be read or parsed; the message starts with ``path:line:``."""


_BOMS = ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe\x00\x00", "utf-32-le"),
         (b"\x00\x00\xfe\xff", "utf-32-be"), (b"\xff\xfe", "utf-16-le"),
         (b"\xfe\xff", "utf-16-be"))


def _utf16_without_bom(data: bytes) -> str | None:
    """'utf-16-le' / 'utf-16-be' when `data` looks like UTF-16 text without a byte-order mark
    (a NUL in every other byte of mostly-ASCII text), else None."""
    head = data[:4096]
    if len(head) < 4:
        return None
    even, odd = head[0::2], head[1::2]
    z_even, z_odd = even.count(0) / len(even), odd.count(0) / len(odd)
    if z_odd > 0.3 and z_even < 0.05:
        return "utf-16-le"
    if z_even > 0.3 and z_odd < 0.05:
        return "utf-16-be"
    return None


def decode_text(data: bytes, path: str) -> str:
    """Text of a file's bytes: UTF-8 (a byte-order mark is dropped), or UTF-16/32 *with* a
    byte-order mark. Raises `DocumentError` (``path:line: reason``) for anything else: bytes
    that are not UTF-8, UTF-16 without a byte-order mark, binary content (NUL bytes)."""
    for bom, codec in _BOMS:
        if data.startswith(bom):
            try:
                text = data[len(bom):].decode(codec)
            except UnicodeDecodeError as e:
                raise DocumentError(f"{path}:1: starts with a {codec} byte-order mark but is "
                                    f"not valid {codec} (offset {e.start + len(bom)})") from None
            break
    else:
        utf16 = _utf16_without_bom(data) if b"\x00" in data[:4096] else None
        if utf16:
            raise DocumentError(f"{path}:1: looks like {utf16.upper()} text without a "
                                "byte-order mark; re-save the file as UTF-8")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            line = data.count(b"\n", 0, e.start) + 1
            raise DocumentError(
                f"{path}:{line}: not valid UTF-8 (byte 0x{data[e.start]:02x} at offset "
                f"{e.start}); re-save the file as UTF-8") from None
    nul = text.find("\x00")
    if nul != -1:
        line = text.count("\n", 0, nul) + 1
        raise DocumentError(f"{path}:{line}: binary content (NUL characters), not a text "
                            "document")
    return text


def _decode(data: bytes, path: str) -> str:
    return decode_text(data, path)


def normalize_newlines(text: str) -> str:
    """Old Mac line endings (a CR alone) become LF; CRLF is kept. One character for one, so
    every offset stays the offset of the same character in the file."""
    return re.sub(r"\r(?!\n)", "\n", text) if "\r" in text else text


def data_lines(text: str) -> list[str]:
    """Lines of a data file (JSONL), split on "\n" only — never `str.splitlines()`, which also
    breaks at U+2028, U+2029, U+0085 and other characters a JSON string may hold. A "\r"
    before the "\n" is dropped; a file with CR-only line endings is split on CR."""
    if "\n" not in text and "\r" in text:
        return text.split("\r")
    return [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]


class CsvQuoteError(csv.Error):
    """A quoted CSV field that does not close where a field ends; the message says so."""


def _unclosed_quote(lines: list[str], one_line: bool) -> str | None:
    """How the quote of a CSV row that starts `lines[0]` fails to close, or None when the row
    reads the same with quotes that must open and close a field. A row on one line is only
    checked for a quote still open at the end of the file (a quote inside a field, as in
    ``5" screen``, is read as text, as before)."""
    try:
        rows = list(csv.reader(lines, strict=True))
    except csv.Error as e:
        if "end of data" in str(e):
            return "is never closed: it runs to the end of the file"
        return None if one_line else ("is never closed where its field ends: a quote in a "
                                      "later line closes it in the middle of a field")
    return None if one_line or len(rows) == 1 else "is never closed where its field ends"


def _csv_lines(text: str) -> Iterator[tuple[int, "list[str] | csv.Error"]]:
    import io

    lines = io.StringIO(text, newline="").readlines()  # split where csv.reader splits
    first = 0  # index of the line the current reader starts at
    while first < len(lines):
        reader = csv.reader(lines[first:])
        end = first  # lines read so far
        while True:
            start = end + 1
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as e:
                yield start, e
                return
            end = first + reader.line_num
            how = None
            if end > start:
                how = _unclosed_quote(lines[start - 1:end], one_line=False)
            elif '"' in lines[start - 1]:
                how = _unclosed_quote(lines[start - 1:start], one_line=True)
            if how:
                took = ("" if end == start else
                        f" (it took in line {end}, which is read as a row of its own)"
                        if end == start + 1 else
                        f" (it took in lines {start + 1}-{end}, which are read as rows of "
                        "their own)")
                yield start, CsvQuoteError(
                    f"a quoted field opened on this line {how}{took}; close the quote, and "
                    'write a quote inside a field as ""')
                first = start  # go on with the next line
                break
            yield start, row


def csv_table(text: str) -> tuple["list[str] | csv.Error | None",
                                  Iterator[tuple[int, "list[str] | csv.Error"]]]:
    """The header of a CSV text (None for an empty text) and its non-blank rows, each with the
    file line it starts on.

    A quoted field may hold line breaks; but a row whose quote does not close where a field
    ends (an unclosed quote swallows every row after it, up to the next quote or the end of the
    file) is yielded as a `CsvQuoteError` naming the line the quote opened on, and reading
    goes on at the next line, so the rows it took in are read, not lost. Any other row the
    csv module cannot parse is yielded as its `csv.Error` and ends the rows.
    """
    rows = _csv_lines(text)
    first = next(rows, None)
    header = None if first is None else first[1]
    return header, ((n, r) for n, r in rows if not isinstance(r, list) or any(
        v.strip() for v in r))


def _jsonable(value: Any) -> Any:
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()[:10] if isinstance(value, dt.date) else value.isoformat()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value


@lru_cache(maxsize=1)
def _yaml_loader():
    """yaml.SafeLoader whose dates that do not exist (2024-02-30) are YAML errors with a line,
    not a ValueError from deep inside the constructor."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    def timestamp(loader, node):
        try:
            return yaml.SafeLoader.construct_yaml_timestamp(loader, node)
        except ValueError as e:
            raise yaml.constructor.ConstructorError(
                None, None, f"{node.value!r} is not a valid date ({e})", node.start_mark
            ) from None

    Loader.add_constructor("tag:yaml.org,2002:timestamp", timestamp)
    return Loader


# The most values (mappings, lists, scalars, each alias counted as what it stands for) a front
# matter may expand to: a few hundred bytes of nested aliases (&a / *a) expand to billions.
FRONT_MATTER_VALUES = 10_000


def _load_capped(raw: str, path: str) -> Any:
    """The YAML in `raw`, once its node graph is known to expand to at most
    `FRONT_MATTER_VALUES` values (`DocumentError` past it, or for an alias to itself)."""
    loader = _yaml_loader()(raw)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        size = _expanded_size(node, FRONT_MATTER_VALUES)
        if size == _LOOP or size > FRONT_MATTER_VALUES:
            what = ("holds an alias inside its own anchor (a loop)" if size == _LOOP else
                    f"expands to more than {FRONT_MATTER_VALUES:,} values through its aliases")
            raise DocumentError(f"{path}:1: front matter {what} (&name / *name); skipped")
        return loader.construct_document(node)
    finally:
        loader.dispose()


_LOOP = -1


def _expanded_size(root: Any, cap: int) -> int:
    """How many values the YAML node `root` stands for once every alias is expanded, counted
    without expanding (each node's size once): a number past `cap` as soon as the count passes
    it, `_LOOP` for a node inside itself."""
    sizes: dict[int, int] = {}
    open_: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        kids = node.value if isinstance(node.value, list) else []
        kids = [x for kid in kids for x in (kid if isinstance(kid, tuple) else (kid,))]
        if done:
            sizes[key] = 1 + sum(sizes[id(k)] for k in kids)
            open_.discard(key)
            if sizes[key] > cap:
                return sizes[key]
        elif key in open_:
            return _LOOP
        elif key not in sizes:
            open_.add(key)
            stack.append((node, True))
            stack.extend((k, False) for k in kids if id(k) not in sizes)
    return sizes[id(root)]


def split_front_matter(text: str, path: str = "<text>") -> tuple[dict[str, Any], str, int]:
    """(metadata, body, number of lines before the body). No front matter -> ({}, text, 0)."""
    import yaml

    text = normalize_newlines(text)
    m = re.match(r"---[ \t]*\r?\n", text)
    if not m:
        return {}, text, 0
    close = re.compile(r"^(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.M)
    end = close.search(text, m.end())
    if end is None:
        raise DocumentError(f"{path}:1: front matter opened with '---' is never closed")
    raw = text[m.end():end.start()]
    try:
        meta = _load_capped(raw, path) if raw.strip() else {}
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = (mark.line + 2) if mark is not None else 1
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        if "is not a valid date" in problem:  # a day that does not exist, e.g. 2024-02-30
            raise DocumentError(f"{path}:{line}: front matter: {problem}") from None
        raise DocumentError(f"{path}:{line}: front matter is not valid YAML ({problem})") from None
    if not isinstance(meta, dict):
        raise DocumentError(
            f"{path}:2: front matter must be a mapping of keys to values, got {type(meta).__name__}"
        )
    _check_fields(meta, raw, path)
    body = text[end.end():]
    return _jsonable(meta), body, text.count("\n", 0, end.end())


# the front-matter fields that must be strings (`ragkit.types.METADATA_FIELDS` and the id)
STRING_FIELDS = ("doc_id", "title", *(f for f in METADATA_FIELDS
                                      if f not in ("title", "effective_date")))


def _check_fields(meta: dict[str, Any], raw: str, path: str) -> None:
    def line_of(key: str) -> int:
        m = re.search(rf"^{re.escape(key)}\s*:", raw, re.M)
        return raw.count("\n", 0, m.start()) + 2 if m else 1

    for key in STRING_FIELDS:
        value = meta.get(key)
        if isinstance(value, (list, dict, bool)):  # a scalar was expected
            raise DocumentError(f"{path}:{line_of(key)}: front matter field {key!r} must be a "
                                f"string, got {type(value).__name__} {value!r}")
    problem = date_problem(meta.get("effective_date"))
    if problem:
        raise DocumentError(f"{path}:{line_of('effective_date')}: {problem}")


def date_problem(date: Any) -> str | None:
    """Why `date` is not a valid ``effective_date`` (None when it is, or when it is absent):
    a date, or a string YYYY-MM-DD naming a day that exists — quoted or not. The rule is
    `ragkit.types.as_date`'s, the one parser every date comparison uses."""
    try:
        as_date(date)
    except ValueError as e:
        return str(e)
    return None


def _format_of(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in MARKDOWN_SUFFIXES:
        return "markdown"
    if suffix in CODE_SUFFIXES:
        return "code"
    if suffix in HTML_SUFFIXES:
        return "html"
    if suffix in PDF_SUFFIXES:
        return "pdf"
    return "text"


def load_document(path: str | Path, metadata: dict[str, Any] | None = None,
                  doc_id: str | None = None) -> Document:
    """Read one file. Markdown front matter becomes metadata (`metadata` overrides it).

    Raises `DocumentError` naming the file (and line) for: a file that cannot be read, bytes
    that are not UTF-8 (or UTF-16/32 with a byte-order mark), UTF-16 without a byte-order mark,
    binary content (NUL characters), an empty or blank file, front matter that is not valid
    YAML or not a mapping, a date that does not exist, or a `doc_id` that is not a string.
    The id (front matter ``doc_id`` or the file name) is put in NFC; the text is kept exactly
    as read, so offsets into it are offsets into the file's own characters.
    Line endings that are a CR alone are read as LF (offsets unchanged).
    """
    path = Path(path)
    where = shown(path)  # in messages: a newline or a terminal code in the name escaped
    fmt = _format_of(path)
    meta: dict[str, Any] = {}
    line_offset = 0
    if fmt == "pdf":
        text, meta = _read_pdf(path, where)
    else:
        try:
            data = path.read_bytes()
        except OSError as e:
            raise DocumentError(f"{where}:1: cannot be read ({e.strerror or e})") from None
        text = normalize_newlines(_decode(data, where))
    if fmt == "markdown":
        meta, text, line_offset = split_front_matter(text, where)
    if fmt == "html":
        from .html import html_to_markdown

        text = html_to_markdown(text, where)
    if fmt in ("html", "pdf"):
        fmt = "markdown"
    if not text.strip():
        raise DocumentError(f"{where}:1: the document is empty (no text after any front matter)")
    meta = {**meta, **(metadata or {})}
    ident = doc_id or meta.get("doc_id") or path.stem
    if not isinstance(ident, str) or not ident.strip():
        raise DocumentError(f"{where}:2: doc_id must be a non-empty string, got "
                            f"{shown(repr(ident))}")
    ident = unicodedata.normalize("NFC", ident)  # a file name in NFD (macOS) is the same id
    meta.setdefault("title", _guess_title(text, path))
    meta["format"] = fmt
    meta["doc_id"] = ident
    return Document(id=ident, text=text, metadata=meta, path=str(path), line_offset=line_offset)


def _read_pdf(path: Path, where: str) -> tuple[str, dict[str, Any]]:
    """(Markdown text, metadata with each page's span) of a PDF (`ragkit.text.pdf`)."""
    from .pdf import PdfError, pdf_to_markdown

    if not path.is_file():
        raise DocumentError(f"{where}:1: cannot be read (not a file)")
    try:
        got = pdf_to_markdown(path)
    except PdfError as e:
        raise DocumentError(str(e).replace(str(path), where, 1)) from None
    except OSError as e:
        raise DocumentError(f"{where}:1: cannot be read ({e.strerror or e})") from None
    # the title is the file's name: a PDF's first heading is often a cover line
    meta = {"title": path.stem.replace("_", " "), "source_format": "pdf", "pages": [list(p) for p in got.pages],
            "pages_without_text": got.pages_without_text, "tables": got.tables,
            "continued_tables": got.continued_tables}
    return got.text, meta


def _guess_title(text: str, path: Path) -> str:
    m = re.search(r"^#\s+(.+)$", text, re.M)
    return m.group(1).strip() if m else path.stem.replace("_", " ").replace("-", " ")
