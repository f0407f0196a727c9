"""Read the preambles before trusting them: a few chunks with every generator's preamble side by
side (`preamble_samples`, `samples_text`), and the committed caches described in numbers
(`preamble_quality`).

A preamble is only worth embedding if it adds words the chunk lacks. Small local LLMs often
write the prompt back ("This chunk is ...") with little that is specific, so notebook 04 shows
the actual text for a few chunks before it measures anything, and counts how many cached
preambles are flagged, repeated word for word elsewhere in the cache, or open with the
prompt's own words.

LLM preambles are read from the cache only, never generated here: a chunk is sampled only when
every LLM generator asked for has a cached preamble for it. The model-free generators
(structural, extractive) are computed on the spot.

    >>> samples = preamble_samples(bench, chunks, ["structural", "gemma"], n=2)  # doctest: +SKIP
    >>> print(samples_text(samples))                                          # doctest: +SKIP
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any, Sequence

from ..types import Chunk
from .cache import contextualize, make_contextualizer, preamble_cache, preamble_cache_path

LLM = ("gemma", "smollm2", "anthropic")
QUALITY_FLAGS = ("empty", "verbatim", "loop", "cut", "over_budget")
_ECHO = re.compile(r"^\s*(this|the)\s+(chunk|document|section|passage|text)\b", re.I)


def _sample_indices(n_items: int, n: int) -> list[int]:
    """`n` indices spread evenly over `n_items` (the first, then every ``n_items / n``-th):
    ``_sample_indices(10, 3) -> [0, 3, 6]``."""
    if n_items <= 0 or n <= 0:
        return []
    step = n_items / min(n, n_items)
    return sorted({int(i * step) for i in range(min(n, n_items))})


def preamble_samples(bench, chunks: Sequence[Chunk], generators: Sequence[str], n: int = 3,
                     offset: int = 0, width: int | None = 400):
    """`n` chunks of `bench`, one row each: doc_id, the chunk's character span, its text (the
    first `width` characters; ``None`` keeps all) and one column per generator with its
    preamble (LLM ones from ``data/cache/preambles/``, flags in brackets when the cache
    recorded any). The chunks are spread evenly over those every LLM generator in
    `generators` has cached, starting `offset` chunks in (modulo their number)."""
    import pandas as pd

    docs = {d.id: d for d in bench.documents}
    llms = {g: (make_contextualizer(g), preamble_cache(bench.name, g))
            for g in generators if g in LLM}
    cached = [c for c in chunks
              if all(cache.get(gen.key(docs[c.doc_id], c)) is not None
                     for gen, cache in llms.values())]
    cached = cached[offset % len(cached):] if cached else cached
    picked = [cached[i] for i in _sample_indices(len(cached), n)]
    rows = []
    for c in picked:
        row: dict[str, Any] = {"doc_id": c.doc_id, "chars": f"{c.start}–{c.end}",
                               "chunk": c.text if width is None or len(c.text) <= width
                               else c.text[:width] + "…"}
        for g in generators:
            if g in llms:
                gen, cache = llms[g]
                rec = cache.get(gen.key(docs[c.doc_id], c))
                text, flags = rec["preamble"], [f for f in rec.get("flags", []) if f != "window"]
            else:
                out = contextualize(docs, [c], make_contextualizer(g))[0]
                text = out.prefix[len(c.prefix):].lstrip("\n") if c.prefix else out.prefix
                flags = [f for f in out.metadata.get("context_flags", []) if f != "window"]
            row[g] = text + (f" [{', '.join(flags)}]" if flags else "")
        rows.append(row)
    return pd.DataFrame(rows)


def samples_text(samples) -> str:
    """`preamble_samples` as plain text: per chunk a header, the chunk, then each generator's
    preamble on its own line."""
    fixed = ("doc_id", "chars", "chunk")
    out = []
    for r in samples.to_dict("records"):
        out.append(f"── {r['doc_id']} · chars {r['chars']}")
        out.append(" ".join(str(r["chunk"]).split()))
        out += [f"   {g:>10}: {v if v else '(empty)'}" for g, v in r.items() if g not in fixed]
        out.append("")
    return "\n".join(out)


def preamble_quality(benchmark: str, generators: Sequence[str]):
    """One row per LLM generator whose cache exists for `benchmark`: how many preambles the
    committed cache holds, their median length in words, and the share that are flagged
    (``empty``, ``verbatim``, ``loop``, ``cut``, ``over_budget``), repeated word for word by
    another preamble of the cache, or open with the prompt's own words ("This chunk is ...",
    "This document ...")."""
    import numpy as np
    import pandas as pd

    rows = []
    for g in generators:
        path = preamble_cache_path(benchmark, g)
        if g not in LLM or not path.exists():
            continue
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
                   if line.strip()]
        texts = [" ".join(str(r.get("preamble", "")).split()) for r in records]
        if not texts:
            continue
        counts = Counter(t for t in texts if t)
        flagged = [bool(set(r.get("flags", [])) & set(QUALITY_FLAGS)) for r in records]
        rows.append({"generator": g, "preambles": len(texts),
                     "median words": float(np.median([len(t.split()) for t in texts])),
                     "flagged": float(np.mean(flagged)),
                     "repeated": float(np.mean([bool(t) and counts[t] > 1 for t in texts])),
                     "echoes the prompt": float(np.mean(
                         [bool(_ECHO.match(t)) for t in texts]))})
    return pd.DataFrame(rows, columns=["generator", "preambles", "median words", "flagged",
                                       "repeated", "echoes the prompt"])
