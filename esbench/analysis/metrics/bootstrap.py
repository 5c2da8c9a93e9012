"""Stratified bootstrap intervals of an aggregate measure, as rliable's ``get_interval_estimates``.

Strata are tasks: each resample draws, independently within every task, as many runs as the task
has, with replacement (rliable's ``StratifiedBootstrap``); a measure of several arrays (a
probability of improvement) resamples each array on its own (``StratifiedIndependentBootstrap``).
The interval is the percentile one. Randomness comes from the ``np.random.Generator`` passed in, so
the same seed gives the same interval (rliable draws from numpy's global RNG whatever it is given).

A measure is any function of ``(..., n_runs, n_tasks)`` arrays reducing the last two axes
(:mod:`esbench.analysis.metrics.aggregate`): the resamples are measured a block at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from esbench.analysis.metrics.intervals import N_RESAMPLES

#: A measure of one or more score arrays (runs x tasks, with leading batch axes).
Measure = Callable[..., np.ndarray]

#: Resampled scores measured per call: bounds the memory of a block of resamples.
_BLOCK_VALUES = 2_000_000


def stratified_indices(rng: np.random.Generator, n_runs: int, n_tasks: int, reps: int) -> np.ndarray:
    """Shape (reps, n_runs, n_tasks): for each resample and task, the runs drawn (with replacement)."""
    return rng.integers(0, n_runs, size=(reps, n_runs, n_tasks))


def _check(scores: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
    arrays = tuple(np.asarray(s, dtype=float) for s in scores)
    if not arrays:
        raise ValueError("interval_estimate needs at least one score array")
    for a in arrays:
        if a.ndim != 2 or 0 in a.shape:
            raise ValueError(f"each score array must have shape (n_runs, n_tasks), both > 0; got {a.shape}")
    return arrays


def interval_estimate(
    measure: Measure,
    *scores: np.ndarray,
    rng: np.random.Generator,
    reps: int = N_RESAMPLES,
    confidence: float = 0.95,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A measure of runs x tasks scores, and its stratified-bootstrap percentile interval.

    Args:
        measure: A function of ``len(scores)`` arrays of shape (..., n_runs, n_tasks), e.g.
            :func:`~esbench.analysis.metrics.aggregate.iqm`, or
            ``functools.partial(performance_profile, taus=taus)``.
        *scores: Arrays of shape (n_runs, n_tasks) (normalized scores).
        rng: The Generator every resample is drawn from.
        reps: Bootstrap resamples.
        confidence: Two-sided level of the percentile interval.

    Returns:
        ``(point, low, high)``, each shaped like ``measure``'s output on one set of arrays; low/high
        NaN where some array has fewer than 2 runs (a resample of one run is that run).

    Raises:
        ValueError: No array, an array that is not 2-D, or ``reps`` < 1.
    """
    arrays = _check(scores)
    if reps < 1:
        raise ValueError(f"reps={reps} must be at least 1")
    point = np.asarray(measure(*arrays), dtype=float)
    if min(a.shape[0] for a in arrays) < 2:
        nan = np.full(point.shape, np.nan)
        return point, nan, nan.copy()
    indices = [stratified_indices(rng, a.shape[0], a.shape[1], reps) for a in arrays]
    block = max(1, _BLOCK_VALUES // max(a.size for a in arrays))
    parts = []
    for start in range(0, reps, block):
        resampled = [
            a[idx[start : start + block], np.arange(a.shape[1])]
            for a, idx in zip(arrays, indices, strict=True)
        ]
        parts.append(np.asarray(measure(*resampled), dtype=float))
    distribution = np.concatenate(parts, axis=0)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(distribution, [alpha, 1.0 - alpha], axis=0)
    return point, low, high


def interval_estimates(
    score_dict: Mapping[str, np.ndarray | tuple[np.ndarray, ...]],
    measure: Measure,
    rng: np.random.Generator,
    reps: int = N_RESAMPLES,
    confidence: float = 0.95,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """:func:`interval_estimate` for every entry of ``score_dict``, in its order, from one Generator
    (rliable's ``get_interval_estimates``).

    Args:
        score_dict: Name -> one (n_runs, n_tasks) array, or a tuple of them for a measure of several
            (e.g. ``{"es,trpo": (es, trpo)}`` for a probability of improvement).
        measure: As for :func:`interval_estimate`.
        rng: Generator shared by all entries (consumed in the dict's order).
        reps: Bootstrap resamples per entry.
        confidence: Two-sided level.

    Returns:
        ``(points, intervals)``: name -> point estimate, and name -> array of shape (2, ...) holding
        the lower then the upper end (rliable's layout).
    """
    points, intervals = {}, {}
    for name, value in score_dict.items():
        arrays = value if isinstance(value, tuple) else (value,)
        point, low, high = interval_estimate(measure, *arrays, rng=rng, reps=reps, confidence=confidence)
        points[name] = point
        intervals[name] = np.stack([low, high])
    return points, intervals
