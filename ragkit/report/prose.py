"""Say what was measured: formatted numbers, findings with their intervals, quiet warnings.

The course's prose never types a number; it renders one from this run's values:

- `pct` / `ci` format a share and its interval (``pct(0.783) -> '78.3 %'``), `diff_ci` a
  paired difference with its interval;
- `finding` turns a paired `ragkit.evaluate.Comparison` into one sentence with the difference, its
  95 % interval, n and the wins / losses / ties, or "no measurable difference";
- `verdict` names the direction of a paired interval ("beats", "loses", "no measurable
  difference") and `speed_sentence` the direction of a measured speed ratio, so a sentence's
  direction word comes from the numbers, never from the prose around them;
- `what_we_measured` renders a notebook's closing section from those sentences;
- `percent_table` formats a results table for display (shares as percentages, counts as
  integers) without changing the values; `percent_frame` gives the same table as plain text
  (`text_frame`), which a text renderer shows too;
- `summarize_warnings` collects the warnings a block of code raises into one line per kind (the
  count and the first message), and `quiet_cells` does that for every notebook cell, so a cell
  that embeds 500 long chunks shows one truncation line, not 500.
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections import Counter
from pathlib import Path
from typing import Iterable, Iterator, Sequence, TextIO

from ..evaluate.stats import Comparison


def pct(x: float, digits: int = 1) -> str:
    """A share as a percentage: ``pct(0.7834) -> '78.3 %'``."""
    return f"{100 * x:.{digits}f} %"


def points(x: float | None, digits: int = 1) -> str:
    """A share in points, for a table cell: ``points(0.7834) -> '78.3'``; a dash where there is
    no value (None or NaN), so an empty cell is never printed as ``nan``."""
    return "–" if x is None or x != x else f"{100 * x:.{digits}f}"


def bound(x: float, digits: int = 1, scale: float = 100.0, signed: bool = True) -> str:
    """One end of an interval, in points by default. An end that is not 0 but would round to
    0 keeps the digits that show its sign, so a verdict read from it ("beats": the low end is
    above 0) can be checked against what is printed.

    >>> bound(0.000193), bound(-0.0004), bound(0.0), bound(0.032)
    ('+0.02', '-0.04', '+0.0', '+3.2')
    """
    v, d = scale * x, digits
    while v != 0 and round(v, d) == 0 and d < 6:
        d += 1
    return f"{v:{'+' if signed else ''}.{d}f}"


def ci(low: float, high: float, digits: int = 1, scale: float = 100.0, signed: bool = True
       ) -> str:
    """An interval, in points by default: ``ci(-0.01, 0.032) -> '[-1.0, +3.2]'``."""
    return f"[{bound(low, digits, scale, signed)}, {bound(high, digits, scale, signed)}]"


def diff_ci(c: Comparison) -> str:
    """A paired difference in points with its interval, as every table shows one:
    ``'+3.1 [-0.2, +6.8]'``."""
    return f"{100 * c.diff:+.1f} {ci(c.low, c.high)}"


def mean_ci(values, digits: int = 1) -> str:
    """A mean of per-question values in % with its 95 % bootstrap interval
    (`ragkit.evaluate.interval`), e.g. ``'78.3 [73.5, 83.2]'``.

    >>> mean_ci([1.0, 1.0, 1.0, 1.0])
    '100.0 [100.0, 100.0]'
    """
    import numpy as np

    from ..evaluate.stats import interval

    mean, low, high = interval(np.asarray(values, dtype=float))
    return f"{100 * mean:.{digits}f} {ci(low, high, digits, signed=False)}"


def finding(c: Comparison, a: str, b: str, metric: str, digits: int = 1) -> str:
    """One Markdown sentence for a paired comparison of `a` against `b` on `metric`, told from
    the side that is ahead (its difference, interval and wins), or "no measurable difference"
    when the interval holds 0.

    >>> from ragkit.evaluate.stats import paired
    >>> finding(paired([0, 1, 0, 0, 1, 0] * 5, [1, 1, 1, 0, 1, 1] * 5), "structure", "fixed",
    ...         "recall@1024")
    '**fixed** beats **structure** on recall@1024 by 50.0 points (95 % CI [+30.0, +66.7], n = 30; fixed ahead on 15 questions, behind on 0, tied on 15).'
    """
    flip = c.significant and c.diff < 0
    lead, trail = (b, a) if flip else (a, b)
    diff, low, high = (-c.diff, -c.high, -c.low) if flip else (c.diff, c.low, c.high)
    wins, losses = (c.losses, c.wins) if flip else (c.wins, c.losses)
    detail = (f"({100 * c.confidence:.0f} % CI {ci(low, high, digits)}, n = {c.n}; "
              f"{lead} ahead on {wins} question{'' if wins == 1 else 's'}, behind on {losses}, "
              f"tied on {c.ties})")
    if not c.significant:
        return (f"No measurable difference between **{a}** and **{b}** on {metric}: "
                f"{100 * diff:+.{digits}f} points {detail}.")
    return f"**{lead}** beats **{trail}** on {metric} by {100 * diff:.{digits}f} points {detail}."


def verdict(low: float, high: float) -> str:
    """The course's reading of a paired interval of A − B: A "beats" B when the interval lies
    above 0, "loses" when it lies below, otherwise "no measurable difference".

    >>> verdict(0.01, 0.05), verdict(-0.02, 0.03), verdict(-0.05, -0.01)
    ('beats', 'no measurable difference', 'loses')
    """
    return "beats" if low > 0 else "loses" if high < 0 else "no measurable difference"


def speed_sentence(a: str, seconds_a: float | Sequence[float], b: str,
                   seconds_b: float | Sequence[float], tolerance: float = 0.1,
                   what: str = "the same texts") -> str:
    """One sentence on a timed pair, direction included: `a`'s throughput as a multiple of
    `b`'s (best run against best run). Given one time each, the pair is called faster or slower
    only when the ratio differs from 1 by more than `tolerance`. Given every run's time, it is
    called so only when, in addition, every run of one side was quicker than every run of the
    other; otherwise the sentence says the runs overlap, with each side's range.

    >>> speed_sentence("ONNX Runtime", 3.1, "torch", 2.8)
    'On this machine ONNX Runtime took 3.1 s and torch 2.8 s on the same texts: ONNX Runtime ran at 0.90x the throughput of torch, so here it is about as fast as torch (within 10 %).'
    >>> speed_sentence("ONNX Runtime", 1.0, "torch", 1.8).split(": ")[1]
    'ONNX Runtime ran at 1.80x the throughput of torch, so here it is faster than torch.'
    >>> speed_sentence("ONNX Runtime", [2.2, 2.9, 2.3], "torch", [2.5, 2.6, 2.7]).split(": ")[1]
    'ONNX Runtime ran at 1.14x the throughput of torch (best run against best run), but its runs (2.20–2.90 s) and those of torch (2.50–2.70 s) overlap, so this timing does not say which is faster here.'
    >>> speed_sentence("ONNX Runtime", [1.0, 1.1], "torch", [1.8, 1.9]).split(": ")[1]
    "ONNX Runtime ran at 1.80x the throughput of torch (best run against best run), and each of its 2 runs was quicker than each of torch's 2 (1.00–1.10 s against 1.80–1.90 s), so here it is faster than torch."
    """
    runs_a = [float(seconds_a)] if isinstance(seconds_a, (int, float)) else list(map(float, seconds_a))
    runs_b = [float(seconds_b)] if isinstance(seconds_b, (int, float)) else list(map(float, seconds_b))
    ratio = min(runs_b) / min(runs_a)
    close = 1 - tolerance <= ratio <= 1 + tolerance
    reading = (f"about as fast as {b} (within {tolerance:.0%})".replace("%", " %") if close else
               f"faster than {b}" if ratio > 1 else f"slower than {b}")
    head = f"On this machine {a} took {min(runs_a):.1f} s and {b} {min(runs_b):.1f} s on {what}: "
    if len(runs_a) == 1 and len(runs_b) == 1:
        return head + f"{a} ran at {ratio:.2f}x the throughput of {b}, so here it is {reading}."
    span_a = f"{min(runs_a):.2f}–{max(runs_a):.2f} s"
    span_b = f"{min(runs_b):.2f}–{max(runs_b):.2f} s"
    head += f"{a} ran at {ratio:.2f}x the throughput of {b} (best run against best run), "
    quicker = max(runs_a) < min(runs_b)
    if close:
        return head + f"so here it is {reading}; its runs took {span_a} and those of {b} {span_b}."
    if quicker or max(runs_b) < min(runs_a):
        return head + (f"and each of its {len(runs_a)} runs was "
                       f"{'quicker' if quicker else 'slower'} than each of {b}'s "
                       f"{len(runs_b)} ({span_a} against {span_b}), so here it is {reading}.")
    return head + (f"but its runs ({span_a}) and those of {b} ({span_b}) overlap, so this "
                   "timing does not say which is faster here.")


def what_we_measured(findings: Iterable[str], title: str = "What we measured") -> str:
    """A notebook's closing section: a heading and one bullet per finding."""
    items = [f for f in findings if f]
    if not items:
        raise ValueError("a closing section needs at least one finding")
    return f"## {title}\n\n" + "\n".join(f"- {f}" for f in items)


