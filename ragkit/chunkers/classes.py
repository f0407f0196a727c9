"""Chunkers for classes of documents, each cutting where that kind of document has its joints.

A contract is read clause by clause, an API reference endpoint by endpoint, a transcript turn by
turn, a chat as whole threads, a price list row by row (source code: `ragkit.chunkers.code`).
Every chunker here first cuts a document into *groups* of consecutive blocks (one
clause, one endpoint, two or three speaker turns ...), emits each group as one chunk when it fits
the hard cap (prefix included), and otherwise packs the group with `StructureChunker`'s rules
(sentences, list items, table rows with the header in the prefix). A group made only of headings
is joined to the group after it, and headings at the end of a group move to the next one, so a
heading never ends a chunk.

- `ClauseChunker` (contract): a numbered clause (``1.2 ...`` paragraph or heading) per chunk, the
  section heading above it in the prefix;
- `SectionChunker` (memo, paper): a section per chunk, with the title and the first sentences of
  the abstract (or summary, or first paragraph) in the prefix;
- `ApiChunker` (API reference): an endpoint or method per chunk, its resource heading in prefix;
- `TranscriptChunker`: two or three speaker turns (``**Name (Role):** ...``) per chunk;
- `ChatChunker`: a thread (a section, or the text between rules) per chunk, cut between messages
  into balanced parts only when it exceeds the hard cap;
- `TableRowChunker`: every table row a chunk, the header row re-attached in the prefix; the
  rest of the document chunked by structure;
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from ..types import Block, Chunk, Document
from .sentences import TokenIndex, pieces, sentence_cuts
from .structure import (Breadcrumb, Costs, Heading, StructureChunker, heading_title,
                        measured_blocks)

SPEAKER = re.compile(r"\*\*(?:\[[^\]\n]{1,24}\]\s*)?([^*\n]{1,80}?):\*\*|\*\*([^*\n]{1,80})\*\*:")
CLAUSE = re.compile(r"(?:\*\*)?(?:(?:Section|Clause|Article)\s+)?(\d+(?:\.\d+)+)\.?(?:\*\*)?\s")
ENDPOINT = re.compile(r"`?(?:GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS)\s+/")
ABSTRACT = re.compile(r"\b(?:abstract|summary|purpose|recommendation|proposal|overview|tl;?dr)\b",
                      re.I)

PrefixFn = Callable[[list[Heading], int], str]


@dataclass
class Group:
    """Blocks ``[lo, hi)`` that should become one chunk, with the prefix that chunk gets.

    `prefix_fn` gives the prefix of each piece when the group is too big for one chunk (by
    default every piece gets `prefix`)."""

    lo: int
    hi: int
    prefix: str
    meta: dict[str, Any] = field(default_factory=dict)
    prefix_fn: PrefixFn | None = None


def heading_paths(blocks: Sequence[Block]) -> list[list[Heading]]:
    """The headings above each block (a heading's own entry not included)."""
    out: list[list[Heading]] = []
    path: list[Heading] = []
    for b in blocks:
        if b.kind == "heading":
            while path and path[-1].level >= b.level:
                path.pop()
        out.append(list(path))
        if b.kind == "heading":
            path.append(Heading(b.level, heading_title(b), b.start))
    return out


def heading_or_paragraph(blocks: Sequence[Block], pattern: re.Pattern) -> Callable[[int], bool]:
    """A `segments` predicate: a run starts at a heading or at a paragraph matching `pattern`."""
    def starts(i: int) -> bool:
        b = blocks[i]
        return b.kind == "heading" or (b.kind == "paragraph" and bool(pattern.match(b.text)))
    return starts


def segments(blocks: Sequence[Block], starts: Callable[[int], bool]) -> list[tuple[int, int]]:
    """Runs ``(lo, hi)`` of consecutive blocks, a new run at each block where `starts(i)`.

    A heading never ends a run: headings at the end of a run move to the start of the next one
    (a run of headings only is joined to the run after it); at the very end of the document
    they form a run of their own.

    >>> bs = [Block("heading", 0, 1, "#", 1), Block("paragraph", 2, 3, "a"),
    ...       Block("heading", 4, 5, "#", 1), Block("heading", 6, 7, "#", 2),
    ...       Block("paragraph", 8, 9, "b")]
    >>> segments(bs, lambda i: bs[i].kind == "heading")
    [(0, 2), (2, 5)]
    >>> segments(bs, lambda i: i == 3)
    [(0, 2), (2, 5)]
    """
    bounds = [i for i in range(len(blocks)) if i == 0 or starts(i)]
    out, carry = [], None
    for lo, hi in zip(bounds, [*bounds[1:], len(blocks)]):
        lo = lo if carry is None else carry
        carry = None
        body_end = hi
        while body_end > lo and blocks[body_end - 1].kind == "heading":
            body_end -= 1
        if body_end == hi:
            out.append((lo, hi))
        elif hi < len(blocks):  # trailing headings wait for the next run
            if body_end > lo:
                out.append((lo, body_end))
            carry = body_end
        else:
            out.extend(r for r in ((lo, body_end), (body_end, hi)) if r[1] > r[0])
    return out


def speaker(block: Block) -> str:
    """The speaker label a paragraph opens with (``Marcus Holt (CEO)``), or ''."""
    if block.kind != "paragraph":
        return ""
    m = SPEAKER.match(block.text)
    return (m.group(1) or m.group(2)).strip() if m else ""


class GroupChunker(StructureChunker):
    """Base of the class chunkers: `groups` says which blocks belong together."""

    name = "groups"

    def groups(self, doc: Document, blocks: list[Block], counts: list[int]) -> list[Group]:
        raise NotImplementedError

    def chunk(self, doc: Document) -> list[Chunk]:
        blocks, counts = measured_blocks(doc, self.tokenizer)
        return self.finish(doc, self.emit_groups(doc, blocks, counts,
                                                 self.groups(doc, blocks, counts)))

    def crumb_fn(self, doc: Document) -> PrefixFn:
        return lambda above, start: self.crumb(doc, above)

    def emit_groups(self, doc: Document, blocks: Sequence[Block], counts: Sequence[int],
                    groups: list[Group]) -> list[Chunk]:
        costs = Costs(self.tok)
        paths = heading_paths(blocks)
        out: list[Chunk] = []
        for g in groups:
            bs, ns = blocks[g.lo:g.hi], counts[g.lo:g.hi]
            total = costs.prefix(g.prefix) + sum(ns) + sum(
                costs.gap(doc.text, a.end, b.start) for a, b in zip(bs, bs[1:]))
            if total <= self.hard:
                first = next((i for i in range(g.lo, g.hi) if blocks[i].kind != "heading"),
                             g.hi - 1)
                path = [h.title for h in paths[first]]
                if blocks[first].kind == "heading":
                    path.append(heading_title(blocks[first]))
                kinds = list(dict.fromkeys(b.kind for b in bs))
                out.append(self.make(doc, bs[0].start, bs[-1].end, prefix=g.prefix, path=path,
                                     kinds=kinds, tokens=total, **g.meta))
            else:
                fn = g.prefix_fn or (lambda above, start, p=g.prefix: p)
                out.extend(self.pack(doc, bs, ns, path=paths[g.lo], prefix_fn=fn, **g.meta))
        return out


class ClauseChunker(GroupChunker):
    """Contracts: one numbered clause per chunk, under its section's breadcrumb."""

    name = "clause"

    def groups(self, doc, blocks, counts):
        paths = heading_paths(blocks)

        out = []
        for lo, hi in segments(blocks, heading_or_paragraph(blocks, CLAUSE)):
            heads = [heading_title(b) + " " for b in blocks[lo:hi] if b.kind == "heading"]
            body = [b.text for b in blocks[lo:hi] if b.kind == "paragraph"][:1]
            number = next((m.group(1) for t in [*body, *heads[::-1]] if (m := CLAUSE.match(t))),
                          None)
            out.append(Group(lo, hi, self.crumb(doc, paths[lo]),
                             {"clause": number} if number else {}, self.crumb_fn(doc)))
        return out


class ApiChunker(GroupChunker):
    """API references: one endpoint or method (a heading, or an ``GET /path`` line) per chunk,
    with the resource/class heading above it in the prefix."""

    name = "api"

    def groups(self, doc, blocks, counts):
        paths = heading_paths(blocks)

        out = []
        for lo, hi in segments(blocks, heading_or_paragraph(blocks, ENDPOINT)):
            heads = [heading_title(b) for b in blocks[lo:hi] if b.kind == "heading"]
            meta = {"endpoint": heads[-1]} if heads else {}
            out.append(Group(lo, hi, self.crumb(doc, paths[lo]), meta, self.crumb_fn(doc)))
        return out


class SectionChunker(GroupChunker):
    """Memos and papers: one section (heading level <= `level`) per chunk; the prefix holds the
    breadcrumb with the document title and the first sentences of the abstract (a section named
    Abstract, Summary, Purpose, Recommendation ...; else the first paragraph), at most
    `context_tokens` tokens of it (and at most a quarter of the hard cap)."""

    name = "section"

    def __init__(self, soft: int = 180, hard: int = 254, tokenizer: str = "minilm",
                 breadcrumb: Breadcrumb = "path+title", level: int = 3,
                 context_tokens: int = 60):
        super().__init__(soft, hard, tokenizer, breadcrumb)
        self.level, self.context_tokens = level, context_tokens

    def context(self, doc: Document, blocks: Sequence[Block]) -> tuple[int | None, str]:
        """(index of the abstract paragraph, the excerpt of it that goes in every prefix)."""
        idx = None
        for i, b in enumerate(blocks):
            if b.kind == "heading" and ABSTRACT.search(heading_title(b)):
                j = i + 1
                while j < len(blocks) and blocks[j].kind not in ("heading", "paragraph"):
                    j += 1
                if j < len(blocks) and blocks[j].kind == "paragraph":
                    idx = j
                    break
        if idx is None:
            idx = next((i for i, b in enumerate(blocks) if b.kind == "paragraph"
                        and not b.text.startswith("*") and not speaker(b)), None)
        limit = min(self.context_tokens, self.hard // 4)  # leave the body room
        if idx is None or limit <= 0:
            return None, ""
        b = blocks[idx]
        tix = TokenIndex(doc.text, b.start, b.end, self.tok)
        end = b.start
        for s, e in pieces(doc.text, b.start, b.end, sentence_cuts(doc.text, b.start, b.end)):
            if tix.count(b.start, e) > limit:
                break
            end = e
        if end == b.start:  # even the first sentence is too long: cut it at a token
            cuts = tix.cuts(b.start, b.end, limit)
            end = pieces(doc.text, b.start, cuts[0] if cuts else b.end, [])[0][1]
        return idx, doc.text[b.start:end]

    def groups(self, doc, blocks, counts):
        paths = heading_paths(blocks)
        idx, excerpt = self.context(doc, blocks)
        out = []
        for lo, hi in segments(blocks, lambda i: blocks[i].kind == "heading"
                               and blocks[i].level <= self.level):
            own = idx is not None and lo <= idx < hi
            extra = "" if own else excerpt

            def fn(above, start, extra=extra):
                return "\n".join(p for p in (self.crumb(doc, above), extra) if p)

            out.append(Group(lo, hi, fn(paths[lo], blocks[lo].start), {}, fn))
        return out


class TranscriptChunker(GroupChunker):
    """Transcripts: consecutive speaker turns (``**Name (Role):** ...`` and the paragraphs that
    continue it), up to `turns` per chunk while they fit the soft cap; a heading starts a new
    chunk. A turn too long for the hard cap is cut at sentences, and its pieces after the first
    carry the speaker in the prefix."""

    name = "transcript"

    def __init__(self, soft: int = 180, hard: int = 254, tokenizer: str = "minilm",
                 breadcrumb: Breadcrumb = "path", turns: int = 3):
        super().__init__(soft, hard, tokenizer, breadcrumb)
        if turns < 1:
            raise ValueError("turns must be >= 1")
        self.turns = turns

    def groups(self, doc, blocks, counts):
        paths, costs = heading_paths(blocks), Costs(self.tok)
        runs = segments(blocks, lambda i: blocks[i].kind == "heading" or bool(speaker(blocks[i])))

        def size(lo: int, hi: int) -> int:
            return sum(counts[lo:hi]) + sum(costs.gap(doc.text, blocks[i - 1].end, blocks[i].start)
                                            for i in range(lo + 1, hi))

        merged: list[list[int]] = []  # [lo, hi, turns]
        for lo, hi in runs:
            if (merged and blocks[lo].kind != "heading" and merged[-1][2] < self.turns
                    and costs.prefix(self.crumb(doc, paths[merged[-1][0]]))
                    + size(merged[-1][0], hi) <= self.soft):
                merged[-1][1:] = [hi, merged[-1][2] + 1]
            else:
                merged.append([lo, hi, 1])
        out = []
        for lo, hi, _ in merged:
            names = list(dict.fromkeys(n for n in map(speaker, blocks[lo:hi]) if n))
            label = next((b for b in blocks[lo:hi] if speaker(b)), None)

            def fn(above, start, label=label):
                crumb = self.crumb(doc, above)
                if label is None or start <= label.start:
                    return crumb
                return "\n".join(p for p in (crumb, f"{speaker(label)}:") if p)

            out.append(Group(lo, hi, self.crumb(doc, paths[lo]), {"speakers": names}, fn))
        return out


class ChatChunker(GroupChunker):
    """Chat logs: a whole thread per chunk (a thread is a section, or the text between two
    horizontal rules), not each message. A thread over the hard cap is cut between messages
    into as few, as equal parts as fit; a single message over the cap is cut at sentences."""

    name = "chat"

    def groups(self, doc, blocks, counts):
        paths, costs = heading_paths(blocks), Costs(self.tok)
        threads = segments(blocks, lambda i: blocks[i].kind == "heading"
                           or (i > 0 and blocks[i - 1].kind == "rule"))
        out = []
        for t_lo, t_hi in threads:
            prefix = self.crumb(doc, paths[t_lo])
            meta = {"thread": heading_title(blocks[t_lo]) if blocks[t_lo].kind == "heading"
                    else ""}
            fixed = costs.prefix(prefix)

            def size(lo: int, hi: int) -> int:
                return sum(counts[lo:hi]) + sum(costs.gap(doc.text, blocks[i - 1].end,
                                                          blocks[i].start)
                                                for i in range(lo + 1, hi))

            total = fixed + size(t_lo, t_hi)
            if total <= self.hard:
                out.append(Group(t_lo, t_hi, prefix, meta, self.crumb_fn(doc)))
                continue
            messages = [(t_lo + a, t_lo + b) for a, b in segments(
                blocks[t_lo:t_hi], lambda i: i > 0 and bool(speaker(blocks[t_lo + i])))]
            target = math.ceil(total / math.ceil(total / self.hard))
            parts: list[list[int]] = []
            for lo, hi in messages:
                if parts and fixed + size(parts[-1][0], parts[-1][1]) < target and \
                        fixed + size(parts[-1][0], hi) <= self.hard:
                    parts[-1][1] = hi
                else:
                    parts.append([lo, hi])
            for lo, hi in parts:
                out.append(Group(lo, hi, self.crumb(doc, paths[lo]), meta, self.crumb_fn(doc)))
        return out


class TableRowChunker(StructureChunker):
    """Every table row its own chunk, the header and delimiter rows in its prefix (the first
    row's chunk holds the header in its body); everything else chunked by structure."""

    name = "table_rows"

    def __init__(self, soft: int = 180, hard: int = 254, tokenizer: str = "minilm",
                 breadcrumb: Breadcrumb = "path"):
        super().__init__(soft, hard, tokenizer, breadcrumb)
        self.rows_alone = True
