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
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

from .types import Block, Document, trim_span

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


def _decode(data: bytes, path: str) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise DocumentError(
            f"{path}:{line}: not valid UTF-8 (byte 0x{data[e.start]:02x} at offset {e.start}); "
            "re-save the file as UTF-8"
        ) from None
    return text[1:] if text.startswith("\ufeff") else text


def _jsonable(value: Any) -> Any:
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()[:10] if isinstance(value, dt.date) else value.isoformat()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value


def split_front_matter(text: str, path: str = "<text>") -> tuple[dict[str, Any], str, int]:
    """(metadata, body, number of lines before the body). No front matter -> ({}, text, 0)."""
    import yaml

    m = re.match(r"---[ \t]*\r?\n", text)
    if not m:
        return {}, text, 0
    close = re.compile(r"^(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.M)
    end = close.search(text, m.end())
    if end is None:
        raise DocumentError(f"{path}:1: front matter opened with '---' is never closed")
    raw = text[m.end():end.start()]
    try:
        meta = yaml.safe_load(raw) if raw.strip() else {}
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = (mark.line + 2) if mark is not None else 1
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise DocumentError(f"{path}:{line}: front matter is not valid YAML ({problem})") from None
    if not isinstance(meta, dict):
        raise DocumentError(
            f"{path}:2: front matter must be a mapping of keys to values, got {type(meta).__name__}"
        )
    _check_fields(meta, raw, path)
    body = text[end.end():]
    return _jsonable(meta), body, text.count("\n", 0, end.end())


# the front-matter fields ragkit filters on, and the types they must have
STRING_FIELDS = ("doc_id", "title", "doc_type", "product", "region", "superseded_by")


def _check_fields(meta: dict[str, Any], raw: str, path: str) -> None:
    def line_of(key: str) -> int:
        m = re.search(rf"^{re.escape(key)}\s*:", raw, re.M)
        return raw.count("\n", 0, m.start()) + 2 if m else 1

    for key in STRING_FIELDS:
        value = meta.get(key)
        if isinstance(value, (list, dict, bool)):  # a scalar was expected
            raise DocumentError(f"{path}:{line_of(key)}: front matter field {key!r} must be a "
                                f"string, got {type(value).__name__} {value!r}")
    date = meta.get("effective_date")
    if date is not None and not isinstance(date, dt.date):
        if not (isinstance(date, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", date)):
            raise DocumentError(f"{path}:{line_of('effective_date')}: effective_date must be a "
                                f"date written YYYY-MM-DD, got {date!r}")


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

    Raises `DocumentError` naming the file (and line) for: bytes that are not UTF-8, an empty
    or blank file, front matter that is not valid YAML or not a mapping, or a `doc_id` in the
    front matter that is not a string.
    """
    path = Path(path)
    fmt = _format_of(path)
    text = _decode(path.read_bytes(), str(path))
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
    meta.setdefault("title", _guess_title(text, path))
    meta["format"] = fmt
    meta["doc_id"] = ident
    return Document(id=ident, text=text, metadata=meta, path=str(path), line_offset=line_offset)


def _guess_title(text: str, path: Path) -> str:
    m = re.search(r"^#\s+(.+)$", text, re.M)
    return m.group(1).strip() if m else path.stem.replace("_", " ").replace("-", " ")


def _read_sidecar(folder: Path) -> dict[str, dict[str, Any]]:
    """metadata.csv: one row per non-Markdown file (column `path`), other columns = metadata."""
    side = folder / SIDECAR
    if not side.exists():
        return {}
    rows: dict[str, dict[str, Any]] = {}
    with side.open(newline="", encoding="utf-8") as f:
        for line_no, row in enumerate(csv.DictReader(f), start=2):
            if not row.get("path"):
                raise DocumentError(f"{side}:{line_no}: row has no 'path'")
            rows[row.pop("path")] = {k: (v if v not in ("", "null") else None)
                                     for k, v in row.items()}
    return rows


@dataclass
class Corpus:
    """Documents loaded from a folder, plus the per-file errors met on the way."""

    documents: list[Document]
    errors: list[str] = field(default_factory=list)

    def by_id(self) -> dict[str, Document]:
        return {d.id: d for d in self.documents}


def load_corpus(folder: str | Path, strict: bool = True,
                suffixes: Iterable[str] | None = None) -> Corpus:
    """Load every supported file under `folder` (sorted, so the order is deterministic).

    With ``strict=True`` any bad file raises one `DocumentError` listing every problem; with
    ``strict=False`` bad files are skipped and listed in ``Corpus.errors``.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise DocumentError(f"{folder}: not a folder")
    allowed = set(suffixes) if suffixes else (MARKDOWN_SUFFIXES | TEXT_SUFFIXES | CODE_SUFFIXES
                                              | HTML_SUFFIXES)
    sidecar = _read_sidecar(folder)
    docs, errors, seen = [], [], {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        if path.suffix.lower() not in allowed or path.name.upper() in {"README.MD"}:
            continue
        rel = path.relative_to(folder).as_posix()
        try:
            doc = load_document(path, metadata=sidecar.get(rel))
        except DocumentError as e:
            errors.append(str(e))
            continue
        if doc.id in seen:
            errors.append(f"{path}:1: doc_id {doc.id!r} is already used by {seen[doc.id]}")
            continue
        seen[doc.id] = path
        docs.append(doc)
    missing = sorted(set(sidecar) - {p.relative_to(folder).as_posix() for p in folder.rglob("*")})
    errors.extend(f"{folder / SIDECAR}: row for {m!r}, but no such file" for m in missing)
    if strict and errors:
        raise DocumentError(f"{len(errors)} problem(s) in {folder}:\n" + "\n".join(errors))
    return Corpus(docs, errors)


def offset_to_line(text: str, offset: int) -> int:
    """1-based line of a character offset (helper for messages)."""
    return bisect.bisect_right(_line_starts(text), offset)
