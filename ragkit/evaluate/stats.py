"""How sure are we? Paired bootstrap confidence intervals over queries.

Every comparison the course states ("A beats B", "the claim held") is decided on per-query
values of the *same* queries, resampled together: `paired` returns the mean difference, its
95 % percentile interval from ``n_resamples`` bootstrap resamples (seeded, so the same run gives
the same interval), and how many queries A wins, loses and ties. A difference whose interval
contains 0 is reported as "no measurable difference", never as a win (`Comparison.finding`).

`interval` gives one mean's interval (the leaderboard's columns), `wilson` one proportion's
score interval, `balanced_accuracy_interval` a refusal rule's balanced accuracy with its
interval, and `ratio_effect` the relative reduction of a failure rate (Anthropic's "−35 %
failed retrievals") with its interval.
The resampling is vectorised numpy; the tests check it against `scipy.stats.bootstrap`.

    >>> c = paired([1, 1, 1, 0, 1, 1], [0, 1, 0, 0, 1, 0], n_resamples=2000)
    >>> round(c.diff, 3), c.wins, c.losses, c.ties
    (0.5, 3, 0, 3)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

N_RESAMPLES = 2000
CONFIDENCE = 0.95
SEED = 13


def _indices(n: int, n_resamples: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, n, size=(n_resamples, n))


def _percentile(values: np.ndarray, confidence: float) -> tuple[float, float]:
    alpha = (1 - confidence) / 2
    lo, hi = np.percentile(values, [100 * alpha, 100 * (1 - alpha)])
    return float(lo), float(hi)


def interval(x: Sequence[float], n_resamples: int = N_RESAMPLES, seed: int = SEED,
             confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """(mean, low, high): the mean of `x` with its percentile bootstrap interval."""
    a = np.asarray(x, dtype=float)
    if not len(a):
        return (float("nan"),) * 3
    means = a[_indices(len(a), n_resamples, seed)].mean(axis=1)
    return (float(a.mean()), *_percentile(means, confidence))


@dataclass(frozen=True)
class Comparison:
    """A paired comparison of A against B on the same `n` queries."""

    mean_a: float
    mean_b: float
    diff: float
    low: float
    high: float
    wins: int
    losses: int
    ties: int
    n: int
    confidence: float = CONFIDENCE

    @property
    def significant(self) -> bool:
        """True when the interval excludes 0."""
        return self.low > 0 or self.high < 0

    def finding(self, a: str = "A", b: str = "B", scale: float = 100.0, unit: str = " pts"
                ) -> str:
        """One sentence: who is ahead, by how much, with the interval; or no measurable
        difference."""
        ci = (f"{scale * self.diff:+.1f}{unit}, {self.confidence:.0%} CI "
              f"[{scale * self.low:+.1f}, {scale * self.high:+.1f}], n = {self.n}; "
              f"{self.wins} wins / {self.losses} losses / {self.ties} ties")
        if not self.significant:
            return f"no measurable difference between {a} and {b} ({ci})"
        lead, trail = (a, b) if self.diff > 0 else (b, a)
        return f"{lead} ahead of {trail} ({ci})"


def paired(a: Sequence[float], b: Sequence[float], n_resamples: int = N_RESAMPLES,
           seed: int = SEED, confidence: float = CONFIDENCE, tie: float = 1e-12) -> Comparison:
    """Mean of A − B over the same queries (index i of both is one query), with its interval."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"paired values differ in length: {len(x)} vs {len(y)}")
    d = x - y
    if not len(d):
        nan = float("nan")
        return Comparison(nan, nan, nan, nan, nan, 0, 0, 0, 0, confidence)
    means = d[_indices(len(d), n_resamples, seed)].mean(axis=1)
    lo, hi = _percentile(means, confidence)
    return Comparison(float(x.mean()), float(y.mean()), float(d.mean()), lo, hi,
                      int((d > tie).sum()), int((d < -tie).sum()), int((abs(d) <= tie).sum()),
                      len(d), confidence)


