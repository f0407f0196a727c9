"""The three data types that flow through ragkit.

A `Document` is a source text with its metadata. A `Block` is one structural unit the parser
found in a document (a heading, a paragraph, a table ...), located by character offsets. A
`Chunk` is what a chunker returns and what gets embedded, indexed, retrieved and scored.

The one rule every chunk obeys: `document.text[chunk.start:chunk.end] == chunk.text`. Anything
added for retrieval (a breadcrumb such as ``[Refund Policy > Refunds]``, an LLM preamble) lives
in `chunk.prefix`, never in `chunk.text`, so a chunk is always scored on the span it covers.

    >>> doc = Document(id="d", text="Hello world. Bye.")
    >>> c = Chunk.make(doc, 0, 12, strategy="demo")
    >>> c.text, c.start, c.end
    ('Hello world.', 0, 12)
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal, Mapping, Sequence

BlockKind = Literal["heading", "paragraph", "table", "list", "code", "html", "quote", "rule"]
PREFIX_SEPARATOR = "\n\n"  # between a chunk's prefix and its body in the embedded text


def stable_hash(*parts: Any, n: int = 16) -> str:
    """A short, deterministic hex digest of any JSON-serialisable parts."""
    payload = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:n]


def text_hash(text: str) -> str:
    """Full sha256 of a text, the key used by every cache."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Document:
    """A source text. `text` is the body (front matter removed); `line_offset` is the number of
    lines that preceded the body in the file, so errors can name the file's own line numbers."""

    id: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    path: str | None = None
    line_offset: int = 0

    def line_of(self, offset: int) -> int:
        """1-based line number in the original file of a character offset into `text`."""
        return self.text.count("\n", 0, offset) + 1 + self.line_offset

    def where(self, offset: int) -> str:
        """`path:line` for messages."""
        return f"{self.path or self.id}:{self.line_of(offset)}"

    @property
    def hash(self) -> str:
        return text_hash(self.text)


@dataclass(frozen=True)
class Block:
    """One structural unit of a parsed document: `text == source[start:end]`.

    `level` is the heading level (1-6) for headings and the nesting depth for lists; `meta`
    holds kind-specific spans, e.g. ``meta["rows"]`` (table rows, the header first) or
    ``meta["items"]`` (top-level list items), each as ``(start, end)`` pairs.
    """

    kind: BlockKind
    start: int
    end: int
    text: str
    level: int = 0
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Chunk:
    """A retrievable span of a document.

    `text` is exactly ``source[start:end]``; `prefix` is extra context embedded with it (kept
    apart from the body); `parent_id` links a child to the larger chunk it belongs to;
    `strategy` names the chunker; `id` is a hash of the content and the settings.
    """

    doc_id: str
    start: int
    end: int
    text: str
    strategy: str
    prefix: str = ""
    parent_id: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    id: str = ""

    def __post_init__(self) -> None:
        if not 0 <= self.start <= self.end:
            raise ValueError(f"chunk of {self.doc_id}: bad span [{self.start}, {self.end})")
        if len(self.text) != self.end - self.start:
            raise ValueError(
                f"chunk of {self.doc_id}: text has {len(self.text)} characters but the span "
                f"[{self.start}, {self.end}) has {self.end - self.start}"
            )
        if not self.id:
            object.__setattr__(
                self,
                "id",
                stable_hash(self.doc_id, self.start, self.end, text_hash(self.text),
                            self.prefix, self.strategy, self.parent_id),
            )

    def __hash__(self) -> int:
        return hash(self.id)

    @classmethod
    def make(cls, doc: Document, start: int, end: int, strategy: str, **kw: Any) -> "Chunk":
        """Build a chunk from a span of `doc`, slicing the text (never searching for it)."""
        if end > len(doc.text):
            raise ValueError(f"{doc.where(start)}: span end {end} is past the document end")
        return cls(doc_id=doc.id, start=start, end=end, text=doc.text[start:end],
                   strategy=strategy, **kw)

    def embedding_text(self, placement: Literal["before", "after"] = "before") -> str:
        """What the embedder sees: prefix and body, the prefix before (default) or after."""
        return self.joined(self.prefix, self.text, placement)

    @staticmethod
    def joined(prefix: str, body: str, placement: Literal["before", "after"] = "before") -> str:
        """`prefix` and `body` as an embedder reads them, `PREFIX_SEPARATOR` between them, the
        prefix before (default) or after; the body alone when there is no prefix. The one place
        a prefix meets a body: `embedding_text`, and the encoder's windows of a long chunk and
        the code chunker's cap, which join the prefix to a part of a body.

        >>> Chunk.joined("[Fees]", "Gold pays 2%."), Chunk.joined("", "Gold pays 2%.")
        ('[Fees]\\n\\nGold pays 2%.', 'Gold pays 2%.')
        """
        if not prefix:
            return body
        if placement == "before":
            return f"{prefix}{PREFIX_SEPARATOR}{body}"
        return f"{body}{PREFIX_SEPARATOR}{prefix}"

    def with_prefix(self, prefix: str, **metadata: Any) -> "Chunk":
        """A copy with another prefix (a new id, since the embedded text changes)."""
        return Chunk(doc_id=self.doc_id, start=self.start, end=self.end, text=self.text,
                     strategy=self.strategy, prefix=prefix, parent_id=self.parent_id,
                     metadata={**self.metadata, **metadata})

    @property
    def span(self) -> tuple[int, int]:
        return (self.start, self.end)


