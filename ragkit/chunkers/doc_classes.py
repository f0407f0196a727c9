"""Chunkers for classes of documents, each cutting where that kind of document has its joints
(see `ragkit.chunkers.classes` for the list): contracts by clause, API references by endpoint,
memos and papers by section, transcripts by speaker turns, chats by thread, price lists by table
row. All but the table-row chunker are `GroupChunker`s (`ragkit.chunkers.grouping`).
"""

from __future__ import annotations

import math
import re
from typing import Sequence

from ..text.headings import Breadcrumb, abstract_index, heading_paths, heading_title
from ..text.sentences import TokenIndex, pieces, sentence_cuts
from ..types import Block, Document
from .grouping import Group, GroupChunker, heading_or_paragraph, segments
from .structure import Costs, StructureChunker

SPEAKER = re.compile(r"\*\*(?:\[[^\]\n]{1,24}\]\s*)?([^*\n]{1,80}?):\*\*|\*\*([^*\n]{1,80})\*\*:")
CLAUSE = re.compile(r"(?:\*\*)?(?:(?:Section|Clause|Article)\s+)?(\d+(?:\.\d+)+)\.?(?:\*\*)?\s")
ENDPOINT = re.compile(r"`?(?:GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS)\s+/")


def speaker(block: Block) -> str:
    """The speaker label a paragraph opens with (``Marcus Holt (CEO)``), or ''."""
    if block.kind != "paragraph":
        return ""
    m = SPEAKER.match(block.text)
    return (m.group(1) or m.group(2)).strip() if m else ""


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
        idx = abstract_index(blocks, lambda b: not b.text.startswith("*") and not speaker(b))
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
