"""How many seeds a new study needs (the power of Welch's interval, the seeds it takes to decide) and
which way it would most likely go, with its spread over resampled pilots.

A planning number, not a promise: it assumes the true difference and each side's spread are as
measured, and adding seeds until an interval excludes 0 is optional stopping.
"""

from __future__ import annotations

from dataclasses import dataclass

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


def study_outcomes(
    diff: float, var_a: float, var_b: float, n: int, confidence: float = 0.95
) -> tuple[float, float, float]:
    """Shares of new studies of ``n`` seeds per side whose Welch interval of ``mean(a) - mean(b)``
    lies wholly below 0, wholly above 0, or holds 0, when the true difference is ``diff`` (signed)
    and the per-seed variances are ``var_a`` and ``var_b``: the two tails of a noncentral t with
    Welch's degrees of freedom (:func:`welch_power` is their sum).

    Returns:
        (below, above, holds), summing to 1; NaN each where ``n`` < 2 or both variances are 0.
    """
    if n < 2 or var_a + var_b <= 0.0:
        return float("nan"), float("nan"), float("nan")
    df = (var_a + var_b) ** 2 * (n - 1.0) / (var_a**2 + var_b**2)
    crit = float(stats.t.ppf(0.5 + confidence / 2.0, df))
    ncp = diff / float(np.sqrt((var_a + var_b) / n))
    above = float(stats.nct.sf(crit, df, ncp))
    below = float(stats.nct.cdf(-crit, df, ncp))
    return below, above, max(0.0, 1.0 - below - above)


@dataclass(frozen=True)
class StudyOutlook:
    """Which way a larger study would most likely go, and how much that rests on the pilot.

    Attributes:
        seeds: Seeds per side to decide with the planning power (:func:`seeds_to_decide`; NaN: none
            up to ``max_seeds``).
        below, above, holds: At ``seeds``, the shares of such studies whose interval of
            ``a - b`` lies below 0, above 0, or holds it (:func:`study_outcomes`), if the effect and
            spreads are as measured.
        seeds_low, seeds_high: The 10th and 90th percentiles of the seeds to decide over pilots
            resampled from the measured seeds (inf: no study up to ``max_seeds`` decides).
        same_side: Share of the resampled pilots whose own plan most likely goes the way this
            one does (the side of 0 of their mean difference).
        pilots: Resampled pilots.
    """

    seeds: float
    below: float
    above: float
    holds: float
    seeds_low: float
    seeds_high: float
    same_side: float
    pilots: int

    @property
    def side(self) -> str:
        """``"below"`` or ``"above"``: the side of 0 most such studies land on (``""``: neither)."""
        if not (np.isfinite(self.below) and np.isfinite(self.above)) or self.below == self.above:
            return ""
        return "below" if self.below > self.above else "above"


def study_outlook(
    a: np.ndarray,
    b: np.ndarray,
    rng: np.random.Generator,
    confidence: float = 0.95,
    power: float = PLANNING_POWER,
    pilots: int = 200,
    max_seeds: int = 1000,
) -> StudyOutlook:
    """Plan a larger study from the pilot ``a``, ``b`` (:func:`seeds_to_decide`), say which way it
    would most likely go (:func:`study_outcomes` at that size), and how far that rests on these
    few seeds: each side's seeds resampled with replacement ``pilots`` times (drawn from ``rng``),
    each resample planned again.

    A Gaussian fitted to 3 seeds can point a plan the wrong way; the spread over resampled pilots
    says how much the plan would move had other seeds of the same runs been drawn.

    Returns:
        A :class:`StudyOutlook`; every field NaN (``pilots`` 0) when a side has fewer than 2 values.
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) < 2 or len(b) < 2:
        nan = float("nan")
        return StudyOutlook(nan, nan, nan, nan, nan, nan, nan, 0)
    seeds = seeds_to_decide(a, b, confidence, power, max_seeds)
    diff = float(a.mean() - b.mean())
    va, vb = float(a.var(ddof=1)), float(b.var(ddof=1))
    at = int(seeds) if np.isfinite(seeds) else max_seeds
    below, above, holds = study_outcomes(diff, va, vb, at, confidence)
    planned, same = [], []
    for _ in range(pilots):
        ra, rb = rng.choice(a, len(a)), rng.choice(b, len(b))
        n = seeds_to_decide(ra, rb, confidence, power, max_seeds)
        planned.append(n if np.isfinite(n) else np.inf)
        same.append(np.sign(ra.mean() - rb.mean()) == np.sign(diff) != 0)
    low, high = np.percentile(np.asarray(planned), [10, 90], method="lower")
    return StudyOutlook(seeds, below, above, holds, float(low), float(high), float(np.mean(same)), pilots)
