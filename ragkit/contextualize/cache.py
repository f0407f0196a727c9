"""Running a generator over a corpus (`contextualize`) with its JSONL preamble cache."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ..cache import JsonlCache
from ..config import get_settings
from ..types import Chunk, Document, text_hash
from .anthropic import AnthropicContextualizer
from .base import FLAGS, Contextualizer, Placement, quality_flags
from .extractive import ExtractiveContextualizer
from .llamacpp import gemma, smollm2
from .structural import StructuralContextualizer

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