# The glossary's one name for each fixed-k metric, shown in table headers: the per-query column
# ``recall`` is span recall at k, headed ``recall@k`` (docs/glossary.md). Its neighbour
# ``pass@k``, the share of gold units wholly inside the top k, keeps its name.
DISPLAY_NAMES = {"recall": "recall@k"}


def percent_table(df, shares: Sequence[str] | None = None, counts: Sequence[str] = (),
                  digits: int = 1):
    """A pandas Styler showing `shares` as percentages and `counts` as integers (the values
    are unchanged). By default every float column whose values lie in [0, 1] is a share.
    Headers show the glossary's names (`DISPLAY_NAMES`: span recall at k as ``recall@k``); the
    data keep their column names."""
    if shares is None:
        shares = [c for c in df.columns if df[c].dtype.kind == "f"
                  and df[c].dropna().between(0, 1).all() and c not in counts]
    fmt = {c: f"{{:.{digits}%}}" for c in shares} | {c: "{:,.0f}" for c in counts}
    styled = df.style.format(fmt, na_rep="–")
    if any(c in DISPLAY_NAMES for c in df.columns) and df.columns.nlevels == 1:
        styled = styled.relabel_index([DISPLAY_NAMES.get(c, c) for c in df.columns], axis=1)
    return styled



