"""Chroma's and Anthropic's published baselines, re-measured with ragkit's harness.

`chroma_repro` re-runs the Chroma report's MiniLM table (recall, precision, IoU at k = 5, chunk
sizes in cl100k tokens); `anthropic_baseline` scores Pass@5/10/20 on the contextual-retrieval
set's own upstream chunks. Each prints our figures beside the published ones
(`ragkit.report.published`) and writes its rows (``results/bench_<name>.jsonl``). Notebook 01
calls both; ``ragkit bench chroma-repro`` and ``ragkit bench anthropic-baseline`` run them from
a shell.
"""

from __future__ import annotations

import time

from ..report.published import ANTHROPIC_PUBLISHED, CHROMA_PUBLISHED
from ..report.tables import text_table


def chroma_repro(smoke: bool = False) -> list[list]:
    """The Chroma report's MiniLM table (recursive and token splitters; the cluster chunker is
    left to notebook 02), ours beside the published figures; one printed row per chunker."""
    from ..chunkers.fixed import FixedTokenChunker
    from ..chunkers.recursive import RecursiveChunker
    from ..embed.encoders import Embedder
    from ..evaluate.benchmarks import load_chroma
    from ..report.results import Recorder
    from .pipeline import run_experiment

    bench = load_chroma()
    if smoke:
        bench = bench.for_profile("smoke")
    emb = Embedder()  # all-MiniLM-L6-v2, max_seq_length 256 as upstream
    rec = Recorder("bench_chroma_repro")
    rows = []
    for (kind, size, overlap), pub in CHROMA_PUBLISHED.items():
        if kind == "cluster":  # embeds every sentence (minutes each); notebook 02 measures it
            continue
        chunker = (RecursiveChunker(size, overlap, "cl100k_base") if kind == "recursive"
                   else FixedTokenChunker(size, overlap, "cl100k_base"))
        t0 = time.time()
        out = run_experiment(bench, chunker, emb, k=5)
        m = out.means
        ours = [100 * m["recall"], 100 * m["precision"], 100 * m["precision_omega"],
                100 * m["iou"]]
        out.record(rec, experiment="chroma_repro", embedder=emb.name, k=5)
        anchored = anchored_means(bench, out)  # upstream's rule: the anchored copy alone
        for name in ("recall", "iou"):
            rec.add(experiment="chroma_repro", benchmark="chroma", strategy=out.strategy,
                    metric=f"{name}_anchored_gold", value=anchored[name], embedder=emb.name,
                    k=5, n_queries=len(out.per_query),
                    params={"rule": "anchored gold only, as upstream's code scores"})
        for name, value in zip(("published_recall", "published_precision",
                                "published_precision_omega", "published_iou"), pub):
            rec.add(experiment="chroma_repro", benchmark="chroma", strategy=out.strategy,
                    metric=name, value=value / 100, embedder="all-MiniLM-L6-v2 (Chroma report)",
                    k=5, n_queries=472, params={"source": "Chroma technical report, 2024"})
        rows.append([f"{kind} {size}/{overlap}", ours[0], pub[0], ours[0] - pub[0], ours[3],
                     pub[3], ours[3] - pub[3], ours[1], ours[2], 100 * anchored["recall"],
                     100 * anchored["iou"], int(m["n_chunks"]), ";".join(out.flags) or "-",
                     f"{time.time() - t0:.0f}s"])
    rec.save()
    print(text_table(["chunker (cl100k)", "recall", "pub", "Δ", "IoU", "pub", "Δ", "prec",
                      "prec_Ω", "recall, anchored", "IoU, anchored", "chunks", "flags", "time"],
                     rows))
    return rows


def anchored_means(bench, out) -> dict[str, float]:
    """Mean k = 5 recall and IoU of `out`'s hits scored as Chroma's own code scores them: the
    anchored gold alone, no credit for an identical copy elsewhere (`ragkit.evaluate.copies`)."""
    from dataclasses import replace

    from ..evaluate.metrics import evaluate_retrieval

    queries = [replace(q, copies=()) for q in bench.queries]
    ranked = {qid: [(h.chunk, h.score) for h in hs] for qid, hs in out.hits.items()}
    _, means = evaluate_retrieval(queries, ranked, out.chunks, k=5, omega=False,
                                  texts=out.texts)
    return means


def anthropic_baseline(smoke: bool = False) -> list[list]:
    """Pass@5/10/20 with the bundled embedder on the Anthropic set's own chunks, beside the
    cookbook's published baseline."""
    from ..embed.encoders import Embedder
    from ..evaluate.benchmarks import load_anthropic
    from ..report.results import Recorder
    from .pipeline import recall_at, run_experiment

    bench = load_anthropic()
    if smoke:
        bench = bench.for_profile("smoke")
    emb = Embedder()
    rec = Recorder("bench_anthropic_baseline")
    out = run_experiment(bench, embedder=emb, k=5, chunks=bench.chunks, depth=20,
                         label="upstream")
    passk = recall_at(out, bench.queries, (5, 10, 20), per_query=True)
    out.record(rec, experiment="anthropic_baseline", embedder=emb.name, k=5)
    rows = [["upstream chunks + " + emb.name, *(100 * passk[f"pass@{k}"] for k in (5, 10, 20))]]
    for name, vals in list(ANTHROPIC_PUBLISHED.items())[:1]:
        rows.append([name + " (published)", *vals])
        for k, v in zip((5, 10, 20), vals):
            rec.add(experiment="anthropic_baseline", benchmark="anthropic", strategy="upstream",
                    metric=f"published_pass@{k}", value=v / 100, embedder="voyage-2", k=k,
                    n_queries=248, params={"source": "Anthropic contextual-retrieval cookbook"})
    rec.save()
    print(text_table(["run", "Pass@5", "Pass@10", "Pass@20"], rows))
    return rows


def anthropic_pass(hits, bench, ks=(5, 10, 20)):
    """Pass@k by Anthropic's own rule, from a run's saved hits (`ragkit.report.load_hits`
    rows of one run: query_id, rank, doc_id, start, end): per question, the share of its gold
    chunks whose content equals one of the top k retrieved chunks
    (`ragkit.evaluate.exact_pass`). A DataFrame indexed by query id, one column per k. ragkit's
    span rule agrees with it on their chunks except where a chunk with the same text sits
    elsewhere (their set repeats a few, licence headers among them)."""
    import pandas as pd

    from ..evaluate.spans import exact_pass
    from ..types import Chunk

    texts = {d.id: d.text for d in bench.documents}
    ranked = {q: g.sort_values("rank") for q, g in hits.groupby("query_id")}
    out = {}
    for q in bench.queries:
        if not q.gold:
            continue
        h = ranked.get(q.id)
        top = [] if h is None else [
            Chunk(doc_id=d, start=int(s), end=int(e), text=texts[d][int(s):int(e)],
                  strategy="hit") for d, s, e in zip(h.doc_id, h.start, h.end)]
        out[q.id] = {f"pass@{k}": exact_pass(q.gold, top[:k], texts) for k in ks}
    return pd.DataFrame.from_dict(out, orient="index")
