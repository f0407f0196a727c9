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
  rest of the document chunked by structure.

The grouping framework (`ragkit.chunkers.grouping`) and the chunkers themselves
(`ragkit.chunkers.doc_classes`) live in their own modules; their names stay importable from here.
"""

from __future__ import annotations

from .doc_classes import (CLAUSE, ENDPOINT, SPEAKER, ApiChunker, ChatChunker,  # noqa: F401
                          ClauseChunker, SectionChunker, TableRowChunker, TranscriptChunker,
                          speaker)
from .grouping import (Group, GroupChunker, PrefixFn, heading_or_paragraph,  # noqa: F401
                       segments)
from ..text.headings import heading_paths  # noqa: F401
