"""Retention measures as numpy functions: arrays in, numbers out, no tables and no words.

One definition of each, read by every report section (the MuJoCo sequences and the language
model alike):

* **a drop and its recovery** (:func:`drop_and_recovery`): for an earlier stage i during a later
  stage j, with windows fixed in advance as fractions of stage j's budget (:class:`DropWindows`:
  its first third and its last third), the same statistic at both ends, the mean over the
  window's evaluation points::

      early drop = start - mean_{early window} y,   late drop = start - mean_{late window} y,
      recovery   = mean_{late window} y - mean_{early window} y,

  ``start`` the value of the model stage j started from. A steady decline has a negative
  recovery; only a curve that comes back up in the last third has a positive one. (The lowest
  point against a mean of the last points would read any steady decline as a recovery: the minimum
  of noisy points lies below their mean.)
* **a gain path** (:func:`gain_path`): along a later stage, the gain of the primary measure since
  the stage began and the retention of the earlier measure, as a difference (``y(t) - y(start)``)
  or a ratio (``y(t) / y(start)``), a parameter;
* **the matched gain** (:func:`mean_path`, :func:`crossing`, :func:`retention_at_matched_gain`)
  and the Welch interval of a difference (:func:`welch_diff_ci`);
* **the standard error of one evaluation** (:func:`evaluation_se`, :func:`pooled_se`), the unit of
  a claim's minimum effect (:func:`esbench.analysis.claims.verdicts.learned`);
* **a stage's end value** (:func:`stage_end_value`): the score of the model the stage ended with,
  one model's score (a stage's R_ref is never a mean of two models).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from esbench.analysis.metrics.intervals import welch_ci

#: How a retention is read against its start: ``y(t) - y(start)`` or ``y(t) / y(start)``.
RetentionKind = Literal["difference", "ratio"]


@dataclass(frozen=True)
class DropWindows:
    """The windows of a drop, fixed in advance, as fractions of the later stage's budget.

    Attributes:
        early: ``(lo, hi]``: the early window (default the first third, ``(0, 1/3]``).
        late: ``(lo, hi]``: the late window (default the last third, ``(2/3, 1]``).
    """

    early: tuple[float, float] = (0.0, 1.0 / 3.0)
    late: tuple[float, float] = (2.0 / 3.0, 1.0)

    def __post_init__(self) -> None:
        for name, (lo, hi) in (("early", self.early), ("late", self.late)):
            if not 0.0 <= lo < hi <= 1.0:
                raise ValueError(
                    f"DropWindows.{name} must be (lo, hi] with 0 <= lo < hi <= 1, got {(lo, hi)}"
                )
        if self.early[1] > self.late[0]:
            raise ValueError(f"DropWindows: the early window {self.early} overlaps the late one {self.late}")


#: The windows every report uses.
DROP_WINDOWS = DropWindows()


def stage_fractions(timesteps: ArrayLike, start: float, end: float) -> np.ndarray:
    """Each point's progress through a stage as a fraction of its budget: ``(t - start) / (end -
    start)``; all NaN for a stage of no budget."""
    t = np.asarray(timesteps, dtype=float)
    width = float(end) - float(start)
    if not width > 0:
        return np.full(t.shape, np.nan)
    return (t - float(start)) / width


def window_mean(fraction: ArrayLike, values: ArrayLike, window: tuple[float, float]) -> float:
    """Mean of ``values`` over the points whose ``fraction`` lies in ``(lo, hi]``; NaN when none."""
    f = np.asarray(fraction, dtype=float)
    v = np.asarray(values, dtype=float)
    lo, hi = window
    inside = (f > lo) & (f <= hi + 1e-9)  # lo >= 0: never the stage's starting model (fraction 0)
    return float(np.mean(v[inside])) if inside.any() else float("nan")


def drop_and_recovery(
    fraction: ArrayLike, values: ArrayLike, start: float, windows: DropWindows = DROP_WINDOWS
) -> tuple[float, float, float]:
    """(early drop, late drop, recovery) of one curve during a later stage (module doc).

    Args:
        fraction: The stage's points' progress, fractions of its budget (:func:`stage_fractions`).
        values: The earlier stage's measure at those points.
        start: Its value for the model the stage started from.
        windows: The early and late windows.

    Returns:
        NaN where a window holds no point.
    """
    early = window_mean(fraction, values, windows.early)
    late = window_mean(fraction, values, windows.late)
    return float(start) - early, float(start) - late, late - early


@dataclass(frozen=True)
class GainPath:
    """One run's path through a later stage j: gain and retention at each point of its span.

    Attributes:
        algo, sequence, seed, stage_index, stage: Whose path.
        gain: The primary measure's gain since the stage began, shape (n,), ``gain[0] == 0``.
        retention: The earlier measure's retention since the stage began, shape (n,).
        progress: Training progress since the stage began (timesteps, or evaluation points),
            starting at 0 and strictly increasing, shape (n,).
        se: The standard error of one evaluation of the primary measure at each point, shape (n,)
            (NaN where unknown).
    """

    algo: str
    sequence: str
    seed: int
    stage_index: int
    stage: str
    gain: np.ndarray
    retention: np.ndarray
    progress: np.ndarray
    se: np.ndarray


def gain_and_retention(
    new: ArrayLike, earlier: ArrayLike, retention: RetentionKind = "difference"
) -> tuple[np.ndarray, np.ndarray]:
    """The gain ``new(t) - new(start)`` and the retention of ``earlier`` against its start, as a
    difference (``earlier(t) - earlier(start)``: 0 nothing lost) or a ratio (``earlier(t) /
    earlier(start)``: 1 nothing lost; NaN when the start is 0). Index 0 is the stage's start."""
    x, y = np.asarray(new, dtype=float), np.asarray(earlier, dtype=float)
    if retention == "difference":
        kept = y - y[0]
    elif retention == "ratio":
        kept = y / y[0] if y[0] != 0 else np.full(y.shape, np.nan)
    else:
        raise ValueError(f"retention must be 'difference' or 'ratio', got {retention!r}")
    return x - x[0], kept


