"""``ragkit bench context-speed``: how fast each preamble generator runs on this machine.

    ragkit bench context-speed [--doc refund-policy-2024] [--chunks 4] [--generators ...]

Prints preambles per second for each generator on the chunks of one course document, and for
the LLMs the speed-up from reusing the document's KV cache (the same chunks generated with reuse
and with a reset before every chunk; the texts must be identical), in wall-clock and CPU seconds
(CPU time is less disturbed by other processes on a shared machine). Rows go to
``results/bench_context.jsonl``. (``python -m ragkit.tools.bench_context`` takes the same
options; filling the preamble caches is ``ragkit preambles``.)
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any, Sequence

from ..experiments.preamble_sets import corpus_and_chunks
from ..report.tables import text_table
from .common import bounded, run_script


def _timed(fn) -> tuple[Any, float, float]:
    t, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t, time.process_time() - c


def speed(doc_id: str = "refund-policy-2024", n_chunks: int = 4, budget: int = 100,
          generators: Sequence[str] = ("structural", "extractive", "gemma", "smollm2")
          ) -> list[list[Any]]:
    """Preambles/second per generator on `n_chunks` chunks of one course document."""
    from ..contextualize import make_contextualizer
    from ..embed.encoders import Embedder
    from ..report.results import Recorder

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
            if name in ("gemma", "smollm2"):
                _, load_s, _ = _timed(lambda: gen.llm)
        except ImportError as e:
            print(f"{name}: skipped ({e})")
            continue
        if name in ("gemma", "smollm2"):
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
    print(text_table(["generator", "chunks", "wall s", "CPU s", "preambles/s", "speed-up wall",
                  "speed-up CPU", "same text"], rows, ".3g"))
    print(f"\npreambles of the last chunk ({mine[-1].text[:60]!r}...):")
    for name, text in samples:
        print(f"  {name}: {text!r}")
    return rows


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--doc", default="refund-policy-2024")
    p.add_argument("--chunks", type=bounded(1, 1000), default=4)
    p.add_argument("--budget", type=bounded(1, 100_000), default=100)
    p.add_argument("--generators", default="structural,extractive,gemma,smollm2")


def run_args(args: argparse.Namespace) -> list[list[Any]]:
    return speed(args.doc, args.chunks, args.budget, args.generators.split(","))


def main(argv: list[str] | None = None, prog: str = "ragkit bench context-speed") -> int:
    return run_script(__doc__, prog, add_arguments, run_args, argv)


if __name__ == "__main__":
    sys.exit(main())
