"""Verdicts that say what the seeds support: time to a target with bootstrap intervals.

A Table 1 claim is about the timesteps ES needs to reach a target score, as a multiple of a
baseline's. ES's time to the target is read off its mean evaluation curve over seeds (the paper's
definition); its uncertainty comes from resampling the seeds (percentile bootstrap, seeded
Generator): each resample's mean curve gives a first-reach time, or "not reached within the runs'
common span" (+inf). The verdict on "ratio < limit" is then

* **supported** when the interval's upper end is below the limit,
* **contradicted** when its lower end is at or above it, counting "not reached by timestep L" as
  ">= L" (a run that went past the limit without reaching the target contradicts the claim),
* **inconclusive** otherwise, with what would decide it: runs long enough to pass the limit (and
  where ES's recent slope would put the target), or more seeds when the interval straddles it.

A run that ended at the target (``budget.stop_at_return``) has reached it: its curve is carried
forward at its last value, never treated as censored.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from esbench.analysis.stats import N_RESAMPLES, interpolate_runs
from esbench.analysis.tables import fmt_num

SUPPORTED, CONTRADICTED, INCONCLUSIVE = "supported", "contradicted", "inconclusive"


@dataclass(frozen=True)
class TimeToTarget:
    """Time for a condition's mean curve to reach a target, with its bootstrap interval.

    Attributes:
        point: First x of the mean curve at or above the target (+inf: not reached by ``last``).
        low, high: 95% percentile bootstrap interval over seeds (+inf ends: not reached in that
            tail); NaN with fewer than 2 seeds.
        last: The last x every seed covers (the censoring point).
        n_seeds: Seeds (runs) in the condition.
        slope: The mean curve's slope over its last third (score per x), for extrapolation.
        last_value: The mean curve's value at ``last``.
    """

    point: float
    low: float
    high: float
    last: float
    n_seeds: int
    slope: float
    last_value: float

    @property
    def reached(self) -> bool:
        """Whether the mean curve reached the target."""
        return bool(np.isfinite(self.point))

    def text(self) -> str:
        """``point [low, high]``, with ``> last`` for an unreached point or interval end."""

        def one(v: float) -> str:
            return f"> {fmt_num(self.last)}" if np.isposinf(v) else fmt_num(v)

        if not np.isfinite(self.low) and not np.isposinf(self.low):
            return one(self.point)
        return f"{one(self.point)} [{one(self.low)}, {one(self.high)}]"


def _carry_forward(values: np.ndarray, rows: list[int]) -> None:
    """Fill each given row's NaNs after its last measured point with that point (in place)."""
    for i in rows:
        finite = np.flatnonzero(np.isfinite(values[i]))
        if finite.size:
            values[i, finite[-1] + 1 :] = values[i, finite[-1]]


def _first_reach_rows(means: np.ndarray, grid: np.ndarray, target: float) -> np.ndarray:
    """First grid x where each row of ``means`` (shape (m, g)) reaches ``target``; +inf if never."""
    tol = 1e-9 * max(1.0, abs(target))
    hit = means >= target - tol
    first = np.argmax(hit, axis=1)
    return np.where(hit.any(axis=1), grid[first], np.inf)


