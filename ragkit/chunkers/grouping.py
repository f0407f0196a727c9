"""The grouping framework of the document-class chunkers: a chunker says which consecutive
blocks belong together (`Group`, found with `segments`), and `GroupChunker` emits each group as
one chunk when it fits the hard cap (prefix included), otherwise packs it with
`StructureChunker`'s rules. A group made only of headings is joined to the group after it, and
headings at the end of a group move to the next one, so a heading never ends a chunk.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from ..text.headings import Heading, heading_paths, heading_title
from ..types import Block, Chunk, Document
from .structure import Costs, StructureChunker, measured_blocks

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
