"""``ragkit readme``: regenerate the generated sections of the README and of its ``docs/`` pages
from the results rows (never typed by hand).

Each section sits between a pair of markers, in whichever file holds it (README.md, or a page of
``docs/`` beside it): the title and its plain reading (`title_line`) between ``<!-- title:start
-->`` and ``<!-- title:end -->``; the last whole run's time (`timing_line`) between ``<!--
timing:start -->`` and ``<!-- timing:end -->``; the results (boards, one-factor effects, the title
measured, targets, claim check: `generated`) between ``<!-- results:start -->`` and ``<!--
results:end -->``; the reliability table (from ``results/robustness.json``, written by ``make
fuzz``) between ``<!-- reliability:start -->`` and ``<!-- reliability:end -->``; the encoder's
speed and bf16 drift (`speed_section`) between ``<!-- speed:start -->`` and ``<!-- speed:end
-->``; the scale figures (`ragkit.tools.readme_scale`) between ``<!-- scale:start -->`` and
``<!-- scale:end -->``. `update_readme` replaces what is between each pair of markers, wherever
it now lives, and leaves the rest of every file alone. A full ``ragkit reproduce`` calls it;
``ragkit readme`` (or ``python -m ragkit.tools.readme``) runs it alone, on the results already
there.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from ..config import PROJECT_ROOT

START, END = "<!-- results:start -->", "<!-- results:end -->"
RELIABILITY = "<!-- reliability:start -->", "<!-- reliability:end -->"
TITLE = "<!-- title:start -->", "<!-- title:end -->"
SPEED = "<!-- speed:start -->", "<!-- speed:end -->"
TIMING = "<!-- timing:start -->", "<!-- timing:end -->"
DOCS = "docs"  # the README's pages, beside it: docs/*.md
README_BUDGET = 1024


def results_table(folder: Path | None = None, max_rows: int = 10) -> str:
    """One Markdown leaderboard per main benchmark at 1,024 cl100k tokens, with intervals."""
    from ..report import leaderboard as lb
    from ..report.results import load_results, load_scores

    folder = folder or PROJECT_ROOT / "results"
    rows, scores = load_results(folder), load_scores(folder)
    if rows.empty or scores.empty:
        return "_No results yet: run `make reproduce`._"
    parts = []
    for name in lb.MAIN_BENCHMARKS:
        b = lb.board(rows, scores, name, README_BUDGET, split="held-out")
        if b.empty:
            continue
        more = f" (top {max_rows} of {len(b)})" if len(b) > max_rows else ""
        parts.append(f"**{name}**{more}\n\n" + lb.markdown(b, max_rows))
    return "\n\n".join(parts) + (
        f"\n\nSpan recall, pass (gold units wholly in the context) and IoU in % when "
        f"{README_BUDGET:,} cl100k tokens of retrieved text reach the model, each with its 95 % "
        "bootstrap interval over the n questions of the **held-out half** (every row, so a "
        "tuned row and an untuned one are ranked on the same questions, none of which any "
        "setting was tuned on); *(tuned)* marks settings chosen on the tune half; recall@5 "
        "(five hits, whatever their size) as a secondary column. One row per distinct "
        "configuration; a board ranks configurations that may differ in several factors at "
        "once, so its order is not an effect of any one of them: *One factor at a time* "
        "below is. Notebook 07 has the full tables and the curves over budgets 256–4,096.")


def claims_table(folder: Path | None = None) -> str:
    """The claim check (notebook 07's table) as Markdown, claims only (no sensitivity rows)."""
    from ..report.claim_check import check_claims
    from ..report.prose import points
    from ..report.results import load_results, load_scores

    folder = folder or PROJECT_ROOT / "results"
    df = load_results(folder)
    if df.empty:
        return ""
    out = check_claims(df, load_scores(folder), sensitivity=False)

    lines = ["| source | claim | metric | claimed | ours | baseline | effect [95 % CI] | n | "
             "verdict |", "|---|---|---|---|---|---|---|---|---|"]
    for r in out.to_dict("records"):
        verdict = r["verdict"] + (f" ({r['reason']})" if r["reason"] else "")
        effect = "–" if r["estimate"] != r["estimate"] else \
            f"{points(r['estimate'])} [{points(r['low'])}, {points(r['high'])}]"
        claimed = "direction" if r["claimed"] is None or r["claimed"] != r["claimed"] \
            else points(r["claimed"])
        metric = r["metric"] + (" (cross-reference questions)" if r["subset"] != "all" else "")
        lines.append(f"| {r['source']} | {r['claim']} | {metric} | {claimed} | "
                     f"{points(r['ours'])} | {points(r['baseline'])} | {effect} | "
                     f"{r['n'] or '–'} | {verdict} |")
    return "\n".join(lines) + (
        "\n\nValues in %. Each claim's metric, configuration, baseline, subset and tolerance "
        "(10 % of the claimed value) are declared in `ragkit/report/claims.py` before any number is "
        "read; an effect is the paired difference (or, for Anthropic, the relative cut in "
        "top-20 failures) with its bootstrap interval. Verdicts (`ragkit.report.claims.decide`): held "
        "(the estimate within 10 % of the claim and the interval excluding 0; for \"at least\" "
        "claims the interval's lower end at 90 % of the claim or beyond) / consistent, not shown "
        "(only the interval reaches the claim) / direction only / no evidence either way (a "
        "direction claim whose interval holds 0) / not held / held, not "
        "attributable to a part (a composite claim whose control without that part meets it "
        "alone) / not measurable here.")


def prose_lines(rows) -> list[str]:
    """`ragkit bench prose`'s outcome in one paragraph, on the held-out half only (the
    configuration was chosen on the tune half, and the stack was designed after all-question
    results were read): its k = 5 recall and IoU beside Chroma's two best rows re-run on the
    same held-out questions (never beside all-question targets), and the paired differences."""
    from ..report.prose import ci, verdict

    bp = rows[rows.notebook == "bench_prose"]
    target = bp[(bp.experiment == "prose_target") & (bp.k == 5)]
    split_of = target.params.map(lambda p: p.get("split"))
    role = target.params.map(lambda p: p.get("role"))
    chosen = target[(role == "chosen, any pipeline") & (split_of == "held-out")]
    if chosen.empty:
        return []
    name = chosen.strategy.iloc[0]
    mine = dict(zip(chosen.metric, chosen.value))
    refs = target[(role == "Chroma's best row, re-run") & (split_of == "held-out")]
    paired = bp[(bp.experiment == "prose_target_paired")
                & (bp.params.map(lambda p: p.get("split")) == "held-out")]
    parts = []
    for ref in sorted(set(refs.strategy)):
        theirs = dict(zip(refs[refs.strategy == ref].metric, refs[refs.strategy == ref].value))
        cells = []
        for metric, what in (("recall", "recall"), ("iou", "IoU")):
            r = paired[(paired.strategy == f"chosen - {ref}") & (paired.metric == f"diff_{metric}")]
            if len(r) and metric in theirs:
                lo, hi = r.iloc[0].params["ci95"]
                cells.append(f"{what} {100 * theirs[metric]:.2f} there, difference "
                             f"{100 * r.iloc[0].value:+.2f} {ci(lo, hi, digits=2)} "
                             f"{verdict(lo, hi)}")
        parts.append(f"against {ref} re-run on them: " + ", ".join(cells))
    sizes = chosen.params.iloc[0].get("sizes_tried", [])
    pipes = chosen.params.iloc[0].get("pipelines_tried", [])
    return ["", f"`ragkit bench prose` (Chroma, k = 5; {len(sizes)} sentence-group sizes x "
            f"{len(pipes)} retrieval pipelines, chosen on the tune half by the rule in its "
            f"docstring): **{name}**. On the held-out half (n {int(chosen.n_queries.iloc[0])}), "
            f"recall {100 * mine.get('recall', float('nan')):.2f} and IoU "
            f"{100 * mine.get('iou', float('nan')):.2f}; " + "; ".join(parts) + ". The held-out "
            "half is not the published rows' question set, so these are the comparisons; "
            "Chroma's published all-question numbers are not."]


def wins_table(folder: Path | None = None) -> str:
    """``ragkit bench prose``'s choice against Chroma's targets and ``ragkit bench code``'s
    Pass@k on Anthropic's own chunks, as Markdown."""
    from ..report.results import load_results

    folder = folder or PROJECT_ROOT / "results"
    rows = load_results(folder)
    if rows.empty:
        return ""
    lines: list[str] = []
    lines += prose_lines(rows)
    lines += anthropic_lines(rows, folder)
    return "\n".join(lines)


CODE_CHUNKS = "code(2000/400,imports 0)+stack"  # the tuned code chunker, the stack's default fusion


def anthropic_lines(rows, folder: Path) -> list[str]:
    """``ragkit bench code`` on Anthropic's set: Pass@k by their own rule on their chunks beside
    their published rows (fixed-k rows are compared only on the published row's own chunks),
    then their chunks against ragkit's code chunks at equal budgets under one encoder and one
    stack, paired, whichever side wins."""
    from ..evaluate.runs import Metric, per_query, versus
    from ..report.prose import diff_ci, mean_ci, verdict
    from ..report.published import ANTHROPIC_PUBLISHED
    from ..report.results import load_hits, load_scores

    code = rows[(rows.notebook == "bench_code") & rows.run.notna()]
    theirs = code[code.experiment == "their_chunks"]
    if not len(theirs):
        return []
    from ..evaluate.benchmarks import load
    from ..experiments.reproductions import anthropic_pass

    bench, hits, scores = load("anthropic"), load_hits(folder), load_scores(folder)
    lines = ["", "**Anthropic's metric on their 737 chunks** (`ragkit bench code`; Pass@k by "
             "their rule, a gold chunk counts when one of the top k retrieved chunks has its "
             "content, with 95 % intervals, beside the published rows; a fixed-k row is "
             "compared with theirs only on their own chunks)", "",
             "| run | Pass@5 | Pass@10 | Pass@20 |", "|---|---|---|---|"]
    for emb, strategy, run in sorted(set(zip(theirs.embedder, theirs.strategy, theirs.run))):
        got = anthropic_pass(hits[hits.run == run], bench)
        lines.append(f"| {emb}, {strategy.replace('upstream+', '')} | "
                     + " | ".join(mean_ci(got[f"pass@{k}"]) for k in (5, 10, 20)) + " |")
    for name, vals in ANTHROPIC_PUBLISHED.items():
        lines.append(f"| {name} (published) | " + " | ".join(f"{v:.2f}" for v in vals) + " |")
    pairs = []
    for emb in sorted(set(theirs.embedder)):
        run_of = {s: r for e, s, r in zip(code.embedder, code.strategy, code.run) if e == emb}
        if "upstream+stack" in run_of and CODE_CHUNKS in run_of:
            pairs.append((emb, run_of["upstream+stack"], run_of[CODE_CHUNKS]))
    if not pairs:
        return lines
    chars = {s: v for s, m, v in zip(code.strategy, code.metric, code.value)
             if m == "mean_chunk_chars"}
    lines += ["", f"Their chunks against ragkit's code chunks, `{CODE_CHUNKS}` (mean "
              f"{chars.get(CODE_CHUNKS, float('nan')):,.0f} characters, theirs "
              f"{chars.get('upstream+stack', float('nan')):,.0f}), at an equal budget: the same "
              "encoder and the same stack (its default fusion), points of pass@B and recall@B, "
              "theirs minus ragkit's, paired 95 % interval; the code chunker's size was tuned "
              "on the tune half, so only the held-out half is quoted", "",
              "| encoder | budget | pass@B, held-out | recall@B, held-out | n |",
              "|---|---|---|---|---|"]

    for emb, up, mine in pairs:
        budgets = sorted(set(scores[(scores.run == up) & (scores.metric == "pass@B")].budget)
                         & {512, 1024, 2048})
        for b in budgets:
            cells, n = [], 0
            for name in ("pass", "recall"):
                metric = Metric(name, budget=b)
                a, c = per_query(scores, up, metric), per_query(scores, mine, metric)
                d = versus(a, c, split="held-out")
                n = d.n
                cells.append(f"{diff_ci(d)} {verdict(d.low, d.high)}")
            lines.append(f"| {emb} | {b:,} | " + " | ".join(cells) + f" | {n} |")
    return lines


def timing_line(folder: Path | None = None) -> str:
    """How long the last full `make reproduce` took, from ``reproduce_times.json``."""
    import json

    path = (folder or PROJECT_ROOT / "results") / "reproduce_times.json"
    if not path.exists():
        return ""
    t = json.loads(path.read_text(encoding="utf-8"))
    if not t.get("total_s"):
        return ""
    slow = sorted(t["notebooks"].items(), key=lambda kv: -kv[1])[:3]
    extra = [k for k, v in t.get("env", {}).items() if v]
    mb = t.get("vector_cache_mb_at_start")
    cache = ("warm caches" if mb is None else "an empty vector cache" if mb == 0
             else f"{mb:,.0f} MB of vectors already cached")
    cpu = t.get("total_cpu_s")
    load = t.get("load_average_at_start")
    busy = (f" (the notebooks' kernels used {cpu / 60:.1f} CPU-min; load average {load:g} at "
            "the start)" if cpu else "")
    jobs = t.get("jobs") or 1  # records from before --jobs ran one at a time
    at_once = f", {jobs} notebooks at a time," if jobs > 1 else ""
    line = (f"The last full `make reproduce` took **{t['total_s'] / 60:.1f} min** on "
            f"{t['cpus']} CPUs{at_once} with {cache}"
            + (f" ({', '.join(extra)} set)" if extra else "")
            + busy + "; slowest: " + ", ".join(f"{k} {v / 60:.1f} min" for k, v in slow)
            + ".")
    # the last whole run on the other cache state, when one is recorded
    from .common import cache_state

    other = {"empty": "warm", "warm": "empty"}.get(cache_state(mb))
    o = t.get("by_cache", {}).get(other) if other else None
    if o:
        what = ("an empty vector cache (a fresh clone)" if other == "empty" else
                f"{o['vector_cache_mb_at_start']:,.0f} MB of vectors cached by an earlier run")
        o_jobs = o.get("jobs") or 1
        line += (f" With {what} it took **{o['total_s'] / 60:.1f} min** ({o['cpus']} CPUs, "
                 + (f"{o_jobs} notebooks at a time, " if o_jobs > 1 else "")
                 + f"{o['finished'][:10]}).")
    return line


def speed_section(folder: Path | None = None) -> str:
    """The encoder on this CPU, from ``bench_encoder_speed.jsonl`` (``ragkit bench
    encoder-speed``): texts/s per backend, the multiple of torch float32, the achieved GFLOP/s
    as a fraction of the float32 matmul rate measured in the same process, and each backend's
    drift from float32; then bf16's paired recall@B difference against float32 on the three
    benchmarks, from ``bench_precision.jsonl`` (``ragkit bench precision``). Empty where
    neither file is there."""
    from ..report.results import read_rows

    folder = folder or PROJECT_ROOT / "results"
    out = []
    speed = folder / "bench_encoder_speed.jsonl"
    if speed.exists():
        rows = read_rows(speed)
        by = {(r["strategy"], r["metric"]): r for r in rows}
        peak = by.get(("torch.mm 2048", "matmul_gflops"))
        labels = sorted(dict.fromkeys(r["strategy"] for r in rows
                                      if r["metric"] == "texts_per_s"),
                        key=lambda label: label != "torch")  # the reference first
        out.append("| encoder (all-MiniLM-L6-v2) | texts/s | × torch float32 | GFLOP/s "
                   "| of the float32 matmul rate | largest \\|Δ\\| vs float32 "
                   "| lowest cosine |")
        out.append("|---|---|---|---|---|---|---|")
        for label in labels:
            def get(metric, fmt, default="—"):
                r = by.get((label, metric))
                return default if r is None or r["value"] is None else format(r["value"], fmt)
            out.append(f"| {label} | {get('texts_per_s', '.1f')} | {get('speed_vs_torch', '.2f')}"
                       f" | {get('gflops', '.0f')} | {get('fraction_of_matmul_rate', '.0%')} "
                       f"| {get('max_abs_difference', '.1e', '0')} "
                       f"| {get('min_cosine_to_fp32', '.6f', '1')} |")
        first = by[(labels[0], "texts_per_s")] if labels else None
        if first and peak:
            out.append("")
            out.append(f"{first['params']['texts']} texts (Chroma's 250-token chunks), best of "
                       f"{first['params']['best_of']}, one process; float32 matmul in that "
                       f"process {peak['value']:.0f} GFLOP/s (torch.mm, 2,048²); measured "
                       f"{first['timestamp'][:10]} at commit {first['git_sha'][:7]}."
                       + (" A fraction above 100 % is bf16 outrunning the float32 rate (a CPU "
                          "that multiplies bfloat16 in hardware); every fraction is of the "
                          "float32 rate." if any(r["metric"] == "fraction_of_matmul_rate"
                                                 and r["value"] > 1 for r in rows) else ""))
    out += _threads_and_floor(folder, bool(out))
    drift = folder / "bench_precision.jsonl"
    if drift.exists():
        rows = [r for r in read_rows(drift) if r["value"] is not None]
        if out:
            out.append("")
        out += ["bf16 − float32 span recall@B, points, paired 95 % interval (fixed "
                "1,000/200-character chunks, dense search, all questions):", "",
                *_drift_table(rows)]
    out += _int8_lines(folder, bool(out))
    return "\n".join(out)


def _int8_lines(folder: Path, after: bool) -> list[str]:
    """The int8 measurement (``bench_int8.jsonl``, ``ragkit bench int8``) as README lines:
    its speed and batch drift against the float32 graph, and its paired recall@B drift; none
    where the file is not there."""
    from ..report.results import read_rows

    path = folder / "bench_int8.jsonl"
    if not path.exists():
        return []
    rows = read_rows(path)
    by = {(r["strategy"], r["metric"]): r for r in rows if r["experiment"] == "int8"}
    speed, cos = by.get(("onnx int8", "speed_vs_fp32")), by.get(("onnx int8", "min_cosine_to_fp32"))
    drift8, drift32 = by.get(("onnx int8", "batch_drift")), by.get(("onnx fp32", "batch_drift"))
    out = [""] if after else []
    if speed and cos and drift8 and drift32:
        runs8, runs32 = speed["params"]["int8_runs"], speed["params"]["fp32_runs"]
        out.append(f"int8 (`ragkit bench int8`: the float32 ONNX graph with its matrix "
                   f"products' weights in int8, activations quantized per batch), measured "
                   f"{speed['timestamp'][:10]}: **{speed['value']:.2f}×** the float32 graph's "
                   f"speed on {speed['params']['texts']} Chroma chunks (best of "
                   f"{len(runs8)} runs each: {min(runs8):.1f}–{max(runs8):.1f} s against "
                   f"{min(runs32):.1f}–{max(runs32):.1f} s), lowest cosine to float32 "
                   f"{cos['value']:.4f}; a text's vector moves by up to "
                   f"{drift8['value']:.1e} with the batch it shares (float32: "
                   f"{drift32['value']:.1e}), so its rows would depend on how a run's batches "
                   "fall. It is not offered as a setting.")
    drift = [r for r in rows if r["experiment"] == "int8_drift"]
    if drift:
        out += ["", "int8 − float32 span recall@B, points, paired 95 % interval (the same "
                "chunks and search as the bf16 table):", "", *_drift_table(drift)]
    return out if len(out) > int(after) else []


def _drift_table(rows: list[dict]) -> list[str]:
    """A paired recall@B drift (``bench precision``, ``bench int8``) as Markdown table lines:
    one row per benchmark with its n, one column per budget, each difference in points with its
    95 % interval."""
    from ..report.prose import ci

    budgets = sorted({r["budget"] for r in rows})
    cell = {(r["benchmark"], r["budget"]): r for r in rows}
    out = ["| benchmark | n | " + " | ".join(f"B = {b:,}" for b in budgets) + " |",
           "|---|---|" + "---|" * len(budgets)]
    for name in dict.fromkeys(r["benchmark"] for r in rows):
        cells = [f"{100 * c['value']:+.2f} {ci(c['params']['low'], c['params']['high'], 2)}"
                 if (c := cell.get((name, b))) else "—" for b in budgets]
        n = next(r["n_queries"] for r in rows if r["benchmark"] == name)
        out.append(f"| {name} | {n} | " + " | ".join(cells) + " |")
    return out


def _threads_and_floor(folder: Path, after: bool) -> list[str]:
    """Two kernels sharing the CPUs (``bench_threads.jsonl``) and the encoder's floor for a
    cold run (``bench_floor.jsonl``), as README lines; none where the files are not there."""
    from ..report.results import read_rows

    out: list[str] = []
    threads = folder / "bench_threads.jsonl"
    if threads.exists():
        rows = read_rows(threads)
        by = {(r["strategy"], r["metric"]): r for r in rows}
        labels = list(dict.fromkeys(r["strategy"] for r in rows))
        first = by[(labels[0], "seconds")]
        out += ["", f"Two notebook kernels encoding at once (`ragkit bench threads`, "
                f"{first['params']['texts']} texts split between them, "
                f"{first['params']['cpus']} CPUs; measured {first['timestamp'][:10]} at commit "
                f"{first['git_sha'][:7]}). `ragkit reproduce --jobs 2` gives each kernel its "
                "share of the CPUs:", "",
                "| arrangement | wall s | × one kernel alone | vectors identical to it |",
                "|---|---|---|---|"]
        for label in labels:
            out.append(f"| {label} | {by[(label, 'seconds')]['value']:.1f} "
                       f"| {by[(label, 'time_vs_alone')]['value']:.2f} "
                       f"| {'yes' if by[(label, 'vectors_identical')]['value'] == 1 else 'no'} |")
    floor = folder / "bench_floor.jsonl"
    if floor.exists():
        by = {r["metric"]: r for r in read_rows(floor)}
        rate, mins = by["tokens_per_s"], by["floor_minutes"]
        p = mins["params"]
        out += ["", f"The floor of a cold `make reproduce` (`ragkit bench floor`, after one on "
                f"a fresh clone): its cache holds {p['texts']:,} texts, {p['tokens']:,} tokens "
                f"as the encoder reads them (each cut at {p['limit']}); at {rate['value']:,.0f} "
                f"tokens/s ({mins['strategy']}, float32, {p['cpus']} CPUs, measured on Chroma "
                f"text cut to the same lengths) the encoder alone needs "
                f"{mins['value']:.1f} min, before any other step; measured "
                f"{mins['timestamp'][:10]} at commit {mins['git_sha'][:7]}."]
    from ..experiments.batch_order import readme_lines

    out += readme_lines(folder)
    out += _cold_runs(folder)
    return out[1:] if out and not after else out


def _cold_runs(folder: Path) -> list[str]:
    """The whole course's wall time at each precision, from ``reproduce_times.json`` (float32,
    the record: on an empty and on a warm vector cache) and ``bf16/reproduce_times.json`` with
    ``bf16/verdict_diff.json`` (the opt-in bf16 run and its check against the record); where no
    bf16 run is recorded, the reason the float32 run's machine gave for refusing it."""
    import json

    path = folder / "reproduce_times.json"
    if not path.exists():
        return []
    t = json.loads(path.read_text(encoding="utf-8"))
    runs = t.get("by_cache", {})

    def run(r: dict | None) -> str:
        if not r:
            return "not recorded"
        return (f"**{r['total_s'] / 60:.1f} min** ({r['cpus']} CPUs, {r.get('jobs') or 1} "
                f"notebooks at a time, load average {r.get('load_average_at_start')} at the "
                f"start, {r['finished'][:10]})")

    out = ["", f"The whole course in float32 (`make reproduce`, the record): from an empty vector "
           f"cache (a fresh clone) {run(runs.get('empty'))}; with the vectors cached "
           f"{run(runs.get('warm'))}."]
    bf16 = folder / "bf16" / "reproduce_times.json"
    check = folder / "bf16" / "verdict_diff.json"
    if bf16.exists() and check.exists():
        b = json.loads(bf16.read_text(encoding="utf-8"))
        found = json.loads(check.read_text(encoding="utf-8"))
        drift = "; ".join(f"{name} {c['largest']:+.2f} points" for name, c
                          in sorted(found["recall_at_b"].items()))
        n_diff = sum(len(v) for v in found["differing"].values())
        cold, cold32 = b.get("by_cache", {}).get("empty"), runs.get("empty")
        ratio = (f", {cold32['total_s'] / cold['total_s']:.2f}x as fast as float32 from an "
                 "empty cache" if cold and cold32 else "")
        out.append(f"In bfloat16 (`make reproduce PRECISION=bf16`, rows in `results/bf16/`): "
                   f"from an empty cache {run(cold)}{ratio}. Its check against the record "
                   f"(`ragkit verdict-diff results results/bf16`): largest paired recall@B "
                   f"difference {drift}; verdict, pick and closing lines that differ: {n_diff} "
                   f"of {sum(found['verdict_lines'].values())}, each listed with its numbers in "
                   f"`results/bf16/verdict_diff.json`.")
    elif t.get("bf16_here") == "available":
        out.append("No bfloat16 run is recorded yet. The record's machine has bfloat16 "
                   "arithmetic, so `make reproduce PRECISION=bf16` runs there.")
    elif t.get("bf16_here"):
        out.append("No bfloat16 run is recorded: `make reproduce PRECISION=bf16` refuses on a "
                   f"machine without bfloat16 arithmetic, and the record's machine said: "
                   f"\"{t['bf16_here']}\".")
    return out


def reliability_table(folder: Path | None = None) -> str:
    """The robustness suite's last recorded run (``ragkit robustness --record``, which ``make
    fuzz`` runs): per area what its cases check, how many were tried and passed, and the first
    remaining failure."""
    import json

    from .robustness import RECORD

    path = (folder or PROJECT_ROOT / "results") / RECORD
    if not path.exists():
        return "_Not recorded yet: run `make fuzz`._"
    run = json.loads(path.read_text(encoding="utf-8"))
    lines = ["| area | what a case checks | cases | passed | first remaining failure |",
             "|---|---|---|---|---|"]
    for r in run["areas"]:
        worst = " ".join(r["worst"].replace("|", "\\|").split())[:160] or "none"
        lines.append(f"| {r['area']} | {r['checks'] or '–'} | {r['tried']:,} | "
                     f"{r['tried'] - r['failed']:,} | {worst} |")
    a = run["args"]
    cmd = (f"ragkit robustness --fuzz-seconds {a['fuzz_seconds']:g} --big-line-mb "
           f"{a['big_line_mb']:g} --late-tokens {a['late_tokens']}"
           + (" --quick" if a.get("quick") else ""))
    failed = sum(r["failed"] for r in run["areas"])
    return "\n".join(lines) + (
        f"\n\n`{cmd}` ({run['chunkers']} chunkers, {run['seconds'] / 60:.1f} min, "
        f"{run['finished'][:10]}): {failed} failed. A case fails on a wrong number, a traceback, "
        "an unclear error or a user file changed unasked.")


def design_section(folder: Path | None = None) -> str:
    """The experiment design's tables (`ragkit.experiments.design`, ``ragkit bench design``): the decision
    guide's three questions, the same cells as ``results/decision_guide.md`` and notebook 07,
    then how much recall@B moves with each factor (the title's question)."""
    from ..experiments.design import effects, saved_runs
    from ..experiments.title import title_numbers
    from ..experiments.design_costs import load_costs
    from ..report import guide
    from ..report.results import load_results

    folder = folder or PROJECT_ROOT / "results"
    runs = saved_runs(folder)
    if not runs:
        return "_`ragkit bench design` has not been run: no one-factor comparisons yet._"
    found = effects(runs)
    parts = ["Each row changes one factor and holds the rest (`ragkit.experiments.design`; runs of "
             "`ragkit bench design`): points on the held-out half of the questions, paired "
             "95 % interval, n questions. The decision guide (`results/decision_guide.md`) and "
             "notebook 07 show the same cells."]
    samples = sorted({f.split(":", 1)[1] for r in runs for f in r.flags if f.startswith("sample:")
                      })
    if samples:
        parts[0] += (" FinanceBench's rows (notebook 10) measure a sample of its filings, whole "
                     "companies within a character budget (`--financebench-chars`): "
                     + "; ".join(samples) + ".")
    for title, (header, rows) in (("Which chunker, under your retrieval",
                                   guide.chunker_rows(found)),
                                  ("Which retrieval, on your chunks",
                                   guide.retrieval_rows(found)),
                                  ("Which encoder, on the same chunks and retrieval",
                                   guide.encoder_rows(found))):
        if rows:
            parts += [f"**{title}**", guide._md(header, rows)]
    costs = load_costs(load_results(folder))
    if costs:
        parts += ["**What each configuration costs** (`ragkit bench design --costs`)",
                  guide._md(*guide.cost_rows(costs))]
    parts += ["### The title, measured", title_text(title_numbers(runs))]
    return "\n\n".join(parts)


def _margin(r: dict, stage: str) -> str:
    m = r.get(f"margin_{stage}")
    return f"{100 * m[0]:+.1f} [{100 * m[1]:+.1f}, {100 * m[2]:+.1f}]" if m else "–"


RULE_WORDS = ("the chunker moves recall@B more than the retrieval does under both dense search "
              "and the stack")


def title_text(numbers: list[dict]) -> str:
    """The title question's table and its reading, from
    `ragkit.experiments.title.title_numbers`: per benchmark, budget and encoder, both
    movements, each margin with its interval, and the cell's state."""
    from ..experiments.title import counts

    def pts(r: dict, k: str) -> str:
        return f"{100 * r[k]:+.1f}" if k in r else "–"

    rows = [[r["benchmark"], f"{r['budget']:,}", r.get("encoder_name", "–"),
             pts(r, "chunker_dense"), pts(r, "chunker_stack"), pts(r, "first_stage"),
             _margin(r, "dense"), _margin(r, "stack"), r.get("n", "–"), pts(r, "encoder"),
             r.get("title", "–")] for r in numbers]
    n = counts(numbers)
    table = "\n".join(["| benchmark | budget | encoder | chunker, dense | chunker, stack | stack "
                       "on the same chunks | margin, dense [95 % CI] | margin, stack [95 % CI] "
                       "| n | EmbeddingGemma on the same chunks and retrieval | mostly "
                       "chunking? |", "|---|---|---|---|---|---|---|---|---|---|---|",
                       *("| " + " | ".join(map(str, r)) + " |" for r in rows)])
    return ("\"RAG quality is mostly chunking quality\" as a measured question about what reaches "
            "the model: how far recall@B moves (points, held-out half) when only the chunker "
            "changes (the best simple baseline, chosen on the tune half, minus the median one, "
            "under the same retrieval) and when only the retrieval changes (the stack minus "
            "dense search on the same chunks, median over the chunkers measured with that "
            "encoder). The margin is the first minus the second, with a 95 % bootstrap interval "
            "over the held-out questions (`ragkit.experiments.title`). The rule, fixed before "
            f"the runs were read: a cell is *supported* when {RULE_WORDS}, that is, when both "
            "margins' intervals lie above 0; *not supported* when either lies below 0; *not "
            "decided* when an interval holds 0. No answer was generated and scored above the "
            "answer floor, so this is retrieval's share, not a measured share of answer "
            "quality. The encoder column (another encoder minus MiniLM on the same chunks and "
            "retrieval, where `ragkit bench design --second-encoder` ran) is shown beside the "
            "rule, not part of it; a row per encoder answers the question for that encoder, "
            "where its simple baselines were measured.\n\n" + table
            + f"\n\nOf {sum(n.values())} benchmark × budget × encoder cells: "
            + ", ".join(f"{v} {k}" for k, v in n.items()) + ".")


def title_line(folder: Path | None = None) -> str:
    """The README's title and the line under it: the title question answered by the runs of
    ``ragkit bench design`` (`ragkit.experiments.title.title_numbers`), not assumed."""
    from ..experiments.design import REFERENCE_ENCODER, saved_runs
    from ..experiments.title import counts, title_numbers

    numbers = [r for r in title_numbers(saved_runs(folder or PROJECT_ROOT / "results"))
               if "title" in r]
    if not numbers:
        return ("# ragkit — is what reaches the model mostly chunking?\n\n"
                "_Measured by `ragkit bench design`; not run yet._")
    n = counts(numbers)
    title = ("is what reaches the model mostly chunking? Supported in "
             f"{n['supported']} of {len(numbers)} benchmark × budget cells, not supported in "
             f"{n['not supported']}, "
             f"not decided in {n['not decided']}")
    encoders = sorted({r.get("encoder_name", "–") for r in numbers})
    where = sorted(f"{r['benchmark']} at {r['budget']:,}" for r in numbers
                   if r["title"] == "supported")
    return (f"# ragkit — {title}\n\n**Measured, not assumed:** the rule asks whether "
            f"{RULE_WORDS} (recall@B on held-out questions, retrieval only: no answer was "
            f"scored). Of {len(numbers)} benchmark × budget cells ({', '.join(encoders)}), "
            + ", ".join(f"{v} {k}" for k, v in n.items())
            + (f" (supported: {', '.join(where)})" if where else "")
            + "; *not decided* means the 95 % interval of the margin holds 0. "
            "[The title, measured](docs/results.md#the-title-measured) has the numbers."
            + plain_reading([r for r in numbers
                             if r.get("encoder_name", REFERENCE_ENCODER) == REFERENCE_ENCODER]))


def plain_reading(numbers: list[dict]) -> str:
    """The title table in plain words, per benchmark: the range of points of recall@B that the
    chunker moved (best simple baseline minus the median one, under dense search and under
    the stack) and that the retrieval moved (the stack minus dense on the same chunks, the
    median over the chunkers), over the budgets measured.

    >>> text = plain_reading([{"benchmark": "a", "budget": 512, "chunker_dense": 0.02,
    ...                        "chunker_stack": -0.001, "first_stage": 0.09}])
    >>> "(budget 512 tokens)" in text, "moved it by -0.1 to +2.0 points on a;" in text
    (True, True)
    >>> text.endswith("moved it by +9.0 on a.")
    True
    """
    def span(values: list[float]) -> str:
        if not values:
            return "–"
        low, high = f"{100 * min(values):+.1f}", f"{100 * max(values):+.1f}"
        return low if low == high else f"{low} to {high}"

    benches = sorted({r["benchmark"] for r in numbers})
    chunker, stage = [], []
    for bench in benches:
        mine = [r for r in numbers if r["benchmark"] == bench]
        chunker.append(span([r[k] for r in mine for k in ("chunker_dense", "chunker_stack")
                             if k in r]) + f"{' points' if not chunker else ''} on {bench}")
        stage.append(span([r["first_stage"] for r in mine if "first_stage" in r])
                     + f" on {bench}")

    def listed(parts: list[str]) -> str:
        return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]

    budgets = sorted({r["budget"] for r in numbers})
    which = (f"budget {budgets[0]:,}" if len(budgets) == 1 else
             "budgets " + ", ".join(f"{b:,}" for b in budgets))
    return (f"\n\nIn plain words, recall@B on held-out questions with MiniLM ({which} tokens): "
            "picking the "
            f"best simple chunker instead of the median one moved it by {listed(chunker)}; "
            "putting the stack in place of dense search on the same chunks (the median over "
            f"the chunkers) moved it by {listed(stage)}.")


