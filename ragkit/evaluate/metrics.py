"""Score retrieved chunks against gold character spans, so any chunker can be compared.

Span metrics follow Chroma's evaluation (character-based; a chunk is scored on its body span,
never its prefix), with one rule added (`ragkit.evaluate.copies`): a retrieved place that holds
a gold unit's text word for word (at least 20 non-whitespace characters, whitespace runs free)
supplies that unit's gold characters, each counted once, in every metric below except
precision_Ω and doc_hit@k. Chroma's own code credits only the anchored copy:

- recall       = |union of (retrieved ∩ gold)| / Σ|gold spans|   (the gold spans of one question
                 merged first where they share characters: `types.merge_gold`)
- precision    = |union of (retrieved ∩ gold)| / Σ|retrieved chunks|   (a plain sum: overlapping
                 chunks are counted twice, as upstream does)
- IoU          = |union of (retrieved ∩ gold)| / (Σ|retrieved chunks| + gold characters missed)
- precision_Ω  = the precision reached if *every* chunk touching the gold were retrieved:
                 |union of (chunk ∩ gold)| / |union of those chunks ∪ missed gold|

Rank metrics treat a chunk as relevant when its body overlaps a gold span:

- hit@k        = 1 when the top k together contain all the gold text;
- pass@k       = fraction of gold units (spans) fully contained in the top k — Anthropic's
                 "Pass@k" when the gold units are their chunks (= ragas' IDBasedContextRecall);
- precision@k  = fraction of the top k chunks that overlap the gold (= ragas'
                 IDBasedContextPrecision when chunks are the gold units);
- doc_hit@k    = 1 when any of the top k chunks comes from a document that holds gold evidence:
                 seed 002's "retrieval precision@K" ("did the right document appear in the
                 top-K?"); `doc_hits` computes it again from a run's saved ranked hits;
- MRR@k as ranx defines it (`reciprocal_rank`); nDCG@10 from the top 10 hits (at least 10
  are always retrieved), with one relevance granularity for every retriever: the gold
  characters. A hit's gain is the share of the query's gold it adds (text already returned by
  a better-ranked hit earns nothing again); the ideal ranking returns each document's gold in
  one unit, largest share first, so a rank-1 hit holding all the gold scores 1 whatever the
  size of the units. With one gold span per document this is ranx's nDCG with relevance =
  gold length (tested).

Budgeted metrics (the course's primary view, `ragkit.evaluate.budget`): recall@B, precision@B,
IoU@B, pass@B and hit@B on the context of at most B cl100k tokens that `pack_context` fills
with hits in rank order. Strategies compare at equal B, not at equal k. The span arithmetic is
`ragkit.evaluate.spans`.

Refusal: with ``abstain when top score < threshold``, a threshold calibrated on the tune half of
the grouped split is applied to the held-out half; we report over-refusal (answerable questions
abstained on), unsupported answers (unanswerable questions answered) and balanced accuracy with
its interval (`refusal_scores`).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Callable, Collection, Iterable, Mapping, Sequence

import numpy as np

from ..types import Chunk, Query, Span
from .budget import budget_scores, pack_contexts, page_hit
from .copies import copy_spans, onto_gold
from .spans import (Range, _span_scores, covered_fraction, intersect, overlaps, precision_omega,
                    subtract, total, union)


def query_scores(query: Query, ranked: Sequence[Chunk], k: int,
                 chunks_by_doc: Mapping[str, Sequence[Chunk]] | None = None,
                 texts: Mapping[str, str] | None = None) -> dict[str, float]:
    """Every per-query metric for one answerable query's ranked chunks (top k are used).
    `texts` (doc id -> text) lets pass@k ignore whitespace (see `covered_fraction`)."""
    top = list(ranked[:k])
    gold = list(query.gold)
    out = _span_scores([(c.doc_id, c.start, c.end) for c in top],
                       [(g.doc_id, g.start, g.end) for g in gold], query.copies)
    units = [covered_fraction(g, top, texts.get(g.doc_id) if texts else None, query.copies)
             for g in gold]
    out["pass@k"] = float(np.mean([u >= 1.0 for u in units])) if units else 0.0
    out["hit@k"] = float(out["recall"] >= 1.0 - 1e-12)
    out["precision@k"] = float(np.mean([overlaps(c, gold, query.copies) for c in top])) \
        if top else 0.0
    gold_docs = {g.doc_id for g in gold}
    out["doc_hit@k"] = float(any(c.doc_id in gold_docs for c in top))
    if chunks_by_doc is not None:
        out["precision_omega"] = precision_omega(chunks_by_doc, gold)
    return out


def doc_hits(hits, gold_docs: Mapping[str, Iterable[str]], k: int):
    """Per-query ``doc_hit@k`` from a run's saved ranked hits (a DataFrame with query_id, rank
    and doc_id, as in ``results/runs/<notebook>.hits.parquet``): 1.0 when any of a query's k
    best-ranked hits comes from one of its gold documents (`gold_docs`: query id -> doc ids),
    else 0.0. One value per query of `gold_docs` that has gold documents (a query without hits
    scores 0); the same value `query_scores` records for the same ranking.

    >>> import pandas as pd
    >>> hits = pd.DataFrame({"query_id": ["a", "a", "b"], "rank": [0, 1, 0],
    ...                      "doc_id": ["x", "y", "x"]})
    >>> doc_hits(hits, {"a": ["y"], "b": ["y"], "c": ["y"]}, k=2).to_dict()
    {'a': 1.0, 'b': 0.0, 'c': 0.0}
    >>> doc_hits(hits, {"a": ["y"]}, k=1).to_dict()
    {'a': 0.0}
    """
    import pandas as pd

    want = {str(q): {str(d) for d in docs} for q, docs in gold_docs.items() if docs}
    top = hits[hits["query_id"].astype(str).isin(want)]
    top = top.sort_values(["query_id", "rank"], kind="stable").groupby("query_id").head(k)
    found = {q: float(any(d in want[q] for d in g)) for q, g in
             top.groupby("query_id", sort=False)["doc_id"]}
    ids = sorted(want)
    return pd.Series([found.get(q, 0.0) for q in ids], index=pd.Index(ids, name="query_id"),
                     name="value", dtype=float)


def ndcg(query: Query, ranked: Sequence[Chunk], n: int = 10) -> float:
    """nDCG@n with the gold characters as the one relevance granularity (see the module doc).

    >>> from ragkit.types import Document
    >>> d = Document("d", "x" * 30)
    >>> q = Query("q", "?", gold=(Span("d", 10, 20),))
    >>> ndcg(q, [Chunk.make(d, 0, 30, "t")]), ndcg(q, [Chunk.make(d, 0, 5, "t"), Chunk.make(d, 10, 20, "t")])
    (1.0, 0.6309297535714575)
    """
    gold = [g for g in query.gold if len(g)]
    size = sum(len(g) for g in gold)
    if not size:
        return 0.0
    need: dict[str, list[Range]] = defaultdict(list)
    for g in gold:
        need[g.doc_id].append((g.start, g.end))
    need = {d: union(r) for d, r in need.items()}
    shares = sorted((total(r) / size for r in need.values()), reverse=True)
    ideal = sum(s / np.log2(i + 2) for i, s in enumerate(shares))
    dcg = 0.0
    for rank, c in enumerate(ranked[:n]):
        got = 0
        own = [(c.doc_id, c.start, c.end)]
        for d, s, e in own + onto_gold(own, query.copies):  # a copy supplies its gold's text
            left = need.get(d)
            if not left:
                continue
            got += sum(x[1] - x[0] for r in left for x in [intersect(r, (s, e))] if x)
            need[d] = subtract(left, (s, e))
        if got:
            dcg += got / size / np.log2(rank + 2)
    return float(dcg / ideal)


class _UnitsByDoc:
    """The units of a run grouped by document, with their spans as arrays, to find the ones
    that overlap a query's gold (`overlaps`: a non-empty intersection) in one comparison per
    document instead of one Python call per unit."""

    def __init__(self, chunks: Sequence[Chunk]):
        by_doc: dict[str, list[Chunk]] = defaultdict(list)
        for c in chunks:
            by_doc[c.doc_id].append(c)
        self._ids = {d: [c.id for c in cs] for d, cs in by_doc.items()}
        self._spans = {d: np.array([(c.start, c.end) for c in cs], dtype=np.int64).reshape(-1, 2)
                       for d, cs in by_doc.items()}

    def overlapping(self, gold: Sequence[Span]) -> set[str]:
        """Ids of the units with a non-empty intersection with a gold span of their document."""
        out: set[str] = set()
        for d in {g.doc_id for g in gold}:
            spans = self._spans.get(d)
            if spans is None:
                continue
            g = np.array([(x.start, x.end) for x in gold if x.doc_id == d], dtype=np.int64)
            hit = (np.maximum(spans[:, :1], g[:, 0]) < np.minimum(spans[:, 1:], g[:, 1])).any(1)
            out.update(self._ids[d][i] for i in np.flatnonzero(hit))
        return out


def reciprocal_rank(ids: Sequence[str], relevant: Collection[str], k: int) -> float:
    """One query's term of MRR@k, as ranx computes it (`rank_metrics` used ranx until it cost
    each kernel seconds of numba import and compilation for this one loop): the run holds
    each id once, ranked where it last occurs (ranx builds the run from a dict), and the
    reciprocal of the first relevant id's position among the top k counts, else 0.

    >>> reciprocal_rank(["a", "b", "c"], {"c"}, 3), reciprocal_rank(["a", "b", "a"], {"a"}, 3)
    (0.3333333333333333, 0.5)
    """
    last = {cid: r for r, cid in enumerate(ids)}
    for i, cid in enumerate(sorted(last, key=last.__getitem__)[:k]):
        if cid in relevant:
            return 1 / (i + 1)
    return 0.0


def rank_metrics(queries: Sequence[Query], ranked: Mapping[str, Sequence[tuple[Chunk, float]]],
                 all_chunks: Sequence[Chunk], k: int) -> dict[str, dict[str, float]]:
    """MRR@k (`reciprocal_rank`, ranx's definition; relevant = overlaps a gold span) and
    nDCG@10 (`ndcg`) per query with any relevant unit."""
    units = _UnitsByDoc(all_chunks)
    out = {}
    for q in queries:
        rel = units.overlapping(list(q.gold) + copy_spans(q.copies))
        hits = ranked.get(q.id, [])
        # units built at query time (sentence windows, merged parents) are judged too
        rel.update(c.id for c, _ in hits if overlaps(c, q.gold, q.copies))
        if not rel:
            continue
        out[q.id] = {"mrr@k": reciprocal_rank([c.id for c, _ in hits], rel, k),
                     "ndcg@10": ndcg(q, [c for c, _ in hits], 10)}
    return out


def evaluate_retrieval(queries: Sequence[Query], ranked: Mapping[str, Sequence[tuple[Chunk, float]]],
                       all_chunks: Sequence[Chunk], k: int = 5, omega: bool = True,
                       texts: Mapping[str, str] | None = None,
                       budgets: Sequence[int] = (), count: Callable[[str], int] | None = None,
                       pages: Mapping[str, Sequence[Sequence[int]]] | None = None):
    """Per-query metrics (a DataFrame) and their means (a dict) for the answerable queries.

    `ranked` maps a query id to its ranked (chunk, score) pairs, at least k of them (and enough
    to fill the largest of `budgets`). Fixed-k metrics come from the top k; for each budget B
    the columns ``recall@B<B>``, ``precision@B<B>``, ``iou@B<B>``, ``pass@B<B>``, ``hit@B<B>``
    and ``tokens@B<B>`` come from `pack_context` (tokens counted by `count`, the reference
    tokenizer by default). With `pages` (document id -> page spans, for PDFs), also
    ``page_hit@B<B>`` (`ragkit.evaluate.budget.page_hit`). Queries without gold (refusals) are
    left out here; see `refusal_scores`.
    """
    import pandas as pd

    by_doc: dict[str, list[Chunk]] = defaultdict(list)
    for c in all_chunks:
        by_doc[c.doc_id].append(c)
    answerable = [q for q in queries if q.gold]
    ranks = rank_metrics(answerable, ranked, all_chunks, k)
    rows = []
    for q in answerable:
        chunks = [c for c, _ in ranked.get(q.id, [])]
        row = {"query_id": q.id, "type": q.type,
               **query_scores(q, chunks, k, by_doc if omega else None, texts),
               **ranks.get(q.id, {"mrr@k": 0.0, "ndcg@10": 0.0})}
        packs = pack_contexts(chunks, budgets) if count is None else \
            pack_contexts(chunks, budgets, count)
        for b in budgets:
            row.update({f"{m}@B{b}": v for m, v in budget_scores(q, packs[b], texts).items()})
            if pages:
                row[f"page_hit@B{b}"] = page_hit(q, packs[b], pages)
        rows.append(row)
    df = pd.DataFrame(rows)
    means = {m: float(df[m].mean()) for m in df.columns if m not in ("query_id", "type")} \
        if len(df) else {}
    return df, means


def calibrate_threshold(scores: Sequence[float], answerable: Sequence[bool],
                        balanced: bool = False) -> float:
    """The abstention threshold that maximises accuracy (answer if score >= threshold). With
    ``balanced=True`` it maximises balanced accuracy instead (the mean of the answer rate on
    answerable questions and the refusal rate on the others): when most questions are
    answerable, plain accuracy is best served by never refusing."""
    s = np.asarray(scores, float)
    a = np.asarray(answerable, bool)
    candidates = np.unique(np.concatenate([s, [s.min() - 1 if len(s) else 0.0]]))
    if balanced and a.any() and (~a).any():
        acc = [(np.mean(s[a] >= t) + np.mean(s[~a] < t)) / 2 for t in candidates]
    else:
        acc = [np.mean((s >= t) == a) for t in candidates]
    return float(candidates[int(np.argmax(acc))])


def refusal_scores(queries: Sequence[Query], top_scores: Mapping[str, float],
                   balanced: bool = False,
                   split: Mapping[str, str] | Callable[[str], str] | None = None
                   ) -> dict[str, float]:
    """Choose an abstention threshold on the *tune* half of the questions
    (`calibrate_threshold`) and report it on the *held-out* half: answerable questions refused
    (``over_refusal``), unanswerable ones answered (``unsupported_answer``), plain accuracy,
    balanced accuracy with its 95 % stratified bootstrap interval
    (``balanced_accuracy_low`` / ``_high``; `ragkit.evaluate.stats.balanced_accuracy_interval`)
    and how many questions of each kind each half holds.

    The halves are the grouped split (`ragkit.evaluate.splits.split_of`, committed in
    ``results/splits.json``) unless `split` gives another one (question id -> ``"tune"`` or
    ``"held-out"``, as a mapping or a function). Only tune questions choose the threshold.
    Empty when either half lacks answerable or unanswerable questions."""
    from .splits import split_of
    from .stats import balanced_accuracy_interval

    side = split_of if split is None else (split.__getitem__ if isinstance(split, Mapping)
                                           else split)
    halves = [side(q.id) for q in queries]
    s = np.array([top_scores[q.id] for q in queries], float)
    a = np.array([bool(q.gold) for q in queries])
    tune = np.array([h == "tune" for h in halves])
    test = np.array([h == "held-out" for h in halves])
    if any(x.all() or not x.any() for x in (a[tune], a[test])):
        return {}
    t = calibrate_threshold(s[tune], a[tune], balanced=balanced)
    answered = s[test] >= t
    ans, unans = a[test], ~a[test]
    ba, low, high = balanced_accuracy_interval(answered, ans)
    return {
        "refusal_threshold": t,
        "over_refusal": float(np.mean(~answered[ans])),
        "unsupported_answer": float(np.mean(answered[unans])),
        "refusal_accuracy": float(np.mean(answered == ans)),
        "balanced_accuracy": ba,
        "balanced_accuracy_low": low,
        "balanced_accuracy_high": high,
        "n_answerable": int(ans.sum()),
        "n_unanswerable": int(unans.sum()),
        "n_tune_answerable": int(a[tune].sum()),
        "n_tune_unanswerable": int((~a[tune]).sum()),
    }


# --- Budgeted retrieval: compare strategies by what reaches the model ------------------------
