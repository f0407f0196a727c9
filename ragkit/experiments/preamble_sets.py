"""The chunk sets the committed preamble caches cover (``data/cache/preambles/``).

Notebook 04 reads preambles for the course corpus cut by ``RecursiveChunker(**COURSE_CHUNKER)``
and for the Anthropic set's own upstream chunks; ``ragkit preambles`` fills those caches and
``ragkit bench context-speed`` times the generators on the same chunks. `subset_documents` picks
the deterministic subset of whole documents that ``--max-chunks`` asks for.
"""

from __future__ import annotations

from typing import Sequence

from ..types import Chunk, Document, stable_hash

COURSE_CHUNKER = {"size": 200, "overlap": 0, "tokenizer": "minilm"}


def corpus_and_chunks(benchmark: str) -> tuple[list[Document], list[Chunk]]:
    """The documents and the chunks that preambles are generated for."""
    if benchmark == "anthropic":
        from ..evaluate.benchmarks import load_anthropic

        b = load_anthropic()
        return b.documents, b.chunks
    if benchmark == "course":
        from ..chunkers.recursive import RecursiveChunker
        from ..config import get_settings
        from ..text.corpus import load_corpus

        docs = load_corpus(get_settings().data_dir / "corpus").documents
        return docs, RecursiveChunker(**COURSE_CHUNKER).chunk_all(docs)
    raise ValueError(f"no preamble set for benchmark {benchmark!r} (anthropic or course)")


def subset_documents(docs: Sequence[Document], chunks: Sequence[Chunk],
                     max_chunks: int) -> list[str]:
    """Ids of whole documents, ordered by ``stable_hash(doc.id)``, taken while the running
    chunk count stays <= max_chunks (documents that would overflow are skipped)."""
    per_doc: dict[str, int] = {}
    for c in chunks:
        per_doc[c.doc_id] = per_doc.get(c.doc_id, 0) + 1
    picked, total = [], 0
    for d in sorted(docs, key=lambda d: stable_hash(d.id)):
        n = per_doc.get(d.id, 0)
        if n and total + n <= max_chunks:
            picked.append(d.id)
            total += n
    return picked
