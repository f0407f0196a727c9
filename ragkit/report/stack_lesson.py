"""ragkit's retrieval stack taken apart on one question (notebook 07's lesson, before its
benchmark): the gold's rank under each step, and the fusion written out.

The steps are the stack's parts, each a retriever over the same chunks (`stack_parts`):

1. dense search, each chunk as the encoder reads it (cut at its input limit);
2. BM25 over plain words;
3. BM25 over identifier words (``snake_case`` and ``camelCase`` split into their words);
4. dense search over windows, so no chunk is cut;
5. the stack: 4 and 3 fused by weighted reciprocal rank (`ragkit.retrieve.fuse`);
6. optionally, the cross-encoder's reordering of the stack's first hits.

`fusion_table` writes the fusion out for the two ranked lists' top k: each chunk's rank in
each list (1 = first), its term ``w / (rank + constant)`` from each (the stack's constant is 0,
so ``0.5 / rank``), their sum and the fused rank, so a reader can redo the arithmetic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..evaluate.spans import overlaps
from ..types import Chunk, Query


def stack_parts(chunks: Sequence[Chunk], embedder, rerank: str | None = None
                ) -> dict[str, Any]:
    """The stack's steps over `chunks`, by name, in order (module doc)."""
    from ..retrieve.retrievers import BM25Retriever, DenseRetriever
    from ..retrieve.stack import stack_retriever

    parts: dict[str, Any] = {
        "dense (chunk cut at the encoder's limit)": DenseRetriever(chunks, embedder),
        "BM25, plain words": BM25Retriever(chunks, tokens="words"),
        "BM25, identifier words": BM25Retriever(chunks, tokens="identifiers"),
        "dense over windows": DenseRetriever(chunks, embedder, long="windows"),
        "the stack (windows + identifier BM25, fused)": stack_retriever(chunks, embedder),
    }
    if rerank:
        parts["the stack, reranked by the cross-encoder"] = stack_retriever(
            chunks, embedder, rerank=rerank)
    return parts


def gold_rank(query: Query, hits: Sequence[Any]) -> int | None:
    """The 1-based rank of the first hit holding gold text (or a copy of it), else None."""
    return next((i for i, h in enumerate(hits, 1) if overlaps(h.chunk, query.gold,
                                                              query.copies)), None)


def ranks(queries: Sequence[Query], retriever, depth: int = 50) -> dict[str, int | None]:
    """Each question's gold rank under `retriever`, searched `depth` deep."""
    hits = retriever.search([q.text for q in queries], depth)
    return {q.id: gold_rank(q, h) for q, h in zip(queries, hits)}


def pick(queries: Sequence[Query], before: Mapping[str, int | None],
         after: Mapping[str, int | None], k: int = 5) -> Query | None:
    """The first question whose gold is outside the top `k` in `before` and at the top in
    `after` (the case a step was built for); None when there is none."""
    for q in queries:
        b, a = before.get(q.id), after.get(q.id)
        if (b is None or b > k) and a == 1:
            return q
    return None


def ranked_within(queries: Sequence[Query], ranks_: Mapping[str, int | None], low: int,
                  high: int) -> Query | None:
    """The first question whose gold rank lies in ``[low, high]`` (e.g. second to fifth: a
    case a reranker can move); None when there is none."""
    return next((q for q in queries if low <= (ranks_.get(q.id) or 0) <= high), None)


def walkthrough(query: Query, parts: Mapping[str, Any], k: int = 5, depth: int = 50):
    """One row per step: the gold's rank (searched `depth` deep; "not in the top N" beyond)
    and the top `k` as ``doc[start:end]`` with ``*`` marking those holding gold."""
    import pandas as pd

    rows = []
    for name, retriever in parts.items():
        hits = retriever.search([query.text], depth)[0]
        r = gold_rank(query, hits)
        top = [f"{h.chunk.doc_id}[{h.chunk.start}:{h.chunk.end}]"
               + ("*" if overlaps(h.chunk, query.gold, query.copies) else "") for h in hits[:k]]
        rows.append({"step": name, "gold's rank": r if r else f"not in the top {depth}",
                     f"top {k} (* holds gold)": ", ".join(top)})
    return pd.DataFrame(rows)


def walkthrough_text(query: Query, parts: Mapping[str, Any], k: int = 5, depth: int = 50
                     ) -> str:
    """`walkthrough` as text, one step a line and its top `k` on the next, uncut (a table
    column would clip the hits)."""
    return "\n".join(f"{r[0]}: gold's rank {r[1]}\n    top {k} (* holds gold): {r[2]}"
                     for r in walkthrough(query, parts, k, depth).itertuples(index=False))


def fusion_table(query: Query, first: Sequence[Any], second: Sequence[Any],
                 names: tuple[str, str] = ("dense", "BM25"),
                 weights: tuple[float, float] = (0.5, 0.5), constant: float = 0.0, k: int = 5):
    """Reciprocal-rank fusion written out for the chunks in either list's top `k`: each
    chunk's rank in each whole list (1 = first; – when absent), each term
    ``w / (rank + constant)``,
    their sum, and its rank in the fusion of the whole lists (`ragkit.retrieve.fuse`, its tie
    order), gold marked. With the lists the stack fuses (each `HybridRetriever.candidates`
    deep), the sums and ranks are the stack's own."""
    import pandas as pd

    from ..retrieve.retrievers import fuse

    lists = [list(first), list(second)]
    fused = fuse(lists, weights, len(first) + len(second), constant)
    order = {h.chunk.id: i for i, h in enumerate(fused, 1)}
    shown = {h.chunk.id for hits in lists for h in hits[:k]}
    rows = []
    for h in (h for h in fused if h.chunk.id in shown):
        row: dict[str, Any] = {"chunk": f"{h.chunk.doc_id}[{h.chunk.start}:{h.chunk.end}]",
                               "holds gold": "yes" if overlaps(h.chunk, query.gold,
                                                               query.copies) else ""}
        total = 0.0
        for name, hits, w in zip(names, lists, weights):
            at = next((i for i, x in enumerate(hits) if x.chunk.id == h.chunk.id), None)
            term = w / (at + 1 + constant) if at is not None else 0.0
            total += term
            row[f"rank, {name}"] = at + 1 if at is not None else "–"
            row[f"{name}: {w:g} / " + (f"(rank + {constant:g})" if constant else "rank")] = \
                round(term, 4)
        row["sum"] = round(total, 4)
        row["fused rank"] = order[h.chunk.id]
        rows.append(row)
    return pd.DataFrame(rows)
