"""``ragkit rescore``: score saved runs again from their ranked hits, under today's rules.

A run's scores are a function of its ranked hits, the gold and the scoring rules; the hits are
the expensive part (an encoder over every chunk). When a scoring rule changes (identical text
credited, `ragkit.evaluate.copies`) or the split does, a run whose encoder cannot be re-run
here in reasonable time (EmbeddingGemma on two CPUs: about 1.5 s a chunk) is scored again from
the hits it saved (``results/runs/<notebook>.hits.parquet``), not re-encoded:

- each saved hit becomes its chunk again (the document's text at its span; its prefix counted
  as the saved prefix tokens, the body counted again by the reference tokenizer);
- hits whose scores tie (within `ragkit.retrieve.index.TIE`) are put in corpus order (document
  order, then start) for dense runs, as dense search orders them today; fused runs keep their
  saved order (fusion's own tie order);
- every metric is computed by `ragkit.evaluate.evaluate_retrieval` at the run's k and budgets,
  except precision_omega, which needs every chunk of the chunker and does not depend on the
  changed rules: it is carried over per question;
- the rows are written with the run's experiment, strategy, embedder, flags and params, plus
  ``rescored_from`` (the git commit that ranked the hits), under a new run id.

    ragkit rescore --from OLD_RESULTS_DIR --notebook bench_design --encoder embeddinggemma

Only runs absent from today's rows are rescored (a run re-measured today is never
overwritten); the command names what it rescored and what it left.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Sequence

from .common import run_script

SENTINEL = "\x00"  # a prefix whose length is its saved token count


def _count(text: str) -> int:
    from ..evaluate.budget import count_tokens

    if text.startswith(SENTINEL):
        return int(text[1:])
    return count_tokens(text)


def _ranked(hits, docs: dict[str, Any], order: dict[str, int], strategy: str, dense: bool):
    """query id -> [(chunk, score)] rebuilt from one run's saved hits."""
    from ..retrieve.index import TIE
    from ..types import Chunk

    out: dict[str, list] = {}
    for qid, part in hits.sort_values(["query_id", "rank"]).groupby("query_id", sort=False):
        rows = list(part.itertuples(index=False))
        if dense:  # equal scores in corpus order, as dense search settles them today
            groups, key = [], None
            for r in rows:
                if key is None or key - float(r.score) > TIE:
                    groups.append([])
                    key = float(r.score)
                groups[-1].append(r)
            rows = [r for g in groups for r in sorted(g, key=lambda r: (order[r.doc_id],
                                                                        int(r.start)))]
        out[str(qid)] = [
            (Chunk(r.doc_id, int(r.start), int(r.end), docs[r.doc_id][int(r.start):int(r.end)],
                   strategy, prefix=f"{SENTINEL}{int(r.prefix_tokens)}"
                   if int(r.prefix_tokens) else ""), float(r.score)) for r in rows]
    return out


def rescore(source: Path, notebook: str, encoder: str, sha: str,
            benchmarks: Sequence[str] | None = None) -> list[str]:
    """Rescore `notebook`'s runs by `encoder` saved under `source` (on `benchmarks` only, when
    given) that today's rows lack; returns one line per run (rescored, or why not)."""
    import pandas as pd

    from ..evaluate.benchmarks import load
    from ..evaluate.metrics import evaluate_retrieval
    from ..experiments.pipeline import Outcome
    from ..report.results import Recorder, read_rows, read_scores
    from ..retrieve.base import Hit

    old = [r for r in read_rows(source / f"{notebook}.jsonl")
           if r.get("run") and r.get("embedder") == encoder
           and (benchmarks is None or r.get("benchmark") in benchmarks)]
    rec = Recorder(notebook)
    rec.keep_saved(lambda r: True)
    today = {(r["strategy"], r["benchmark"], r.get("experiment")) for r in rec.rows
             if r.get("embedder") == encoder}
    hits = pd.read_parquet(source / "runs" / f"{notebook}.hits.parquet")
    scores = read_scores(source / "runs" / f"{notebook}.scores.parquet")
    lines, benches = [], {}
    for run in sorted({r["run"] for r in old}):
        rows = [r for r in old if r["run"] == run]
        first = rows[0]
        key = (first["strategy"], first["benchmark"], first.get("experiment"))
        if key in today:
            lines.append(f"kept today's run of {key[0]} on {key[1]} (not rescored)")
            continue
        name = first["benchmark"]
        bench = benches.setdefault(name, load(name))
        docs = {d.id: d.text for d in bench.documents}
        order = {d.id: i for i, d in enumerate(bench.documents)}
        params = dict(first.get("params") or {})
        dense = params.get("factor_first_stage", params.get("retriever")) == "dense"
        ranked = _ranked(hits[hits.run == run], docs, order, first["strategy"], dense)
        budgets = sorted({int(r["budget"]) for r in rows if r.get("budget") is not None})
        k = int(next(r["k"] for r in rows if r.get("k") is not None))
        units = list({c.id: c for hs in ranked.values() for c, _ in hs}.values())
        per_query, means = evaluate_retrieval(bench.queries, ranked, units, k=k, omega=False,
                                              texts=docs, budgets=budgets, count=_count)
        omega = scores[(scores.run == run) & (scores.metric == "precision_omega")]
        if len(omega):
            per_query["precision_omega"] = per_query.query_id.map(
                dict(zip(omega.query_id, omega.value)))
            means["precision_omega"] = float(per_query["precision_omega"].mean())
        for extra in ("n_chunks", "mean_chunk_chars", "mean_returned_chars"):
            got = [r["value"] for r in rows if r["metric"] == extra]
            if got:
                means[extra] = got[0]
        out = Outcome(name, first["strategy"], units,
                      {q: [Hit(c, s) for c, s in hs] for q, hs in ranked.items()}, per_query,
                      means, list(first.get("flags") or []), params, docs,
                      int(first.get("depth") or 0), tuple(budgets), encoder)
        new = out.record(rec, experiment=first["experiment"], embedder=encoder, k=k,
                         rescored_from=sha)
        saved = hits[hits.run == run].assign(run=new)
        rec.hits[new] = saved.reset_index(drop=True)  # the hits as ranked, tokens as saved
        lines.append(f"rescored {first['strategy']} on {name} ({len(per_query)} questions): "
                     f"recall@B1024 {100 * means.get('recall@B1024', float('nan')):.1f}")
    rec.save()
    return lines


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--from", dest="source", required=True, type=Path,
                   help="a results folder holding the saved runs (e.g. an older commit's)")
    p.add_argument("--notebook", required=True, help="whose runs, e.g. bench_design")
    p.add_argument("--encoder", required=True, help="the embedder whose runs to rescore")
    p.add_argument("--sha", required=True, help="the git commit that ranked the saved hits")


def run_args(args: argparse.Namespace) -> list[str]:
    for name in (f"{args.notebook}.jsonl", f"runs/{args.notebook}.hits.parquet"):
        if not (args.source / name).exists():
            raise SystemExit(f"ragkit rescore: {args.source / name} does not exist")
    lines = rescore(args.source, args.notebook, args.encoder, args.sha)
    print("\n".join(lines) or "nothing to rescore")
    return lines


def main(argv: list[str] | None = None, prog: str = "ragkit rescore") -> int:
    return run_script(__doc__, prog, add_arguments, run_args, argv)


if __name__ == "__main__":
    sys.exit(main())
