"""Read documents and parse Markdown into typed blocks with exact character offsets.

Parsing is done by markdown-it-py (CommonMark + tables), which reports each top-level block's
line range; we turn line ranges into character offsets of the original text (CRLF included),
trim surrounding whitespace, and check the invariant ``text[start:end] == block.text``. Any
non-blank text the parser did not claim (e.g. link reference definitions) becomes a paragraph
block flagged ``meta["unparsed"]``, so nothing is dropped.

YAML front matter (``---`` ... ``---`` at the top of a Markdown file) becomes the document's
metadata; the body after it is the document text, and ``Document.line_offset`` remembers how
many lines the front matter took so that errors name the file's real line numbers.

    >>> [(b.kind, b.text) for b in parse_markdown("# Fees\\n\\nGold pays 2%.\\n")]
    [('heading', '# Fees'), ('paragraph', 'Gold pays 2%.')]
"""

from __future__ import annotations

import bisect
import csv
import datetime as dt
import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Iterator

from ..types import METADATA_FIELDS, Block, Document, trim_span

MARKDOWN_SUFFIXES = {".md", ".markdown"}
TEXT_SUFFIXES = {".txt", ".text", ".rst"}
CODE_SUFFIXES = {".py", ".ts", ".js", ".go", ".java", ".rs", ".c", ".cpp", ".h", ".rb", ".sh", ".tsx"}
HTML_SUFFIXES = {".html", ".htm"}
SIDECAR = "metadata.csv"
_NEWLINE = re.compile(r"\r\n?|\n")


class DocumentError(ValueError):
    """A document could not be read or parsed; the message starts with ``path:line:``."""


@lru_cache(maxsize=1)
def _markdown_parser():
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": True}).enable("table")


def _line_starts(text: str) -> list[int]:
    """Character offset where each line starts, with line breaks as markdown-it sees them."""
    starts = [0]
    starts.extend(m.end() for m in _NEWLINE.finditer(text))
    return starts


