"""How many seeds a new study needs: the power of Welch's interval, and the seeds it takes to decide.

A planning number, not a promise: it assumes the true difference and each side's spread are as
measured, and adding seeds until an interval excludes 0 is optional stopping.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

#: The power a "seeds to decide" planning number is computed for (the usual planning convention:
#: a study of that many seeds per side decides 4 times in 5 if the effect is as measured).
PLANNING_POWER = 0.8


def welch_power(
    diff: float, var_a: float, var_b: float, n: int | np.ndarray, confidence: float = 0.95
) -> np.ndarray:
    """Probability that Welch's interval (:func:`~esbench.analysis.metrics.intervals.welch_ci`)
    from ``n`` new seeds per side excludes 0, when the true difference of means is ``diff`` and the
    per-seed variances are ``var_a`` and ``var_b``: the two tails of a noncentral t with Welch's
    degrees of freedom.

    Returns:
        The power in [0, 1] for each ``n`` (an array shaped like ``n``); NaN where ``n`` < 2 or
        both variances are 0.
    """
    n = np.asarray(n, dtype=float)
    if var_a + var_b <= 0.0:
        return np.full(n.shape, np.nan)
    valid = n >= 2
    m = np.where(valid, n, 2.0)
    df = (var_a + var_b) ** 2 * (m - 1.0) / (var_a**2 + var_b**2)
    crit = stats.t.ppf(0.5 + confidence / 2.0, df)
    ncp = abs(diff) / np.sqrt((var_a + var_b) / m)
    power = stats.nct.sf(crit, df, ncp) + stats.nct.cdf(-crit, df, ncp)
    return np.where(valid, power, np.nan)


def seeds_to_decide(
    a: np.ndarray,
    b: np.ndarray,
    confidence: float = 0.95,
    power: float = PLANNING_POWER,
    max_seeds: int = 1000,
) -> float:
    """Seeds per side a new study needs for its Welch interval
    (:func:`~esbench.analysis.metrics.intervals.welch_ci`) of ``mean(a) - mean(b)`` to exclude 0
    with probability ``power``, if the true difference and each
    side's spread are as measured here (:func:`welch_power`): a planning number, not a promise,
    and not a stopping rule (adding seeds until an interval excludes 0 is optional stopping).

    At ``power`` 0.5 it is about the number of seeds at which the measured difference itself would
    just be decided; the default, 0.8, is the usual planning convention.

    Returns:
        The smallest n (the same on both sides) with at least that power; NaN when a side has fewer
        than 2 values, the difference is 0, or no n up to ``max_seeds`` suffices.
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) < 2 or len(b) < 2:
        return float("nan")
    diff = abs(float(a.mean() - b.mean()))
    va, vb = float(a.var(ddof=1)), float(b.var(ddof=1))
    if diff == 0.0:
        return float("nan")
    if va + vb == 0.0:
        return 2.0
    ns = np.arange(2, max_seeds + 1)
    enough = np.flatnonzero(welch_power(diff, va, vb, ns, confidence) >= power)
    return float(ns[enough[0]]) if enough.size else float("nan")
