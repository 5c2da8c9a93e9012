"""Learning curves aggregated across seeds (mean + Student-t band) and across tasks (IQM).

Input is the tidy curve table of :mod:`esbench.analysis.load`; output is a tidy table of one row
per (condition, grid point), ready to draw or to read targets off.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np
import pandas as pd

from esbench.analysis.metrics.aggregate import iqm
from esbench.analysis.metrics.bootstrap import interval_estimate
from esbench.analysis.metrics.intervals import mean_ci
from esbench.analysis.stats import interpolate_runs

CURVE_COLUMNS: tuple[str, ...] = ("x", "mean", "low", "high", "n_seeds")


def mean_curve(
    curves: pd.DataFrame,
    x: str = "timesteps",
    y: str = "eval_return_mean",
    rng: np.random.Generator | None = None,
    stopped: Collection[object] | None = None,
) -> pd.DataFrame:
    """Mean curve over the runs (seeds) of one condition, on their common grid.

    Args:
        curves: Curve-table rows of one condition (e.g. one algo on one env).
        x: x column (``timesteps``, ``wall_clock_s``, ``frames``).
        y: y column.
        rng: Generator passed to :func:`~esbench.analysis.metrics.intervals.mean_ci` (95% Student-t band);
            None skips the band (low/high NaN).
        stopped: run_ids that ended at their target score (``budget.stop_at_return``): their end
            does not cut the curve short, and nothing is held for them past it
            (:func:`esbench.analysis.stats.interpolate_runs`): past a stop the mean and its band
            are over the runs still measured there, and ``n_seeds`` says how many.

    Returns:
        DataFrame of shape (n_grid, 5) with columns :data:`CURVE_COLUMNS`; ``n_seeds`` is the
        number of runs measured at each point.
    """
    grid, values, _ = interpolate_runs(curves, x=x, y=y, carry=stopped)
    if values.size == 0:
        return pd.DataFrame(columns=list(CURVE_COLUMNS))
    measured = np.isfinite(values)
    n = measured.sum(axis=0)
    full = n == values.shape[0]
    mean = np.full(values.shape[1], np.nan)
    low, high = mean.copy(), mean.copy()
    if full.any():
        mean[full] = values[:, full].mean(axis=0)
        if rng is not None:
            _, low[full], high[full] = mean_ci(values[:, full], rng)
    for j in np.flatnonzero(~full & (n > 0)):  # past a stop: the runs still measured
        column = values[measured[:, j], j]
        mean[j] = column.mean()
        if rng is not None:
            _, low[j], high[j] = mean_ci(column, rng)
    return pd.DataFrame({"x": grid, "mean": mean, "low": low, "high": high, "n_seeds": n})


def aggregate_curves(
    curves: pd.DataFrame,
    by: Sequence[str],
    x: str = "timesteps",
    y: str = "eval_return_mean",
    rng: np.random.Generator | None = None,
    stopped: Collection[object] | None = None,
) -> pd.DataFrame:
    """:func:`mean_curve` for every condition of ``by`` (groups in sorted order, so the shared
    Generator is consumed reproducibly); ``stopped`` run_ids do not cut curves short (see there).

    Returns:
        Tidy DataFrame: the ``by`` columns then :data:`CURVE_COLUMNS`.
    """
    parts = []
    for key, group in curves.groupby(list(by), sort=True):
        key = key if isinstance(key, tuple) else (key,)
        part = mean_curve(group, x=x, y=y, rng=rng, stopped=stopped)
        for col, val in zip(by, key, strict=True):
            part[col] = val
        parts.append(part)
    columns = [*by, *CURVE_COLUMNS]
    if not parts:
        return pd.DataFrame(columns=columns)
    return pd.concat(parts, ignore_index=True)[columns]


def normalized_iqm_curve(
    curves: pd.DataFrame,
    algo: str,
    x: str = "timesteps",
    y: str = "eval_return_mean",
    n_points: int = 50,
    rng: np.random.Generator | None = None,
) -> pd.DataFrame:
    """IQM over tasks of one algorithm's curves, with scores min-max normalized per task.

    Each task's scores are mapped to [0, 1] using the lowest and highest ``y`` any algorithm
    reached on that task; x is the fraction of the algorithm's own budget on that task (0..1),
    so tasks with different budgets share one axis.

    Args:
        curves: Curve-table rows of several tasks and algorithms.
        algo: The algorithm to aggregate.
        x: x column before normalization.
        y: y column.
        n_points: Grid points on the [0, 1] budget-fraction axis.
        rng: Generator for the stratified bootstrap; None skips the band.

    Returns:
        DataFrame of shape (n_points, 5), columns :data:`CURVE_COLUMNS` (x is the fraction).
    """
    frac = np.linspace(0.0, 1.0, n_points)
    per_task = []
    for _, task in curves.groupby("env_id", sort=True):
        lo, hi = np.nanmin(task[y].to_numpy(float)), np.nanmax(task[y].to_numpy(float))
        mine = task[task["algo"] == algo]
        if mine.empty:
            continue
        grid, values, _ = interpolate_runs(mine, x=x, y=y)
        if len(grid) < 2:
            continue
        on_frac = np.stack([np.interp(frac, (grid - grid[0]) / (grid[-1] - grid[0]), v) for v in values])
        per_task.append((on_frac - lo) / (hi - lo) if hi > lo else np.zeros_like(on_frac))
    if not per_task:
        return pd.DataFrame(columns=list(CURVE_COLUMNS))
    n = min(v.shape[0] for v in per_task)
    scores = np.stack([v[:n] for v in per_task], axis=2)  # (n_seeds, n_points, n_tasks)
    rows = []
    for j in range(n_points):
        if rng is None:
            point, low, high = float(iqm(scores[:, j, :])), float("nan"), float("nan")
        else:
            point, low, high = (float(v) for v in interval_estimate(iqm, scores[:, j, :], rng=rng, reps=500))
        rows.append({"x": frac[j], "mean": point, "low": low, "high": high, "n_seeds": n})
    return pd.DataFrame(rows, columns=list(CURVE_COLUMNS))


def first_reach(x: np.ndarray, y: np.ndarray, target: float) -> float:
    """The first x at which the curve reaches ``target`` (y >= target), or NaN if never.

    Evaluated at the curve's own points (no interpolation between them): the answer is an x
    where the score was actually measured at or above the target.

    Args:
        x: Increasing x values, shape (n,).
        y: Curve values, shape (n,).
        target: Score to reach.
    """
    y = np.asarray(y, dtype=float)
    tol = 1e-9 * max(1.0, abs(target))
    hit = np.flatnonzero(y >= target - tol)
    return float(np.asarray(x, dtype=float)[hit[0]]) if hit.size else float("nan")
