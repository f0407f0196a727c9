"""Contextual retrieval: give every chunk a short preamble that says where it sits in its document.

A chunk cut out of a long document often lacks the words a question uses ("the 2024 refund
policy", "the fuzzer's harness"): they are in the title, a heading or an earlier paragraph.
Anthropic's contextual-retrieval recipe asks an LLM for a sentence or two of context per chunk
and indexes ``context + chunk``. This module makes that recipe local and measurable. Every
generator answers `Contextualizer.preamble(doc, chunk)`; `contextualize` runs one over a corpus
and returns chunks whose `prefix` holds the preamble (the body is untouched, so span scoring is
unchanged) and whose metadata names the generator, model and flags.

Generators, cheapest first:

- `StructuralContextualizer`: title + heading path above the chunk + the document's abstract
  (or first paragraph), no model at all;
- `ExtractiveContextualizer`: the sentences from elsewhere in the document most similar to the
  chunk (embedder cosine), no LLM;
- `LlamaCppContextualizer`: a small local LLM through llama-cpp-python: gemma-3-270m (a base
  model, completion prompt) or SmolLM2-135M-Instruct (chat template). The document comes first
  in the prompt, so the evaluated document is kept in llama.cpp's KV cache and only the chunk
  and the answer are computed for the document's other chunks (the local analogue of prompt
  caching). Decoding is greedy;
- `AnthropicContextualizer`: a Haiku-class model over the Messages API (the official
  `anthropic` SDK, the ``api`` extra) with the document marked ``cache_control``; only when
  ``ANTHROPIC_API_KEY`` is set (read from the environment at
  call time, never stored, logged or cached). Token use and cost are counted.

The budget (default 100 tokens) is measured with one tokenizer for every generator
(``budget_tokenizer``, default the bundled MiniLM's, i.e. what the embedder will see). The policy:

- structural: title and heading path are kept whole; the abstract is cut at a word boundary to
  fit, and the preamble is flagged ``cut``;
- extractive: only sentences that fit are taken, so it never exceeds the budget;
- LLMs: generation stops at ``max_tokens = budget`` model tokens; a preamble stopped there is
  flagged ``cut``; one that still measures over the budget is flagged ``over_budget`` and kept
  as it is (never silently shortened).

Every preamble is also checked for two failure modes of small models (`quality_flags`):
``verbatim`` (more than half of it copies the chunk) and ``loop`` (repeated n-grams); plus
``empty``, and ``window`` when a document longer than the model's context was replaced by a
window around the chunk. Flags go into the cache record, the chunk's metadata and
``generator.stats``.

Preambles are cached in JSONL (`ragkit.cache.JsonlCache`), one record per (generator, model,
template version, budget, document hash, chunk hash and span), under
``data/cache/preambles/<benchmark>-<generator>.jsonl`` so they can be committed;
``regenerate=True`` or ``RAGKIT_REGENERATE_PREAMBLES=1`` recomputes them.

    >>> gen = StructuralContextualizer(budget=60)                         # doctest: +SKIP
    >>> out = contextualize(bench.documents, chunks, gen,                 # doctest: +SKIP
    ...                     cache=preamble_cache("course", gen))
    >>> out[3].prefix                                                     # doctest: +SKIP
    'Refund Policy > Refunds > Annual plans\\nThis policy explains when Northwind Cloud ...'

The package, by generator: `base` (the interface and the quality checks), `structural`,
`extractive`, `llamacpp`, `anthropic`, and `cache` (running a generator over a corpus with its
preamble cache). Every public name is importable from ``ragkit.contextualize``; the model files
and the llama.cpp loader are in `ragkit.models`.
"""

from ..models import file_fingerprint, gemma_gguf, smollm2_gguf
from .anthropic import API_KEY_ENV, PRICES, AnthropicContextualizer, _redact
from .base import (FLAGS, Contextualizer, GeneratorUnavailable, Placement, Preamble, _clean,
                   loop_fraction, quality_flags, verbatim_fraction, words)
from .cache import (GENERATORS, cached_documents, contextualize, make_contextualizer,
                    preamble_cache, preamble_cache_path, summarize_stats)
from .extractive import ExtractiveContextualizer, candidate_sentences
from .llamacpp import LlamaCppContextualizer, gemma, smollm2
from .samples import preamble_quality, preamble_samples, samples_text
from .structural import StructuralContextualizer

__all__ = ["API_KEY_ENV", "FLAGS", "GENERATORS", "PRICES", "AnthropicContextualizer",
           "Contextualizer", "ExtractiveContextualizer", "GeneratorUnavailable",
           "LlamaCppContextualizer", "Placement",
           "Preamble", "StructuralContextualizer", "_clean", "_redact", "cached_documents",
           "candidate_sentences", "contextualize", "file_fingerprint", "gemma", "gemma_gguf",
           "loop_fraction", "make_contextualizer", "preamble_cache", "preamble_cache_path",
           "preamble_quality", "preamble_samples", "quality_flags", "samples_text", "smollm2",
           "smollm2_gguf", "summarize_stats", "verbatim_fraction", "words"]