def parse_markdown(text: str) -> list[Block]:
    """Top-level blocks of a Markdown text, in order, with exact offsets into `text`."""
    tokens = _markdown_parser().parse(text)
    starts = _line_starts(text)
    n_lines = len(starts)

    def span(line_map: list[int]) -> tuple[int, int]:
        a, b = line_map
        s = starts[a] if a < n_lines else len(text)
        e = starts[b] if b < n_lines else len(text)
        return trim_span(text, s, e)

    blocks: list[Block] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.level != 0 or tok.map is None or tok.nesting == -1:
            i += 1
            continue
        s, e = span(tok.map)
        meta: dict[str, Any] = {}
        level = 0
        t = tok.type
        if t == "heading_open":
            kind, level = "heading", int(tok.tag[1])
            meta["title"] = tokens[i + 1].content.strip()
        elif t == "paragraph_open":
            kind = "paragraph"
        elif t == "table_open":
            kind = "table"
            rows = []
            j = i + 1
            while tokens[j].type != "table_close":
                if tokens[j].type == "tr_open" and tokens[j].map:
                    rows.append(span(tokens[j].map))
                j += 1
            meta["rows"] = rows  # header row first; the delimiter row belongs to the header gap
        elif t in ("bullet_list_open", "ordered_list_open"):
            kind = "list"
            items, depth, j = [], 0, i + 1
            close = t.replace("_open", "_close")
            while not (tokens[j].type == close and tokens[j].level == 0):
                if tokens[j].type == "list_item_open":
                    if tokens[j].level == 1 and tokens[j].map:
                        items.append(span(tokens[j].map))
                    depth = max(depth, tokens[j].level // 2 + 1)
                j += 1
            meta["items"], level = items, depth
        elif t in ("fence", "code_block"):
            kind = "code"
            meta["info"] = tok.info.strip()
        elif t == "html_block":
            kind = "html"
        elif t == "blockquote_open":
            kind = "quote"
        elif t == "hr":
            kind = "rule"
        else:
            kind = "paragraph"
        if e > s:
            blocks.append(Block(kind=kind, start=s, end=e, text=text[s:e], level=level, meta=meta))
        i += 1
    return _fill_gaps(text, blocks)


def _fill_gaps(text: str, blocks: list[Block]) -> list[Block]:
    """Turn any non-blank text between parsed blocks into `unparsed` paragraph blocks."""
    out: list[Block] = []
    pos = 0
    for b in sorted(blocks, key=lambda b: b.start):
        if b.start < pos:  # markdown-it line ranges never overlap; guard anyway
            raise AssertionError(f"overlapping blocks at offset {b.start}")
        out.extend(_gap_blocks(text, pos, b.start))
        out.append(b)
        pos = b.end
    out.extend(_gap_blocks(text, pos, len(text)))
    return out


def _gap_blocks(text: str, start: int, end: int) -> list[Block]:
    s, e = trim_span(text, start, end)
    if e <= s:
        return []
    return [Block(kind="paragraph", start=s, end=e, text=text[s:e], meta={"unparsed": True})]


def blocks_for(doc: Document) -> list[Block]:
    """Blocks of any document: Markdown is parsed; code and plain text become paragraphs
    separated by blank lines (code files are handled by the code chunker)."""
    if doc.metadata.get("format", "markdown") == "markdown":
        return parse_markdown(doc.text)
    return plain_blocks(doc.text)


def plain_blocks(text: str) -> list[Block]:
    """Paragraph blocks separated by blank lines, with offsets."""
    out, pos = [], 0
    for m in re.finditer(r"(?:\r?\n[ \t]*){2,}", text):
        out.extend(_gap_blocks(text, pos, m.start()))
        pos = m.end()
    out.extend(_gap_blocks(text, pos, len(text)))
    return out


# --------------------------------------------------------------------------- reading files


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
        meta = yaml.load(raw, Loader=_yaml_loader()) if raw.strip() else {}
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
    a date, or a string YYYY-MM-DD naming a day that exists — quoted or not."""
    if date is None or isinstance(date, dt.date):
        return None
    if isinstance(date, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", date.strip()):
        try:
            dt.date.fromisoformat(date.strip())
            return None
        except ValueError as e:
            return f"effective_date {date!r} is not a valid date ({e})"
    return f"effective_date must be a date written YYYY-MM-DD, got {date!r}"


def _format_of(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in MARKDOWN_SUFFIXES:
        return "markdown"
    if suffix in CODE_SUFFIXES:
        return "code"
    if suffix in HTML_SUFFIXES:
        return "html"
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
    fmt = _format_of(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise DocumentError(f"{path}:1: cannot be read ({e.strerror or e})") from None
    text = normalize_newlines(_decode(data, str(path)))
    meta: dict[str, Any] = {}
    line_offset = 0
    if fmt == "markdown":
        meta, text, line_offset = split_front_matter(text, str(path))
    if fmt == "html":
        from .html import html_to_markdown

        text = html_to_markdown(text, str(path))
        fmt = "markdown"
    if not text.strip():
        raise DocumentError(f"{path}:1: the document is empty (no text after any front matter)")
    meta = {**meta, **(metadata or {})}
    ident = doc_id or meta.get("doc_id") or path.stem
    if not isinstance(ident, str) or not ident.strip():
        raise DocumentError(f"{path}:2: doc_id must be a non-empty string, got {ident!r}")
    ident = unicodedata.normalize("NFC", ident)  # a file name in NFD (macOS) is the same id
    meta.setdefault("title", _guess_title(text, path))
    meta["format"] = fmt
    meta["doc_id"] = ident
    return Document(id=ident, text=text, metadata=meta, path=str(path), line_offset=line_offset)


def _guess_title(text: str, path: Path) -> str:
    m = re.search(r"^#\s+(.+)$", text, re.M)
    return m.group(1).strip() if m else path.stem.replace("_", " ").replace("-", " ")


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
        return {}, [f"{side}:1: cannot be read ({e.strerror or e})"]
    except DocumentError as e:
        return {}, [str(e)]
    rows: dict[str, dict[str, Any]] = {}
    bad: dict[str, str] = {}
    header, lines = csv_table(text)
    if isinstance(header, csv.Error):
        return {}, [f"{side}:1: not a readable CSV file ({header})"]
    if not header or "path" not in [h.strip() for h in header]:
        return {}, [f"{side}:1: the header has no 'path' column (got {header!r})"]
    header = [h.strip() for h in header]
    problems = []
    for line_no, row in lines:
        if isinstance(row, CsvQuoteError):
            problems.append(f"{side}:{line_no}: {row}")
            continue
        if isinstance(row, csv.Error):
            problems.append(f"{side}:{line_no}: not a readable CSV row ({row})")
            break
        if len(row) != len(header):
            why = f"{side}:{line_no}: {len(row)} fields, but the header has {len(header)}"
            rel = row[header.index("path")].strip() if header.index("path") < len(row) else ""
            if rel:
                bad[rel] = why
            else:
                problems.append(why)
            continue
        rec = dict(zip(header, row))
        rel = rec.pop("path").strip()
        if not rel:
            problems.append(f"{side}:{line_no}: row has no 'path'")
            continue
        rec = {k: (v if v not in ("", "null") else None) for k, v in rec.items()}
        date = date_problem(rec.get("effective_date"))
        if date:
            bad[rel] = f"{side}:{line_no}: {date}"
            continue
        if rel in rows:
            problems.append(f"{side}:{line_no}: a second row for {rel!r}")
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
    `ignored` are files of types ragkit does not read (e.g. ``.pdf``), for information;
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
    shown = ", ".join(items[:NAMES_SHOWN])
    return shown + (f", ... and {len(items) - NAMES_SHOWN} more" if len(items) > NAMES_SHOWN
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


def _count_files(folder: str) -> int:
    import os

    return sum(len(files) for _, _, files in os.walk(folder, onerror=lambda e: None))


def _walk(folder: Path, include_hidden: bool = True
          ) -> tuple[list[Path], list[str], list[Skipped]]:
    """(files, problems, skipped): every file under `folder`, sorted, following links to files
    and folders. Real folders are walked before links to folders, so a folder reached twice
    is read from its real path and the link is listed in `skipped` as a duplicate. Without
    `include_hidden`, hidden entries and backup files are listed in `skipped`, not walked."""
    import errno
    import os

    files: list[Path] = []
    problems: list[str] = []
    skipped: list[Skipped] = []
    seen_dirs: dict[str, Path] = {}
    linked: list[Path] = []

    def walk(d: Path, via_link: bool = False) -> None:
        try:
            real = os.path.realpath(d)
            if real in seen_dirs:
                skipped.append(Skipped(str(d), "duplicate", f"same folder as {seen_dirs[real]}",
                                       _count_files(real)))
                return
            seen_dirs[real] = d
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError as e:
            problems.append(f"{d}:1: folder cannot be read ({e.strerror or e}); its files "
                            "were skipped")
            return
        for entry in entries:
            p = Path(entry.path)
            try:
                is_link = entry.is_symlink()
                if not include_hidden:
                    kind = hidden_or_backup(entry.name)
                    if kind:
                        is_dir = entry.is_dir(follow_symlinks=False)
                        skipped.append(Skipped(str(p) + ("/" if is_dir else ""), kind,
                                               files=_count_files(p) if is_dir else 1))
                        continue
                if is_link:
                    try:
                        os.stat(p)
                    except FileNotFoundError:
                        problems.append(f"{p}:1: link to {os.readlink(p)!r}, which does not "
                                        "exist (dangling link)")
                        continue
                    except OSError as e:
                        if e.errno == errno.ELOOP:
                            problems.append(f"{p}:1: link that loops back on itself")
                        else:
                            problems.append(f"{p}:1: link cannot be followed "
                                            f"({e.strerror or e})")
                        continue
                if entry.is_dir():
                    if is_link and os.path.realpath(p) in {
                            os.path.realpath(x) for x in p.parents}:
                        problems.append(f"{p}:1: link to a folder above it (a loop); not "
                                        "followed")
                        continue
                    if is_link:
                        linked.append(p)  # after the real folders
                    else:
                        walk(p)
                elif entry.is_file():
                    files.append(p)
                else:
                    problems.append(f"{p}:1: not a regular file (a pipe, socket or device)")
            except OSError as e:
                problems.append(f"{p}:1: cannot be read ({e.strerror or e})")

    walk(folder)
    while linked:
        walk(linked.pop(0))
    return sorted(files), problems, skipped


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
                dups.append(Skipped(str(p), "duplicate", f"{how} {first}"))
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
        raise DocumentError(f"{folder}: not a folder")
    allowed = set(suffixes) if suffixes else (MARKDOWN_SUFFIXES | TEXT_SUFFIXES | CODE_SUFFIXES
                                              | HTML_SUFFIXES)
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
            errors.append(f"{path}:1: skipped, its metadata row is wrong: "
                          f"{meta['__bad_sidecar_row__']}")
            continue
        try:
            doc = load_document(path, metadata=meta)
        except DocumentError as e:
            errors.append(str(e))
            continue
        if doc.id in seen:
            errors.append(f"{path}:1: doc_id {doc.id!r} is already used by {seen[doc.id]}")
            continue
        seen[doc.id] = path
        docs.append(doc)
    missing = sorted(m for m in sidecar if m not in rels)
    errors.extend(sidecar[m]["__bad_sidecar_row__"] if "__bad_sidecar_row__" in sidecar[m]
                  else f"{folder / SIDECAR}:1: row for {m!r}, but no such file" for m in missing)
    if strict and errors:
        raise DocumentError(f"{len(errors)} problem(s) in {folder}:\n" + "\n".join(errors))
    return Corpus(docs, errors, ignored, skipped, sorted(inputs))


def offset_to_line(text: str, offset: int) -> int:
    """1-based line of a character offset (helper for messages)."""
    return bisect.bisect_right(_line_starts(text), offset)
