"""Simulated coverage of the intervals in :mod:`esbench.analysis.metrics`: how often each contains
the true value on data sets drawn with a known truth. Numbers only; the table and its words are
:mod:`esbench.analysis.coverage`.

Every simulation draws from one seeded ``np.random.Generator`` (the same arguments give the same
numbers) and returns fractions of data sets: the two-sided coverage and, for the time to a score,
each end's miss (an interval wholly above the truth misses low, one wholly below misses high: one
of the two decides a claim, so each is reported).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
from scipy import stats

from esbench.analysis.metrics.aggregate import iqm
from esbench.analysis.metrics.bootstrap import interval_estimate
from esbench.analysis.metrics.censored import restricted_mean_time, survival_curve, time_ratio, time_to_score
from esbench.analysis.metrics.intervals import t_interval, welch_ci

#: Distributions :func:`simulated_coverage` draws from: name -> true mean. ``lognormal`` (sigma 1)
#: is the skewed case a report quotes beside the normal one.
DISTRIBUTIONS: dict[str, float] = {"normal": 0.0, "lognormal": float(np.exp(0.5))}

#: Interval methods :func:`simulated_coverage` measures (``t`` is the one reports print).
COVERAGE_METHODS: tuple[str, ...] = ("t", "percentile", "bca")

#: Interval methods of a median time :func:`time_to_score_coverage` measures: ``order`` is
#: :func:`~esbench.analysis.metrics.censored.time_to_score`'s; ``log-log`` and ``linear`` invert the
#: Kaplan-Meier pointwise band of that transform (Brookmeyer-Crowley).
MEDIAN_METHODS: tuple[str, ...] = ("order", "log-log", "linear")


def _draw(dist: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    if dist == "normal":
        return rng.standard_normal(shape)
    if dist == "lognormal":
        return np.exp(rng.standard_normal(shape))
    raise ValueError(f"dist={dist!r} is unknown; allowed: {', '.join(DISTRIBUTIONS)}")


def _bootstrap_bounds(
    data: np.ndarray, method: str, confidence: float, n_resamples: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile or BCa bootstrap bounds of the mean of each row of ``data`` (shape (m, n))."""
    m, n = data.shape
    idx = rng.integers(0, n, size=(m, n_resamples, n))
    boot = np.take_along_axis(data[:, None, :], idx, axis=2).mean(axis=2)  # (m, B)
    alpha = (1.0 - confidence) / 2.0
    probs = np.array([[alpha, 1.0 - alpha]] * m)
    if method == "bca":
        theta = data.mean(axis=1, keepdims=True)
        prop = np.clip((boot < theta).mean(axis=1), 1.0 / n_resamples, 1.0 - 1.0 / n_resamples)
        z0 = stats.norm.ppf(prop)[:, None]
        jack = (data.sum(axis=1, keepdims=True) - data) / (n - 1)
        d = jack.mean(axis=1, keepdims=True) - jack
        denom = 6.0 * np.sum(d**2, axis=1, keepdims=True) ** 1.5
        accel = np.divide(np.sum(d**3, axis=1, keepdims=True), denom, out=np.zeros((m, 1)), where=denom > 0)
        z = stats.norm.ppf(np.array([alpha, 1.0 - alpha]))[None, :]
        probs = stats.norm.cdf(z0 + (z0 + z) / (1.0 - accel * (z0 + z)))
    boot.sort(axis=1)
    pos = np.clip(np.rint(probs * (n_resamples - 1)).astype(int), 0, n_resamples - 1)
    bounds = np.take_along_axis(boot, pos, axis=1)
    return bounds[:, 0], bounds[:, 1]


def simulated_coverage(
    method: str = "t",
    n: int = 5,
    dist: str = "normal",
    n_datasets: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    n_resamples: int = 1000,
) -> float:
    """How often an interval of the mean covers the true mean, on simulated data sets of n seeds.

    Draws ``n_datasets`` data sets of ``n`` values from ``dist`` (:data:`DISTRIBUTIONS`), builds
    each one's interval and counts how many contain the distribution's mean. Vectorized: 2,000
    data sets take milliseconds for ``t`` and about a second for the bootstrap methods.

    Args:
        method: ``t`` (what :func:`mean_ci` prints), ``percentile`` or ``bca`` (bootstrap).
        n: Seeds per data set.
        dist: ``normal`` or ``lognormal`` (sigma 1: a skewed case).
        n_datasets: Simulated data sets.
        confidence: Nominal level of the intervals.
        seed: Seed of the simulation (the same arguments give the same coverage).
        n_resamples: Bootstrap resamples per data set (bootstrap methods only).

    Returns:
        The fraction of data sets whose interval contains the true mean.

    Raises:
        ValueError: An unknown ``method`` or ``dist``, or fewer than 2 seeds.
    """
    if method not in COVERAGE_METHODS:
        raise ValueError(f"method={method!r} is unknown; allowed: {', '.join(COVERAGE_METHODS)}")
    if dist not in DISTRIBUTIONS:
        raise ValueError(f"dist={dist!r} is unknown; allowed: {', '.join(DISTRIBUTIONS)}")
    if n < 2:
        raise ValueError(f"n={n}: an interval needs at least 2 seeds")
    rng = np.random.default_rng(seed)
    data = _draw(dist, (n_datasets, n), rng)
    true = DISTRIBUTIONS[dist]
    if method == "t":
        low, high = t_interval(data.T, confidence)
    else:
        low, high = _bootstrap_bounds(data, method, confidence, n_resamples, rng)
    return float(np.mean((low <= true) & (true <= high)))