@dataclass(frozen=True)
class Span:
    """A gold evidence span: characters [start, end) of document `doc_id`."""

    doc_id: str
    start: int
    end: int

    def __len__(self) -> int:
        return self.end - self.start

    @property
    def span(self) -> tuple[int, int]:
        """``(start, end)``, as a `Chunk`'s: what span arithmetic reads from either."""
        return (self.start, self.end)


def merge_gold(gold: Sequence[Span]) -> tuple[Span, ...]:
    """One question's gold with the spans that share characters merged into one span.

    Recall divides the gold characters retrieved (each counted once) by the gold length, and
    Pass@k and pass@B count gold units; a quote given twice, or two quotes that overlap, would
    otherwise count their shared characters twice and cap recall below 1. The merged span
    takes the place of its first member; spans that only touch (one ends where the next
    starts) stay separate units, and gold without overlaps comes back as given.

    >>> merge_gold([Span("d", 5, 9), Span("d", 0, 6), Span("d", 9, 12)])
    (Span(doc_id='d', start=0, end=9), Span(doc_id='d', start=9, end=12))
    """
    groups: list[list[Any]] = []  # [doc_id, start, end] per merged span, in first order
    for g in gold:
        hit = [m for m in groups if m[0] == g.doc_id and m[1] < g.end and g.start < m[2]]
        if not hit:
            groups.append([g.doc_id, g.start, g.end])
            continue
        first = hit[0]  # the merged spans were disjoint, so only what overlaps `g` joins it
        first[1] = min(g.start, *(m[1] for m in hit))
        first[2] = max(g.end, *(m[2] for m in hit))
        groups = [m for m in groups if m is first or all(m is not h for h in hit)]
    merged = tuple(Span(d, s, e) for d, s, e in groups)
    return tuple(gold) if len(merged) == len(gold) else merged


@dataclass(frozen=True)
class Copy:
    """Another place holding a gold unit's text word for word (`ragkit.evaluate.copies`).

    `runs` pair the copy's characters with the gold's: ``(copy_start, copy_end, gold_start,
    gold_end)``. An exact copy is one run of equal lengths; a copy whose whitespace differs has
    one run per word (the word and the whitespace after it), so the words map character for
    character and the whitespace between them with them."""

    gold: Span
    doc_id: str
    start: int
    end: int
    runs: tuple[tuple[int, int, int, int], ...]