def text_frame(df, formats: dict | None = None, na_rep: str = "–"):
    """`df` as a plain DataFrame of text, each column in `formats` written with its format spec
    (``"{:+.1%}"``), every other value with ``str``: a table that reads the same in every
    renderer, since its plain-text form is the table itself (a Styler's is only its name).

    >>> import pandas as pd
    >>> text_frame(pd.DataFrame({"a": ["x"], "d": [0.0123]}), {"d": "{:+.1%}"}).iloc[0].tolist()
    ['x', '+1.2%']
    """
    formats = formats or {}
    out = df.copy()
    for col in out.columns:
        spec = formats.get(col)
        out[col] = [na_rep if v is None or v != v else spec.format(v) if spec else str(v)
                    for v in df[col]]
    return out


def percent_frame(df, shares: Sequence[str] | None = None, counts: Sequence[str] = (),
                  digits: int = 1):
    """What `percent_table` shows, as a plain DataFrame of text (`text_frame`): shares as
    percentages, counts as integers, headers with the glossary's names (`DISPLAY_NAMES`).

    >>> import pandas as pd
    >>> t = percent_frame(pd.DataFrame({"recall": [0.5], "n": [1200.0]}), counts=["n"])
    >>> t.columns.tolist(), t.iloc[0].tolist()
    (['recall@k', 'n'], ['50.0%', '1,200'])
    """
    if shares is None:
        shares = [c for c in df.columns if df[c].dtype.kind == "f"
                  and df[c].dropna().between(0, 1).all() and c not in counts]
    fmt = {c: f"{{:.{digits}%}}" for c in shares} | {c: "{:,.0f}" for c in counts}
    out = text_frame(df, fmt)
    if df.columns.nlevels == 1:
        out.columns = [DISPLAY_NAMES.get(c, c) for c in df.columns]
    return out