def band_median_interval(
    times: np.ndarray, reached: np.ndarray, confidence: float = 0.95, method: str = "log-log"
) -> tuple[float, float]:
    """The Brookmeyer-Crowley interval of the Kaplan-Meier median: the times whose pointwise
    ``confidence`` band of S(t) (Greenwood variance, ``method`` transform: scipy's ``log-log`` or
    ``linear``) contains 1/2. Measured beside :func:`~esbench.analysis.metrics.censored.time_to_score`'s
    order-statistic interval; not what a report prints.

    Returns:
        ``(low, high)``: the first time the band's lower edge is at or below 1/2, and the first time
        its upper edge is (``inf`` if never).
    """
    t = np.asarray(times, dtype=float)
    r = np.asarray(reached, dtype=bool)
    survival_curve(t, r)  # the same checks as every other estimate
    sf = stats.ecdf(stats.CensoredData.right_censored(t, ~r)).sf
    with warnings.catch_warnings():  # undefined where S is 0 or 1: read as no bound there (nan -> 1)
        warnings.simplefilter("ignore", RuntimeWarning)
        band = sf.confidence_interval(confidence, method=method)
    q = np.asarray(sf.quantiles, dtype=float)
    lo_s = np.nan_to_num(np.asarray(band.low.probabilities, dtype=float), nan=1.0)
    hi_s = np.nan_to_num(np.asarray(band.high.probabilities, dtype=float), nan=1.0)

    def first(s: np.ndarray) -> float:
        hit = np.flatnonzero(s <= 0.5 + 1e-12)
        return float(q[hit[0]]) if hit.size else float("inf")

    return first(lo_s), first(hi_s)


def censoring_budget(spread: float, censored: float) -> float:
    """The common budget at which a share ``censored`` of lognormal(0, ``spread``) times run past it
    (``inf`` for 0: no run censored)."""
    if not 0.0 <= censored < 1.0:
        raise ValueError(f"censored={censored} must be in [0, 1)")
    return float("inf") if censored == 0.0 else float(np.exp(spread * stats.norm.ppf(1.0 - censored)))


