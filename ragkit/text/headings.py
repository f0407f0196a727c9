"""Headings: the path of headings above any point of a document, its abstract, and breadcrumbs.

The one heading-path walker: a path is a stack of headings (`Heading`), and a heading replaces
every heading of its level or deeper (`enter_heading`, `heading_paths`, `heading_path_at`). The
structure chunker, the document-class chunkers and the structural preamble generator all walk
it this way. `abstract_index` is the one abstract finder (the paragraph under a heading that
names a summary, else the first paragraph the caller accepts); `breadcrumb_text` and
`shorten_breadcrumb` write the ``[Policy > Section]`` prefix a chunk may carry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Literal, Sequence

from ..types import Block

Breadcrumb = Literal["none", "heading", "path", "path+title"]
BREADCRUMBS = ("none", "heading", "path", "path+title")


@dataclass(frozen=True)
class Heading:
    """A heading on the path above a block: its level, its title and where it starts."""

    level: int
    title: str
    start: int


def heading_title(block: Block) -> str:
    return str(block.meta.get("title") or block.text.lstrip("#").strip())


def enter_heading(path: list[Heading], block: Block) -> None:
    """Update `path` in place for the heading `block`."""
    while path and path[-1].level >= block.level:
        path.pop()
    path.append(Heading(block.level, heading_title(block), block.start))


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
            enter_heading(path, b)
    return out


# The one abstract finder: the paragraph under a heading that names a summary, else the first
# paragraph the caller accepts. The section chunker and the structural preamble generator use it.
ABSTRACT = re.compile(r"\b(?:abstract|summary|purpose|recommendation|proposal|overview|tl;?dr)\b",
                      re.I)


def abstract_index(blocks: Sequence[Block], fallback: Callable[[Block], bool] = lambda b: True
                   ) -> int | None:
    """Index of the document's abstract: the first paragraph under a heading whose title names
    one (Abstract, Summary, Executive summary, Purpose, Recommendation, Proposal, Overview,
    TL;DR) before the next heading; else the first paragraph for which `fallback` holds.

    >>> bs = [Block("paragraph", 0, 4, "Intro"), Block("heading", 5, 15, "## Purpose", 2),
    ...       Block("table", 16, 20, "|a|"), Block("paragraph", 21, 25, "Why")]
    >>> abstract_index(bs), abstract_index(bs[2:])
    (3, 1)
    """
    for i, b in enumerate(blocks):
        if b.kind == "heading" and ABSTRACT.search(heading_title(b)):
            for j in range(i + 1, len(blocks)):
                if blocks[j].kind == "heading":
                    break
                if blocks[j].kind == "paragraph":
                    return j
    return next((i for i, b in enumerate(blocks) if b.kind == "paragraph" and fallback(b)), None)


def heading_path_at(blocks: Sequence[Block], offset: int) -> list[Heading]:
    """The headings that start before `offset` and are still open there, outermost first. A
    heading that starts at `offset` itself closes the sections at its level and below (text
    that opens with "## Silver" is not under its sibling "## Gold"), but is not on the path.

    >>> bs = [Block("heading", 0, 5, "# Fees", 1), Block("heading", 6, 14, "## Gold", 2),
    ...       Block("heading", 15, 25, "## Silver", 2), Block("paragraph", 26, 30, "text")]
    >>> [h.title for h in heading_path_at(bs, 26)], [h.title for h in heading_path_at(bs, 15)]
    (['Fees', 'Silver'], ['Fees'])
    """
    path: list[Heading] = []
    for b in blocks:
        if b.start >= offset:
            if b.start == offset and b.kind == "heading":
                while path and path[-1].level >= b.level:
                    path.pop()
            break
        if b.kind == "heading":
            enter_heading(path, b)
    return path


def breadcrumb_text(style: str, above: Sequence[Heading], title: str | None = None) -> str:
    """The breadcrumb for a chunk below `above` (outermost heading first).

    >>> hs = [Heading(1, "Refund Policy", 0), Heading(2, "Gold", 9)]
    >>> breadcrumb_text("path", hs), breadcrumb_text("heading", hs)
    ('[Refund Policy > Gold]', '[Gold]')
    """
    titles = [h.title for h in above]
    if style == "none":
        return ""
    if style == "heading":
        return f"[{titles[-1]}]" if titles else ""
    if style == "path+title" and title:
        if not titles or titles[0].casefold() != str(title).casefold():
            titles = [str(title), *titles]
    elif style not in ("path", "path+title"):
        raise ValueError(f"breadcrumb must be one of {BREADCRUMBS}, got {style!r}")
    return f"[{' > '.join(titles)}]" if titles else ""


def _crumb_titles(style: str, above: Sequence[Heading], title: str | None) -> list[str]:
    titles = [h.title for h in above]
    if style == "heading":
        return titles[-1:]
    if style == "path+title" and title:
        if not titles or titles[0].casefold() != str(title).casefold():
            return [str(title), *titles]
    return titles


def shorten_breadcrumb(style: str, above: Sequence[Heading], title: str | None,
                       fits: Callable[[str], bool]) -> str:
    """The longest breadcrumb for which `fits` holds: outer titles give way to "…" first,
    then the nearest heading's title is cut (ending in "…"); "" when not even that fits.

    >>> hs = [Heading(1, "Refund Policy", 0), Heading(2, "Gold", 9)]
    >>> shorten_breadcrumb("path", hs, None, lambda s: len(s) <= 12)
    '[… > Gold]'
    """
    titles = _crumb_titles(style, above, title)
    if not titles:
        return ""
    for i in range(1, len(titles)):
        cand = "[… > " + " > ".join(titles[i:]) + "]"
        if fits(cand):
            return cand
    lead = "[… > " if len(titles) > 1 else "["
    last = titles[-1]
    lo, hi = 0, len(last) - 1  # the longest cut of the last title that fits
    if not fits(f"{lead}{last[:0]}…]"):
        return ""
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(f"{lead}{last[:mid].rstrip()}…]"):
            lo = mid
        else:
            hi = mid - 1
    return f"{lead}{last[:lo].rstrip()}…]"
