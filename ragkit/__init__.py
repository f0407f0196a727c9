"""ragkit: the helper package of a course on chunking for retrieval-augmented generation.

The modules read as the pipeline: `documents` -> `chunkers` -> `contextualize` -> `embed` ->
`index` -> `retrieve` -> `evaluate` -> `results`. Importing ragkit is cheap: torch, faiss and
the models load only when a function needs them.
"""

from .types import Block, Chunk, Document, Query, Span

__version__ = "0.1.0"
__all__ = ["Block", "Chunk", "Document", "Query", "Span", "__version__"]
