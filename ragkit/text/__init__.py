"""Text: documents read from disk, parsed into blocks, measured in tokens, cut into sentences.

The first stage of the pipeline, and the one every other stage stands on (it imports no other
stage):

- `documents`: one file read into a `ragkit.types.Document`: decoded, front matter to
  metadata (`load_document`); `corpus`: a folder of them, every file loaded or skipped with its
  reason (`load_corpus`); `html`: HTML pages to Markdown (`html_to_markdown`); `pdf`: PDFs to
  Markdown with each page's span (`pdf_to_markdown`);
- `markdown`: Markdown parsed into typed blocks with exact character offsets
  (`parse_markdown`, `blocks_for`); `headings`: the heading path above any point, the abstract,
  breadcrumbs (`heading_path_at`);
- `tokens`: token counts with character offsets, for the embedder's tokenizer or cl100k_base
  (`get_tokenizer`);
- `sentences`: sentence spans and the cut points the chunkers split at (`sentence_spans`,
  `pack_sentences`);
- `locate`: a quote or a splitter's piece found in a text, exactly or up to whitespace: the
  one search the golden files and the baseline chunkers share (``locate.locate``).

Names load on first use (`ragkit._lazy`).
"""

from .._lazy import surface

_EXPORTS = {  # submodule -> the names it gives this package
    "corpus": ("Corpus", "load_corpus", "walk_files"),
    "documents": ("DocumentError", "load_document"),
    "markdown": ("blocks_for", "parse_markdown"),
    "html": ("html_to_markdown",),
    "pdf": ("PdfError", "pdf_to_markdown", "plain_pages"),
    "tokens": ("Tokenizer", "get_tokenizer"),
    "headings": ("Heading", "heading_path_at"),
    "sentences": ("pack_sentences", "sentence_spans"),
}
__all__, __getattr__, __dir__ = surface(__name__, _EXPORTS)
