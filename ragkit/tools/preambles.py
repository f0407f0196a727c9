"""``ragkit preambles``: fill a committed preamble cache (not a benchmark: it writes data).

    ragkit preambles --benchmark anthropic --generator gemma
    ragkit preambles --benchmark course --generator smollm2
    ragkit preambles --benchmark course --generator anthropic   # needs ANTHROPIC_API_KEY

Fills ``data/cache/preambles/<benchmark>-<generator>.jsonl`` (resumable: records are appended as
they are made; a second run only adds what is missing) and rewrites it sorted so it diffs well.
The chunks are the Anthropic set's own 737 upstream chunks, or the course corpus cut by
``RecursiveChunker(200, 0, 'minilm')`` (`ragkit.experiments.preamble_sets`). ``--max-chunks N``
takes a deterministic subset of whole documents: documents ordered by the hash of their id
(`subset_documents`), taken while the chunk count stays within N — for the Anthropic set on a
2-core CPU, where gemma over all 737 chunks would take hours. ``--regenerate`` (or
``RAGKIT_REGENERATE_PREAMBLES=1``) recomputes. (``python -m ragkit.tools.preambles`` takes the
same options.)
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from ..experiments.preamble_sets import corpus_and_chunks, subset_documents
from .common import bounded, prepare


def generate(benchmark: str, generator: str, budget: int = 100, max_chunks: int | None = None,
             regenerate: bool | None = None, prune: bool = False) -> dict[str, Any]:
    """Fill the cache of one (benchmark, generator); prints timings and flag counts.

    The cache file is touched only when there is something to write: records are appended as
    they are made, and the file is rewritten (sorted, atomically) only if this run added
    records or `prune` was asked for. A generator that cannot run (no API key, an API that
    cannot be reached) raises `GeneratorUnavailable` saying how many preambles were written
    before it ("nothing written" when none), before the corpus is even loaded when it can
    tell (no key)."""
    from ..cache import JsonlCache
    from ..contextualize import (GeneratorUnavailable, contextualize, make_contextualizer,
                                 preamble_cache_path, summarize_stats)

    gen = make_contextualizer(generator, budget)
    path = preamble_cache_path(benchmark, gen)
    why = gen.unavailable()
    if why:  # e.g. no API key: say so before any work
        gen.close()
        raise GeneratorUnavailable(f"{why}; nothing written")
    docs, chunks = corpus_and_chunks(benchmark)
    n_all = len(chunks)
    if max_chunks is not None and max_chunks < n_all:
        keep = set(subset_documents(docs, chunks, max_chunks))
        chunks = [c for c in chunks if c.doc_id in keep]
        docs = [d for d in docs if d.id in keep]
        print(f"subset: {len(docs)} documents, {len(chunks)} of {n_all} chunks "
              f"(documents by hash of id, up to {max_chunks} chunks)")
    cache = JsonlCache(path)
    by_id = {d.id: d for d in docs}
    t0, c0 = time.perf_counter(), time.process_time()
    per_doc = []
    recs: list = []
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
    except GeneratorUnavailable as e:
        n = gen.stats["generated"]
        done = (f"{n} preambles written to {path} before it (a second run resumes)" if n
                else "nothing written")
        raise GeneratorUnavailable(f"{e}; {done}") from None
    finally:
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        keys = {gen.key(by_id[c.doc_id], c) for c in chunks}
        recs = [r for r in cache.load().values() if not prune or r["key"] in keys]
        if gen.stats["generated"] or prune:  # else the file is as this run found it
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


def main(argv: list[str] | None = None, prog: str = "ragkit preambles") -> int:
    """Exit codes: 0 done; 2 a bad command line; 3 the generator cannot run here (no
    ``ANTHROPIC_API_KEY``, the API cannot be reached, a model package missing): one line on
    stderr, and nothing written beyond the preambles made before it."""
    from ..contextualize import GeneratorUnavailable
    from .common import EXIT_FATAL, Parser

    p = Parser(prog=prog, description=__doc__,
               formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--benchmark", choices=["anthropic", "course"], required=True)
    p.add_argument("--generator", required=True,
                   choices=["structural", "extractive", "gemma", "smollm2", "anthropic"])
    p.add_argument("--budget", type=bounded(1, 100_000), default=100,
                   help="the preamble's size limit in tokens (1 to 100,000; default 100)")
    p.add_argument("--max-chunks", type=bounded(1, 10_000_000), default=None,
                   help="a deterministic subset of whole documents (see subset_documents)")
    p.add_argument("--regenerate", action="store_true", default=None)
    p.add_argument("--prune", action="store_true",
                   help="drop records of chunks not in this run when rewriting the cache")
    args = p.parse_args(argv)
    prepare()
    try:
        generate(args.benchmark, args.generator, args.budget, args.max_chunks, args.regenerate,
                 args.prune)
    except (GeneratorUnavailable, ImportError) as e:
        print(f"{prog}: {' '.join(str(e).split())}", file=sys.stderr)
        return EXIT_FATAL
    return 0


if __name__ == "__main__":
    sys.exit(main())
