"""Contextual-retrieval scripts: generate the committed preamble caches, and time the generators.

    python -m ragkit.bench_context generate --benchmark anthropic --generator gemma
    python -m ragkit.bench_context generate --benchmark course --generator smollm2
    python -m ragkit.bench_context speed

`generate` fills ``data/cache/preambles/<benchmark>-<generator>.jsonl`` (resumable: records are
appended as they are made; a second run only adds what is missing) and rewrites it sorted so it
diffs well. The chunks are the Anthropic set's own 737 upstream chunks, or the course corpus cut
by ``RecursiveChunker(200, 0, 'minilm')``. ``--max-chunks N`` takes a deterministic subset of
whole documents: documents ordered by the hash of their id (`subset_documents`), taken while
the chunk count stays within N — for the Anthropic set on a 2-core CPU, where gemma over all
737 chunks would take hours. ``--regenerate`` (or ``RAGKIT_REGENERATE_PREAMBLES=1``) recomputes.

`speed` prints preambles per second for each generator on the chunks of one course document,
and for the LLMs the speed-up from reusing the document's KV cache (the same chunks generated
with reuse and with a reset before every chunk; the texts must be identical), in wall-clock and
CPU seconds (CPU time is less disturbed by other processes on a shared machine). Rows go to
``results/bench_context.jsonl``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Sequence

from .types import Chunk, Document, stable_hash

COURSE_CHUNKER = {"size": 200, "overlap": 0, "tokenizer": "minilm"}


def corpus_and_chunks(benchmark: str) -> tuple[list[Document], list[Chunk]]:
    """The documents and the chunks that preambles are generated for."""
    if benchmark == "anthropic":
        from .benchmarks import load_anthropic

        b = load_anthropic()
        return b.documents, b.chunks
    if benchmark == "course":
        from .chunkers.recursive import RecursiveChunker
        from .config import get_settings
        from .documents import load_corpus

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


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    cols = [headers] + [[f"{v:.3g}" if isinstance(v, float) else str(v) for v in r] for r in rows]
    widths = [max(len(r[i]) for r in cols) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in cols]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


# --------------------------------------------------------------------------- generate


def generate(benchmark: str, generator: str, budget: int = 100, max_chunks: int | None = None,
             regenerate: bool | None = None, prune: bool = False) -> dict[str, Any]:
    """Fill the cache of one (benchmark, generator); prints timings and flag counts."""
    from .cache import JsonlCache
    from .contextualize import (contextualize, make_contextualizer, preamble_cache_path,
                                summarize_stats)

    docs, chunks = corpus_and_chunks(benchmark)
    n_all = len(chunks)
    if max_chunks is not None and max_chunks < n_all:
        keep = set(subset_documents(docs, chunks, max_chunks))
        chunks = [c for c in chunks if c.doc_id in keep]
        docs = [d for d in docs if d.id in keep]
        print(f"subset: {len(docs)} documents, {len(chunks)} of {n_all} chunks "
              f"(documents by hash of id, up to {max_chunks} chunks)")
    gen = make_contextualizer(generator, budget)
    path = preamble_cache_path(benchmark, gen)
    cache = JsonlCache(path)
    by_id = {d.id: d for d in docs}
    t0, c0 = time.perf_counter(), time.process_time()
    per_doc = []
    try:
        for d in docs:  # one document at a time, to report per-document timings
            mine = [c for c in chunks if c.doc_id == d.id]
            if not mine:
                continue
            before = gen.stats["generated"]
            t = time.perf_counter()
            contextualize(by_id, mine, gen, cache=cache, regenerate=regenerate)
            n_new = gen.stats["generated"] - before
            if n_new:
                per_doc.append((d.id, n_new, time.perf_counter() - t))
                print(f"  {d.id}: {n_new} preambles in {per_doc[-1][2]:.1f}s", flush=True)
    finally:
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        keys = {gen.key(by_id[c.doc_id], c) for c in chunks}
        recs = [r for r in cache.load().values() if not prune or r["key"] in keys]
        cache.rewrite(recs)
        gen.close()
    n_new = gen.stats["generated"]
    size = path.stat().st_size if path.exists() else 0
    print(f"{benchmark}/{generator}: {summarize_stats(gen.stats)}")
    print(f"time: {wall:.1f}s wall, {cpu:.1f}s CPU"
          + (f"; {n_new / wall:.3f} preambles/s, {wall / n_new:.1f}s per preamble"
             if n_new else ""))
    if hasattr(gen, "usage_line"):  # the API generator: tokens (input / cache / output), cost
        print(gen.usage_line())
    print(f"cache: {path} ({len(recs)} records, {size / 1e6:.2f} MB)")
    if size > 5e6:
        print("WARNING: cache file is over 5 MB", file=sys.stderr)
    return {"stats": dict(gen.stats), "wall_s": wall, "cpu_s": cpu, "per_doc": per_doc,
            "path": str(path), "bytes": size}


# --------------------------------------------------------------------------- speed


def _timed(fn) -> tuple[Any, float, float]:
    t, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t, time.process_time() - c


def speed(doc_id: str = "refund-policy-2024", n_chunks: int = 4, budget: int = 100,
          generators: Sequence[str] = ("structural", "extractive", "gemma", "smollm2")
          ) -> list[list[Any]]:
    """Preambles/second per generator on `n_chunks` chunks of one course document."""
    from .contextualize import make_contextualizer
    from .embed import Embedder
    from .results import Recorder

    docs, chunks = corpus_and_chunks("course")
    doc = next(d for d in docs if d.id == doc_id)
    mine = [c for c in chunks if c.doc_id == doc_id][:n_chunks]
    rec = Recorder("bench_context")
    rows: list[list[Any]] = []
    samples: list[tuple[str, str]] = []
    base = {"doc_id": doc_id, "n_chunks": len(mine), "budget": budget,
            "chunker": "recursive(200/0,minilm)"}

    def add(strategy: str, metric: str, value: float, **params: Any) -> None:
        rec.add(experiment="context_speed", benchmark="course", strategy=strategy,
                metric=metric, value=value, params={**base, **params})

    def run_all(gen) -> list[str]:
        gen.prepare(doc, mine)
        return [gen.generate(doc, c).text for c in mine]

    for name in generators:  # each timed after an untimed warm-up (model load, first call)
        kw: dict[str, Any] = {}
        if name == "extractive":  # a cold embedder: the timing includes encoding the sentences
            kw["embedder"] = Embedder(cache=False, show_progress=False)
        try:
            gen = make_contextualizer(name, budget, **kw)
        except ImportError as e:
            print(f"{name}: skipped ({e})")
            continue
        if name in ("gemma", "smollm2"):
            _, load_s, _ = _timed(lambda: gen.llm)
            # warm-up, untimed: the first evaluation pages the weights in and starts threads
            gen.generate(doc, mine[-1])
            gen._held = None  # so the timed pass evaluates the document once, then reuses it
            gen.reuse_prefix = True
            with_reuse, w1, c1 = _timed(lambda: run_all(gen))
            gen.reuse_prefix = False
            without, w0, c0 = _timed(lambda: run_all(gen))
            same = with_reuse == without
            samples.append((name, with_reuse[-1]))
            pre_tokens = len(gen._held or [])
            gen.close()
            rows.append([f"{name} (KV reuse)", len(mine), w1, c1, len(mine) / w1, w0 / w1,
                         c0 / c1, "yes" if same else "NO"])
            rows.append([f"{name} (reset per chunk)", len(mine), w0, c0, len(mine) / w0, 1.0,
                         1.0, ""])
            add(name, "preambles_per_second", len(mine) / w1, mode="kv_reuse", cpu_s=c1)
            add(name, "preambles_per_second", len(mine) / w0, mode="reset", cpu_s=c0)
            add(name, "kv_reuse_speedup_wall", w0 / w1, prefix_tokens=pre_tokens)
            add(name, "kv_reuse_speedup_cpu", c0 / c1, prefix_tokens=pre_tokens)
            add(name, "kv_reuse_same_text", float(same))
            add(name, "model_load_seconds", load_s)
        else:
            if name == "extractive":
                gen.embedder.encode(["warm-up"])  # load the model outside the timing
            texts, w, c = _timed(lambda: run_all(gen))
            samples.append((name, texts[-1]))
            rows.append([name, len(mine), w, c, len(mine) / w, "", "", ""])
            add(name, "preambles_per_second", len(mine) / w, cpu_s=c)
    rec.save()
    print(f"document {doc_id}: {len(doc.text)} characters, {len(mine)} chunks, budget {budget}")
    print(_table(["generator", "chunks", "wall s", "CPU s", "preambles/s", "speed-up wall",
                  "speed-up CPU", "same text"], rows))
    print(f"\npreambles of the last chunk ({mine[-1].text[:60]!r}...):")
    for name, text in samples:
        print(f"  {name}: {text!r}")
    return rows


# --------------------------------------------------------------------------- command line


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ragkit.bench_context", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate", help="fill a committed preamble cache")
    g.add_argument("--benchmark", choices=["anthropic", "course"], required=True)
    g.add_argument("--generator", required=True,
                   choices=["structural", "extractive", "gemma", "smollm2", "anthropic"])
    g.add_argument("--budget", type=int, default=100)
    g.add_argument("--max-chunks", type=int, default=None,
                   help="a deterministic subset of whole documents (see subset_documents)")
    g.add_argument("--regenerate", action="store_true", default=None)
    g.add_argument("--prune", action="store_true",
                   help="drop records of chunks not in this run when rewriting the cache")
    s = sub.add_parser("speed", help="preambles/second and the KV-reuse speed-up")
    s.add_argument("--doc", default="refund-policy-2024")
    s.add_argument("--chunks", type=int, default=4)
    s.add_argument("--budget", type=int, default=100)
    s.add_argument("--generators", default="structural,extractive,gemma,smollm2")
    args = p.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from .config import seed_everything

    seed_everything()
    if args.command == "generate":
        generate(args.benchmark, args.generator, args.budget, args.max_chunks, args.regenerate,
                 args.prune)
    else:
        speed(args.doc, args.chunks, args.budget, args.generators.split(","))
    return 0


if __name__ == "__main__":
    sys.exit(main())
