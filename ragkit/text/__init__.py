"""Text: documents read from disk, parsed into blocks, measured in tokens, cut into sentences.

The first stage of the pipeline, and the one every other stage stands on (it imports no other
stage):

- `documents`: read Markdown, text, code, CSV, JSON and HTML files (with front matter and a
  ``metadata.csv`` sidecar) into `ragkit.types.Document`, and parse Markdown into typed blocks
  with exact character offsets (`load_corpus`, `load_document`, `parse_markdown`, `blocks_for`);
- `html`: HTML pages to Markdown (`html_to_markdown`);
- `tokens`: token counts with character offsets, for the embedder's tokenizer or cl100k_base
  (`get_tokenizer`);
- `sentences`: sentence spans and the cut points the chunkers split at (`sentence_spans`,
  `pack_sentences`).

Names load on first use (`ragkit._lazy`).
"""

from .._lazy import surface

_EXPORTS = {
    "Corpus": "documents",
    "DocumentError": "documents",
    "blocks_for": "documents",
    "load_corpus": "documents",
    "load_document": "documents",
    "parse_markdown": "documents",
    "walk_files": "documents",
    "html_to_markdown": "html",
    "Tokenizer": "tokens",
    "get_tokenizer": "tokens",
    "pack_sentences": "sentences",
    "sentence_spans": "sentences",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = surface(__name__, _EXPORTS)
