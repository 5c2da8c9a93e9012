"""Intervals over seeds: Student's t for a mean, Welch's t for a difference of means, the order-statistic
interval of a median, and the percentile bootstrap they are compared with.

Seeds are the replication unit: every function here takes one value per seed (axis 0) and returns
numbers. Student's t is what a report prints for a mean: simulated
(:func:`esbench.analysis.metrics.coverage.simulated_coverage`), it covers the true mean 95% of the
time on normal data at 3, 5 and 10 seeds, where a percentile bootstrap covers 75%, 83% and 90% (at
3 seeds a bootstrap interval can never leave [min seed, max seed]). Every resampling draws from an
explicit, seeded ``np.random.Generator`` (never a global RNG).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

#: Default bootstrap resamples (enough for stable 95% percentile intervals on a few seeds).
N_RESAMPLES = 2000


def make_rng(seed: int | np.random.Generator) -> np.random.Generator:
    """A Generator from an int seed (or the Generator itself, passed through)."""
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def bootstrap_ci(
    values: np.ndarray,
    rng: np.random.Generator,
    confidence: float = 0.95,
    n_resamples: int = N_RESAMPLES,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap CI of the mean across seeds (axis 0).

    Not what a report prints for a mean over seeds (:func:`mean_ci` is): at 3 to 10 seeds it is
    too narrow (:func:`~esbench.analysis.metrics.coverage.simulated_coverage` measures it at 75-90%
    for a nominal 95%). It stays for comparison, and for statistics without a t interval.

    Args:
        values: Array of shape (n_seeds,) or (n_seeds, n_points); NaN-free along axis 0 for a
            column to get an interval.
        rng: The Generator every resample is drawn from.
        confidence: Confidence level of the two-sided interval.
        n_resamples: Bootstrap resamples.

    Returns:
        (low, high), each of shape () or (n_points,). NaN where fewer than 2 seeds, or any
        NaN in the column.
    """
    data = np.asarray(values, dtype=float)
    squeeze = data.ndim == 1
    if squeeze:
        data = data[:, None]
    low = np.full(data.shape[1], np.nan)
    high = np.full(data.shape[1], np.nan)
    ok = np.all(np.isfinite(data), axis=0)
    if data.shape[0] >= 2 and ok.any():
        res = stats.bootstrap(
            (data[:, ok],),
            np.mean,
            axis=0,
            vectorized=True,
            n_resamples=n_resamples,
            confidence_level=confidence,
            method="percentile",
            rng=rng,
        )
        low[ok] = res.confidence_interval.low
        high[ok] = res.confidence_interval.high
        # Degenerate columns (all seeds equal) give NaN from scipy: the interval is the point.
        same = ok & np.all(data == data[:1], axis=0)
        low[same] = data[0, same]
        high[same] = data[0, same]
    if squeeze:
        return low[0], high[0]
    return low, high


def t_interval(values: np.ndarray, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Student's t interval of the mean across seeds (axis 0): mean +- t_{n-1} s / sqrt(n).

    Args:
        values: Array of shape (n_seeds,) or (n_seeds, n_points).
        confidence: Confidence level of the two-sided interval.

    Returns:
        (low, high), each of shape () or (n_points,). NaN where fewer than 2 seeds or any NaN
        in the column; the point itself where every seed is equal.
    """
    data = np.asarray(values, dtype=float)
    squeeze = data.ndim == 1
    if squeeze:
        data = data[:, None]
    n = data.shape[0]
    low = np.full(data.shape[1], np.nan)
    high = np.full(data.shape[1], np.nan)
    ok = np.all(np.isfinite(data), axis=0)
    if n >= 2 and ok.any():
        col = data[:, ok]
        mean = col.mean(axis=0)
        half = stats.t.ppf(0.5 + confidence / 2.0, n - 1) * col.std(axis=0, ddof=1) / np.sqrt(n)
        low[ok], high[ok] = mean - half, mean + half
    if squeeze:
        return low[0], high[0]
    return low, high


def median_interval_coverage(n: int, confidence: float = 0.95) -> float:
    """The exact coverage of the order-statistic interval of a median over ``n`` values
    (:func:`median_rank`; NaN below 2): 75% at 3, 87.5% at 4, 93.75% at 5, 95% or more from 6."""
    return median_rank(n, confidence)[1] if n >= 2 else float("nan")


def median_rank(n: int, confidence: float) -> tuple[int, float]:
    """The rank k of the order-statistic interval ``[x_(k), x_(n+1-k)]`` of a median over ``n >= 2``
    values, and its exact coverage ``1 - 2 P(Binomial(n, 1/2) < k)``: the largest k whose coverage
    is at least ``confidence``, or 1 (the widest) where none is."""
    k = 1
    while k + 1 <= n // 2 and 1.0 - 2.0 * stats.binom.cdf(k, n, 0.5) >= confidence:
        k += 1
    return k, 1.0 - 2.0 * float(stats.binom.cdf(k - 1, n, 0.5))


def mean_ci(
    values: np.ndarray, rng: np.random.Generator | None = None, confidence: float = 0.95
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean across seeds (axis 0) and its Student-t interval (:func:`t_interval`).

    The t interval keeps its promise at the seed counts benchmarks run (measured by
    :func:`~esbench.analysis.metrics.coverage.simulated_coverage`: 95% on normal data at 3, 5 and
    10 seeds); a percentile bootstrap does not.

    Args:
        values: Array of shape (n_seeds,) or (n_seeds, n_points).
        rng: Unused (the t interval draws nothing); kept so every interval function takes one.
        confidence: Confidence level.

    Returns:
        (mean, low, high), each of shape () or (n_points,).
    """
    del rng
    data = np.asarray(values, dtype=float)
    mean = np.mean(data, axis=0)
    low, high = t_interval(data, confidence)
    return mean, low, high


def welch_ci(a: np.ndarray, b: np.ndarray, confidence: float = 0.95) -> tuple[float, float, float]:
    """mean(a) - mean(b) and Welch's t interval (two independent samples, unequal variances).

    The two-sample analogue of :func:`t_interval`, with Welch-Satterthwaite degrees of freedom;
    its coverage is measured by :func:`esbench.analysis.metrics.coverage.difference_coverage`.

    Args:
        a, b: The two samples (e.g. one algorithm's final returns over seeds, and another's).
        confidence: Confidence level of the two-sided interval.

    Returns:
        (difference, low, high); low/high NaN when either sample has fewer than 2 values, the
        difference itself when both samples are constant.
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    diff = float(a.mean() - b.mean())
    if len(a) < 2 or len(b) < 2:
        return diff, float("nan"), float("nan")
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    se = float(np.sqrt(va + vb))
    if se == 0.0:
        return diff, diff, diff
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    half = float(stats.t.ppf(0.5 + confidence / 2.0, df)) * se
    return diff, diff - half, diff + half
