"""The course's figures, drawn the same way everywhere (matplotlib, no styling surprises).

Each function takes a tidy DataFrame (one row per benchmark × strategy, metric columns) and
returns a matplotlib Figure; `ragkit.report.results.save_figure` writes it under results/figures/.
"""

from __future__ import annotations

from typing import Sequence


def _shown(column: str) -> str:
    """A metric column's name as the glossary gives it (`ragkit.report.prose.DISPLAY_NAMES`)."""
    from .prose import DISPLAY_NAMES

    return DISPLAY_NAMES.get(column, column)


def bars(table, metric: str, by: str = "strategy", group: str | None = "benchmark",
         title: str | None = None, percent: bool = True, outcomes=None, baseline=None):
    """Horizontal bars of `metric` per `by`, one panel per `group` value, best on top.

    With `outcomes` (``{(group value, by value): Outcome}``, as `compare` returns them) each
    bar carries its 95 % bootstrap interval over the questions (`ragkit.evaluate.interval`
    of ``outcome.values(metric)``). `baseline` names one `by` value (e.g. the fixed windows):
    its bar is drawn in orange and a dotted line runs through each panel at its value, so every
    bar is read against it. Bars start at 0 (a bar's length is its value)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    groups = sorted(table[group].unique()) if group else [None]
    fig, axes = plt.subplots(1, len(groups), figsize=(4.2 * len(groups), 0.45 * max(
        3, table.groupby(group)[by].nunique().max() if group else table[by].nunique()) + 1.2),
        squeeze=False)
    scale = 100 if percent else 1
    for ax, g in zip(axes[0], groups):
        sub = table if g is None else table[table[group] == g]
        sub = sub.sort_values(metric)
        values = sub[metric] * scale
        colors = ["#dd8452" if s == baseline else "#4c72b0" for s in sub[by]]
        err = _bar_errors(sub[by], values, g, metric, outcomes, scale)
        ax.barh(sub[by].astype(str), values, color=colors, xerr=err, ecolor="#333",
                capsize=2 if err is not None else 0)
        tops = values if err is None else values + err[1]
        for y, (v, t) in enumerate(zip(values, tops)):
            ax.text(t, y, f" {v:.1f}", va="center", fontsize=8)
        if baseline is not None and (sub[by] == baseline).any():
            ax.axvline(float(values[(sub[by] == baseline).to_numpy()].iloc[0]), color="#dd8452",
                       ls=":", lw=1)
        ax.set_title(g or "", fontsize=10)
        ax.set_xlabel(_shown(metric) + (" (%)" if percent else "")
                      + (", 95 % interval" if err is not None else ""))
        ax.tick_params(axis="y", labelsize=8)
        ax.set_xlim(0, max(float(tops.max()) * 1.25, 1e-9))
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig


def _bar_errors(labels, values, g, metric: str, outcomes, scale: float):
    """The (below, above) whisker lengths of each bar from its outcome's per-question values,
    or None without outcomes. A bar whose outcome is missing gets no whisker (0, 0)."""
    if outcomes is None:
        return None
    import numpy as np

    from ..evaluate.stats import interval

    below, above = [], []
    for label, v in zip(labels, values):
        out = outcomes.get((g, label))
        if out is None:
            below.append(0.0), above.append(0.0)
            continue
        _, low, high = interval(out.values(metric).dropna().to_numpy(dtype=float))
        below.append(max(v - scale * low, 0.0)), above.append(max(scale * high - v, 0.0))
    return np.array([below, above])


def paired(table, x: str, y: str, label: str = "strategy", title: str | None = None):
    """A scatter of two metrics (e.g. recall vs IoU), one labelled point per row."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4.5))
    ax.scatter(table[x] * 100, table[y] * 100, color="#dd8452")
    for _, r in table.iterrows():
        ax.annotate(str(r[label]), (r[x] * 100, r[y] * 100), fontsize=7,
                    xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel(f"{_shown(x)} (%)")
    ax.set_ylabel(f"{_shown(y)} (%)")
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


def lines(table, x: str, y: str, series: str, title: str | None = None,
          xticks: Sequence | None = None, reference: tuple[str, float] | None = None,
          from_zero: bool = True):
    """One line per `series` value: `y` against `x` (e.g. IoU against window size).

    The y axis starts at 0; with ``from_zero=False`` it spans the data and its label says
    "axis cut", so a small difference is never magnified unmarked. `reference` is a
    ``(label, value)`` drawn as a dashed horizontal line (e.g. the value without the technique,
    which does not depend on `x`)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for name, sub in table.groupby(series):
        sub = sub.sort_values(x)
        ax.plot(sub[x], sub[y] * 100, marker="o", label=str(name))
    if reference is not None:
        ax.axhline(reference[1] * 100, color="#555", ls="--", lw=1, label=reference[0])
    ax.set_xlabel(x)
    ax.set_ylabel(f"{_shown(y)} (%)" + ("" if from_zero else ", axis cut"))
    if from_zero:
        top = max([float(table[y].max())] + ([reference[1]] if reference else []))
        ax.set_ylim(0, max(top * 100 * 1.1, 1e-9))
    if xticks is not None:
        ax.set_xticks(list(xticks))
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


def pipeline_diagram(stages, title: str | None = None):
    """The pipeline as a row of boxes (one per stage, its module under it), with the notebooks
    that change each stage listed below its box. `stages` are `ragkit.report.course.Stage`s."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyBboxPatch

    n = len(stages)
    fig, ax = plt.subplots(figsize=(1.75 * n, 3.2))
    ax.set_xlim(0, n)
    ax.set_ylim(0, 3)
    ax.axis("off")
    for i, st in enumerate(stages):
        ax.add_patch(FancyBboxPatch((i + 0.08, 1.8), 0.84, 0.8, boxstyle="round,pad=0.02",
                                    facecolor="#e8f0fe", edgecolor="#4c72b0"))
        ax.text(i + 0.5, 2.3, st.name, ha="center", va="center", fontsize=10, weight="bold")
        ax.text(i + 0.5, 2.0, st.module.replace("ragkit.", ""), ha="center", va="center",
                fontsize=7, color="#555", family="monospace")
        if i < n - 1:
            ax.annotate("", xy=(i + 1.08, 2.2), xytext=(i + 0.92, 2.2),
                        arrowprops={"arrowstyle": "->", "color": "#4c72b0"})
        ax.text(i + 0.5, 1.55, "notebook " + ", ".join(st.notebooks), ha="center",
                va="top", fontsize=8, color="#b00020")
        ax.text(i + 0.5, 1.2, "\n".join(_wrap(st.change, 18)), ha="center", va="top",
                fontsize=7, color="#333")
    if title:
        ax.set_title(title, fontsize=11)
    fig.tight_layout()
    return fig


def _wrap(text: str, width: int) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width) or [""]


