"""Aggregate measures across tasks, with rliable's definitions (Agarwal et al. 2021, "Deep RL at the
Edge of the Statistical Precipice"; ``rliable/metrics.py`` and ``rliable/library.py``).

Every measure takes normalized scores of shape ``(..., n_runs, n_tasks)`` (runs are seeds; tasks
are made comparable by normalizing first) and reduces the last two axes, so a stack of bootstrap
resamples, shape ``(n_resamples, n_runs, n_tasks)``, is measured in one call
(:func:`esbench.analysis.metrics.bootstrap.interval_estimate`). On one ``(n_runs, n_tasks)`` array
each returns exactly what rliable 1.2.0 returns (checked against its own numbers in the tests).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import stats


def _scores(scores: np.ndarray, name: str = "scores") -> np.ndarray:
    """``scores`` as a float array of at least 2 dimensions (runs x tasks), or a clear error."""
    data = np.asarray(scores, dtype=float)
    if data.ndim < 2 or data.shape[-1] == 0 or data.shape[-2] == 0:
        raise ValueError(
            f"{name} must be an array of shape (..., n_runs, n_tasks) with at least one run and one task; "
            f"got shape {data.shape}"
        )
    return data


def iqm(scores: np.ndarray) -> np.ndarray:
    """Interquartile mean over all runs and tasks: the mean of the middle 50% of the scores
    (rliable's ``aggregate_iqm``: ``scipy.stats.trim_mean(scores, 0.25, axis=None)``).

    Args:
        scores: Shape (..., n_runs, n_tasks).

    Returns:
        Shape (...): one IQM per leading index (a 0-d array for one runs x tasks array).
    """
    data = _scores(scores)
    flat = data.reshape(*data.shape[:-2], -1)
    return np.asarray(stats.trim_mean(flat, 0.25, axis=-1))


def mean_score(scores: np.ndarray) -> np.ndarray:
    """The mean over tasks of each task's mean over runs (rliable's ``aggregate_mean``).

    Returns:
        Shape (...).
    """
    return np.asarray(_scores(scores).mean(axis=-2).mean(axis=-1))


def median_score(scores: np.ndarray) -> np.ndarray:
    """The median over tasks of each task's mean over runs (rliable's ``aggregate_median``).

    Returns:
        Shape (...).
    """
    return np.asarray(np.median(_scores(scores).mean(axis=-2), axis=-1))


def optimality_gap(scores: np.ndarray, gamma: float = 1.0) -> np.ndarray:
    """How far the scores fall short of ``gamma`` on average, scores above it counting as ``gamma``
    (rliable's ``aggregate_optimality_gap``: ``gamma - mean(min(scores, gamma))``). Lower is better.

    Args:
        scores: Shape (..., n_runs, n_tasks).
        gamma: The score that counts as solved (1: the normalization's top).

    Returns:
        Shape (...).
    """
    data = _scores(scores)
    return np.asarray(gamma - np.minimum(data, gamma).mean(axis=(-2, -1)))


def _taus(taus: Sequence[float] | np.ndarray) -> np.ndarray:
    values = np.asarray(taus, dtype=float)
    if values.ndim != 1 or values.size == 0 or not np.all(np.isfinite(values)):
        raise ValueError(f"taus must be a non-empty 1-D array of finite thresholds; got {values.tolist()}")
    return values


def run_score_distribution(scores: np.ndarray, taus: Sequence[float] | np.ndarray) -> np.ndarray:
    """The share of all runs, over all tasks, that score above each threshold tau (rliable's
    ``score_distributions``, ``mean(scores > tau)``: its default performance profile).

    Args:
        scores: Shape (..., n_runs, n_tasks).
        taus: Shape (n_taus,).

    Returns:
        Shape (..., n_taus).
    """
    data = _scores(scores)
    thresholds = _taus(taus)
    return np.asarray((data[..., None] > thresholds).mean(axis=(-3, -2)))


def average_score_distribution(scores: np.ndarray, taus: Sequence[float] | np.ndarray) -> np.ndarray:
    """The share of tasks whose mean score over runs is above each threshold tau (rliable's
    ``average_score_distributions``).

    Returns:
        Shape (..., n_taus).
    """
    data = _scores(scores)
    thresholds = _taus(taus)
    return np.asarray((data.mean(axis=-2)[..., None] > thresholds).mean(axis=-2))


def performance_profile(
    scores: np.ndarray, taus: Sequence[float] | np.ndarray, use_score_distribution: bool = True
) -> np.ndarray:
    """rliable's performance profile at each threshold tau: the run-score distribution
    (:func:`run_score_distribution`, rliable's default) or, with ``use_score_distribution=False``,
    the average-score distribution (:func:`average_score_distribution`).

    Returns:
        Shape (..., n_taus).
    """
    if use_score_distribution:
        return run_score_distribution(scores, taus)
    return average_score_distribution(scores, taus)


def probability_of_improvement(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The probability that a run of X scores above a run of Y on the same task, averaged over tasks
    (rliable's ``probability_of_improvement``): per task, the Mann-Whitney U statistic over
    ``n_x * n_y``, i.e. P(X > Y) + P(X = Y) / 2 over all pairs of runs.

    Args:
        x: Shape (..., n_runs_x, n_tasks).
        y: Shape (..., n_runs_y, n_tasks): the same tasks, in the same order.

    Returns:
        Shape (...): 0.5 where X and Y are alike, above 0.5 where X tends to score higher.

    Raises:
        ValueError: The two arrays have different tasks or leading shapes.
    """
    a, b = _scores(x, "x"), _scores(y, "y")
    if a.shape[:-2] != b.shape[:-2] or a.shape[-1] != b.shape[-1]:
        raise ValueError(
            f"x and y must have the same tasks (last axis) and leading shape; got {a.shape} and {b.shape}"
        )
    pairs_x, pairs_y = a[..., :, None, :], b[..., None, :, :]
    wins = (pairs_x > pairs_y).mean(axis=(-3, -2)) + 0.5 * (pairs_x == pairs_y).mean(axis=(-3, -2))
    return np.asarray(wins.mean(axis=-1))
