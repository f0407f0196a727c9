"""One retrieval experiment, end to end: chunk -> embed -> index -> retrieve -> evaluate.

Notebooks, benchmark scripts and the command line all call `run_experiment`, so every number in
the course is produced the same way. It returns an `Outcome` holding the chunks, the ranked hits
per query, the per-query metrics and their means, plus the flags a results row must carry
(e.g. how many chunks the encoder truncated).

    >>> bench = load("chroma")  # a benchmark download             # doctest: +SKIP
    >>> out = run_experiment(bench, RecursiveChunker(250, 125), Embedder(), k=5)  # doctest: +SKIP
    >>> round(out.means["recall"], 3), round(out.means["iou"], 3)     # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Sequence

from ..evaluate.benchmarks import Benchmark
from ..evaluate.budget import BUDGET_METRICS, BUDGETS, DEFAULT_BUDGET
from ..evaluate.runs import Metric
from ..retrieve.retrievers import Hit, Retriever
from ..retrieve.stack import make_retriever
from ..types import Chunk, Query, stable_hash


def flag_count(flags, name: str = "truncated") -> int:
    """The count a results flag carries (``truncated:503``, or ``truncated:12/100``: the 12),
    summed over every flag of that name in `flags`; 0 when none.

    >>> flag_count(["sample:x", "truncated:503"]), flag_count(["truncated:12/100"]), flag_count([])
    (503, 12, 0)
    """
    return sum(int(f.split(":", 1)[1].split("/")[0]) for f in flags
               if f.startswith(name + ":"))


@dataclass
class Outcome:
    benchmark: str
    strategy: str
    chunks: list[Chunk]
    hits: dict[str, list[Hit]]
    per_query: Any  # pandas DataFrame
    means: dict[str, float]
    flags: list[str] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict, repr=False)  # doc id -> text
    depth: int = 0              # hits retrieved per query
    budgets: tuple[int, ...] = ()
    encoder: str = ""           # the encoder that ranked the hits ("" for none: BM25 alone)
    # texts the retriever embeds and indexes, where they are not the units it returns (small-to-
    # big embeds children and returns parents); 0: the returned units themselves
    n_indexed: int = 0

    def retrieved(self, query_id: str) -> list[Chunk]:
        return [h.chunk for h in self.hits.get(query_id, [])]

    def at_budget(self, budget: int = DEFAULT_BUDGET) -> dict[str, float]:
        """Mean budgeted metrics at `budget` tokens: ``{"recall": …, "pass": …, …}``."""
        return {m: self.means[f"{m}@B{budget}"] for m in BUDGET_METRICS
                if f"{m}@B{budget}" in self.means}

    def values(self, metric: str, budget: int | None = None):
        """Per-query values of one metric (a Series indexed by query id), e.g.
        ``values("recall", 1024)`` or ``values("ndcg@10")``."""
        col = metric if budget is None else Metric(metric, budget=budget).column
        return self.per_query.set_index("query_id")[col]

    def row(self, metrics: Sequence[str], *, strict: bool = False, flags: bool = True,
            **key: Any) -> dict[str, Any]:
        """The run as one summary row: the fields that name it (`key`; by default the benchmark
        and the strategy), the mean of each of `metrics` (None where the run has none, or a
        KeyError when `strict`), then the flags joined by ";" (unless `flags` is False).

        >>> o = Outcome("course", "fixed", [], {}, None, {"recall": 0.5}, ["truncated:2"])
        >>> o.row(["recall", "iou"])  # doctest: +NORMALIZE_WHITESPACE
        {'benchmark': 'course', 'strategy': 'fixed', 'recall': 0.5, 'iou': None,
         'flags': 'truncated:2'}
        >>> o.row(["recall"], flags=False, run="a")
        {'run': 'a', 'recall': 0.5}
        """
        key = key or {"benchmark": self.benchmark, "strategy": self.strategy}
        means = {m: self.means[m] if strict else self.means.get(m) for m in metrics}
        return {**key, **means, **({"flags": ";".join(self.flags)} if flags else {})}

    def run_id(self, notebook: str, experiment: str, embedder: str, params: dict) -> str:
        return stable_hash(notebook, experiment, self.benchmark, self.strategy, embedder, params)

    def record(self, recorder, *, experiment: str, embedder: str, k: int,
               keep_hits: int = 20, **extra: Any) -> str:
        """Write the means as results rows (one per metric; fixed-k metrics with ``k``, budgeted
        ones with ``budget``), and the per-query run (hits and scores; `keep_hits` as in
        `hits_frame`). Returns the run id."""
        params = {**self.params, **extra}
        run = self.run_id(recorder.notebook, experiment, embedder, params)
        common = dict(experiment=experiment, benchmark=self.benchmark, strategy=self.strategy,
                      embedder=embedder, n_queries=len(self.per_query), flags=self.flags,
                      params=params, depth=self.depth, run=run)
        for metric, value in self.means.items():
            m = Metric.parse(metric)
            if m.budget is not None:
                recorder.add(metric=m.long[0], value=value, budget=m.budget, **common)
            else:
                recorder.add(metric=metric, value=value, k=k, **common)
        recorder.add_run(run, self.hits_frame(keep_hits), self.scores_frame(k))
        return run

    def hits_frame(self, keep: int = 20):
        """The ranked hits as a table: query_id, rank, doc_id, start, end, score, tokens
        (cl100k body tokens), prefix_tokens. Per query, the hits that reached the largest
        budget's context, and at least the top `keep` (nDCG@10, Pass@20)."""
        import pandas as pd

        from ..evaluate.budget import count_tokens, pack_context

        rows = []
        for qid, hs in self.hits.items():
            n = len(hs)
            if self.budgets:
                n = max(keep, pack_context([h.chunk for h in hs], max(self.budgets)).examined)
            rows += [(qid, r, h.chunk.doc_id, h.chunk.start, h.chunk.end, h.score,
                      count_tokens(h.chunk.text), count_tokens(h.chunk.prefix))
                     for r, h in enumerate(hs[:n])]
        df = pd.DataFrame(rows, columns=["query_id", "rank", "doc_id", "start", "end", "score",
                                         "tokens", "prefix_tokens"])
        return df.astype({"rank": "int32", "start": "int64", "end": "int64",
                          "score": "float32", "tokens": "int32", "prefix_tokens": "int32"})

    def scores_frame(self, k: int):
        """Per-query metric values in long format: query_id, type, metric, budget, value
        (budget −1 for fixed-k metrics)."""
        import pandas as pd

        if self.per_query is None or not len(self.per_query):
            return pd.DataFrame(columns=["query_id", "type", "metric", "budget", "value"])
        long = self.per_query.melt(id_vars=["query_id", "type"], var_name="metric")
        keys = {c: Metric.parse(c).long for c in long.metric.unique()}
        long["budget"] = long.metric.map({c: b for c, (_, b) in keys.items()}).astype("int32")
        long["metric"] = long.metric.map({c: m for c, (m, _) in keys.items()})
        return long[["query_id", "type", "metric", "budget", "value"]].astype(
            {"value": "float64"})


def _flags_of(r: Retriever) -> list[str]:
    """A retriever's flags (the `Retriever` property), as a list of its own."""
    return list(r.flags)


MIN_DEPTH = 10  # nDCG@10 needs ten hits
MAX_DEPTH = 1000


def search_deep(r, queries: Sequence[str], filters, k: int, budgets: Sequence[int],
                depth: int | None = None, start: int | None = None) -> tuple[list[list[Hit]], int]:
    """Search deep enough for every query: at least `k`, `depth` and ten hits, and enough to
    fill the largest budget. The depth doubles until each query's context is full or its
    retriever has nothing more to give. Returns the hits and the depth used."""
    from ..evaluate.budget import pack_context

    d = max(k, MIN_DEPTH, depth or 0, start or 0)
    while True:
        hits = r.search(list(queries), d, filters)
        if not budgets or d >= MAX_DEPTH:
            return hits, d
        short = [hs for hs in hits if len(hs) >= d
                 and pack_context([h.chunk for h in hs], max(budgets)).exhausted]
        if not short:
            return hits, d
        d = min(2 * d, MAX_DEPTH)


def run_experiment(bench: Benchmark, chunker=None, embedder=None, k: int = 5, *,
                   chunks: Sequence[Chunk] | None = None, retriever: Any = "dense",
                   placement: Literal["before", "after"] = "before",
                   where: Callable[[Query], Any] | None = None, depth: int | None = None,
                   omega: bool = True, label: str | None = None,
                   budgets: Sequence[int] = BUDGETS) -> Outcome:
    """Chunk every document (or use `chunks`), retrieve for every query, score.

    `retriever` is "dense", "bm25", "tfidf", "hybrid", or any `Retriever` (``search(queries,
    k, where)`` and ``flags``; e.g. a parent-child retriever); then `chunks` are the units
    it can return, used for precision_Ω and the rank metrics' relevance judgements.
    `where(query)` may return a metadata filter per query (notebook 03). Every query is
    retrieved deep enough to fill the largest of `budgets` (cl100k tokens; see
    `ragkit.evaluate.pack_context`) and to at least ten hits (`search_deep`); fixed-k metrics
    use the top k, budgeted ones the packed context. `depth` asks for at least that many hits
    (e.g. for recall@20).
    """
    from ..evaluate.budget import count_tokens
    from ..evaluate.metrics import evaluate_retrieval

    if chunks is None:
        chunks = chunker.chunk_all(bench.documents, progress=True)
    chunks = list(chunks)
    if not chunks:
        raise ValueError(f"{label or chunker}: produced no chunks for {bench.name}")
    r = make_retriever(chunks, embedder, retriever, placement) if isinstance(retriever, str) \
        else retriever
    kind = retriever if isinstance(retriever, str) else type(retriever).__name__
    queries = list(bench.queries)
    filters = [where(q) for q in queries] if where else None
    budgets = tuple(sorted(budgets))
    # first guess: enough average-sized units for the largest budget, with room for overlap
    sample = chunks[:: max(1, len(chunks) // 200)]
    mean_tokens = max(1.0, sum(count_tokens(c.text) + count_tokens(c.prefix) for c in sample)
                      / len(sample))
    guess = int(1.5 * max(budgets) / mean_tokens) + 1 if budgets else 0
    hits, used_depth = search_deep(r, [q.text for q in queries], filters, k, budgets, depth,
                                   min(guess, 200))
    by_id = {q.id: h for q, h in zip(queries, hits)}
    ranked = {qid: [(h.chunk, h.score) for h in hs] for qid, hs in by_id.items()}
    texts = {d.id: d.text for d in bench.documents}
    pages = {d.id: d.metadata["pages"] for d in bench.documents if d.metadata.get("pages")}
    per_query, means = evaluate_retrieval(queries, ranked, chunks, k=k, omega=omega,
                                          texts=texts, budgets=budgets, pages=pages or None)
    returned = [h.chunk for hs in hits for h in hs[:k]]
    means["n_chunks"] = float(len(chunks))
    means["mean_chunk_chars"] = float(sum(c.end - c.start for c in chunks) / len(chunks))
    if returned:
        means["mean_returned_chars"] = float(sum(c.end - c.start for c in returned)
                                             / len(returned))
    flags = _flags_of(r)
    if chunker is not None:
        flags += list(getattr(chunker, "flags", []))  # e.g. a splitter's unlocated chunks
    strategy = label or (chunker.label if chunker is not None else chunks[0].strategy)
    params = chunker.params() if chunker is not None else {}
    built = r.params() if callable(getattr(r, "params", None)) else {}
    return Outcome(bench.name, strategy, chunks, by_id, per_query, means, flags,
                   {**params, "retriever": kind, "placement": placement, **built}, texts,
                   used_depth, budgets, _encoder_name(embedder, r),
                   int(getattr(r, "n_indexed", 0)))


def _encoder_name(embedder: Any, retriever: Any) -> str:
    """The encoder behind a run: the one given, else the retriever's own (if any)."""
    for e in (embedder, getattr(retriever, "embedder", None)):
        name = getattr(e, "name", None)
        if isinstance(name, str) and name:
            return name
    return ""


def recall_at(outcome: Outcome, queries: Sequence[Query], ks: Sequence[int],
              per_query: bool = False) -> dict[str, float]:
    """Mean pass@k over gold units (Anthropic's Pass@k) for several k from one ranking; a
    unit counts when the top k hold all of its non-whitespace characters. With
    ``per_query=True`` the per-query values are also added to ``outcome.per_query`` (columns
    ``pass@5`` …) so they are saved with the run."""
    from ..evaluate.spans import covered_fraction

    out = {}
    answerable = [q for q in queries if q.gold]
    for k in ks:
        vals = {}
        for q in answerable:
            top = outcome.retrieved(q.id)[:k]
            vals[q.id] = sum(covered_fraction(g, top, outcome.texts.get(g.doc_id)) >= 1.0
                             for g in q.gold) / len(q.gold)
        out[f"pass@{k}"] = sum(vals.values()) / len(vals) if vals else 0.0
        if per_query and outcome.per_query is not None and len(outcome.per_query):
            outcome.per_query[f"pass@{k}"] = outcome.per_query.query_id.map(vals).astype(float)
            outcome.means[f"pass@{k}"] = out[f"pass@{k}"]
    return out


def compare(benches: Sequence[Benchmark], chunkers: Sequence, embedder, recorder=None, *,
            k: int = 5, experiment: str = "compare", retriever: str = "dense",
            metrics: Sequence[str] = (f"recall@B{DEFAULT_BUDGET}", f"pass@B{DEFAULT_BUDGET}",
                                      f"iou@B{DEFAULT_BUDGET}", "recall", "precision", "iou",
                                      "precision_omega", "pass@k", "mrr@k", "ndcg@10",
                                      "n_chunks"),
            return_outcomes: bool = False) -> Any:
    """Every chunker on every benchmark: a tidy DataFrame (and results rows if a recorder).

    Rows: benchmark, strategy, metric columns (budgeted ones at the default 1,024 tokens
    first, then fixed-k ones), flags. Chunk vectors are cached, so a second
    call with the same chunkers costs only the queries. With ``return_outcomes=True`` also
    returns the `Outcome` of each run, keyed by (benchmark, strategy).
    """
    import pandas as pd
    from tqdm.auto import tqdm

    rows, outcomes = [], {}
    jobs = [(b, c) for b in benches for c in chunkers]
    for bench, chunker in tqdm(jobs, desc=experiment, leave=False):
        out = run_experiment(bench, chunker, embedder, k=k, retriever=retriever)
        if recorder is not None:
            out.record(recorder, experiment=experiment, embedder=getattr(embedder, "name", ""),
                       k=k)
        rows.append(out.row(metrics))
        outcomes[(bench.name, out.strategy)] = out
    table = pd.DataFrame(rows)
    return (table, outcomes) if return_outcomes else table
