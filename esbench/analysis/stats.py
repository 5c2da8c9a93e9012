"""Statistics across seeds and tasks: means, confidence intervals, IQM, common grids, seed checks.

Seeds are the replication unit. The interval of a mean over seeds is Student's t interval
(:func:`mean_ci`): chosen by simulation (:func:`simulated_coverage`), it covers the true mean
95% of the time on normal data at 3, 5 and 10 seeds, where a percentile bootstrap covers 75%,
83% and 90% (at 3 seeds a bootstrap interval can never leave [min seed, max seed]). Across tasks
the aggregate is the interquartile mean (IQM, ``scipy.stats.trim_mean(x, 0.25)``) with a
stratified percentile bootstrap (seeds resampled within each task), as in Agarwal et al. (2021),
"Deep RL at the Edge of the Statistical Precipice"; its coverage is measured by
:mod:`esbench.analysis.coverage`. Every resampling draws from an explicit, seeded
``np.random.Generator`` (never a global RNG), so a report is reproducible byte for byte.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np
import pandas as pd
from scipy import stats

#: Default bootstrap resamples (enough for stable 95% percentile intervals on a few seeds).
N_RESAMPLES = 2000

#: The interval method of :func:`mean_ci`, as a report names it.
MEAN_CI_METHOD = "Student-t interval of the mean over seeds"
MEDIAN_CI_METHOD = "distribution-free order-statistic interval of the median over seeds"

#: Distributions :func:`simulated_coverage` draws from: name -> (sampler, true mean).
#: ``lognormal`` (sigma 1) is the skewed case a report quotes beside the normal one.
DISTRIBUTIONS: dict[str, tuple[str, float]] = {
    "normal": ("standard normal", 0.0),
    "lognormal": ("lognormal, sigma 1 (skewed)", float(np.exp(0.5))),
}

#: Interval methods :func:`simulated_coverage` measures (``t`` is the one :func:`mean_ci` uses).
COVERAGE_METHODS: tuple[str, ...] = ("t", "percentile", "bca")


class IncompleteResultsError(ValueError):
    """Missing runs or unequal seed counts, found while ``allow_partial`` is False."""


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
    too narrow (:func:`simulated_coverage` measures it at 75-90% for a nominal 95%). It stays for
    comparison, and for statistics without a t interval.

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


def median_interval(values: np.ndarray, confidence: float = 0.95) -> tuple[float, float, float]:
    """The median's distribution-free interval between two order statistics, and its exact coverage.

    ``[x_(k), x_(n+1-k)]`` of the sorted ``values`` covers the true median with probability
    ``1 - 2 P(B <= k - 1)``, B ~ Binomial(n, 1/2), for any continuous distribution (only ranks
    matter, so +inf, a seed that never got there, is a value like any other). k is the largest
    whose coverage is at least ``confidence``. Below 6 seeds no pair reaches 95%: the widest,
    ``[min, max]``, is returned with the coverage it has (75% at 3 seeds, 87.5% at 4, 93.75% at 5),
    and the report prints that number, not 95%. A percentile bootstrap of the median is no better:
    at 3 seeds it also gives [min, max] (76% measured), and at 10 it under-covers (91%).

    Returns:
        ``(low, high, coverage)``; NaNs below 2 values.
    """
    x = np.sort(np.asarray(values, dtype=float))
    n = x.size
    if n < 2:
        return float("nan"), float("nan"), float("nan")
    k, coverage = _median_rank(n, confidence)
    return float(x[k - 1]), float(x[n - k]), coverage


def median_interval_coverage(n: int, confidence: float = 0.95) -> float:
    """The exact coverage of :func:`median_interval` over ``n`` values (NaN below 2)."""
    return _median_rank(n, confidence)[1] if n >= 2 else float("nan")


def _median_rank(n: int, confidence: float) -> tuple[int, float]:
    """(k, coverage) of :func:`median_interval` over ``n >= 2`` values."""
    k = 1
    while k + 1 <= n // 2 and 1.0 - 2.0 * stats.binom.cdf(k, n, 0.5) >= confidence:
        k += 1
    return k, 1.0 - 2.0 * float(stats.binom.cdf(k - 1, n, 0.5))


def mean_ci(
    values: np.ndarray, rng: np.random.Generator | None = None, confidence: float = 0.95
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean across seeds (axis 0) and its Student-t interval (:func:`t_interval`).

    The t interval keeps its promise at the seed counts benchmarks run (measured by
    :func:`simulated_coverage`: 95% on normal data at 3, 5 and 10 seeds); a percentile
    bootstrap does not.

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
    its coverage is measured by :func:`esbench.analysis.coverage.difference_coverage`.

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


#: The power a "seeds to decide" planning number is computed for (the usual planning convention:
#: a study of that many seeds per side decides 4 times in 5 if the effect is as measured).
PLANNING_POWER = 0.8


def welch_power(
    diff: float, var_a: float, var_b: float, n: int | np.ndarray, confidence: float = 0.95
) -> np.ndarray:
    """Probability that Welch's interval (:func:`welch_ci`) from ``n`` new seeds per side
    excludes 0, when the true difference of means is ``diff`` and the per-seed variances are
    ``var_a`` and ``var_b``: the two tails of a noncentral t with Welch's degrees of freedom.

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
    """Seeds per side a new study needs for its Welch interval (:func:`welch_ci`) of
    ``mean(a) - mean(b)`` to exclude 0 with probability ``power``, if the true difference and each
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
    true = DISTRIBUTIONS[dist][1]
    if method == "t":
        low, high = t_interval(data.T, confidence)
    else:
        low, high = _bootstrap_bounds(data, method, confidence, n_resamples, rng)
    return float(np.mean((low <= true) & (true <= high)))


def coverage_sentence(n_seeds: int, confidence: float = 0.95, n_datasets: int = 2000) -> str:
    """One sentence a report prints under its intervals: the method, the seeds, the measured coverage.

    The coverage is simulated here (seeded, so the sentence is the same bytes every time) at the
    report's own seed count, on normal data and on a skewed (lognormal) case.

    Args:
        n_seeds: Seeds behind the report's intervals (the fewest of any condition).
        confidence: Nominal level.
        n_datasets: Simulated data sets per distribution.
    """
    level = f"{round(100 * confidence)}%"
    if n_seeds < 2:
        return (
            f"Intervals: {MEAN_CI_METHOD} ({level}); with {_seeds(n_seeds)} there is no interval, so no "
            "claim is decided from it."
        )
    normal = simulated_coverage("t", n_seeds, "normal", n_datasets, confidence)
    skewed = simulated_coverage("t", n_seeds, "lognormal", n_datasets, confidence)
    return (
        f"Intervals: {MEAN_CI_METHOD} ({level} nominal), {n_seeds} seeds; measured coverage at "
        f"{n_seeds} seeds on {n_datasets:,} simulated data sets: {100 * normal:.1f}% on normal data, "
        f"{100 * skewed:.1f}% on a skewed (lognormal, sigma 1) case."
    )


def iqm(values: np.ndarray, axis: int | None = None) -> np.ndarray:
    """Interquartile mean: the mean of the middle 50% (``trim_mean(values, 0.25)``)."""
    return np.asarray(stats.trim_mean(np.asarray(values, dtype=float), 0.25, axis=axis))


def iqm_ci(
    scores: np.ndarray,
    rng: np.random.Generator,
    confidence: float = 0.95,
    n_resamples: int = N_RESAMPLES,
) -> tuple[float, float, float]:
    """IQM across (seeds x tasks) with a stratified percentile bootstrap CI.

    Seeds are resampled with replacement independently within each task, then the IQM of all
    resampled scores is taken.

    Args:
        scores: Array of shape (n_seeds, n_tasks), normalized so tasks are comparable.
        rng: Generator for the bootstrap.
        confidence: Confidence level.
        n_resamples: Bootstrap resamples.

    Returns:
        (iqm, low, high). low/high are NaN with fewer than 2 seeds.
    """
    data = np.asarray(scores, dtype=float)
    n, t = data.shape
    point = float(iqm(data.ravel()))
    if n < 2:
        return point, float("nan"), float("nan")
    idx = rng.integers(0, n, size=(n_resamples, n, t))
    resampled = data[idx, np.arange(t)[None, None, :]].reshape(n_resamples, n * t)
    dist = iqm(resampled, axis=1)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(dist, [alpha, 1.0 - alpha])
    return point, float(low), float(high)


#: The column :func:`reach_scores` adds: what a point certifies for a time to target.
REACH_COLUMN = "reach_return"


def reach_scores(curves: pd.DataFrame) -> pd.DataFrame:
    """``curves`` with :data:`REACH_COLUMN`: the score a point certifies for a time to target.

    It is ``eval_return_mean``, except where the run confirmed that point on fresh evaluation
    seeds (``confirm_return_mean``, taken when a run with ``budget.stop_at_return`` reached its
    target: :class:`esbench.training.ruler.Confirmation`), where it is the lower of the two: a
    point reaches a target only when its confirmation does too, so a time to the stopping target
    is the first confirmed point, never a lucky evaluation the confirmation did not back.
    """
    out = curves.copy()
    score = out["eval_return_mean"].astype(float)
    if "confirm_return_mean" in out.columns:
        confirm = out["confirm_return_mean"].astype(float)
        score = score.where(confirm.isna(), np.minimum(score, confirm))
    out[REACH_COLUMN] = score
    return out


def common_grid(xs: Sequence[np.ndarray], open_ended: Sequence[bool] | None = None) -> np.ndarray:
    """The union of the runs' x values inside the range every run covers.

    Args:
        xs: One increasing array of x values (e.g. timesteps) per run.
        open_ended: Per run, whether its end does not bound the grid (a run that stopped at its
            target score, carried forward past its end: :func:`interpolate_runs`). Default: none.
            When every run is open-ended the grid ends at the longest run's end.

    Returns:
        Sorted unique x values of shape (n_grid,), within [max of firsts, min of the lasts of the
        runs that are not open-ended]. Runs that share their evaluation points get exactly those
        points back.
    """
    pairs = [
        (np.asarray(x, dtype=float), bool(o))
        for x, o in zip(xs, open_ended if open_ended is not None else [False] * len(xs), strict=True)
        if len(x)
    ]
    if not pairs:
        return np.empty(0)
    arrays = [a for a, _ in pairs]
    lo = max(a.min() for a in arrays)
    bounded = [a.max() for a, o in pairs if not o]
    hi = min(bounded) if bounded else max(a.max() for a in arrays)
    grid = np.unique(np.concatenate(arrays))
    return grid[(grid >= lo) & (grid <= hi)]


def interpolate_runs(
    curves: pd.DataFrame,
    x: str = "timesteps",
    y: str = "eval_return_mean",
    grid: np.ndarray | None = None,
    carry: Collection[object] | None = None,
    held: float = float("nan"),
) -> tuple[np.ndarray, np.ndarray, list[object]]:
    """Put each run's curve on one x grid by linear interpolation (no extrapolation; the runs of
    ``carry`` hold ``held`` past their end).

    A run that ended at its target score (``budget.stop_at_return``) is not cut short by chance:
    it stopped because it got there. Passing its run_id in ``carry`` takes its end out of the
    bounds of the default grid, so one early stopper does not truncate the other seeds' curves.
    Past its stop it holds ``held``, which is never a measurement: NaN by default (nothing: means
    and bands past the stop are over the runs still measured, :func:`esbench.analysis.curves.mean_curve`),
    or a number a caller can justify, such as the target a run reached for a time to that target
    (:func:`esbench.analysis.verdicts.time_to_target`: "at or above it", its least value).

    Args:
        curves: Curve-table rows of one condition (several runs, e.g. one algo on one env).
        x: Column of the x axis (``timesteps``, ``wall_clock_s``, ``frames``, ...).
        y: Column of the y axis.
        grid: x values to interpolate at; default :func:`common_grid` of the runs.
        carry: run_ids whose end does not bound the grid, holding ``held`` past their last x.
        held: What a carried run holds past its end (NaN: nothing).

    Returns:
        (grid, values, run_ids): grid of shape (n_grid,), values of shape (n_runs, n_grid)
        (NaN outside a run's own x range, and ``held`` after the end of a carried run), and the
        run ids in row order (sorted by seed).
    """
    carry = set(carry or ())
    runs = []
    ordered = curves.sort_values(["seed", "run_id", x], kind="stable")
    for run_id, run in ordered.groupby("run_id", sort=False):
        run = run[np.isfinite(run[x].to_numpy(float)) & np.isfinite(run[y].to_numpy(float))]
        xv = run[x].to_numpy(float)
        yv = run[y].to_numpy(float)
        xv, keep = np.unique(xv, return_index=True)  # last duplicate would be ambiguous: keep first
        runs.append((run_id, xv, yv[keep]))
    if grid is None:
        grid = common_grid([r[1] for r in runs], [r[0] in carry for r in runs])
    values = np.full((len(runs), len(grid)), np.nan)
    for i, (run_id, xv, yv) in enumerate(runs):
        if len(xv):
            right = held if run_id in carry else np.nan
            values[i] = np.interp(grid, xv, yv, left=np.nan, right=right)
    return np.asarray(grid, dtype=float), values, [r[0] for r in runs]


def seed_counts(runs: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """Complete and missing runs per condition.

    Args:
        runs: The run table (:func:`esbench.analysis.load.load_run_table`).
        by: Condition columns, e.g. ``["algo", "env_id"]``.

    Returns:
        One row per condition: the ``by`` columns, ``n_seeds`` (complete runs), ``n_missing``
        (incomplete runs), ``missing_runs`` (their run ids, comma-separated), and ``partial``
        (True where runs are missing or the seed count is below the largest one).
    """
    rows = []
    for key, group in runs.groupby(list(by), sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        done = group[group["complete"]]
        miss = group[~group["complete"]]
        rows.append(
            {
                **dict(zip(by, key, strict=True)),
                "n_seeds": int(done["seed"].nunique()),
                "n_missing": len(miss),
                "missing_runs": ", ".join(map(str, miss["run_id"])),
            }
        )
    table = pd.DataFrame(rows, columns=[*by, "n_seeds", "n_missing", "missing_runs"])
    top = table["n_seeds"].max() if len(table) else 0
    table["partial"] = (table["n_missing"] > 0) | (table["n_seeds"] < top)
    return table


def check_seeds(runs: pd.DataFrame, by: Sequence[str], allow_partial: bool = False) -> pd.DataFrame:
    """Fail loudly on missing runs or unequal seed counts (never silently truncate).

    Args:
        runs: The run table.
        by: Condition columns whose seed counts must agree.
        allow_partial: Return the counts (``partial`` column marks the short conditions)
            instead of raising.

    Returns:
        The :func:`seed_counts` table.

    Raises:
        IncompleteResultsError: Some run is missing or seed counts differ, and not allow_partial.
            The message names each condition with its seed count.
    """
    counts = seed_counts(runs, by)
    if allow_partial or not counts["partial"].any():
        return counts
    lines = []
    for _, row in counts.iterrows():
        name = "/".join(str(row[c]) for c in by)
        line = f"  {name}: {row['n_seeds']} seed(s)"
        if row["n_missing"]:
            line += f", {row['n_missing']} missing run(s) (no summary.json): {row['missing_runs']}"
        lines.append(line)
    raise IncompleteResultsError(
        "incomplete results: seed counts differ or runs are missing "
        f"(by {', '.join(by)}):\n" + "\n".join(lines) + "\nrerun the sweep, or pass --allow-partial"
    )


def partial_keys(counts: pd.DataFrame, by: Sequence[str]) -> set[tuple[object, ...]]:
    """The condition keys (tuples over ``by``) marked partial in a :func:`seed_counts` table."""
    return {tuple(row[c] for c in by) for _, row in counts[counts["partial"]].iterrows()}


def _seeds(n: int) -> str:
    """``n`` with the noun "seed" in the right number ("1 seed", "0 seeds")."""
    return f"{n} seed" if n == 1 else f"{n} seeds"