def time_to_target(
    curves: pd.DataFrame,
    target: float,
    rng: np.random.Generator,
    stopped: set[object] | None = None,
    x: str = "timesteps",
    n_resamples: int = N_RESAMPLES,
) -> TimeToTarget:
    """:class:`TimeToTarget` of one condition's runs (curve-table rows of one algo on one env).

    Args:
        curves: Curve-table rows (columns run_id, seed, ``x``, eval_return_mean).
        target: The score to reach.
        rng: Generator of the bootstrap resamples.
        stopped: run_ids that ended at a target (carried forward at their last value).
        x: The x column.
        n_resamples: Bootstrap resamples.
    """
    nan = float("nan")
    xs = curves.dropna(subset=[x, "eval_return_mean"])[x].to_numpy(float)
    if xs.size == 0:
        return TimeToTarget(np.inf, nan, nan, nan, 0, nan, nan)
    grid, values, run_ids = interpolate_runs(curves, x=x, grid=np.unique(xs))
    _carry_forward(values, [i for i, r in enumerate(run_ids) if r in (stopped or set())])
    covered = np.all(np.isfinite(values), axis=0)
    grid, values = grid[covered], values[:, covered]
    n = values.shape[0]
    if grid.size == 0:
        return TimeToTarget(np.inf, nan, nan, nan, n, nan, nan)
    mean = values.mean(axis=0)
    point = float(_first_reach_rows(mean[None, :], grid, target)[0])
    low = high = float("nan")
    if n >= 2:
        idx = rng.integers(0, n, size=(n_resamples, n))
        times = _first_reach_rows(values[idx].mean(axis=1), grid, target)
        low = float(np.quantile(times, 0.025, method="lower"))
        high = float(np.quantile(times, 0.975, method="higher"))
    tail = max(2, len(grid) // 3)
    gx, gy = grid[-tail:], mean[-tail:]
    slope = float(np.polyfit(gx, gy, 1)[0]) if len(gx) >= 2 and np.ptp(gx) > 0 else float("nan")
    return TimeToTarget(point, low, high, float(grid[-1]), n, slope, float(mean[-1]))


@dataclass(frozen=True)
class Verdict:
    """A claim's verdict and what would decide it (empty when decided)."""

    word: str
    decide: str = ""


def ratio_verdict(
    tt: TimeToTarget, target: float, denominator: float, limit: float, inclusive: bool = False
) -> Verdict:
    """Verdict on ``time / denominator < limit`` (``<=`` when ``inclusive``); see the module doc.

    Args:
        tt: ES's time to the target.
        target: The target score (for the extrapolation note).
        denominator: The baseline's timesteps to the same target.
        limit: The claimed bound on the ratio.
        inclusive: Whether the bound itself satisfies the claim.
    """
    if not (np.isfinite(denominator) and denominator > 0):
        return Verdict(INCONCLUSIVE, "the baseline never reached this target")
    bound = limit * denominator
    if tt.n_seeds < 2:
        return Verdict(INCONCLUSIVE, f"needs at least 2 seeds for an interval (has {tt.n_seeds})")
    below = (lambda v: v <= bound) if inclusive else (lambda v: v < bound)
    if np.isfinite(tt.high) and below(tt.high):
        return Verdict(SUPPORTED)
    low = tt.last if np.isposinf(tt.low) else tt.low
    if np.isfinite(low) and not below(low):
        return Verdict(CONTRADICTED)
    if np.isposinf(tt.high) and tt.last < bound:
        note = f"needs runs past {fmt_num(bound)} timesteps (now {fmt_num(tt.last)})"
        if np.isfinite(tt.slope) and tt.slope > 0 and not tt.reached:
            est = tt.last + (target - tt.last_value) / tt.slope
            note += (
                f"; at its recent slope the mean curve would reach {fmt_num(target, 4)} near {fmt_num(est)}"
            )
        elif not tt.reached:
            note += "; the mean curve is not rising over its last third"
        return Verdict(INCONCLUSIVE, note)
    return Verdict(
        INCONCLUSIVE, f"the interval straddles {fmt_num(limit, 3)}x: more seeds (now {tt.n_seeds})"
    )


def combine(verdicts: list[Verdict]) -> Verdict:
    """All supported -> supported; any contradicted -> contradicted; else inconclusive (with notes)."""
    words = [v.word for v in verdicts]
    if words and all(w == SUPPORTED for w in words):
        return Verdict(SUPPORTED)
    if CONTRADICTED in words:
        return Verdict(CONTRADICTED)
    notes = sorted({v.decide for v in verdicts if v.decide})
    return Verdict(INCONCLUSIVE, "; ".join(notes))