def mean_path(paths: Sequence[GainPath]) -> tuple[np.ndarray, np.ndarray]:
    """A condition's mean gain over its runs against training progress.

    Each run is linear between its points; the grid is every run's progress up to the progress
    every run covers (the shortest run's end), so no run is extrapolated.

    Returns:
        (grid, mean gain on it), both ascending in progress.
    """
    end = min(float(p.progress[-1]) for p in paths)
    grid = np.unique(np.concatenate([p.progress[p.progress <= end] for p in paths]))
    gains = np.array([np.interp(grid, p.progress, p.gain) for p in paths])
    return grid, gains.mean(axis=0)


def crossing(grid: np.ndarray, values: np.ndarray, g: float) -> float:
    """The first ``grid`` position where ``values`` reach ``g``, linear between the two points
    around the crossing; ``grid[0]`` when the first value does; NaN when none does."""
    reached = np.flatnonzero(values >= g)
    if not len(reached):
        return float("nan")
    n = int(reached[0])
    if n == 0:
        return float(grid[0])
    x0, x1, t0, t1 = values[n - 1], values[n], grid[n - 1], grid[n]
    return float(t0 + (g - x0) / (x1 - x0) * (t1 - t0))


def retention_at_matched_gain(
    paths: Sequence[GainPath], path: tuple[np.ndarray, np.ndarray], g: float
) -> np.ndarray:
    """Each run's retention at the progress where its condition's mean gain first reaches ``g``
    (:func:`crossing` on ``path``, the condition's :func:`mean_path`); all NaN when the mean gain
    never does (or ``g`` is NaN)."""
    tau = crossing(*path, g) if np.isfinite(g) else float("nan")
    if not np.isfinite(tau):
        return np.full(len(paths), np.nan)
    return np.array([np.interp(tau, p.progress, p.retention) for p in paths])


def welch_diff_ci(
    a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, confidence: float = 0.95
) -> tuple[float, float, float]:
    """``mean(a) - mean(b)`` over the finite values, with Welch's t interval
    (:func:`esbench.analysis.metrics.intervals.welch_ci`: two independent groups, unequal variances).

    Returns:
        (difference, low, high); all NaN when a group has no finite value, NaN bounds when a group
        has fewer than 2.
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    x, y = x[np.isfinite(x)], y[np.isfinite(y)]
    if not len(x) or not len(y):
        return float("nan"), float("nan"), float("nan")
    return welch_ci(x, y, confidence)


def evaluation_se(std: ArrayLike, n: float) -> np.ndarray:
    """The standard error of one evaluation's mean: its per-episode standard deviation over
    ``sqrt(n)``, ``n`` the episodes (or prompts) it averages. For a rate ``p`` the per-episode
    standard deviation is ``sqrt(p (1 - p))``."""
    s = np.asarray(std, dtype=float)
    if not (np.isfinite(n) and n >= 1):
        return np.full(s.shape, np.nan)
    return s / np.sqrt(float(n))


def pooled_se(se: Sequence[np.ndarray] | np.ndarray) -> float:
    """One standard error from many evaluations': the root mean square over their finite values
    (NaN when none is finite)."""
    values = np.concatenate([np.ravel(np.asarray(s, dtype=float)) for s in se]) if len(se) else np.empty(0)
    values = values[np.isfinite(values)]
    return float(np.sqrt(np.mean(values**2))) if len(values) else float("nan")


def stage_end_value(values: ArrayLike, train_stage: ArrayLike, k: int) -> np.ndarray:
    """The score of the model stage ``k`` ended with: ``values[:, n]`` at the last point trained on
    stage k (a stage with no point of its own ended where the stage before it did). One model's
    score, never a mean over several points.

    Args:
        values: Shape (K, n_points).
        train_stage: Stage trained at each point, shape (n_points,), non-decreasing.
        k: The stage.

    Returns:
        Shape (K,); NaN when no point is trained on a stage <= k.
    """
    v = np.asarray(values, dtype=float)
    stage = np.asarray(train_stage)
    own = np.flatnonzero(stage <= k)
    return v[:, own[-1]] if len(own) else np.full(v.shape[0], np.nan)
