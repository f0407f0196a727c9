"""Paired bootstrap intervals, checked against scipy."""

import numpy as np
import pytest
from scipy import stats as sps

from ragkit.evaluate import interval, paired, ratio_effect
from ragkit.evaluate.stats import statistic_interval


def test_paired_interval_agrees_with_scipy_on_a_known_case():
    rng = np.random.default_rng(0)
    a = rng.binomial(1, 0.7, 300).astype(float)
    b = np.clip(a - rng.binomial(1, 0.15, 300), 0, 1)  # B loses some of A's hits
    ours = paired(a, b, n_resamples=4000)
    ref = sps.bootstrap((a, b), lambda x, y, axis=-1: (x - y).mean(axis=axis), paired=True,
                        n_resamples=4000, method="percentile", random_state=1,
                        vectorized=True).confidence_interval
    assert ours.diff == pytest.approx((a - b).mean())
    assert ours.low == pytest.approx(ref.low, abs=0.01)
    assert ours.high == pytest.approx(ref.high, abs=0.01)
    assert ours.significant and ours.losses == 0 and ours.wins == int((a > b).sum())


def test_interval_agrees_with_scipy():
    x = np.random.default_rng(4).normal(0.6, 0.2, 200)
    mean, lo, hi = interval(x, n_resamples=4000)
    ref = sps.bootstrap((x,), np.mean, n_resamples=4000, method="percentile",
                        random_state=2).confidence_interval
    assert mean == pytest.approx(x.mean())
    assert lo == pytest.approx(ref.low, abs=0.006) and hi == pytest.approx(ref.high, abs=0.006)


def test_no_measurable_difference_is_never_a_win():
    rng = np.random.default_rng(7)
    a = rng.binomial(1, 0.5, 40).astype(float)
    b = a.copy()
    b[:3] = 1 - b[:3]  # three questions flip
    c = paired(a, b)
    assert not c.significant
    assert c.finding("router", "structure").startswith("no measurable difference")


def test_same_seed_same_interval():
    a, b = np.arange(50) % 3 == 0, np.arange(50) % 4 == 0
    assert paired(a, b) == paired(a, b)


def test_failure_reduction_and_its_interval():
    base = np.array([1, 0, 1, 0, 1, 1, 1, 1, 0, 1] * 10, float)      # 30 % failures
    treated = np.array([1, 1, 1, 0, 1, 1, 1, 1, 0, 1] * 10, float)   # 20 % failures
    est, lo, hi = ratio_effect(treated, base)
    assert est == pytest.approx(1 - 0.2 / 0.3)
    assert lo < est < hi
    # the same statistic through scipy
    ref = sps.bootstrap((treated, base), lambda t, b, axis=-1: 1 - (1 - t).mean(axis) /
                        (1 - b).mean(axis), paired=True, n_resamples=3000, method="percentile",
                        random_state=3, vectorized=True).confidence_interval
    assert lo == pytest.approx(ref.low, abs=0.03) and hi == pytest.approx(ref.high, abs=0.03)


def test_statistic_interval_rejects_unpaired_lengths():
    with pytest.raises(ValueError):
        statistic_interval(lambda a, b: a.mean(-1), [1, 2], [1, 2, 3])


@pytest.mark.parametrize("k, n", [(0, 1), (1, 1), (0, 8), (7, 10), (8, 8), (1, 7), (13, 18),
                                  (130, 181), (500, 1000)])
def test_wilson_matches_scipy(k, n):
    from scipy.stats import binomtest

    from ragkit.evaluate.stats import wilson

    p, lo, hi = wilson(k, n)
    ci = binomtest(k, n).proportion_ci(0.95, method="wilson")
    assert p == k / n
    assert lo == pytest.approx(ci.low, abs=1e-12) and hi == pytest.approx(ci.high, abs=1e-12)
    assert 0 <= lo <= p <= hi <= 1


def test_wilson_covers_the_true_proportion_about_95_percent_of_the_time():
    from ragkit.evaluate.stats import wilson

    rng = np.random.default_rng(5)
    for p_true, n in ((0.7, 18), (0.3, 40), (0.9, 60)):
        draws = rng.binomial(n, p_true, size=4000)
        covered = np.mean([lo <= p_true <= hi for lo, hi in
                           (wilson(int(k), n)[1:] for k in draws)])
        assert 0.92 <= covered <= 0.99, (p_true, n, covered)


def test_wilson_refuses_impossible_counts():
    from ragkit.evaluate.stats import wilson

    with pytest.raises(ValueError):
        wilson(5, 4)
    assert all(np.isnan(wilson(0, 0)))


def test_balanced_accuracy_interval_keeps_both_classes_in_every_resample():
    from ragkit.evaluate.stats import balanced_accuracy_interval

    # 116 answerable, 10 unanswerable, as the course's held-out half
    actual = np.array([True] * 116 + [False] * 10)
    predicted = np.array([True] * 100 + [False] * 16 + [True] * 4 + [False] * 6)
    ba, lo, hi = balanced_accuracy_interval(predicted, actual)
    assert ba == pytest.approx((100 / 116 + 6 / 10) / 2)
    assert 0 <= lo < ba < hi <= 1
    # the spread is about that of the normal approximation of two independent rates
    sd = 0.5 * np.sqrt((100 / 116) * (16 / 116) / 116 + 0.6 * 0.4 / 10)
    assert hi - lo == pytest.approx(2 * 1.96 * sd, rel=0.25)
    assert all(np.isnan(balanced_accuracy_interval([True, False], [True, True])))
    with pytest.raises(ValueError):
        balanced_accuracy_interval([True], [True, False])