def statistic_interval(statistic: Callable[..., np.ndarray], *samples: Sequence[float],
                       n_resamples: int = N_RESAMPLES, seed: int = SEED,
                       confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """(value, low, high) of a statistic of paired samples. `statistic` takes arrays whose last
    axis is the queries (one row per resample) and returns one value per row."""
    arrays = [np.asarray(s, dtype=float) for s in samples]
    n = len(arrays[0])
    if any(len(a) != n for a in arrays):
        raise ValueError("paired samples differ in length")
    if not n:
        return (float("nan"),) * 3
    idx = _indices(n, n_resamples, seed)
    point = float(np.asarray(statistic(*[a[None, :] for a in arrays])).ravel()[0])
    boot = np.asarray(statistic(*[a[idx] for a in arrays]), dtype=float)
    boot = boot[np.isfinite(boot)]
    if not len(boot):
        return (point, float("nan"), float("nan"))
    return (point, *_percentile(boot, confidence))


def failure_reduction(treated: np.ndarray, base: np.ndarray) -> np.ndarray:
    """1 − failures(treated) / failures(base), failures = 1 − pass (per query, last axis)."""
    fb = (1 - base).mean(axis=-1)
    ft = (1 - treated).mean(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(fb > 0, 1 - ft / fb, np.nan)


def ratio_effect(treated: Sequence[float], base: Sequence[float], **kw
                 ) -> tuple[float, float, float]:
    """Relative reduction of the failure rate (1 − pass) from `base` to `treated`, with its
    paired interval. ``ratio_effect([1, 1, 1, 0], [1, 0, 1, 0])`` is 0.5 (2 failures -> 1)."""
    return statistic_interval(failure_reduction, treated, base, **kw)


def wilson(successes: int, n: int, confidence: float = CONFIDENCE
           ) -> tuple[float, float, float]:
    """(proportion, low, high): `successes` of `n` with Wilson's score interval, which stays
    inside [0, 1] and keeps its coverage for small `n` and proportions near 0 or 1, where a
    bootstrap of a few yes/no values collapses (7 of 7 right resamples to 7 of 7 every time).

    >>> [round(v, 4) for v in wilson(7, 10)]
    [0.7, 0.3968, 0.8922]
    >>> wilson(0, 0)
    (nan, nan, nan)
    """
    from statistics import NormalDist

    if n <= 0:
        return (float("nan"),) * 3
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be between 0 and n = {n}, got {successes}")
    z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * (p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5
    return p, max(0.0, centre - half), min(1.0, centre + half)


def balanced_accuracy_interval(predicted: Sequence[bool], actual: Sequence[bool],
                               n_resamples: int = N_RESAMPLES, seed: int = SEED,
                               confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """(balanced accuracy, low, high) of yes/no predictions: the mean of the rate of ``True``
    predicted on the actual ``True`` items and of ``False`` on the actual ``False`` ones, with a
    stratified percentile bootstrap (each class resampled within itself, so every resample
    keeps both classes and their sizes; a plain resample of 10 refusals among 126 questions
    sometimes draws none). NaN when a class is empty.

    >>> balanced_accuracy_interval([True, True, False, True], [True, True, False, False])[0]
    0.75
    """
    p, a = np.asarray(predicted, bool), np.asarray(actual, bool)
    if p.shape != a.shape:
        raise ValueError(f"predicted and actual differ in length: {len(p)} vs {len(a)}")
    pos, neg = p[a].astype(float), (~p[~a]).astype(float)
    if not len(pos) or not len(neg):
        return (float("nan"),) * 3
    rng = np.random.default_rng(seed)
    rates = [x[rng.integers(0, len(x), size=(n_resamples, len(x)))].mean(axis=1)
             for x in (pos, neg)]
    point = float((pos.mean() + neg.mean()) / 2)
    return (point, *_percentile((rates[0] + rates[1]) / 2, confidence))
