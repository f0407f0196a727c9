"""Route every document to the chunker made for its class: one editable dict, class -> chunker.

A corpus mixes contracts, chats, price lists and source files; no single chunker suits them all.
`Router` decides each document's class and hands it to ``router.mapping[class]`` (or
``mapping["default"]``). The class comes from, in order:

1. the front matter's ``doc_type`` (policy, contract, memo, chat, code ...) when the mapping has it;
2. the format: ``metadata["format"] == "code"`` or a source-file extension gives ``code``;
3. the content: many ``**Speaker:**`` paragraphs (``chat`` when most carry a ``[hh:mm]`` time,
   else ``transcript``), endpoint headings (``api_reference``), numbered clauses
   (``contract``), mostly pipe tables (``tables``), long text with few headings (``prose``:
   at least `PROSE_CHARS_PER_HEADING` characters per heading, counting the untitled start;
   never a PDF with tables, which stays ``default``);
4. otherwise ``default``.

Every chunk records the chunker that made it in ``metadata["routed_to"]`` and the class in
``metadata["doc_class"]``; its strategy is the router's label.

    >>> router = Router()
    >>> router.mapping["memo"] = router.mapping["default"]   # memos chunked by structure instead
"""

from __future__ import annotations

import re
from pathlib import PurePath
from typing import Any, Mapping

from ..text.documents import CODE_SUFFIXES
from ..text.markdown import blocks_for
from ..types import Chunk, Document, stable_hash
from .base import Chunker
from .classes import (CLAUSE, ENDPOINT, ApiChunker, ChatChunker, ClauseChunker, SectionChunker,
                      TableRowChunker, TranscriptChunker, speaker)
from .code import CodeChunker
from .groups import ProseChunker
from .structure import StructureChunker

_METHOD_HEADING = re.compile(r"`[\w.]+\.\w+`|`(?:GET|POST|PUT|PATCH|DELETE)\s")
# Text with this many characters or more per heading has too little structure for the
# structure chunker to use (Chroma's five corpora: one heading or none in 30 k+ characters);
# it gets sentence groups of PROSE_SIZE MiniLM tokens, the size `ragkit bench prose` chose on
# the tune half of Chroma's questions.
PROSE_CHARS_PER_HEADING = 4000
PROSE_SIZE = 128


def default_mapping(soft: int = 180, hard: int = 254,
                    tokenizer: str = "minilm") -> dict[str, Chunker]:
    """The course's choice of chunker for each document class."""
    structure = StructureChunker(soft, hard, tokenizer)
    section = SectionChunker(soft, hard, tokenizer)
    rows = TableRowChunker(soft, hard, tokenizer)
    return {
        "default": structure, "policy": structure, "guide": structure, "faq": structure,
        "fee_schedule": rows, "tables": rows,
        "contract": ClauseChunker(soft, hard, tokenizer),
        "memo": section, "paper": section,
        "api_reference": ApiChunker(soft, hard, tokenizer),
        "transcript": TranscriptChunker(soft, hard, tokenizer),
        "chat": ChatChunker(soft, hard, tokenizer),
        # the code chunker's defaults (2,000 characters, overlap 400), tuned on the tune half
        # of Anthropic's questions (`ragkit bench code`); such chunks are longer than
        # MiniLM's window, so the stack's dense search reads them in windows
        "code": CodeChunker(tokenizer=tokenizer),
        "prose": ProseChunker(min(PROSE_SIZE, hard), tokenizer, hard),
    }


def classify_content(doc: Document) -> str:
    """A class from the text alone (step 3 above), or 'default'."""
    if doc.metadata.get("format") == "code" or (
            doc.path and PurePath(doc.path).suffix.lower() in CODE_SUFFIXES):
        return "code"
    blocks = blocks_for(doc)
    paras = [b for b in blocks if b.kind == "paragraph"]
    turns = [b for b in paras if speaker(b)]
    if len(turns) >= 4 and len(turns) >= 0.4 * len(paras):
        timed = sum(1 for b in turns if b.text.startswith("**["))
        return "chat" if timed >= len(turns) / 2 else "transcript"
    heads = [b for b in blocks if b.kind == "heading"]
    if sum(1 for b in heads if _METHOD_HEADING.search(b.text)) >= 3 or \
            sum(1 for b in paras if ENDPOINT.match(b.text)) >= 3:
        return "api_reference"
    if sum(1 for b in paras if CLAUSE.match(b.text)) >= 5:
        return "contract"
    table_chars = sum(b.end - b.start for b in blocks if b.kind == "table")
    if table_chars >= 0.4 * max(1, sum(b.end - b.start for b in blocks)):
        return "tables"
    # a PDF with tables (a filing) stays with the structure chunker, which keeps a table whole
    # or repeats its header; the prose chunker's sentence groups would cut through its rows
    pdf_tables = doc.metadata.get("source_format") == "pdf" and doc.metadata.get("tables")
    if len(doc.text) >= PROSE_CHARS_PER_HEADING * (len(heads) + 1) and not pdf_tables:
        return "prose"
    return "default"


class Router(Chunker):
    name = "router"

    def __init__(self, mapping: Mapping[str, Chunker] | None = None, soft: int = 180,
                 hard: int = 254, tokenizer: str = "minilm"):
        """`mapping` entries replace the defaults' (`default_mapping(soft, hard, tokenizer)`)."""
        self.mapping: dict[str, Chunker] = {**default_mapping(soft, hard, tokenizer),
                                            **(mapping or {})}

    def params(self) -> dict[str, Any]:
        return {"mapping": {k: [c.label, stable_hash(c.name, c.params(), n=8)]
                            for k, c in sorted(self.mapping.items())}}

    def classify(self, doc: Document) -> str:
        """The document's class: its ``doc_type`` if the mapping knows it, else from content."""
        doc_type = doc.metadata.get("doc_type")
        if doc_type and str(doc_type) in self.mapping:
            return str(doc_type)
        found = classify_content(doc)
        return found if found in self.mapping else "default"

    def chunker_for(self, doc: Document) -> tuple[str, Chunker]:
        cls = self.classify(doc)
        return cls, self.mapping.get(cls) or self.mapping["default"]

    def chunk(self, doc: Document) -> list[Chunk]:
        cls, chunker = self.chunker_for(doc)
        settings = stable_hash(self.name, self.params(), n=8)
        out = [Chunk.make(doc, c.start, c.end, strategy=self.label, prefix=c.prefix,
                          metadata={**c.metadata, "routed_to": chunker.label, "doc_class": cls,
                                    "settings": settings})
               for c in chunker.chunk(doc)]
        return self.finish(doc, out)
