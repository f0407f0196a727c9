"""Structure-aware chunking: pack a document's typed blocks into chunks that respect its layout.

A naive splitter counts characters and cuts wherever the count runs out: through a table, between
a heading and its first sentence, in the middle of a list. `StructureChunker` walks the blocks
that `ragkit.text.blocks_for` found (headings, paragraphs, tables, lists, code ...) and packs
consecutive blocks of one section until a *soft* cap of tokens, never going over a *hard* cap:

- a heading at the level of the chunk's section or above ends the chunk (a new section starts);
- a heading never ends a chunk: it waits and starts the chunk of the content that follows it;
- a table goes in whole when it fits under the hard cap; a larger one is split between rows, and
  every piece that does not start at the header gets the header and delimiter rows in its
  *prefix* (the body stays an exact span of the document);
- a list is split only between top-level items (``Block.meta["items"]``); an item is never cut;
- a paragraph (or code block, quote ...) over the hard cap is split at sentence boundaries (code
  at blank lines, then lines), and at token boundaries as the last resort; a block that has to
  be cut starts a new chunk, and its pieces are packed up to the soft cap.

Every chunk under a heading carries a breadcrumb in its prefix: ``"none"``, ``"heading"`` (the
nearest heading), ``"path"`` (``[H1 > H2 > H3]``) or ``"path+title"`` (the document title in
front). Headings already in the chunk's body are not repeated in its breadcrumb. The hard cap
counts the prefix too. Only a single atomic unit (a table row, a list item) can exceed it, and
`ragkit.chunkers.lint` reports such chunks.

Speed: each block is tokenised once; a merged chunk's size is the sum of its blocks' counts plus
the whitespace between them, so candidate chunks are never re-tokenised. Only a block that must
be split is tokenised again, once, with offsets (`TokenIndex`). Blocks are cached per text
(`measured_blocks`) and counts in ragkit's one count cache (`ragkit.text.tokens.count_tokens`),
so the chunkers built on this one, and a sweep of sizes, parse and tokenise a document once
(`clear_cache()` forgets them, to time a cold pass).

    >>> from ragkit.types import Document
    >>> text = "# Fees\\n\\n## Gold\\n\\nGold pays 2%.\\n\\n## Silver\\n\\nSilver pays 3%."
    >>> doc = Document("d", text)
    >>> [(c.prefix, c.text) for c in StructureChunker(soft=60, hard=80).chunk(doc)]
    [('', '# Fees\\n\\n## Gold\\n\\nGold pays 2%.'), ('[Fees]', '## Silver\\n\\nSilver pays 3%.')]

``# Fees`` and ``## Gold`` wait for content and start the first chunk (so its breadcrumb is
empty: both headings are in its body); ``## Silver`` is at the level of that chunk's section, so
it ends the chunk and starts the next one, under ``[Fees]``.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from ..text.headings import (BREADCRUMBS, Breadcrumb, Heading, breadcrumb_text, enter_heading,
                             shorten_breadcrumb)
from ..text.markdown import blocks_for
from ..text.sentences import Cutter, TokenIndex, blank_line_cuts, line_cuts, pieces, sentence_cuts
from ..text.tokens import Tokenizer, clear_counts, count_tokens, get_tokenizer
from ..types import PREFIX_SEPARATOR, Block, Chunk, Document, doc_metadata, stable_hash
from .base import Chunker


# How a block too big for the hard cap is cut, coarsest level first (tokens come last).
SPLIT_LEVELS: dict[str, tuple[Cutter, ...]] = {
    "paragraph": (sentence_cuts, line_cuts),
    "heading": (sentence_cuts,),
    "code": (blank_line_cuts, line_cuts),
}
DEFAULT_LEVELS: tuple[Cutter, ...] = (blank_line_cuts, sentence_cuts, line_cuts)


@dataclass
class Unit:
    """The smallest piece the packer places: a block, or a part of one (row, item, sentences).

    `header` is set on table rows after the first: a chunk that starts with such a row carries
    the table's header in its prefix. `alone` asks for a chunk of its own.
    """

    start: int
    end: int
    tokens: int
    kind: str
    header: str = ""
    alone: bool = False


class Costs:
    """Token counts in one tokenizer (of blocks, whitespace gaps, prefixes), from the one count
    cache (`ragkit.text.tokens.count_tokens`)."""

    def __init__(self, tokenizer: Tokenizer):
        self.tok = tokenizer

    def text(self, s: str) -> int:
        return count_tokens(s, self.tok)

    def gap(self, doc_text: str, end: int, start: int) -> int:
        """Tokens of the whitespace between two units (0 for WordPiece, ~1 for BPE)."""
        return self.text(doc_text[end:start]) if start > end else 0

    def prefix(self, prefix: str) -> int:
        """Tokens a prefix adds to the embedded text, its separator (`Chunk.joined`) included."""
        return self.text(prefix) + self.text(PREFIX_SEPARATOR) if prefix else 0


_PARSED: OrderedDict[tuple[str, str], list[Block]] = OrderedDict()
PARSED_CACHE_SIZE = 256


def measured_blocks(doc: Document, tokenizer: str) -> tuple[list[Block], list[int]]:
    """`blocks_for(doc)`, kept for the last few hundred (text, format) seen, and every block's
    token count (`count_tokens`): sweeping sizes or strategies over a corpus parses and
    tokenises each document once. The block list is shared: do not modify it."""
    key = (doc.text, str(doc.metadata.get("format", "markdown")))
    blocks = _PARSED.get(key)
    if blocks is None:
        blocks = _PARSED[key] = blocks_for(doc)
        if len(_PARSED) > PARSED_CACHE_SIZE:
            _PARSED.popitem(last=False)
    else:
        _PARSED.move_to_end(key)
    return blocks, [count_tokens(b.text, tokenizer) for b in blocks]


def clear_cache() -> None:
    """Forget every cached parse and count (e.g. to time a cold pass)."""
    _PARSED.clear()
    clear_counts()


class StructureChunker(Chunker):
    name = "structure"

    def __init__(self, soft: int = 180, hard: int = 254, tokenizer: str = "minilm",
                 breadcrumb: Breadcrumb = "path"):
        if not 0 < soft <= hard:
            raise ValueError(f"need 0 < soft <= hard, got {soft}/{hard}")
        if breadcrumb not in BREADCRUMBS:
            raise ValueError(f"breadcrumb must be one of {BREADCRUMBS}, got {breadcrumb!r}")
        self.soft, self.hard, self.tokenizer, self.breadcrumb = soft, hard, tokenizer, breadcrumb
        self.rows_alone = False  # TableRowChunker: every table row a chunk of its own

    @property
    def label(self) -> str:
        return f"{self.name}({self.soft}/{self.hard},{self.tokenizer},{self.breadcrumb})"

    @property
    def tok(self) -> Tokenizer:
        return get_tokenizer(self.tokenizer)

    def chunk(self, doc: Document) -> list[Chunk]:
        blocks, counts = measured_blocks(doc, self.tokenizer)
        return self.finish(doc, self.pack(doc, blocks, counts))

    # A breadcrumb may take at most this share of the hard cap: one that would leave the body
    # less room is shortened (`shorten_breadcrumb`) and its chunks flagged.
    CRUMB_SHARE = 3

    def crumb_limit(self) -> int:
        """Tokens a breadcrumb (its "\\n\\n" separator included) may take: hard // 3."""
        return max(1, self.hard // self.CRUMB_SHARE)

    def crumb(self, doc: Document, above: Sequence[Heading]) -> str:
        title = doc.metadata.get("title")
        text = breadcrumb_text(self.breadcrumb, above, title)
        if not text:
            return text
        costs, limit = Costs(self.tok), self.crumb_limit()
        if costs.prefix(text) <= limit:
            return text
        short = shorten_breadcrumb(self.breadcrumb, above, title,
                                   lambda s: costs.prefix(s) <= limit)
        if short:
            self.__dict__.setdefault("_short_crumbs", set()).add(short)
        return short

    @property
    def flags(self) -> list[str]:
        """``breadcrumb_shortened`` when a breadcrumb had to be cut to leave its body room
        (since the last `chunk_all`)."""
        n = self.__dict__.get("_shortened", 0)
        return [f"breadcrumb_shortened:{n}"] if n else []

    def chunk_all(self, docs, progress: bool = False) -> list[Chunk]:
        self._shortened = 0
        return super().chunk_all(docs, progress)

    # -- the packer ------------------------------------------------------------------------
    def pack(self, doc: Document, blocks: Sequence[Block], counts: Sequence[int],
             path: Sequence[Heading] = (),
             prefix_fn: Callable[[list[Heading], int], str] | None = None,
             **meta: Any) -> list[Chunk]:
        """Chunks of consecutive `blocks` (with their token `counts`), below heading `path`.

        `prefix_fn(headings above the chunk, chunk start)` gives each chunk's prefix (default:
        the breadcrumb); `meta` is added to every chunk's metadata. The walk and its state are
        `_Pack`'s.
        """
        crumbs: dict[tuple[int, int], str] = {}

        def crumb(above: list[Heading], start: int) -> str:  # a path is a stack: (depth, top)
            key = (len(above), above[-1].start if above else -1)
            if key not in crumbs:
                crumbs[key] = self.crumb(doc, above)
            return crumbs[key]

        packer = _Pack(self, doc, Costs(self.tok), prefix_fn or crumb, list(path), meta)
        return packer.run(blocks, counts)

    def make(self, doc: Document, start: int, end: int, prefix: str = "", **meta: Any) -> Chunk:
        """`Chunker.make`, hashing the settings once per set of settings, not once per chunk."""
        params = self.params()
        memo = self.__dict__.setdefault("_settings_hashes", {})
        key = repr(sorted(params.items()))
        if key not in memo:
            memo[key] = stable_hash(self.name, params, n=8)
        short = self.__dict__.get("_short_crumbs")
        if short and prefix and any(prefix.startswith(c) for c in short):
            meta = {**meta, "breadcrumb_shortened": True}
            self._shortened = self.__dict__.get("_shortened", 0) + 1
        return Chunk.make(doc, start, end, strategy=self.label, prefix=prefix,
                          metadata={**doc_metadata(doc), **meta, "settings": memo[key]})

    # -- blocks into units -----------------------------------------------------------------
    def units(self, doc: Document, block: Block, n: int, budget: int,
              costs: Costs) -> list[Unit]:
        """`block` as one unit if it fits `budget`, else as parts that each fit (if they can)."""
        text = doc.text
        rows = block.meta.get("rows") or []
        items = block.meta.get("items") or []
        split_rows = block.kind == "table" and len(rows) > 1 and (n > budget or self.rows_alone)
        if n <= budget and not split_rows:
            return [Unit(block.start, block.end, n, block.kind)]
        count = costs.text
        if split_rows:
            spans = pieces(text, block.start, block.end, [s for s, _ in rows[1:]])
            (hs, he), first = spans[0], spans[1]
            header = text[hs:he]
            out = [Unit(hs, first[1], count(text[hs:first[1]]), "table", alone=self.rows_alone)]
            out += [Unit(s, e, count(text[s:e]), "table", header=header, alone=self.rows_alone)
                    for s, e in spans[2:]]
            return out
        if block.kind == "list" and len(items) > 1:
            spans = pieces(text, block.start, block.end, [s for s, _ in items[1:]])
            return [Unit(s, e, count(text[s:e]), "list") for s, e in spans]
        if block.kind in ("list", "table"):  # one item / a header-only table: cut as text
            levels = DEFAULT_LEVELS
        else:
            levels = SPLIT_LEVELS.get(block.kind, DEFAULT_LEVELS)
        tix = TokenIndex(text, block.start, block.end, costs.tok)
        exact = None if tix.chars else count
        return [Unit(s, e, k, block.kind) for s, e, k in
                split_span(text, block.start, block.end, levels, budget, tix, exact,
                           words_isolated(costs.tok))]



@dataclass
class _Pack:
    """`StructureChunker.pack`'s walk over one run of blocks and the state it keeps: the
    chunks made (`out`), the open chunk's units (`cur`), the headings waiting for the content
    they introduce (`pending`), the heading path above the current block (`path`), and the open
    chunk's running tokens, prefix, section level and heading titles."""

    chunker: StructureChunker
    doc: Document
    costs: Costs
    prefix_of: Callable[[list[Heading], int], str]
    path: list[Heading]
    meta: dict[str, Any]
    out: list[Chunk] = field(default_factory=list)
    cur: list[Unit] = field(default_factory=list)
    pending: list[Unit] = field(default_factory=list)
    tokens: int = 0
    prefix: str = ""
    level: int = 0
    titles: list[str] = field(default_factory=list)

    def run(self, blocks: Sequence[Block], counts: Sequence[int]) -> list[Chunk]:
        for block, n in zip(blocks, counts):
            self.add(block, n)
        if self.pending:  # headings at the very end, with nothing after them
            self.emit()
            self.flush_pending()
        self.emit()
        return self.out

    def add(self, block: Block, n: int) -> None:
        """Place one block of `n` tokens: a heading waits for its content; anything else goes
        in the open chunk or starts one, whole or in the parts it has to be cut into."""
        hard = self.chunker.hard
        if block.kind == "heading" and n <= hard // 2:
            if self.cur and block.level <= self.level:
                self.emit()
            enter_heading(self.path, block)
            self.pending.append(Unit(block.start, block.end, n, "heading"))
            return
        budget = self.budget(block)
        if self.pending and budget < hard // 4:  # a pile of headings: let them stand alone
            self.emit()
            self.flush_pending()
            budget = self.budget(block)
        if n > budget or self.chunker.rows_alone:  # pieces after the first: their own prefix
            later = hard - self.costs.prefix(self.prefix_at(block.start + 1))
            budget = min(budget, later)
        units = self.chunker.units(self.doc, block, n, max(budget, 1), self.costs)
        if len(units) > 1 and self.cur:  # a block that had to be cut starts a chunk of its own
            self.emit()
        for unit in units:
            self.place(unit)

    def above(self, start: int) -> list[Heading]:
        return [h for h in self.path if h.start < start]

    def prefix_at(self, start: int) -> str:
        return self.prefix_of(self.above(start), start)

    def body_cost(self, units: list[Unit]) -> int:
        return sum(u.tokens for u in units) + sum(
            self.costs.gap(self.doc.text, a.end, b.start) for a, b in zip(units, units[1:]))

    def budget(self, block: Block) -> int:
        """Tokens left for `block` in a chunk that would start with it (after the pending
        headings)."""
        pending, gap, text = self.pending, self.costs.gap, self.doc.text
        start = pending[0].start if pending else block.start
        budget = self.chunker.hard - self.costs.prefix(self.prefix_at(start))
        if pending:
            budget -= sum(u.tokens for u in pending) + gap(text, pending[-1].end, block.start)
            budget -= sum(gap(text, a.end, b.start) for a, b in zip(pending, pending[1:]))
        return budget

    def emit(self) -> None:
        if self.cur:
            kinds = list(dict.fromkeys(u.kind for u in self.cur))
            self.out.append(self.chunker.make(
                self.doc, self.cur[0].start, self.cur[-1].end, prefix=self.prefix,
                path=self.titles, kinds=kinds, tokens=self.tokens, **self.meta))
            self.cur.clear()

    def start_chunk(self, units: list[Unit]) -> None:
        prefix = self.prefix_at(units[0].start)
        if units[0].header:
            prefix = f"{prefix}\n{units[0].header}" if prefix else units[0].header
        self.cur.extend(units)
        self.prefix, self.tokens = prefix, self.costs.prefix(prefix) + self.body_cost(units)
        self.level = self.path[-1].level if self.path else 0
        self.titles = [h.title for h in self.path]

    def flush_pending(self) -> None:
        """Headings with no content they can share a chunk with: chunks of their own, as many
        headings to a chunk as fit under the hard cap."""
        group: list[Unit] = []
        for u in self.pending:
            if group:
                cost = self.costs.prefix(self.prefix_at(group[0].start)) + self.body_cost(
                    [*group, u])
                if cost > self.chunker.hard:
                    self.start_chunk(group)
                    self.emit()
                    group = []
            group.append(u)
        if group:
            self.start_chunk(group)
            self.emit()
        self.pending.clear()

    def place(self, unit: Unit) -> None:
        group = [*self.pending, unit]
        self.pending.clear()
        if self.cur and not unit.alone and not self.cur[-1].alone:
            add = self.costs.gap(self.doc.text, self.cur[-1].end, group[0].start) + \
                self.body_cost(group)
            if self.tokens + add <= self.chunker.soft:
                self.cur.extend(group)
                self.tokens += add
                return
        self.emit()
        self.start_chunk(group)

def words_isolated(tok: Tokenizer) -> bool:
    """Does the tokenizer cut every word on its own (BERT's WordPiece: split at whitespace and
    punctuation first), so a piece cut at whitespace has the same count alone as in context?"""
    backend = getattr(getattr(tok, "_tok", None), "backend_tokenizer", None)
    return type(getattr(backend, "pre_tokenizer", None)).__name__ == "BertPreTokenizer"


def split_span(text: str, lo: int, hi: int, levels: Sequence[Cutter], budget: int,
               tix: TokenIndex, exact: Callable[[str], int] | None = None,
               isolated: bool = False) -> list[tuple[int, int, int]]:
    """Cut [lo, hi) into trimmed ``(start, end, tokens)`` pieces of at most `budget` tokens:
    at the first level that cuts it at all, recursing into pieces still too big, and at token
    starts when no level is left.

    Sizes are first read from `tix` (the block tokenised once, in context). A piece that will be
    kept is counted alone with `exact` when given, since a BPE tokenizer can need a token or
    two more for a piece than its share of the block (a word that loses its leading space);
    with an `isolated` tokenizer (`words_isolated`) only pieces cut inside a word are.
    """
    n = tix.count(lo, hi)
    if n <= budget:
        k = exact(text[lo:hi]) if exact and not isolated else n
        if k <= budget:
            return [(lo, hi, k)]
    for i, cutter in enumerate(levels):
        spans = pieces(text, lo, hi, cutter(text, lo, hi))
        if len(spans) > 1:
            return [p for s, e in spans for p in
                    split_span(text, s, e, levels[i + 1:], budget, tix, exact, isolated)]
    size = budget
    while True:  # token windows, narrowed until every piece fits on its own
        spans = pieces(text, lo, hi, tix.cuts(lo, hi, size))
        sizes = [exact(text[s:e]) if exact else tix.count(s, e) for s, e in spans]
        if size <= 1 or max(sizes, default=0) <= budget:
            return [(s, e, k) for (s, e), k in zip(spans, sizes)]
        size = max(1, size - (max(sizes) - budget))
