"""The decision guide: three questions answered apart, each from one-factor comparisons.

Written from the runs of ``ragkit bench design`` (`ragkit.experiments.design`), never typed:

1. **Which chunker, under your retrieval?** For each benchmark, first stage (dense; ragkit's
   stack) and budget: ragkit's default chunker against the best of the seven simple
   baselines measured under that same retrieval and encoder (chosen on the tune half).
2. **Which retrieval, on your chunks?** On the router's chunks and on the best baseline's:
   the stack against dense search, and the cross-encoder against none where it was run.
3. **Which encoder?** Another encoder against MiniLM on the same chunks and retrieval, where
   the runs include one.

Every difference is quoted on the held-out half of the questions (which shares no gold unit
and no gold text with the tune half, `ragkit.evaluate.splits`) with its paired 95 % interval and n;
the router is marked *tuned* (its prose size and code chunker were chosen on tune halves).
A pick is the treated configuration when its interval lies above 0, the reference when it
lies below, and otherwise the cheaper of the two ("no measurable difference"). Beside the
picks, what each configuration costs as ``ragkit bench design --costs`` measured it: chunking
CPU seconds, the dense index's size and single-query latency p50 / p95.

`markdown` renders it, `write` saves it as ``results/decision_guide.md``. The functions take
the `ragkit.experiments.design.Effect` objects the caller computed (`effects(runs)`): the
report stage reads experiments' results and never imports the experiments stage.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .prose import diff_ci

BUDGETS = (512, 1024, 2048)  # as ragkit.experiments.design.BUDGETS (a test checks)

NO_DIFFERENCE = "no measurable difference"
TUNED = "router"  # the chunker whose settings were tuned (on tune halves)


def _pick(e: Any, cheaper: str) -> str:
    if e.verdict == "beats":
        from .decisions import weak_pick

        # as the closing's calls read it: a win against a weak pick is not counted
        weak = e.factor == "chunker" and weak_pick(e)
        return e.treated.label + (" (ahead of a weak pick: not counted as a win)" if weak else "")
    if e.verdict == "loses":
        return e.base.label
    if e.verdict == "incomplete":
        return "undecided (baselines missing)"
    return f"{NO_DIFFERENCE}: {cheaper}"


def questions(found: Sequence[Any]) -> dict[str, list[Any]]:
    """The effects each question reads, in a fixed order (benchmark, first stage, budget)."""
    def order(e: Any):
        return (e.benchmark, e.treated.chunker, e.treated.first_stage, e.treated.reranker,
                e.budget)

    chunker = [e for e in found if e.factor == "chunker" and not e.treated.simple
               and e.treated.reranker == "none"]
    retrieval = [e for e in found if e.factor in ("first_stage", "reranker")
                 and (not e.treated.simple or any(
                     c.base.chunker == e.treated.chunker and c.budget == e.budget
                     and c.benchmark == e.benchmark and c.base.first_stage == "dense"
                     for c in chunker))]
    encoder = [e for e in found if e.factor == "encoder"]
    return {"chunker": sorted(chunker, key=order), "retrieval": sorted(retrieval, key=order),
            "encoder": sorted(encoder, key=order)}


def _label(cfg) -> str:
    return cfg.label + (" (tuned)" if cfg.chunker == TUNED else "")


def chunker_rows(found: Sequence[Any]) -> tuple[list[str], list[list[Any]]]:
    header = ["benchmark", "retrieval", "budget", "ragkit's chunker",
              "best simple baseline (tune half)", "recall@B diff", "pass@B diff", "n", "encoder",
              "pick", "highest baseline on the held-out half (recall@B)"]
    rows = [[e.benchmark, e.treated.first_stage, e.budget, _label(e.treated), e.base.chunker,
             diff_ci(e.recall), diff_ci(e.pass_), e.recall.n, e.treated.encoder,
             _pick(e, e.base.chunker), _leader(e)] for e in questions(found)["chunker"]]
    return header, rows


def chunker_grid(found: Sequence[Any]):
    """Every chunker cell the opening answer counts, one row per benchmark, retrieval and
    encoder and one column per budget: the held-out recall@B difference against the tune half's pick, with
    its interval, marked ``ahead`` or ``behind`` where the interval excludes 0 (and ``weak
    pick`` where `decisions.weak_pick` says the win is against one). A DataFrame."""
    import pandas as pd

    from .decisions import weak_pick
    from .prose import diff_ci

    cells = {}
    for e in questions(found)["chunker"]:
        if not e.complete:
            continue
        mark = (" ahead (weak pick)" if e.verdict == "beats" and weak_pick(e) else
                " ahead" if e.verdict == "beats" else " behind" if e.verdict == "loses" else "")
        key = (e.benchmark, e.treated.first_stage, e.treated.encoder)
        cells.setdefault(key, {})[f"{e.budget:,} tokens"] = (
            diff_ci(e.recall) + mark)
    grid = pd.DataFrame.from_dict(cells, orient="index").fillna("–")
    grid.index = pd.MultiIndex.from_tuples(grid.index,
                                           names=["benchmark", "retrieval", "encoder"])
    return grid[sorted(grid.columns, key=lambda c: int(c.split()[0].replace(",", "")))]


def pick_side(pick: str) -> str:
    """Which way a chunker pick (`chunker_rows`' ``pick`` column) reads: ragkit's chunker ahead,
    a baseline ahead, no difference, or undecided.

    >>> pick_side("router+stack"), pick_side("no measurable difference: fixed_chars(1000/200)")
    ('ragkit ahead', 'no difference')
    """
    if pick.startswith(NO_DIFFERENCE):
        return "no difference"
    if pick.startswith("undecided"):
        return "undecided"
    return "ragkit ahead" if pick.startswith(TUNED) else "baseline ahead"


def pick_changes(found_a: Sequence[Any], found_b: Sequence[Any]):
    """The chunker cells whose pick differs between two readings of the design (`effects` on
    the held-out half and on all questions, say): a DataFrame of benchmark, retrieval, budget,
    encoder and both picks (``pick a``, ``pick b``), with ``turned`` True where the verdict itself
    changes side (`pick_side`), not only the baseline it names; and the number of cells."""
    import pandas as pd

    keys = ["benchmark", "retrieval", "budget", "encoder"]
    ha, ra = chunker_rows(found_a)
    hb, rb = chunker_rows(found_b)
    both = pd.DataFrame(ra, columns=ha)[keys + ["pick"]].merge(
        pd.DataFrame(rb, columns=hb)[keys + ["pick"]], on=keys, suffixes=(" a", " b"))
    changed = both[both["pick a"] != both["pick b"]].reset_index(drop=True)
    changed["turned"] = [pick_side(a) != pick_side(b)
                         for a, b in zip(changed["pick a"], changed["pick b"])]
    return changed, len(both)


def _leader(e: Any) -> str:
    """The held-out half's own leader among the baselines, with ragkit's chunker's recall
    beside it: a reader sees when a baseline the tune half did not pick does as well."""
    if not e.split_leader:
        return "–"
    name, value = e.split_leader
    out = f"{name} ({100 * value:.1f}; ragkit {100 * e.recall.mean_a:.1f})"
    if e.split_rank:  # the tune half's pick, ranked on the held-out half itself
        rank, of = e.split_rank
        where = ("its leader too" if rank == 1 else
                 "the median" if rank == (of + 1) // 2 and of % 2 else f"{rank} of {of}")
        out += f"; the tune half's pick is {where} there"
    return out


def retrieval_rows(found: Sequence[Any]) -> tuple[list[str], list[list[Any]]]:
    header = ["benchmark", "chunks", "budget", "treated", "against", "recall@B diff",
              "pass@B diff", "n", "encoder", "pick"]
    rows = [[e.benchmark, e.treated.chunker, e.budget,
             e.treated.first_stage + ("" if e.treated.reranker == "none"
                                      else f"+{e.treated.reranker}"),
             e.base.first_stage + ("" if e.base.reranker == "none" else f"+{e.base.reranker}"),
             diff_ci(e.recall), diff_ci(e.pass_), e.recall.n, e.treated.encoder,
             _pick(e, e.base.label)] for e in questions(found)["retrieval"]]
    return header, rows


def encoder_rows(found: Sequence[Any]) -> tuple[list[str], list[list[Any]]]:
    header = ["benchmark", "configuration", "budget", "encoder", "against", "recall@B diff",
              "pass@B diff", "n", "pick"]
    rows = [[e.benchmark, e.treated.label, e.budget, e.treated.encoder, e.base.encoder,
             diff_ci(e.recall), diff_ci(e.pass_), e.recall.n, _pick(e, e.base.encoder)]
            for e in questions(found)["encoder"]]
    return header, rows


def cost_rows(costs: Sequence[dict[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    header = ["benchmark", "configuration", "chunks", "chunking CPU s", "dense index MB",
              "query p50 ms", "query p95 ms", "queries timed"]
    rows = [[c["benchmark"], c["configuration"], c["chunks"], f"{c['chunk_cpu_s']:.1f}",
             f"{c['index_mb']:.1f}", f"{c['p50_ms']:.1f}", f"{c['p95_ms']:.1f}", c["n_timed"]]
            for c in costs]
    return header, rows


def _md(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    def cell(v: Any) -> str:
        return f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else str(v)

    return "\n".join(["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
                      *("| " + " | ".join(cell(v) for v in r) + " |" for r in rows)])


def sections(found: Sequence[Any], level: int = 2, which: Sequence[int] = (1, 2, 3)) -> str:
    """The guide's three questions, each a heading and its table (or why it is empty), from
    the effects given: all of them for the guide file, or those at one budget for a notebook
    (`markdown`'s tables, fewer rows); `which` keeps some of the questions (1, 2, 3), so a
    notebook can show one table per cell."""
    parts: list[str] = []
    for i, (title, (header, rows), empty) in enumerate((
            ("1. Which chunker, under your retrieval?", chunker_rows(found),
             "No chunker comparison in these runs."),
            ("2. Which retrieval, on your chunks?", retrieval_rows(found),
             "No retrieval comparison in these runs."),
            ("3. Which encoder?", encoder_rows(found),
             "Not measured by `ragkit bench design` (MiniLM only). `ragkit bench code` with "
             "`RAGKIT_GEMMA_DIR` compares EmbeddingGemma with MiniLM on Anthropic's set, on "
             "the same chunks and stack (docs/results.md, Anthropic section).")), 1):
        if i in which:
            parts += [f"{'#' * level} {title}", "", _md(header, rows) if rows else empty, ""]
    return "\n".join(parts)


def costs_compared(costs: Sequence[dict[str, Any]],
                   found: Sequence[Any] | None = None) -> list[dict[str, Any]]:
    """The measured costs of every configuration, or (with `found`) of those the guide's rows
    for these effects compare, per benchmark."""
    named = None if found is None else {
        (e.benchmark, c.label) for es in questions(found).values() for e in es
        for c in (e.treated, e.base)}
    return [c for c in costs if named is None or (c["benchmark"], c["configuration"]) in named]


def costs_table(costs: Sequence[dict[str, Any]], found: Sequence[Any] | None = None) -> str:
    """`costs_compared` as a Markdown table."""
    keep = costs_compared(costs, found)
    return _md(*cost_rows(keep)) if keep else "Not measured (`ragkit bench design --costs`)."


def markdown(found: Sequence[Any], costs: Sequence[dict[str, Any]] = ()) -> str:
    """The guide as Markdown: the three questions, then the costs."""
    parts = ["# Decision guide", "",
             "Generated by `ragkit.guide` from the runs of `ragkit bench design` (notebook 07 "
             "shows the same tables). Each row changes one factor and holds the others "
             "fixed; differences are points on the held-out half of the questions (no "
             "gold unit or gold text shared with the tune half), paired 95 % bootstrap "
             "interval, n questions, at budgets of "
             + " / ".join(f"{b:,}" for b in BUDGETS) + " cl100k tokens reaching the model. "
             "A pick is the better side when the interval excludes 0; otherwise the cheaper "
             "side. *(tuned)*: the router's settings were chosen on tune halves. The best "
             "baseline is chosen on the tune half; the last column names the baseline that "
             "leads on the held-out half itself, for reference (choosing it there would favour "
             "it).", ""]
    parts += [sections(found)]
    line = reranker_line(found, costs)
    if line:
        parts += [line, ""]
    parts += ["## What each configuration costs", ""]
    if costs:
        parts += [_md(*cost_rows(costs)), "",
                  "Chunking CPU seconds over the whole benchmark; the dense index is float32 "
                  "vectors (windows included); latency is one question at a time, top 10, "
                  "after one warm-up query, on this machine (2 CPUs).", ""]
    else:
        parts += ["Not measured in these results (`ragkit bench design --costs`).", ""]
    return "\n".join(parts)


def write(text: str, path: str | Path | None = None) -> Path:
    """Save the guide (default ``<results dir>/decision_guide.md``) and return the path."""
    from ..cache import atomic_write_text
    from ..config import get_settings

    path = Path(path or get_settings().results_dir / "decision_guide.md")
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, text + "\n")
    return path


def reranker_line(found: Sequence[Any], costs: Sequence[dict[str, Any]] = ()) -> str:
    """Where the cross-encoder helps, where it does not and where it hurts, with what it costs:
    its effects (against the same stack on the same chunks) grouped by verdict, each as
    benchmark and budgets, and the measured single-question latency with and without it."""
    rr = [e for e in questions(found)["retrieval"] if e.factor == "reranker"]
    if not rr:
        return ""
    groups: dict[str, dict[str, list[int]]] = {}
    for e in rr:
        groups.setdefault(e.verdict, {}).setdefault(e.benchmark, []).append(e.budget)
    said = []
    for verdict in ("beats", "no measurable difference", "loses"):
        where = groups.get(verdict)
        if where:
            said.append(f"{verdict} on " + "; ".join(
                f"{b} at {', '.join(f'{x:,}' for x in sorted(v))}"
                for b, v in sorted(where.items())))
    missing = sorted({e.benchmark for e in found} - {e.benchmark for e in rr})
    timed, measured = [], {e.benchmark for e in rr}
    for c in costs:
        if c["configuration"].endswith("+cross-encoder") and c["benchmark"] in measured:
            base = next((d for d in costs if d["benchmark"] == c["benchmark"]
                         and d["configuration"] == c["configuration"][:-len("+cross-encoder")]),
                        None)
            if base:
                timed.append(f"{c['p50_ms']:.1f} ms against {base['p50_ms']:.1f} ms on "
                             f"{c['benchmark']}")
    cost = (" Single-question latency p50 with it against without it (this machine): "
            + "; ".join(sorted(timed)) + ".") if timed else ""
    return ("**The cross-encoder, where it helps and where it does not** (against the same "
            "stack on the same chunks, held-out half, recall@B): " + "; ".join(said) + "."
            + cost + (f" Not measured on {', '.join(missing)}." if missing else "")
            + " Turn it on only for documents like those where it beats, and only if the "
            "latency is affordable.")