def ranked_intervals(table, value: str = "recall", low: str = "recall_low",
                     high: str = "recall_high", label: str = "strategy", top: int = 12,
                     highlight=None, title: str | None = None, width: int = 60,
                     xlabel: str | None = None, line=None,
                     line_label: str = "best simple baseline shown"):
    """A ranked interval chart (a forest plot): the `top` rows of `table` by `value`, best on
    top, each a dot at its mean with its 95 % interval as a whisker, plus any
    `highlight`-ed row below the cut (e.g. the best simple baselines, at most two), in orange
    with a dotted line at the best of them (of those `line` accepts, when given, named
    `line_label`: e.g. one encoder's baselines where two encoders' are shown); long labels lose their middle (`width`
    characters kept), since names differ at both ends. The x
    axis spans the intervals shown, not 0–100, so close configurations stay apart; `xlabel`
    names it where the column's own name is not the metric's (a board's ``recall`` column
    holds recall at a budget)."""
    import matplotlib.pyplot as plt

    table = table.sort_values(value, ascending=False).reset_index(drop=True)
    marked = table[label].map(highlight) if highlight else table[label].map(lambda _: False)
    keep = table.index[:top].union(table.index[marked.to_numpy().astype(bool)][:2])
    sub, is_marked = table.loc[keep], marked.loc[keep].to_numpy().astype(bool)
    names = [s if len(s) <= width else s[: width // 2 - 1] + "…" + s[-(width // 2):]
             for s in sub[label].astype(str)]
    y = list(range(len(sub)))[::-1]
    fig, ax = plt.subplots(figsize=(9, 0.32 * len(sub) + 1.2))
    v, lo, hi = (100 * sub[c].to_numpy() for c in (value, low, high))
    for yi, vi, lo_i, h, m in zip(y, v, lo, hi, is_marked):
        color = "#dd8452" if m else "#4c72b0"
        ax.errorbar(vi, yi, xerr=[[vi - lo_i], [h - vi]], fmt="o", color=color, ecolor=color,
                    capsize=2, lw=1, ms=4)
    on_line = is_marked & (sub[label].map(line).to_numpy().astype(bool) if line else True)
    if is_marked.any():
        if on_line.any():
            ax.axvline(v[on_line].max(), color="#dd8452", ls=":", lw=1)
        from matplotlib.lines import Line2D

        ax.legend(handles=[
            Line2D([], [], marker="o", color="#4c72b0", lw=1, ms=4, label="configuration"),
            Line2D([], [], marker="o", color="#dd8452", lw=1, ms=4, label="simple baseline"),
            Line2D([], [], color="#dd8452", ls=":", lw=1, label=line_label)],
            fontsize=7, loc="lower right")
    ax.set_yticks(y)
    ax.set_yticklabels(names, fontsize=7)
    ax.set_xlabel(xlabel or f"{_shown(value)} (%), mean and 95 % interval")
    ax.grid(axis="x", alpha=0.3)
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


FAMILY_COLORS = {"flat": "#333333", "ivf_flat": "#4c72b0", "hnsw": "#55a868",
                 "ivf_pq": "#c44e52", "ivf_pq_refine": "#dd8452"}
FAMILY_LABELS = {"flat": "Flat (exact)", "ivf_flat": "IVF-Flat", "hnsw": "HNSW",
                 "ivf_pq": "IVF-PQ", "ivf_pq_refine": "IVF-PQ + exact refine"}


def recall_latency(rows, target: float = 0.95, metric: str = "recall@10",
                   latency: str = "p50_ms", title: str | None = None):
    """Recall against single-query latency for an index sweep (`ragkit.scale.ann.sweep` rows:
    ``family``, ``params``, `metric`, `latency`): one colour per index family, one line per
    built index (its search setting varying along it: nprobe or efSearch), a log-latency x
    axis, and a dashed line at `target`. The y axis spans the recalls measured and says so
    when it does not start at 0."""
    import matplotlib.pyplot as plt

    search_keys = ("nprobe", "efSearch")
    lines_by: dict = {}
    for r in rows:
        build = tuple((k, v) for k, v in r["params"].items() if k not in search_keys)
        lines_by.setdefault((r["family"], build), []).append(r)
    styles = ("-", "--", ":", "-.")
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    seen: dict[str, int] = {}
    for (family, build), sub in lines_by.items():
        sub = sorted(sub, key=lambda r: r[latency])
        style = styles[seen.get(family, 0) % len(styles)]
        seen[family] = seen.get(family, 0) + 1
        shown = ", ".join(f"{k}={v}" for k, v in build if k not in ("bits", "efConstruction"))
        ax.plot([r[latency] for r in sub], [r[metric] for r in sub], marker="o", ms=4,
                ls=style, color=FAMILY_COLORS.get(family, "#777"),
                label=FAMILY_LABELS.get(family, family) + (f" ({shown})" if shown else ""))
        for r in sub:
            knob = next((f"{k[0] if k == 'nprobe' else 'ef'}{r['params'][k]}"
                         for k in search_keys if k in r["params"]), "")
            if knob:
                ax.annotate(knob, (r[latency], r[metric]), fontsize=6, xytext=(3, -8),
                            textcoords="offset points", color="#555")
    ax.axhline(target, color="#555", ls="--", lw=1, label=f"{metric} = {target:.2f}")
    ax.set_xscale("log")
    low = min([float(r[metric]) for r in rows] + [target])
    ax.set_ylim(max(0.0, low - 0.05), 1.01)
    ax.set_xlabel(f"{latency.replace('_ms', '')} latency per query, ms (log scale; one query "
                  "at a time)")
    ax.set_ylabel(metric + (" (axis cut)" if low - 0.05 > 0 else ""))
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="lower right")
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


