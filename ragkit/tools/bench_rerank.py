"""``ragkit bench rerank-why``: why the packaged cross-encoder lowers span recall at a fixed
budget, and whether a variant of it, chosen on the tune half, beats no reranker on the
held-out half.

    ragkit bench rerank-why [--benchmark course] [--limit N] [--no-variants]

On one benchmark (the course corpus by default), the default `Router`'s chunks under ragkit's
stack (`ragkit.pipeline.stack_retriever`, no reranker) are compared, question by question,
with the same stack whose top 20 hits the packaged cross-encoder (ms-marco-MiniLM-L-12-v2,
int8 ONNX, 256 tokens, source code never rescored: ``ragkit bench design``'s reranker)
rescores. The first stage is searched once, deep (its fused ranking is the same prefix at
every depth), and every reranker reorders that ranking, so the runs differ in the reranker
alone.

1. **The effect**, paired per question (`ragkit.evaluate.versus`, 95 % bootstrap interval), on the
   tune and the held-out halves (`ragkit.splits`), recall@B at 512 / 1,024 / 2,048 cl100k
   tokens; then the same with the scorer's padding masked (`OnnxCrossEncoderScorer`'s
   ``mask_padding=True``: the packaged tokenizer pads every pair to 512 tokens, and today's
   scorer lets the model attend to that padding).
2. **Why**, for each gold chunk the cross-encoder pushed out of a budget's context (fewer of
   its gold characters in the context than without the cross-encoder): its rank before and
   after, its kind (table, list, heading-only, code, prose; the router's block kinds), its
   breadcrumb prefix, the query + chunk length in the model's tokens against its window and
   how much of the gold lies beyond the window, the chunks that took its place (same
   document, another version of it, what they cost in the context), whether the masked model
   would also put that chunk above the gold, and whether that order survives 64 masked
   padding tokens (the int8 model's dynamic scales are computed over the whole input,
   padding included: how far a score moves is how much of it is quantization noise). Over
   every question whose gold was rescored: the gold's rank among the candidates by the first
   stage and by the cross-encoder, per kind and per fit in the window. For today's scorer and
   the masked one.
3. **Variants**, chosen on the tune half only: padding attended or masked; the model's full
   window (``max_length=512``, its position table's size; a pair that fits in 256 tokens is
   the same input at 512, so its cached score is reused and only the pairs 256 cut are run);
   fusing the cross-encoder's rank with the first stage's (`ragkit.rerank.Reranker`'s
   ``fuse``: the scorer's weight in a weighted reciprocal-rank fusion, constant 0 or 60)
   instead of replacing it; fewer candidates (5, 10, 20). The rule, fixed before reading a
   number: the largest mean of recall@B512, @B1024 and @B2048 on the tune half, "no
   reranker" included (ties: the earlier in the grid, which starts with no reranker). The
   chosen variant's paired difference from no reranker is then quoted on the held-out half.
4. **Post hoc**: the masked model with table chunks kept in place as source code is,
   suggested by the diagnosis; the diagnosis read both halves, so its held-out rows are
   exploratory, not a clean test.

Rows go to ``results/bench_rerank_why.jsonl`` (every variant's mean recall@B on the tune half,
``params.chosen``, ``params.tuned_on``; the paired differences per half) and the per-gold
diagnosis to ``results/bench_rerank_why.diagnosis.json``. Pair scores come from (and go to)
the cross-encoder's cache; on 2 CPUs the course corpus takes about 6 minutes once its
256-token pairs (padding attended) are cached: masked pairs run about 10 times faster.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import replace
from typing import Any, Sequence

import numpy as np

from ..report.tables import text_table
from ..retrieve.base import Retriever
from .common import run_script

BUDGETS = (512, 1024, 2048)
SIDES = ("tune", "held-out")
CANDIDATES = (20, 10, 5)
MAX_LENGTHS = (256, 512)
MASKING = (False, True)  # today's scorer attends to its tokenizer's padding; masked does not
FUSION = tuple((w, c) for c in (0, 60) for w in (0.2, 0.4, 0.5, 0.6, 0.8))
FROZEN_DEPTH = 1000  # deeper than the stack's fused union (150 dense + 150 BM25)


# --- the first stage, searched once --------------------------------------------------------

class FrozenFirstStage(Retriever):
    """A first stage searched once at `depth`: ``search(queries, k)`` returns the top k of that
    ranking. For the stack (`HybridRetriever`: each side takes its own fixed number of
    candidates, then the fusion is cut at k) the top k of a deep search *is* the search at k."""

    def __init__(self, inner, queries: Sequence[str], depth: int = FROZEN_DEPTH):
        self.kind = getattr(inner, "kind", "retriever")
        self._flags = list(getattr(inner, "flags", []))
        inner_params = getattr(inner, "params", None)
        self._params = inner_params() if callable(inner_params) else {}
        inner_describe = getattr(inner, "describe", None)
        self._said = inner_describe() if callable(inner_describe) else type(inner).__name__
        self.depth = depth
        unique = list(dict.fromkeys(queries))
        self._hits = dict(zip(unique, inner.search(unique, depth)))

    @property
    def flags(self) -> list[str]:
        return list(self._flags)

    def params(self) -> dict[str, object]:
        return dict(self._params)

    def describe(self) -> str:
        return f"{self._said}, searched once {self.depth} deep"

    def search(self, queries: Sequence[str], k: int, where=None):
        if where is not None:
            raise ValueError("a frozen first stage was searched without filters")
        return [self._hits[q][:k] for q in queries]


def widened_scorer(folder, narrow, max_length: int, **kw):
    """An `OnnxCrossEncoderScorer` at `max_length` that reuses `narrow`'s cached score of every
    pair `narrow` did not cut (the same token ids, scored alone: the same input); only pairs
    `narrow` cut, or never scored, are run. ``.reused`` counts the reused pairs."""
    from ..retrieve.rerank import OnnxCrossEncoderScorer

    class Widened(OnnxCrossEncoderScorer):
        reused = 0

        def _run(self, pairs):
            keys = [narrow._key(q, t) for q, t in pairs]
            found = narrow._cache.get(keys)[0] if narrow._cache is not None else {}
            out = np.zeros((len(pairs), 2), np.float32)
            todo = []
            for i, key in enumerate(keys):
                v = found.get(key)
                if v is not None and not bool(v[1]):
                    out[i] = v
                    self.reused += 1
                else:
                    todo.append(i)
            if todo:
                out[todo] = super()._run([pairs[i] for i in todo])
            return out

    return Widened(folder, max_length=max_length, name=narrow.name, **kw)


# --- what a chunk is ------------------------------------------------------------------------

def chunk_kind(chunk) -> str:
    """code, table, list, heading-only or prose: the router's block kinds
    (``metadata["kinds"]``) where it has them, else the text's lines.

    >>> from ragkit.types import Chunk, Document
    >>> d = Document("d", "## Fees\\n\\n| a | b |\\n|---|---|\\n| 1 | 2 |")
    >>> chunk_kind(Chunk.make(d, 0, len(d.text), "t")), chunk_kind(Chunk.make(d, 0, 7, "t"))
    ('table', 'heading-only')
    """
    import re

    from ..retrieve.rerank import is_code

    kinds = set(chunk.metadata.get("kinds") or ())
    lines = [ln.strip() for ln in chunk.text.splitlines() if ln.strip()]
    body = [ln for ln in lines if not ln.startswith("#")]
    if is_code(chunk) or "code" in kinds:
        return "code"
    rows = sum(ln.startswith("|") for ln in body)
    if "table" in kinds or rows >= 2:
        return "table"
    items = sum(bool(re.match(r"([-*+]|\d+[.)])\s", ln)) for ln in body)
    if "list" in kinds or items >= 2:
        return "list"
    if sum(len(ln) for ln in body) < 40:
        return "heading-only"
    return "prose"


def window(scorer, query: str, chunk, placement: str = "before") -> dict[str, Any]:
    """Where the cross-encoder's window ends in a chunk: the pair's length in the model's
    tokens (uncut), whether `scorer.max_length` cuts it, and the body character (from the
    chunk's start) after which the model reads nothing."""
    text = chunk.embedding_text(placement)
    whole = _uncut(scorer)
    n = len(whole.encode(query, text).ids)
    enc = scorer.tokenizer.encode(query, text)
    ends = [off[1] for off, sid in zip(enc.offsets, enc.sequence_ids) if sid == 1]
    read = max(ends) if ends else 0
    cut = n > scorer.max_length
    lead = len(chunk.prefix) + 2 if chunk.prefix and placement == "before" else 0
    body_end = len(chunk.text) if not cut else max(0, min(len(chunk.text), read - lead))
    return {"pair_tokens": n, "cut": cut, "body_read_chars": body_end,
            "prefix_tokens": len(whole.encode(chunk.prefix).ids) - 2 if chunk.prefix else 0}


def _tokenizer(scorer, cut: bool):
    """A copy of the scorer's tokenizer without its padding, with (`cut`) or without its
    truncation (made once per scorer)."""
    attr = "_unpadded_tokenizer" if cut else "_uncut_tokenizer"
    tok = getattr(scorer, attr, None)
    if tok is None:
        from tokenizers import Tokenizer

        tok = Tokenizer.from_str(scorer.tokenizer.to_str())
        tok.no_padding()
        if not cut:
            tok.no_truncation()
        setattr(scorer, attr, tok)
    return tok


def _uncut(scorer):
    return _tokenizer(scorer, cut=False)


def padding_pair(scorer, query: str, text: str, extra: int = 64) -> tuple[float, float]:
    """The pair's score alone (its own tokens, all attended) and with `extra` masked padding
    tokens after it: the same score for a float model; the int8 model's dynamic scales,
    computed over the whole input tensor, see the padding."""
    enc = _tokenizer(scorer, cut=True).encode(query, text)
    n = len(enc.ids)
    out = []
    for width in (n, n + extra):
        feed = {name: np.zeros((1, width), np.int64)
                for name in ("input_ids", "attention_mask", "token_type_ids")}
        feed["input_ids"][0, :n] = enc.ids
        feed["attention_mask"][0, :n] = 1
        feed["token_type_ids"][0, :n] = enc.type_ids
        got = scorer.session.run(None, {k: v for k, v in feed.items() if k in scorer.inputs})
        out.append(float(np.asarray(got[0]).reshape(-1)[0]))
    return out[0], out[1]


def overlap(a0: int, a1: int, b0: int, b1: int) -> int:
    return max(0, min(a1, b1) - max(a0, b0))


def gold_in_context(chunk, gold, spans) -> int:
    """How many of the gold characters inside `chunk` the packed context's spans hold."""
    got = 0
    for g in gold:
        if g.doc_id != chunk.doc_id:
            continue
        a, b = max(g.start, chunk.start), min(g.end, chunk.end)
        if b > a:
            got += sum(overlap(a, b, s, e) for d, s, e in spans if d == chunk.doc_id)
    return got


# --- the runs -------------------------------------------------------------------------------

def variant_label(max_length: int, candidates: int, fuse: tuple[float, int] | None,
                  masked: bool = False) -> str:
    """A variant's name in the tables and rows.

    >>> variant_label(256, 20, None), variant_label(512, 10, (0.4, 60), masked=True)
    ('ce256@20 replace', 'ce512 masked@10 fuse 0.4/rrf 60')
    """
    how = "replace" if fuse is None else f"fuse {fuse[0]}/rrf {fuse[1]}"
    return f"ce{max_length}{' masked' if masked else ''}@{candidates} {how}"


def grid(max_lengths: Sequence[int] = MAX_LENGTHS, candidates: Sequence[int] = CANDIDATES,
         fusion: Sequence[tuple[float, int]] = FUSION,
         masking: Sequence[bool] = MASKING) -> list[tuple]:
    """Every variant tried on the tune half as (label, max_length, mask_padding, candidates,
    fuse): no reranker first, then today's reranker (256 tokens, padding attended, 20
    candidates, replacing the first stage's order)."""
    out: list[tuple] = [("none", None, None, None, None)]
    for masked in masking:
        for ml in max_lengths:
            for n in candidates:
                for f in (None, *fusion):
                    out.append((variant_label(ml, n, f, masked), ml, masked, n, f))
    return out


def side_means(out, ids: Sequence[str]) -> dict[int, float]:
    pq = out.per_query.set_index("query_id").loc[list(ids)]
    return {b: float(pq[f"recall@B{b}"].mean()) for b in BUDGETS}


def tune_mean(out, ids: Sequence[str]) -> float:
    """The variants' score: the mean of recall@B512, @B1024 and @B2048 on the questions
    `ids` (the tune half's, `choose_on_tune`)."""
    return float(np.mean(list(side_means(out, ids).values())))


def paired_at(a, b, ids: Sequence[str], budget: int):
    """Outcome `a` against `b` on recall@B`budget`, paired on the questions `ids`."""
    from ..evaluate.runs import versus

    return versus(a.values("recall", budget), b.values("recall", budget), on=ids)


def diagnose(bench, base, ce, scorer, chunks, side: dict[str, str], candidates: int,
             masked=None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(each gold chunk the cross-encoder pushed out of a budget's context, with why;
    each question's best-ranked rescored gold chunk, before and after). `masked`, a scorer
    that masks padding: its margin between the gold and the chunk that displaced it, and
    how far masked padding moves its scores (int8 noise)."""
    from ..evaluate.budget import count_tokens, pack_context
    from ..retrieve.rerank import is_code

    docs = {d.id: d for d in bench.documents}

    def cost(c) -> int:  # what a chunk costs in the context (cl100k: body and prefix)
        return count_tokens(c.text) + count_tokens(c.prefix)

    title = {d.id: d.metadata.get("title") or d.id for d in bench.documents}
    base_pq = base.per_query.set_index("query_id")
    ce_pq = ce.per_query.set_index("query_id")
    lost, ranks = [], []
    for q in bench.queries:
        if not q.gold:
            continue
        before = base.retrieved(q.id)
        after = ce.retrieved(q.id)
        pos_before = {c.id: r for r, c in enumerate(before)}
        pos_after = {c.id: r for r, c in enumerate(after)}
        gold_chunks = []
        for c in chunks:
            g = sum(overlap(c.start, c.end, s.start, s.end) for s in q.gold
                    if s.doc_id == c.doc_id)
            if g:
                gold_chunks.append((c, g))
        head = before[:candidates]
        free = [c for c in head if not is_code(c)]
        free_ids = [c.id for c in free]
        order_after = [c.id for c in after[:candidates] if c.id in set(free_ids)]
        scores = dict(zip(free_ids, scorer.score([q.text], [free])[0])) if free else {}
        rescored = [(c, g) for c, g in gold_chunks if c.id in scores]
        if rescored:
            c, _g = min(rescored, key=lambda cg: free_ids.index(cg[0].id))
            w = window(scorer, q.text, c)
            ranks.append({"query_id": q.id, "split": side[q.id], "type": q.type,
                          "kind": chunk_kind(c), "cut": w["cut"],
                          "top5_cost_first": float(np.mean([cost(x) for x in before[:5]])),
                          "top5_cost_ce": float(np.mean([cost(x) for x in after[:5]])),
                          "units_first": {b: pack_context(before, b).units for b in BUDGETS},
                          "units_ce": {b: pack_context(after, b).units for b in BUDGETS},
                          "first_rank": free_ids.index(c.id),
                          "ce_rank": order_after.index(c.id), "n_free": len(free_ids)})
        for b in BUDGETS:
            drop = float(ce_pq.loc[q.id, f"recall@B{b}"] - base_pq.loc[q.id, f"recall@B{b}"])
            if drop >= 0:
                continue
            ctx_before = pack_context(before, b).spans
            ctx_after = pack_context(after, b).spans
            for c, g in gold_chunks:
                held = gold_in_context(c, q.gold, ctx_before)
                kept = gold_in_context(c, q.gold, ctx_after)
                if kept >= held:
                    continue
                w = window(scorer, q.text, c)
                gold_body = [(max(s.start, c.start) - c.start, min(s.end, c.end) - c.start)
                             for s in q.gold if s.doc_id == c.doc_id
                             and overlap(c.start, c.end, s.start, s.end)]
                beyond = sum(max(0, e - max(s, w["body_read_chars"])) for s, e in gold_body)
                r0, r1 = pos_before.get(c.id), pos_after.get(c.id)
                took = [x for x in after[:r1 if r1 is not None else candidates]
                        if pos_before.get(x.id, 10 ** 6) > (r0 if r0 is not None else -1)]
                row = {"query_id": q.id, "split": side[q.id], "type": q.type, "budget": b,
                       "recall_drop": drop, "chunk": c.id, "doc_id": c.doc_id,
                       "gold_chars_lost": held - kept,
                       "kind": chunk_kind(c), "first_rank": r0, "ce_rank": r1,
                       "rescored": c.id in scores, "gold_chars": g,
                       "gold_beyond_window": beyond / max(1, g), **w,
                       "prefix": c.prefix,
                       "took_its_place": len(took),
                       "took_kinds": dict(Counter(chunk_kind(x) for x in took)),
                       "gold_cost": cost(c),
                       "took_cost": sum(cost(x) for x in took),
                       "took_same_doc": sum(x.doc_id == c.doc_id for x in took),
                       "took_other_version": sum(x.doc_id != c.doc_id
                                                 and title[x.doc_id] == title[c.doc_id]
                                                 for x in took),
                       "took_superseded": sum(bool(docs[x.doc_id].metadata.get("superseded_by"))
                                              for x in took)}
                if c.id in scores and took:
                    top = took[0]
                    if top.id in scores:
                        row.update({"ce_gold": float(scores[c.id]),
                                    "ce_top": float(scores[top.id]),
                                    "margin": float(scores[top.id] - scores[c.id])})
                    if masked is not None and top.id in scores:
                        a_gold, p_gold = padding_pair(masked, q.text, c.embedding_text())
                        a_top, p_top = padding_pair(masked, q.text, top.embedding_text())
                        row.update({"masked_margin": a_top - a_gold,
                                    "padded_margin": p_top - p_gold,
                                    "padding_shift": max(abs(p_gold - a_gold),
                                                         abs(p_top - a_top))})
                lost.append(row)
    return lost, ranks


def _print_effect(rows: list[list[Any]], title: str) -> None:
    print(f"\n{title}")
    print(text_table(["half", "budget", "n", "A", "B", "A - B", "95% CI", "wins/losses/ties"],
                     rows, ".1f"))


def _effect_rows(a, b, ids: dict[str, list[str]], rec, strategy: str, extra: dict) -> list:
    rows = []
    for s in SIDES:
        for bud in BUDGETS:
            c = paired_at(a, b, ids[s], bud)
            rows.append([s, bud, c.n, 100 * c.mean_a, 100 * c.mean_b, 100 * c.diff,
                         f"[{100 * c.low:+.1f}, {100 * c.high:+.1f}]",
                         f"{c.wins}/{c.losses}/{c.ties}"])
            rec.add(experiment="rerank_why_paired", benchmark=a.benchmark, strategy=strategy,
                    metric="diff_recall@B", value=c.diff, budget=bud, n_queries=c.n,
                    params={"split": s, "ci95": [c.low, c.high], "wins": c.wins,
                            "losses": c.losses, "ties": c.ties, **extra})
    return rows


def _print_diagnosis(lost: list[dict[str, Any]], ranks: list[dict[str, Any]], what: str
                     ) -> None:
    print(f"\n2. Gold chunks {what} pushed out of a budget's context "
          f"({len(lost)} at the three budgets, {len({r['query_id'] for r in lost})} questions):")
    if lost:
        table = [[r["query_id"], r["split"], r["budget"], 100 * r["recall_drop"], r["kind"],
                  r["first_rank"], r["ce_rank"], r["pair_tokens"],
                  f"{100 * r['gold_beyond_window']:.0f}%", r["prefix_tokens"],
                  r["took_its_place"], r["took_same_doc"], r["took_other_version"],
                  f"{r['margin']:.2f}" if "margin" in r else "-",
                  f"{r['masked_margin']:.2f}" if "masked_margin" in r else "-",
                  f"{r['padded_margin']:.2f}" if "padded_margin" in r else "-",
                  r["gold_cost"], r["took_cost"]]
                 for r in lost]
        print(text_table(["question", "half", "B", "drop", "kind", "rank", "->", "pair tok",
                          "gold cut", "prefix tok", "above it", "same doc", "other version",
                          "margin", "masked", "+pad", "gold tok", "above tok"], table, ".1f"))
        n = len(lost)
        kinds = Counter(r["kind"] for r in lost)
        print(f"   kinds: {dict(kinds)}; pair longer than 256 tokens: "
              f"{sum(r['cut'] for r in lost)}/{n}; any gold beyond the window: "
              f"{sum(r['gold_beyond_window'] > 0 for r in lost)}/{n}; with a breadcrumb: "
              f"{sum(bool(r['prefix']) for r in lost)}/{n}; displaced by its own document: "
              f"{sum(r['took_same_doc'] > 0 for r in lost)}/{n}, by another version: "
              f"{sum(r['took_other_version'] > 0 for r in lost)}/{n}")
        ms = [r for r in lost if "masked_margin" in r]
        if ms:
            print(f"   with padding masked, the chunk above would still be above the gold in "
                  f"{sum(r['masked_margin'] > 0 for r in ms)}/{len(ms)}; int8: 64 masked "
                  f"padding tokens move a masked score by at most "
                  f"{max(r['padding_shift'] for r in ms):.2f} logits (median "
                  f"{np.median([r['padding_shift'] for r in ms]):.2f}), and flip that order in "
                  f"{sum((r['padded_margin'] > 0) != (r['masked_margin'] > 0) for r in ms)}"
                  f"/{len(ms)}")
    if ranks:
        print("\n   Every question whose gold was rescored: its rank among the rescored "
              "candidates (0 = first)")
        groups: dict[tuple, list] = {}
        for r in ranks:
            for key in (("all",), ("kind", r["kind"]), ("fits in 256", not r["cut"])):
                groups.setdefault(key, []).append(r)
        rows = []
        for key, rs in groups.items():
            fr = np.array([r["first_rank"] for r in rs])
            cr = np.array([r["ce_rank"] for r in rs])
            rows.append([" ".join(map(str, key)), len(rs), float(np.mean(1 / (fr + 1))),
                         float(np.mean(1 / (cr + 1))), int((cr < fr).sum()),
                         int((cr > fr).sum()), int((cr == fr).sum())])
        print(text_table(["group", "n", "MRR first stage", "MRR cross-encoder", "CE raises",
                          "CE lowers", "same"], rows, ".3f"))
        print("   what the top of the ranking costs: mean cl100k tokens of the top 5, first "
              f"stage {np.mean([r['top5_cost_first'] for r in ranks]):.0f}, cross-encoder "
              f"{np.mean([r['top5_cost_ce'] for r in ranks]):.0f}; chunks in the context: "
              + ", ".join(f"B{b} {np.mean([r['units_first'][b] for r in ranks]):.1f} -> "
                          f"{np.mean([r['units_ce'][b] for r in ranks]):.1f}" for b in BUDGETS))


def run_why(benchmark: str = "course", limit: int | None = None, variants: bool = True
            ) -> dict[str, Any]:
    from ..evaluate.benchmarks import load
    from ..evaluate.runs import choose_on_tune
    from ..experiments.design import ragkit_chunker
    from ..embed.encoders import Embedder
    from ..models import packaged_cross_encoder
    from ..experiments.pipeline import run_experiment
    from ..retrieve.stack import stack_retriever
    from ..retrieve.rerank import OnnxCrossEncoderScorer, Reranker, is_code
    from ..report.results import Recorder, results_path
    from ..evaluate.splits import split_of

    bench = load(benchmark)
    if limit:
        bench = replace(bench, queries=list(bench.queries[:limit]))
    side = {q.id: split_of(q.id) for q in bench.queries}
    ids = {s: [q.id for q in bench.queries if q.gold and side[q.id] == s] for s in SIDES}
    answered = [q.id for q in bench.queries if q.gold]  # variants are chosen on its tune half
    chunks = ragkit_chunker().chunk_all(bench.documents, progress=False)
    emb = Embedder(show_progress=False)
    print(f"{benchmark}: {len(bench.documents)} documents, {len(chunks)} router chunks, "
          f"{len(bench.queries)} questions ({len(ids['tune'])} tune / {len(ids['held-out'])} "
          "held-out with gold)")
    live = stack_retriever(chunks, emb)
    first = FrozenFirstStage(live, [q.text for q in bench.queries])
    folder = packaged_cross_encoder()
    scorers: dict[tuple[int, bool], Any] = {
        (256, masked): OnnxCrossEncoderScorer(folder, max_length=256, mask_padding=masked)
        for masked in (False, True)}

    def scorer(max_length: int, masked: bool):
        if (max_length, masked) not in scorers:
            scorers[(max_length, masked)] = widened_scorer(folder, scorers[(256, masked)],
                                                           max_length, mask_padding=masked)
        return scorers[(max_length, masked)]

    def run(label, retriever):
        return run_experiment(bench, chunks=chunks, retriever=retriever, k=5, budgets=BUDGETS,
                              label=label, omega=False)

    base = run("none", first)
    check = run("none (live)", live)
    if not np.allclose(check.per_query[[f"recall@B{b}" for b in BUDGETS]].to_numpy(),
                       base.per_query[[f"recall@B{b}" for b in BUDGETS]].to_numpy()):
        raise RuntimeError("the frozen first stage does not reproduce the live stack")
    today_label = variant_label(256, 20, None)
    masked_label = variant_label(256, 20, None, masked=True)
    outs: dict[str, Any] = {"none": base}
    outs[today_label] = run(today_label, Reranker(first, scorer(256, False), 20, keep=is_code))
    outs[masked_label] = run(masked_label, Reranker(first, scorer(256, True), 20, keep=is_code))
    print(f"pairs the 256-token window cut: {scorers[(256, False)].flags or 'none'}")

    rec = Recorder("bench_rerank_why")
    _print_effect(_effect_rows(outs[today_label], base, ids, rec, f"{today_label} - none",
                               {"tuned_on": "none"}),
                  "1. Today's cross-encoder (256 tokens, padding attended, top 20, replaces the "
                  "order) - no reranker, recall@B (points):")
    _print_effect(_effect_rows(outs[masked_label], base, ids, rec, f"{masked_label} - none",
                               {"tuned_on": "none"}),
                  "1b. The same with its padding masked - no reranker, recall@B (points):")

    diagnosis: dict[str, Any] = {}
    for label, what in ((today_label, "today's cross-encoder"),
                        (masked_label, "the cross-encoder with padding masked")):
        ml_masked = (256, label == masked_label)
        lost, ranks = diagnose(bench, base, outs[label], scorers[ml_masked], chunks, side, 20,
                               masked=scorers[(256, True)])
        _print_diagnosis(lost, ranks, what)
        diagnosis[label] = {"lost": lost, "ranks": ranks}

    result: dict[str, Any] = {"outcomes": outs, "diagnosis": diagnosis}
    if variants:
        tried = []
        for label, ml, masked, n, fuse in grid():
            if label not in outs:
                w, c = fuse if fuse else (None, 0.0)
                outs[label] = run(label, Reranker(first, scorer(ml, masked), n, keep=is_code,
                                                  fuse=w, fuse_constant=c))
            m = side_means(outs[label], ids["tune"])
            tried.append((label, ml, masked, n, fuse, m, float(np.mean(list(m.values())))))
        for (ml, masked), sc in scorers.items():
            if ml != 256:
                print(f"\n{ml}-token scorer{' (masked)' if masked else ''}: "
                      f"{getattr(sc, 'reused', 0)} pair scores reused from 256 (fit there), "
                      f"{sc.flags or 'no pair cut'}")
        best = choose_on_tune(tried, lambda t, tune: tune_mean(outs[t[0]], tune), answered,
                              digits=12)  # equal means: the earlier variant
        print("\n3. Variants on the TUNE half (mean recall@B, points; the rule: largest mean "
              "of the three budgets):")
        print(text_table(["variant", "@B512", "@B1024", "@B2048", "mean", "- none"],
                         [[t[0], *(100 * t[5][b] for b in BUDGETS), 100 * t[6],
                           100 * (t[6] - tried[0][6])] for t in tried], ".2f"))
        for t in tried:
            for b in BUDGETS:
                rec.add(experiment="rerank_why_tune", benchmark=benchmark, strategy=t[0],
                        metric="recall@B", value=t[5][b], budget=b, n_queries=len(ids["tune"]),
                        params={"split": "tune", "max_length": t[1], "mask_padding": t[2],
                                "candidates": t[3], "fuse": list(t[4]) if t[4] else None,
                                "chosen": t is best, "tuned_on": "tune"})
        print(f"\nchosen on the tune half: {best[0]}")
        result["chosen"] = best[0]
        result["tuned"] = tried
        if best[0] == "none":
            print("no variant beats no reranker on the tune half")
        else:
            _print_effect(_effect_rows(outs[best[0]], base, ids, rec, f"{best[0]} - none",
                                       {"tuned_on": "tune", "chosen": True}),
                          f"4. Chosen variant ({best[0]}) - no reranker, recall@B (points; "
                          "quote the held-out rows):")

        # post hoc: the diagnosis (which read both halves) finds the masked model ranks table
        # chunks below the first stage; keep them in place as source code is kept
        def code_or_table(chunk) -> bool:
            return is_code(chunk) or chunk_kind(chunk) == "table"

        posthoc = []
        for n in CANDIDATES:
            for f in (None, *FUSION):
                label = variant_label(256, n, f, masked=True) + " keep tables"
                w, c = f if f else (None, 0.0)
                outs[label] = run(label, Reranker(first, scorer(256, True), n,
                                                  keep=code_or_table, fuse=w, fuse_constant=c))
                m = side_means(outs[label], ids["tune"])
                posthoc.append((label, m, float(np.mean(list(m.values())))))
        pick = choose_on_tune(posthoc, lambda t, tune: tune_mean(outs[t[0]], tune), answered,
                              digits=12)
        print("\n5. Post hoc, suggested by the diagnosis (which read both halves, so the "
              "held-out rows below are not a clean test): the masked model with table chunks "
              "kept in place, on the TUNE half:")
        print(text_table(["variant", "@B512", "@B1024", "@B2048", "mean", "- none"],
                         [[t[0], *(100 * t[1][b] for b in BUDGETS), 100 * t[2],
                           100 * (t[2] - tried[0][6])] for t in posthoc], ".2f"))
        _print_effect(_effect_rows(outs[pick[0]], base, ids, rec, f"{pick[0]} - none",
                                   {"tuned_on": "tune", "post_hoc": True}),
                      f"   best on the tune half ({pick[0]}) - no reranker (exploratory):")
        result["post_hoc"] = pick[0]
    rec.save()
    path = results_path("bench_rerank_why").with_suffix(".diagnosis.json")
    path.write_text(json.dumps(diagnosis, indent=1, default=lambda v: v.item()) + "\n",
                    encoding="utf-8")
    print(f"\nrows: {results_path('bench_rerank_why')}; diagnosis: {path}")
    return result


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--benchmark", default="course", choices=("course", "chroma", "anthropic"),
                   help="the benchmark (course by default; time a --limit 20 slice of the "
                        "others first: pairs not yet cached cost minutes to hours on 2 CPUs)")
    from .common import bounded

    p.add_argument("--limit", type=bounded(1, 100_000), default=None,
                   help="only the first N questions (a timing check, not a result)")
    p.add_argument("--no-variants", action="store_true",
                   help="the effect and the diagnosis only; no variant grid")


def run_args(args: argparse.Namespace) -> dict[str, Any]:
    return run_why(args.benchmark, args.limit, not args.no_variants)


def main(argv: list[str] | None = None, prog: str = "ragkit bench rerank-why") -> int:
    return run_script(__doc__, prog, add_arguments, run_args, argv)


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["FrozenFirstStage", "chunk_kind", "diagnose", "grid", "run_why", "variant_label",
           "widened_scorer", "window"]
