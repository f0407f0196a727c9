"""The course's figures: intervals and baselines drawn where asked, no axis cut unmarked."""

import numpy as np
import pandas as pd
import pytest
from matplotlib.container import BarContainer

from ragkit.evaluate.stats import interval
from ragkit.report.plots import bars, lines


class FakeOutcome:
    def __init__(self, values):
        self._values = pd.Series(values, index=[f"q{i}" for i in range(len(values))])

    def values(self, metric):
        return self._values


def _bars(ax) -> BarContainer:
    return next(c for c in ax.containers if isinstance(c, BarContainer))


@pytest.fixture
def table():
    return pd.DataFrame({"benchmark": ["b", "b"], "strategy": ["fixed", "structure"],
                         "recall": [0.5, 0.75]})


def test_bars_draw_each_bars_bootstrap_interval(table):
    per_q = {("b", "fixed"): FakeOutcome([0, 1, 0, 1]),
             ("b", "structure"): FakeOutcome([1, 1, 0, 1, np.nan])}
    fig = bars(table, "recall", outcomes=per_q, baseline="fixed")
    ax = fig.axes[0]
    # one error-bar container, whiskers at the bootstrap bounds of each bar's questions
    (container,) = _bars(ax).errorbar.lines[2]
    segments = container.get_segments()
    for seg, (label, vals) in zip(segments, [("fixed", [0, 1, 0, 1]), ("structure", [1, 1, 0, 1])]):
        _, low, high = interval(np.array(vals, dtype=float))
        assert sorted(x for x, _ in seg) == pytest.approx([100 * low, 100 * high])
    # the baseline bar is orange and a dotted line marks its value
    colors = [tuple(round(c, 3) for c in p.get_facecolor()[:3]) for p in ax.patches]
    assert colors[0] != colors[1]
    assert any(line.get_linestyle() == ":" and line.get_xdata()[0] == pytest.approx(50)
               for line in ax.lines)
    assert "95 % interval" in ax.get_xlabel() and ax.get_xlim()[0] == 0


def test_bars_without_outcomes_have_no_whiskers(table):
    ax = bars(table, "recall").axes[0]
    assert _bars(ax).errorbar is None and "interval" not in ax.get_xlabel()


def test_lines_start_at_zero_or_say_the_axis_is_cut():
    t = pd.DataFrame({"x": [1, 2, 1, 2], "y": [0.80, 0.82, 0.81, 0.83], "s": ["a", "a", "b", "b"]})
    ax = lines(t, "x", "y", "s", reference=("naive", 0.79)).axes[0]
    assert ax.get_ylim()[0] == 0 and "cut" not in ax.get_ylabel()
    assert any(line.get_linestyle() == "--" and line.get_ydata()[0] == pytest.approx(79)
               for line in ax.lines)
    cut = lines(t, "x", "y", "s", from_zero=False).axes[0]
    assert cut.get_ylim()[0] > 0 and "axis cut" in cut.get_ylabel()


def test_cost_fit_draws_the_points_and_the_fitted_line_from_zero():
    import matplotlib
    matplotlib.use("Agg")
    from ragkit.report.plots import cost_fit

    fig = cost_fit([25, 50, 100], [4.0, 6.5, 11.0], 1.5, 0.095)
    ax = fig.axes[0]
    points, line = ax.lines
    assert list(points.get_xdata()) == [25, 50, 100]
    assert list(line.get_xdata()) == [0, 100] and list(line.get_ydata()) == [1.5, 1.5 + 9.5]
    assert ax.get_xlim()[0] == 0 and ax.get_ylim()[0] == 0


def test_cost_fit_shades_the_slopes_interval_when_given():
    import matplotlib
    matplotlib.use("Agg")
    from ragkit.report.plots import cost_fit

    ax = cost_fit([25, 50, 100], [4.0, 6.5, 11.0], 1.5, 0.095, per_item_ci=(0.08, 0.12)).axes[0]
    band = ax.collections[0].get_paths()[0].vertices
    assert band[:, 1].max() == 1.5 + 0.12 * 100  # the steeper slope's end, from the intercept
    assert ax.get_ylim()[1] >= 1.5 + 0.12 * 100
    assert not cost_fit([25, 50], [4.0, 6.5], 1.5, 0.095).axes[0].collections  # none without