def generated() -> str:
    parts = [results_table(), "### One factor at a time", design_section(),
             "### Targets and Anthropic's chunks", wins_table(), "### Claim check",
             claims_table()]
    return "\n\n".join(p for p in parts if p)


def pages(readme: Path) -> list[Path]:
    """The files whose markers `update_readme` fills: the README and the ``docs/*.md`` pages
    beside it."""
    folder = readme.parent / DOCS
    return [readme] + (sorted(folder.glob("*.md")) if folder.is_dir() else [])


def update_readme(readme: Path = PROJECT_ROOT / "README.md") -> bool:
    """Replace what is between each pair of markers, in the README or whichever ``docs/`` page
    beside it holds them; returns True if any file changed. The results and reliability
    markers must be somewhere; the others are filled where they are."""
    from .readme_scale import SCALE, scale_section

    files = pages(readme)
    texts = {f: f.read_text(encoding="utf-8") for f in files}
    new = dict(texts)
    for (start, end), make in (((START, END), generated), (RELIABILITY, reliability_table),
                               (TITLE, title_line), (SPEED, speed_section),
                               (SCALE, scale_section), (TIMING, timing_line)):
        where = [f for f in files if start in texts[f] and end in texts[f]]
        if not where:
            if (start, end) in ((START, END), RELIABILITY):
                raise ValueError(f"{readme} and its {DOCS}/ pages: markers {start} / {end} "
                                 "are missing")
            continue  # a README without these markers keeps its own title / speed text
        made = make()
        for f in where:
            new[f] = re.sub(re.escape(start) + r".*?" + re.escape(end),
                            lambda _: f"{start}\n{made}\n{end}", new[f], flags=re.S)
    changed = [f for f in files if new[f] != texts[f]]
    for f in changed:
        f.write_text(new[f], encoding="utf-8")
    return bool(changed)


def main(argv: list[str] | None = None, prog: str = "ragkit readme") -> int:
    p = argparse.ArgumentParser(prog=prog, description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--readme", type=Path, default=PROJECT_ROOT / "README.md")
    args = p.parse_args(argv)
    changed = update_readme(args.readme)
    print(f"{args.readme} and its {DOCS}/ pages: generated sections "
          f"{'updated' if changed else 'already up to date'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