def _censored_times(
    rng: np.random.Generator,
    n_datasets: int,
    n: int,
    spread: float,
    budget: float,
    budget_spread: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Shape (n_datasets, n) times (lognormal, median 1) censored at ``budget`` (each run's own, a
    factor ``exp(budget_spread * U(-1, 1))`` off it, where ``budget_spread`` > 0), and reached flags."""
    true = np.exp(spread * rng.standard_normal((n_datasets, n)))
    budgets = np.full(true.shape, budget)
    if budget_spread > 0.0:
        budgets = budget * np.exp(budget_spread * rng.uniform(-1.0, 1.0, true.shape))
    reached = true <= budgets
    return np.where(reached, true, budgets), reached


def _misses(ends: np.ndarray, truth: float) -> tuple[float, float, float]:
    """(coverage, low_miss, high_miss) of intervals ``ends`` (shape (n_datasets, 2)) around ``truth``."""
    low_miss = float(np.mean(ends[:, 0] > truth))
    high_miss = float(np.mean(ends[:, 1] < truth))
    return 1.0 - low_miss - high_miss, low_miss, high_miss


def time_to_score_coverage(
    n: int,
    spread: float = 0.3,
    censored: float = 0.0,
    n_datasets: int = 2000,
    seed: int = 0,
    method: str = "order",
    confidence: float = 0.95,
    budget_spread: float = 0.0,
) -> tuple[float, float, float]:
    """Coverage of an interval of the median time to a score, on censored lognormal times.

    Each data set is ``n`` runs whose times are lognormal (median 1, log-sd ``spread``: 0.3 mild,
    0.8 strong), censored at the common budget that a share ``censored`` of runs would run past
    (:func:`censoring_budget`), as runs with one budget are; with ``budget_spread`` > 0 each run's
    budget is that one times ``exp(budget_spread * U(-1, 1))``, so some runs stop short of the
    median (runs of unequal length).

    Args:
        n: Runs per data set.
        spread: Log-sd of the times.
        censored: Expected share of runs censored (0 to below 1).
        n_datasets: Simulated data sets.
        seed: Seed of the simulation.
        method: One of :data:`MEDIAN_METHODS`.
        confidence: Nominal two-sided level.
        budget_spread: Log-spread of the runs' budgets around the common one (0: one budget).

    Returns:
        ``(coverage, low_miss, high_miss)``: the share of intervals containing the true median (1),
        of those wholly above it, and of those wholly below it.
    """
    if method not in MEDIAN_METHODS:
        raise ValueError(f"method={method!r} is unknown; allowed: {', '.join(MEDIAN_METHODS)}")
    rng = np.random.default_rng(seed)
    budget = censoring_budget(spread, censored)
    times, reached = _censored_times(rng, n_datasets, n, spread, budget, budget_spread)
    interval: Callable[[np.ndarray, np.ndarray], tuple[float, float]]
    if method == "order":
        interval = lambda t, r: time_to_score(t, r, confidence)[1:]  # noqa: E731
    else:
        interval = lambda t, r: band_median_interval(t, r, confidence, method)  # noqa: E731
    return _misses(np.array([interval(t, r) for t, r in zip(times, reached, strict=True)]), 1.0)


def time_ratio_coverage(
    n: int, spread: float = 0.3, censored: float = 0.0, n_datasets: int = 2000, seed: int = 0
) -> tuple[float, float, float]:
    """Coverage of :func:`~esbench.analysis.metrics.censored.time_ratio`'s 95% interval of a ratio
    of two median times, ``n`` runs a side, each side drawn as :func:`time_to_score_coverage` draws
    one (lognormal times, log-sd ``spread``, a common budget that a share ``censored`` of runs run
    past). The numerator's true median is 1 and the denominator's 1/2 (true ratio 2), each censored
    at its own budget.

    Returns:
        ``(coverage, low_miss, high_miss)`` around the true ratio 2.
    """
    rng = np.random.default_rng(seed)
    cut = censoring_budget(spread, censored)
    (top, top_hit), (bottom, bottom_hit) = (_censored_times(rng, n_datasets, n, spread, cut) for _ in "ab")
    pairs = zip(top, top_hit, 0.5 * bottom, bottom_hit, strict=True)
    return _misses(np.array([time_ratio(*pair)[1:] for pair in pairs]), 2.0)


def true_restricted_mean(spread: float, limit: float) -> float:
    """E[min(T, limit)] for T lognormal(0, ``spread``): the restricted mean the simulation targets."""
    s2 = spread**2
    z = np.log(limit) / spread
    return float(np.exp(s2 / 2.0) * stats.norm.cdf(z - spread) + limit * stats.norm.sf(z))


def restricted_mean_coverage(
    n: int,
    spread: float = 0.3,
    censored: float = 0.0,
    n_datasets: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[float, float, float]:
    """Coverage of :func:`~esbench.analysis.metrics.censored.restricted_mean_time`'s interval, on
    the data sets of :func:`time_to_score_coverage`. The limit is the common budget (where 0% are
    censored: the budget 1% would run past, with no run censored).

    Returns:
        ``(coverage, low_miss, high_miss)``, as :func:`time_to_score_coverage`.
    """
    rng = np.random.default_rng(seed)
    budget = censoring_budget(spread, censored)
    limit = censoring_budget(spread, 0.01) if censored == 0.0 else budget
    times, reached = _censored_times(rng, n_datasets, n, spread, budget)
    truth = true_restricted_mean(spread, limit)
    ends = [restricted_mean_time(t, r, limit, confidence)[1:] for t, r in zip(times, reached, strict=True)]
    return _misses(np.array(ends), truth)


def difference_coverage(n: int, n_datasets: int = 2000, seed: int = 0) -> float:
    """Coverage of Welch's interval of mean(a) - mean(b), n seeds a side, on normal samples whose
    spreads differ threefold (sd 1 and 3; true difference 0)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n_datasets, n))
    b = 3.0 * rng.standard_normal((n_datasets, n))
    hits = 0
    for x, y in zip(a, b, strict=True):
        _, low, high = welch_ci(x, y)
        hits += bool(low <= 0.0 <= high)
    return hits / n_datasets


def iqm_coverage(
    n_seeds: int, n_tasks: int = 5, n_datasets: int = 200, n_resamples: int = 500, seed: int = 0
) -> float:
    """Coverage of the stratified-bootstrap IQM interval across tasks
    (:func:`~esbench.analysis.metrics.bootstrap.interval_estimate` of
    :func:`~esbench.analysis.metrics.aggregate.iqm`).

    Each task's scores are normal with unit spread and task means spread over [0, 2]; the truth
    is the IQM of the pooled population (of a million draws per task).
    """
    rng = np.random.default_rng(seed)
    centres = np.linspace(0.0, 2.0, n_tasks)
    pop = (centres[None, :] + rng.standard_normal((1_000_000, n_tasks))).ravel()
    truth = float(stats.trim_mean(pop, 0.25))
    hits = 0
    for _ in range(n_datasets):
        scores = centres[None, :] + rng.standard_normal((n_seeds, n_tasks))
        _, low, high = interval_estimate(iqm, scores, rng=rng, reps=n_resamples)
        hits += bool(low <= truth <= high)
    return hits / n_datasets
