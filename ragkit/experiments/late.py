"""Notebook 05's experiment: the same chunk spans embedded alone (naive) and late
(`ragkit.embed.late`), compared on per-query metrics with paired intervals.

- `naive_vs_late`: one benchmark and chunker, both modes, one row each (and the runs recorded);
- `late_vs_naive`: those rows paired, late − naive with its 95 % interval per configuration;
- `late_quality_table` / `late_quality_sentences`: ``ragkit bench late-quality``'s paired rows
  as one table, and one sentence per encoder and metric; `late_quality_losses` says where late
  chunking loses there and what the encoder's other settings show beside each loss;
- `windowed_documents`: how many documents a run encoded in several windows, from its flags.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ..embed.encoders import Embedder
from ..retrieve.late import LateDenseRetriever

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


LATE_METRICS = ("recall", "iou", "pass@k", "mrr@k", "ndcg@10")


def naive_vs_late(bench, embedder: Embedder, chunker, *, k: int = 5, window: int | None = None,
                  overlap: int | None = None, tag: str = "", recorder=None,
                  metrics: Sequence[str] = LATE_METRICS) -> list[dict[str, Any]]:
    """The same chunk spans of `bench`, embedded alone (``naive``) and late (``late``), one row
    each: benchmark, chunker, mode, embedder, the mean of each of `metrics`, the flags, the
    number of documents, ``per_query`` (the run's per-query DataFrame, for paired intervals)
    and ``hits`` (query id -> ranked hits). With a `recorder`, both runs are recorded
    (experiment ``late``, or ``late sweep`` when `tag` is set)."""
    from .pipeline import run_experiment

    chunks = chunker.chunk_all(bench.documents)
    late = LateDenseRetriever(chunks, bench.documents, embedder, window=window, overlap=overlap)
    rows = []
    for mode, retriever in (("naive", "dense"), ("late", late)):
        out = run_experiment(bench, embedder=embedder, k=k, chunks=chunks, retriever=retriever,
                             label=f"{mode} · {chunker.label}{tag}")
        if recorder is not None:
            out.record(recorder, experiment="late" + (" sweep" if tag else ""),
                       embedder=embedder.name, k=k, chunker=chunker.label, mode=mode,
                       window=window, overlap=overlap)
        rows.append({**out.row(metrics, strict=True, benchmark=bench.name,
                               chunker=chunker.label, mode=mode, embedder=embedder.name),
                     "documents": len(bench.documents), "per_query": out.per_query,
                     "hits": out.hits})
    return rows


def windowed_documents(flags: str) -> int:
    """How many documents late chunking encoded in several windows, read from a row's flags
    (``late:windowed_docs:N``; 0 when absent)::

        >>> windowed_documents("late:prefix_ignored:1;late:windowed_docs:52")
        52
    """
    for flag in flags.split(";"):
        name, _, n = flag.rpartition(":")
        if name == "late:windowed_docs" and n.isdigit():
            return int(n)
    return 0


def late_vs_naive(rows: Sequence[Mapping[str, Any]], metric: str = "ndcg@10"):
    """One row per (benchmark, chunker, embedder) of `naive_vs_late` rows: naive and late
    means of `metric`, the paired difference late − naive with its 95 % interval, n, wins /
    losses / ties, and ``comparison`` (the `ragkit.evaluate.Comparison`)."""
    import pandas as pd

    from ..evaluate.runs import versus

    runs: dict[tuple, dict[str, Any]] = {}
    for r in rows:
        runs.setdefault((r["benchmark"], r["chunker"], r["embedder"]), {})[r["mode"]] = r
    out = []
    for (bench, chunker, embedder), by in runs.items():
        if not {"naive", "late"} <= by.keys():
            continue
        late = by["late"]["per_query"].set_index("query_id")[metric]
        naive = by["naive"]["per_query"].set_index("query_id")[metric]
        c = versus(late, naive, on=late.index)  # naive scored every question late did
        out.append({"benchmark": bench, "chunker": chunker, "embedder": embedder,
                    "naive": c.mean_b, "late": c.mean_a, "late − naive": c.diff,
                    "low": c.low, "high": c.high, "n": c.n, "wins": c.wins,
                    "losses": c.losses, "ties": c.ties, "comparison": c})
    return pd.DataFrame(out)


def late_quality_table(rows) -> "pd.DataFrame":
    """The paired rows of ``ragkit bench late-quality`` (``results/bench_late_quality.jsonl``,
    experiment ``late_quality_paired``) as one table: per encoder, metric (the glossary's name,
    with the question subset it was scored on), window (``limit``: the encoder's own) and
    pooling of the special tokens, late − naive with its 95 % interval, wins / losses / ties, and the verdict read
    from the interval (`ragkit.report.verdict`: late "beats", "loses" or "no measurable
    difference" against naive). `rows` is `ragkit.report.load_results()` or any frame with
    those columns; rows of other experiments are ignored.

    >>> import pandas as pd
    >>> row = dict(notebook="bench_late_quality", experiment="late_quality_paired",
    ...            embedder="gemma", metric="diff_ndcg@10", value=-0.04,
    ...            params={"window": None, "specials": "edges", "subset": "all",
    ...                    "ci95": ["-0.07", "-0.006"], "wins": 48, "losses": 74, "ties": 111})
    >>> late_quality_table(pd.DataFrame([row]))[["window", "verdict"]].values.tolist()
    [['limit', 'loses']]
    """
    import pandas as pd

    from ..report.prose import DISPLAY_NAMES, verdict

    cols = ["embedder", "metric", "questions", "window", "pooling", "late − naive", "low",
            "high", "wins", "losses", "ties", "verdict"]
    if not {"experiment", "metric", "params"} <= set(rows.columns):
        return pd.DataFrame(columns=cols)
    sub = rows[(rows.experiment == "late_quality_paired") & rows.metric.str.startswith("diff_")]
    if "notebook" in sub:
        sub = sub[sub.notebook == "bench_late_quality"]
    out = []
    for r in sub.itertuples():
        p = r.params if isinstance(r.params, dict) else {}
        low, high = (float(x) for x in p.get("ci95", ("nan", "nan")))
        metric = r.metric.removeprefix("diff_")
        out.append({"embedder": r.embedder, "metric": DISPLAY_NAMES.get(metric, metric),
                    "questions": p.get("subset", "all"),
                    "window": "limit" if p.get("window") is None else int(p["window"]),
                    "pooling": p.get("specials", ""), "late − naive": float(r.value),
                    "low": low, "high": high, "wins": p.get("wins"), "losses": p.get("losses"),
                    "ties": p.get("ties"), "verdict": verdict(low, high)})
    df = pd.DataFrame(out, columns=cols)
    order = {"limit": -1}
    return df.sort_values(["embedder", "metric", "pooling", "window"],
                          key=lambda s: s.map(lambda v: order.get(v, v)) if s.name == "window"
                          else s).reset_index(drop=True)


_GROUP = ["embedder", "metric", "questions"]


def late_quality_largest(table) -> "pd.DataFrame":
    """Per (encoder, metric, question subset) of `late_quality_table`, the row of the
    (window, pooling) setting with the largest |late − naive|: the setting each of
    `late_quality_sentences` names."""
    if table.empty:
        return table
    largest = table.groupby(_GROUP, sort=False)["late − naive"]
    return table.loc[largest.apply(lambda d: d.abs().idxmax()).tolist()]


def late_quality_sentences(table) -> list[str]:
    """One sentence per (encoder, metric) of `late_quality_table`, its direction counted from
    the verdicts: in how many (window, pooling) settings late chunking beats naive, loses to
    it, or shows no measurable difference, and the setting with the largest difference.

    >>> import pandas as pd
    >>> t = pd.DataFrame({"embedder": ["gemma"] * 2, "metric": ["ndcg@10"] * 2,
    ...                   "questions": ["all"] * 2, "window": ["limit", 128],
    ...                   "pooling": ["edges"] * 2, "late − naive": [-0.04, 0.017],
    ...                   "low": [-0.07, -0.009], "high": [-0.006, 0.044],
    ...                   "verdict": ["loses", "no measurable difference"]})
    >>> late_quality_sentences(t)[0]
    'gemma, ndcg@10 (all questions), late − naive over 2 (window, pooling) settings: late chunking beats naive in 0, loses in 1, no measurable difference in 1; the largest difference, -4.0 points [-7.0, -0.6], is at window limit with edges pooling.'
    """
    from ..report.prose import ci

    out = []
    tops = late_quality_largest(table).to_dict("records")
    for ((embedder, metric, questions), g), top in zip(table.groupby(_GROUP, sort=False), tops):
        counts = g.verdict.value_counts()
        out.append(
            f"{embedder}, {metric} ({questions.replace('_', '-')} questions), late − naive over "
            f"{len(g)} (window, pooling) settings: late chunking beats naive in "
            f"{counts.get('beats', 0)}, loses in {counts.get('loses', 0)}, no measurable "
            f"difference in {counts.get('no measurable difference', 0)}; the largest "
            f"difference, {100 * top['late − naive']:+.1f} points {ci(top['low'], top['high'])}, "
            f"is at window {top['window']} with {top['pooling']} pooling.")
    return out


def late_quality_means(rows) -> "pd.DataFrame":
    """The per-setting means ``ragkit bench late-quality`` saved (experiment ``late_quality``):
    encoder, metric (the glossary's name), mode, window (``limit``: the encoder's own; None for
    the naive run), pooling and value."""
    import pandas as pd

    from ..report.prose import DISPLAY_NAMES

    cols = ["embedder", "metric", "mode", "window", "pooling", "value"]
    if not {"experiment", "metric", "params"} <= set(rows.columns):
        return pd.DataFrame(columns=cols)
    sub = rows[(rows.experiment == "late_quality") & (rows.get("notebook") == "bench_late_quality")]
    out = []
    for r in sub.itertuples():
        p = r.params if isinstance(r.params, dict) else {}
        naive = p.get("mode") == "naive"
        out.append({"embedder": r.embedder, "metric": DISPLAY_NAMES.get(r.metric, r.metric),
                    "mode": p.get("mode"), "value": float(r.value),
                    "window": None if naive else "limit" if p.get("window") is None
                    else int(p["window"]), "pooling": None if naive else p.get("specials")})
    return pd.DataFrame(out, columns=cols)


def _window_order(w) -> float:
    return float("inf") if w == "limit" else float(w)


def late_quality_losses(table, means) -> list[str]:
    """One sentence per (encoder, metric) of `late_quality_table` on which late chunking loses
    in some (window, pooling) setting: each losing setting with its naive and late means
    (`late_quality_means`) and interval; then, beside the largest loss, the same pooling at
    every window, smallest first, and whether late − naive falls as the window grows (each
    token has read more of its document), said as a pattern (the windows are not compared
    with each other), and the other poolings at the same window."""
    from ..report.prose import ci

    out = []
    for (embedder, metric, questions), g in table.groupby(_GROUP, sort=False):
        g = g.rename(columns={"late − naive": "diff"})
        lost = g[g.verdict == "loses"]
        if lost.empty:
            continue
        m = means[(means.embedder == embedder) & (means.metric == metric)]
        naive = m[m["mode"] == "naive"].value

        def late(r, m=m):
            v = m[(m["mode"] == "late") & (m.window == r.window) & (m.pooling == r.pooling)].value
            return f"{v.iloc[0]:.1%} late" if len(v) else "late"

        base = f" against {naive.iloc[0]:.1%} naive" if len(naive) else ""
        where = "; ".join(f"window {r.window} with {r.pooling} pooling, {late(r)}{base} "
                          f"({100 * r.diff:+.1f} points {ci(r.low, r.high)})"
                          for r in lost.itertuples())
        worst = lost.loc[lost["diff"].idxmin()]
        same = g[g.pooling == worst.pooling].sort_values("window", key=lambda s:
                                                         s.map(_window_order))
        diffs = same["diff"].tolist()
        trend = ("falls as the window grows" if all(a > b for a, b in zip(diffs, diffs[1:]))
                 else "rises as the window grows" if all(a < b for a, b in zip(diffs, diffs[1:]))
                 else "does not move one way with the window")
        steps = ", ".join(f"{100 * d:+.1f} at {w}" for w, d in zip(same.window, diffs))
        other = g[(g.window == worst.window) & (g.pooling != worst.pooling)]
        others = "; ".join(f"with {r.pooling} pooling at window {r.window} it is "
                           f"{100 * r.diff:+.1f} points {ci(r.low, r.high)} ({r.verdict}), "
                           + ("a smaller loss" if worst["diff"] < r.diff < 0 else "no loss"
                              if r.diff >= 0 else "a loss as large or larger")
                           for r in other.itertuples())
        decided = int((same.verdict != "no measurable difference").sum())
        out.append(f"{embedder}, {metric} ({questions.replace('_', '-')} questions): late "
                   f"chunking loses at {where}. With {worst.pooling} pooling, late − naive is "
                   f"{steps} (window in tokens; limit is the encoder's own): over these "
                   f"{len(diffs)} windows it {trend}, but {decided} of the {len(diffs)} "
                   + ("intervals excludes" if decided == 1 else "intervals exclude")
                   + " 0 and no two windows are compared with each other, so "
                   "how much the window itself matters is a pattern to test, not a measured "
                   "effect" + (f"; {others}." if others else "."))
    return out


def late_quality_comparison(table, means, embedder: str, metric: str, window="limit",
                            pooling: str = "edges"):
    """One saved setting of ``ragkit bench late-quality`` (`late_quality_table` row and its
    `late_quality_means`) as a `ragkit.evaluate.Comparison`, late against naive: the means, the
    paired difference with its interval, wins / losses / ties, n their sum; None when the rows
    lack that setting. A closing's `Decision` is built from it."""
    from ..evaluate.stats import Comparison

    t = table[(table.embedder == embedder) & (table.metric == metric)
              & (table.window == window) & (table.pooling == pooling)]
    if t.empty:
        return None
    r = t.iloc[0]
    m = means[(means.embedder == embedder) & (means.metric == metric)]
    naive = m[m["mode"] == "naive"].value
    late = m[(m["mode"] == "late") & (m.window == window) & (m.pooling == pooling)].value
    diff = float(r["late − naive"])
    mean_b = float(naive.iloc[0]) if len(naive) else float("nan")
    mean_a = float(late.iloc[0]) if len(late) else mean_b + diff
    wins, losses, ties = (int(r[c]) for c in ("wins", "losses", "ties"))
    return Comparison(mean_a, mean_b, diff, float(r.low), float(r.high), wins, losses, ties,
                      wins + losses + ties)


def late_quality_settings_note(table, embedder: str, metric: str, window="limit",
                               pooling: str = "edges") -> str:
    """What `embedder`'s other saved (window, pooling) settings of ``ragkit bench late-quality``
    show beside the default one a closing decides on, as a note for its line: how many settings
    put late chunking ahead, behind and level on `metric`, and which are ahead. A best-of-N
    setting read on the questions it was picked on is not a test, so the call stays on the
    declared default; "" without other settings.

    >>> import pandas as pd
    >>> t = pd.DataFrame({"embedder": "e", "metric": "m", "window": ["limit", "128"],
    ...                   "pooling": ["edges", "every"], "verdict": ["loses", "beats"]})
    >>> late_quality_settings_note(t, "e", "m")
    'this is the declared default, window limit with edges pooling; of the 2 window and pooling settings measured, late is ahead in 1 (window 128, every pooling), behind in 1, level in 0, and a setting picked as the best of several on these same questions would not test it'
    """
    t = table[(table.embedder == embedder) & (table.metric == metric)]
    if len(t) < 2:
        return ""
    ahead = t[t.verdict == "beats"]
    behind = int((t.verdict == "loses").sum())
    level = len(t) - len(ahead) - behind
    names = "; ".join(f"window {r.window}, {r.pooling} pooling" for r in ahead.itertuples())
    return (f"this is the declared default, window {window} with {pooling} pooling; of the "
            f"{len(t)} window and pooling settings measured, late is ahead in {len(ahead)}"
            + (f" ({names})" if names else "")
            + f", behind in {behind}, level in {level}, and a setting picked as the best of "
            "several on these same questions would not test it")


def late_truncation_note(rows: Sequence[Mapping[str, Any]], benchmark: str, chunker: str) -> str:
    """A note for a late-chunking call on `benchmark` with `chunker` (`naive_vs_late` rows):
    how many chunk texts the encoder cut when embedding them alone (the naive run's
    ``truncated:N`` flag) against the late run, where windows read every chunk whole; "" when
    the naive side was not cut more. Part of a late gain there is truncation avoided.

    >>> rows = [{"benchmark": "b", "chunker": "c", "mode": "naive", "flags": "truncated:12"},
    ...         {"benchmark": "b", "chunker": "c", "mode": "late", "flags": "late:windowed:3"}]
    >>> late_truncation_note(rows, "b", "c")
    'on b the encoder cut 12 chunk texts embedded alone and 0 read late, so part of a late gain there is truncation avoided, not context added'
    """
    from .pipeline import flag_count

    cut = {r["mode"]: flag_count(str(r.get("flags") or "").split(";")) for r in rows
           if r["benchmark"] == benchmark and r["chunker"] == chunker}
    naive, late = cut.get("naive", 0), cut.get("late", 0)
    if naive <= late:
        return ""
    return (f"on {benchmark} the encoder cut {naive:,} chunk texts embedded alone and {late:,} "
            "read late, so part of a late gain there is truncation avoided, not context added")