@dataclass(frozen=True)
class Query:
    """A question with its gold evidence spans (empty for a question that should be refused).

    `gold` is kept merged (`merge_gold`): spans of one document that share characters are one
    gold unit, whatever built the query."""

    id: str
    text: str
    gold: tuple[Span, ...] = ()
    type: str = "lookup"
    answer: str = ""
    context: Mapping[str, Any] = field(default_factory=dict)
    metadata: Mapping[str, Any] = field(default_factory=dict)
    # other places holding a gold unit's text; retrieving one earns that unit's credit
    copies: tuple[Copy, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "gold", merge_gold(self.gold))


def trim_span(text: str, start: int, end: int) -> tuple[int, int]:
    """Shrink [start, end) to exclude leading and trailing whitespace."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


# The front-matter fields ragkit filters on: every chunk carries those its document has (the
# chunkers, the sentence-window retriever), and `ragkit.text.documents` checks their types.
METADATA_FIELDS = ("doc_type", "product", "region", "effective_date", "superseded_by", "title")


@lru_cache(maxsize=4096)
def _parse_date(written: str) -> dt.date:
    day = written.strip()
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", day):
        raise ValueError(f"effective_date must be a date written YYYY-MM-DD, got {written!r}")
    try:
        return dt.date.fromisoformat(day)
    except ValueError as e:
        raise ValueError(f"effective_date {written!r} is not a valid date ({e})") from None


def as_date(value: Any) -> dt.date | None:
    """`value` as a `datetime.date`: None stays None, a date (a datetime: its day) is itself,
    a string ``YYYY-MM-DD`` naming a day that exists (spaces around it ignored) is parsed, once
    per string written. Anything else raises ValueError saying why (`ragkit.text.documents`
    reports it with the file and line when a document is loaded).

    >>> as_date("2024-03-01"), as_date(None)
    (datetime.date(2024, 3, 1), None)
    """
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        return _parse_date(value)
    raise ValueError(f"effective_date must be a date written YYYY-MM-DD, got {value!r}")


def effective_date(meta: Mapping[str, Any]) -> dt.date | None:
    """The ``effective_date`` of a document's or chunk's metadata as a date (None when it has
    none): what every date comparison reads (filters ``as_of``, newest first, pruning). The
    metadata itself keeps the date as written (``YYYY-MM-DD``), since it is saved as JSON."""
    value = meta.get("effective_date")
    return as_date(value) if value else None


def doc_metadata(doc: Document) -> dict[str, Any]:
    """The `METADATA_FIELDS` that `doc` has, in that order."""
    return {k: doc.metadata.get(k) for k in METADATA_FIELDS if k in doc.metadata}


def check_chunks(doc: Document, chunks: Sequence[Chunk], complete: bool = False) -> None:
    """Raise ValueError if any chunk's text is not exactly its span of `doc` (the core
    invariant). With `complete`, also if the chunks are not in document order or leave a
    non-whitespace character of `doc` outside every chunk (what a chunker must never do).

    >>> doc = Document("d", "One. Two.")
    >>> check_chunks(doc, [Chunk.make(doc, 0, 4, "x")], complete=True)
    Traceback (most recent call last):
    ValueError: d:1: 4 characters lost (outside every chunk)
    """
    covered = bytearray(len(doc.text)) if complete else None
    last = (-1, -1)
    for c in chunks:
        if c.doc_id != doc.id:
            raise ValueError(f"chunk {c.id} belongs to {c.doc_id}, not {doc.id}")
        if doc.text[c.start:c.end] != c.text:
            raise ValueError(f"{doc.where(c.start)}: chunk {c.id} text differs from its span")
        if covered is not None:
            if (c.start, c.end) < last:
                raise ValueError(f"{doc.where(c.start)}: chunks are not in document order")
            last = (c.start, c.end)
            covered[c.start:c.end] = b"\x01" * (c.end - c.start)
    if covered is not None:
        lost = [i for i, ch in enumerate(doc.text) if not covered[i] and not ch.isspace()]
        if lost:
            raise ValueError(f"{doc.where(lost[0])}: {len(lost)} characters lost (outside "
                             "every chunk)")