def cost_fit(sizes: Sequence[int], seconds: Sequence[float], fixed: float, per_item: float,
             title: str | None = None, unit: str = "documents",
             per_item_ci: tuple[float, float] | None = None):
    """Measured seconds against corpus size (points) with the fitted line
    ``seconds = fixed + per_item x size`` drawn over the same range, both axes from 0, so a
    reader sees how well a straight line carries the points; with `per_item_ci` (the slope's
    95 % interval) a band shows the lines of those two slopes through the same intercept."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(sizes, seconds, "o", label="measured")
    top = max(sizes)
    ax.plot([0, top], [fixed, fixed + per_item * top], "-", color="#555",
            label=f"fit: {fixed:.2f} s + {per_item:.3f} s x {unit}")
    if per_item_ci is not None:
        lo, hi = per_item_ci
        ax.fill_between([0, top], [fixed, fixed + lo * top], [fixed, fixed + hi * top],
                        color="#555", alpha=0.15,
                        label=f"slope's 95 % interval: {lo:.3f} to {hi:.3f} s a {unit[:-1]}")
    ax.set_xlabel(unit)
    ax.set_ylabel("seconds")
    ax.set_xlim(0, top * 1.05)
    ax.set_ylim(0, max(max(seconds), fixed + max((per_item, *(per_item_ci or ()))) * top) * 1.1)
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig
