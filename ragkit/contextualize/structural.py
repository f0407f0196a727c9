"""Structural preambles: title + heading path + the document's abstract, no model."""

from __future__ import annotations

from ..text.headings import abstract_index, heading_path_at
from ..types import Chunk, Document
from .base import Contextualizer, Preamble, _clean, words


class StructuralContextualizer(Contextualizer):
    """``Title > Section > Subsection`` plus the abstract or first paragraph (cut to fit).

    The heading path is the chain of Markdown headings that start before the chunk; the summary
    is the paragraph under an "Abstract"/"Summary"/"Overview" heading, else the first paragraph,
    and is left out when it lies inside the chunk (the chunk already says it).
    """

    name = "structural"
    # s2: the shared abstract finder (Purpose, Recommendation ...); s3: a chunk that opens with a
    # heading is not placed under that heading's earlier sibling
    template_version = "s3"

    def __init__(self, budget: int = 100, budget_tokenizer: str = "minilm"):
        super().__init__(budget, budget_tokenizer)
        self._blocks: dict[str, list] = {}

    def _blocks_of(self, doc: Document) -> list:
        from ..text.markdown import blocks_for

        k = doc.id + doc.hash
        if k not in self._blocks:
            self._blocks[k] = blocks_for(doc)
        return self._blocks[k]

    def heading_path(self, doc: Document, chunk: Chunk) -> list[str]:
        return [h.title for h in heading_path_at(self._blocks_of(doc), chunk.start)]

    def summary_block(self, doc: Document):
        blocks = self._blocks_of(doc)
        i = abstract_index(blocks, lambda b: not b.meta.get("unparsed") and len(words(b.text)) >= 8)
        return None if i is None else blocks[i]

    def generate(self, doc: Document, chunk: Chunk) -> Preamble:
        title = str(doc.metadata.get("title") or doc.id)
        path = self.heading_path(doc, chunk)
        if path and _clean(path[0]).lower() == _clean(title).lower():
            path = path[1:]
        head = " > ".join([title, *path])
        block = self.summary_block(doc)
        if block is None or (block.start < chunk.end and chunk.start < block.end) \
                or _clean(block.text) in _clean(chunk.text):
            return Preamble(head, (), ())
        body = _clean(block.text)
        text = f"{head}\n{body}"
        if self.count(text) <= self.budget:
            return Preamble(text, (), ((block.start, block.end),))
        # cut the summary at a word boundary: the longest prefix that fits with its ellipsis
        toks = body.split(" ")
        lo, hi = 0, len(toks)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.count(f"{head}\n{' '.join(toks[:mid])} …") <= self.budget:
                lo = mid
            else:
                hi = mid - 1
        if lo == 0:
            return Preamble(head, ("cut",), ())
        return Preamble(f"{head}\n{' '.join(toks[:lo])} …", ("cut",),
                        ((block.start, block.end),))
