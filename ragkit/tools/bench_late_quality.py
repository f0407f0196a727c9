"""``ragkit bench late-quality``: why does late chunking help one encoder and hurt another?

    ragkit bench late-quality                              # the bundled MiniLM
    ragkit bench late-quality --model /tmp/embeddinggemma  # EmbeddingGemma-300M
    ragkit bench late-quality --windows 0,512,128 --specials edges,every [--smoke]

On the course corpus, with notebook 05's chunks (fixed 256 MiniLM tokens, no overlap), the same
spans are embedded naively (each chunk alone, with the model's document prompt) and late
(`ragkit.embed.late`), once for each window size (``0``: the model's own limit) and each way of
pooling the special tokens and prompt (``specials``): ``edges`` (the default: the head only
in the document's first chunk, the tail only in its last), ``exclude`` (text tokens only) and
``every`` (head and tail in every chunk, as each chunk's own embedding would pool them). A
model whose pooling takes in its prompt (EmbeddingGemma's ``title: none | text: ``) gives
interior chunks under ``edges`` a mean it never saw in training; ``every`` tests whether that
is what costs late chunking its gain. Smaller windows test the other suspect: how much of the
document each token has read.

Reported per setting: recall@5 and nDCG@10 on every answerable question, and precision@5 on
the questions that need a cross-reference (seed 002's claim), each as late − naive with a
paired 95 % bootstrap interval. Rows go to ``results/bench_late_quality.jsonl``; a run keeps
the rows saved there for other encoders and for the settings it does not repeat.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Sequence

from ..report.tables import text_table
from .common import MAX_SIZE, add_smoke, names, numbers, run_script

SPECIALS = ("edges", "exclude", "every")
METRICS = (("pass@k", "all"), ("ndcg@10", "all"), ("precision@k", "cross_reference"))


def fitting(windows: Sequence[int], bare: int, limit: int) -> tuple[list[int], list[int]]:
    """The windows an encoder can run (0 is its own limit) and those it cannot: a window plus
    the `bare` prompt and special tokens must fit in `limit`.

    >>> fitting([0, 512, 128], bare=2, limit=256)   # MiniLM
    ([0, 128], [512])
    >>> fitting([0, 512, 128], bare=9, limit=2048)  # EmbeddingGemma, with its prompt
    ([0, 512, 128], [])
    """
    bad = [w for w in windows if w and w + bare > limit]
    return [w for w in windows if w not in bad], bad


def not_repeated(embedder: str, windows: Sequence[int], specials: Sequence[str]):
    """Which saved rows a run keeps: those of another encoder, and this encoder's late rows
    (and their paired differences) for settings the run does not repeat; its naive row is
    measured again.

    >>> keep = not_repeated("gemma", [512], ["edges"])
    >>> row = lambda emb, **p: {"embedder": emb, "params": p}
    >>> keep(row("minilm", mode="naive")), keep(row("gemma", mode="naive"))
    (True, False)
    >>> keep(row("gemma", mode="late", window=None, specials="edges"))
    True
    >>> keep(row("gemma", window=512, specials="edges")), keep(row("gemma", window=512,
    ...                                                            specials="every"))
    (False, True)
    """
    done = {(w or None, sp) for w in windows for sp in specials}

    def keep(r: dict) -> bool:
        p = r.get("params") or {}
        if r.get("embedder") != embedder:
            return True
        return p.get("mode") != "naive" and (p.get("window"), p.get("specials")) not in done

    return keep


def late_quality(model: str | None = None, windows: Sequence[int] = (0, 512, 128),
                 specials: Sequence[str] = SPECIALS, smoke: bool = False) -> list[list[Any]]:
    from ..chunkers import FixedTokenChunker
    from ..embed.encoders import Embedder
    from ..evaluate.benchmarks import load
    from ..evaluate.runs import versus
    from ..experiments.pipeline import run_experiment
    from ..report.claims import subset_ids
    from ..report.results import Recorder
    from ..retrieve.late import LateDenseRetriever

    bench = load("course").for_profile("smoke" if smoke else "full")
    emb = Embedder(model, batch_size=8)
    chunker = FixedTokenChunker(256, 0, "minilm")
    chunks = chunker.chunk_all(bench.documents)
    limit = emb.max_tokens
    bare = emb.count_tokens([""], "document")[0]  # the prompt and special tokens
    windows, too_big = fitting(windows, bare, limit)
    if too_big:  # e.g. the default 512 for MiniLM, whose whole input is 256 tokens
        print(f"windows {too_big} skipped: with {bare} prompt/special tokens they exceed "
              f"{emb.name}'s limit of {limit} tokens (window 0, the limit, is the largest)")
    print(f"course: {len(bench.documents)} documents, {len(chunks)} chunks; {emb.name} "
          f"(limit {limit} tokens, document prompt {emb.prompt('document')!r})")
    rec = Recorder("bench_late_quality")
    kept = rec.keep_saved(not_repeated(emb.name, windows, specials))
    if kept:
        print(f"kept {kept} saved rows (other encoders, or settings not re-run here)")
    naive = run_experiment(bench, embedder=emb, k=5, chunks=chunks, retriever="dense",
                           label=f"naive · {chunker.label}")
    naive.record(rec, experiment="late_quality", embedder=emb.name, k=5, mode="naive")
    cross = subset_ids("cross_reference")
    table = []
    for window in windows:
        for sp in specials:
            late = LateDenseRetriever(chunks, bench.documents, emb, window=window or None,
                                      specials=sp)
            out = run_experiment(bench, embedder=emb, k=5, chunks=chunks, retriever=late,
                                 label=f"late · {chunker.label} · {sp} · window "
                                       f"{window or 'limit'}")
            out.record(rec, experiment="late_quality", embedder=emb.name, k=5, mode="late",
                       specials=sp, window=window or None)
            row: list[Any] = [window or f"{limit} (limit)", sp]
            for metric, subset in METRICS:
                a = out.values(metric)  # naive scored every question late did
                ids = a.index if subset == "all" else [q for q in a.index if q in cross]
                c = versus(a, naive.values(metric), on=ids)
                row.append(f"{100 * c.mean_b:.1f} -> {100 * c.mean_a:.1f}: {100 * c.diff:+.1f} "
                           f"[{100 * c.low:+.1f}, {100 * c.high:+.1f}] (n {c.n})")
                rec.add(experiment="late_quality_paired", benchmark="course",
                        strategy=f"late - naive · {sp} · window {window or 'limit'}",
                        metric=f"diff_{metric}", value=c.diff, k=5, embedder=emb.name,
                        n_queries=c.n, flags=out.flags,
                        params={"specials": sp, "window": window or None, "subset": subset,
                                "ci95": [c.low, c.high], "wins": c.wins, "losses": c.losses,
                                "ties": c.ties, "chunker": chunker.label})
            row.append(";".join(f for f in out.flags if f.startswith("late:")))
            table.append(row)
            print(text_table(["window", "specials", *(f"{m} ({s})" for m, s in METRICS),
                              "flags"], table[-1:]), flush=True)
    rec.save()
    print(f"\nLate minus naive, {emb.name}, the same {len(chunks)} spans (naive -> late: "
          "difference [paired 95 % CI]):")
    print(text_table(["window", "specials", *(f"{m} ({s})" for m, s in METRICS), "flags"],
                     table))
    return table


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=None, help="encoder folder or hub id (default: MiniLM)")
    p.add_argument("--windows", type=numbers(0, MAX_SIZE), default=[0, 512, 128],
                   help="macro-window sizes in tokens, 0 for the model's own limit, "
                        "comma-separated (default 0,512,128)")
    p.add_argument("--specials", type=names(SPECIALS, "pooling(s)", empty=False),
                   default=",".join(SPECIALS),
                   help="ways of pooling the special tokens and prompt: edges, exclude, every")
    add_smoke(p)


def run_args(args: argparse.Namespace) -> list[list[Any]]:
    return late_quality(args.model, args.windows, args.specials, smoke=args.smoke)


def main(argv: list[str] | None = None, prog: str = "ragkit bench late-quality") -> int:
    return run_script(__doc__, prog, add_arguments, run_args, argv)


if __name__ == "__main__":
    sys.exit(main())