def _describe(w: warnings.WarningMessage, width: int) -> str:
    text = " ".join(str(w.message).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def summary_lines(caught: Sequence[warnings.WarningMessage], width: int = 160,
                  most: int = 3) -> list[str]:
    """One line per warning kind (category and where it was raised): the count and the first
    message; at most `most` lines (the rest folded into the last one)."""
    kinds: Counter = Counter()
    first: dict = {}
    for w in caught:
        key = (w.category.__name__, w.filename, w.lineno)
        kinds[key] += 1
        first.setdefault(key, w)
    lines = [f"{n} × {key[0]}: {_describe(first[key], width)}" for key, n in kinds.items()]
    if len(lines) > most:
        rest = sum(n for key, n in list(kinds.items())[most - 1:])
        lines = lines[: most - 1] + [f"{rest} more warnings of {len(lines) - most + 1} other "
                                     "kinds"]
    return lines


@contextlib.contextmanager
def summarize_warnings(stream: TextIO | None = None, width: int = 160,
                       ignore: Sequence[tuple[type, str]] = ()
                       ) -> Iterator[list[warnings.WarningMessage]]:
    """Collect every warning raised inside the block, then print one line per kind (a third
    party's deprecation notice is left out: `third_party_deprecation`; so is a warning of a
    category and message start named in `ignore`, which its caller states in code).

    >>> import sys, warnings
    >>> with summarize_warnings(stream=sys.stdout):
    ...     for i in range(500):
    ...         warnings.warn(f"chunk {i} truncated to 256 tokens", UserWarning)
    500 × UserWarning: chunk 0 truncated to 256 tokens
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield caught
    for line in summary_lines([w for w in caught if not third_party_deprecation(w) and not any(
            issubclass(w.category, cat) and str(w.message).startswith(start)
            for cat, start in ignore)], width):
        print(line, file=stream or sys.stderr)


_PACKAGE = str(Path(__file__).resolve().parents[1])
DEPRECATIONS = (DeprecationWarning, PendingDeprecationWarning, FutureWarning)


def third_party_deprecation(w: warnings.WarningMessage) -> bool:
    """A deprecation notice raised outside ragkit (a library telling its own users about its
    next version): nothing a course reader can act on, so cells do not show it. ragkit's own
    warnings, and every other kind from anywhere, are always shown."""
    return (issubclass(w.category, DEPRECATIONS)
            and not str(Path(w.filename).resolve()).startswith(_PACKAGE))


def quiet_cells(ip=None, ignore: Sequence[tuple[type, str]] = ()) -> bool:
    """In IPython/Jupyter, summarize each cell's warnings (see `summarize_warnings`, which
    leaves out the `ignore` pairs of category and message start) instead of printing every one, and print a table one line per row in its plain-text form (what a
    text renderer shows; pandas otherwise wraps a wide table into blocks of columns, so 24
    rows read as a hundred lines). Returns False outside IPython (nothing to do)."""
    import pandas as pd

    pd.set_option("display.expand_frame_repr", False)
    pd.set_option("display.max_colwidth", 70)
    if ip is None:
        try:
            from IPython import get_ipython
        except ImportError:
            return False
        ip = get_ipython()
    if ip is None:
        return False
    state: dict = {}

    def pre(*_):
        state["cm"] = summarize_warnings(ignore=ignore)
        state["cm"].__enter__()

    def post(*_):
        cm = state.pop("cm", None)
        if cm is not None:
            cm.__exit__(None, None, None)

    ip.events.register("pre_run_cell", pre)
    ip.events.register("post_run_cell", post)
    return True
