"""ragkit: the helper package of a course on chunking for retrieval-augmented generation.

The subpackages read as the pipeline: `text` -> `chunkers` -> `contextualize` -> `embed` ->
`retrieve` -> `evaluate`, then `experiments` (one experiment end to end, and each notebook's)
and `report` (results rows, leaderboard, claims, guide); `scale` runs the same stages over
sharded corpora, and `tools` holds the command line. A few shared modules sit beside them:
`types` (the data types), `config`, `models`, `cache`, `jsonio`, `environment`. Importing ragkit
is cheap: torch, faiss and the models load only when a function needs them.
"""

from .types import Block, Chunk, Document, Query, Span

__version__ = "0.1.0"
__all__ = ["Block", "Chunk", "Document", "Query", "Span", "__version__"]
