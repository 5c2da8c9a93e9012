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

A run that ended at a target (``budget.stop_at_return``) has reached every score up to the one it
stopped at: for those targets its curve is carried forward at its last value, never treated as
censored. For a higher target it is genuinely censored at its stop (we do not know when it would
have got there): the common span then ends at that stop, and ``stopped_below`` counts such runs.

The other claims (Table 2's win count, the scaling claim) are decided the same way from a
percentile bootstrap interval of their statistic (:func:`interval_verdict`): supported when the
whole interval is on the claim's side of its limit, contradicted when it is all on the other side,
inconclusive when it straddles the limit, always with the seed count.
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
        stopped_below: Runs that stopped at a score below this target: censored at their stop,
            which then bounds ``last``.
    """

    point: float
    low: float
    high: float
    last: float
    n_seeds: int
    slope: float
    last_value: float
    stopped_below: int = 0

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
        stopped: run_ids that ended at a target score: carried forward at their last value for
            targets at or below it (reached), censored at their stop for higher ones.
        x: The x column.
        n_resamples: Bootstrap resamples.
    """
    nan = float("nan")
    xs = curves.dropna(subset=[x, "eval_return_mean"])[x].to_numpy(float)
    if xs.size == 0:
        return TimeToTarget(np.inf, nan, nan, nan, 0, nan, nan)
    tol = 1e-9 * max(1.0, abs(target))
    ends = _stopping_scores(curves, stopped or set(), x)
    reached = {r for r, v in ends.items() if v >= target - tol}
    grid, values, _ = interpolate_runs(curves, x=x, grid=np.unique(xs), carry=reached)
    below = len(ends) - len(reached)
    covered = np.all(np.isfinite(values), axis=0)
    grid, values = grid[covered], values[:, covered]
    n = values.shape[0]
    if grid.size == 0:
        return TimeToTarget(np.inf, nan, nan, nan, n, nan, nan, below)
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
    return TimeToTarget(point, low, high, float(grid[-1]), n, slope, float(mean[-1]), below)


def _stopping_scores(curves: pd.DataFrame, stopped: set[object], x: str) -> dict[object, float]:
    """The last evaluation return (the score it stopped at) of each run of ``curves`` in ``stopped``."""
    rows = curves[curves["run_id"].isin(stopped)].dropna(subset=[x, "eval_return_mean"])
    last = rows.sort_values([x], kind="stable").groupby("run_id", sort=True)["eval_return_mean"].last()
    return {r: float(v) for r, v in last.items()}


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


def interval_verdict(
    point: float,
    low: float,
    high: float,
    limit: float,
    at_least: bool,
    n_seeds: int,
    what: str,
) -> Verdict:
    """Verdict on "the statistic is at least ``limit``" (``at_least``) or "below ``limit``" from its
    bootstrap interval ``[low, high]`` over seeds.

    Supported when the whole interval is on the claim's side, contradicted when it is all on the
    other side, inconclusive when it straddles the limit (then more seeds would decide it) or when
    there is no interval (fewer than 2 seeds).

    Args:
        point: The statistic on all seeds (only reported).
        low, high: Its 95% percentile bootstrap interval (NaN: no interval).
        limit: The claim's bound.
        at_least: True for "statistic >= limit", False for "statistic < limit".
        n_seeds: Seeds behind the interval (the smallest group's, for a statistic of several).
        what: What more seeds are needed of, e.g. "seeds per game".
    """
    if n_seeds < 2 or not (np.isfinite(low) and np.isfinite(high)):
        return Verdict(INCONCLUSIVE, f"needs at least 2 {what} for an interval (has {n_seeds})")
    on_side = (lambda v: v >= limit) if at_least else (lambda v: v < limit)
    if on_side(low) and on_side(high):
        return Verdict(SUPPORTED)
    if not on_side(low) and not on_side(high):
        return Verdict(CONTRADICTED)
    return Verdict(
        INCONCLUSIVE,
        f"the interval [{fmt_num(low, 3)}, {fmt_num(high, 3)}] straddles {fmt_num(limit, 3)}: "
        f"more {what} (now {n_seeds})",
    )


def resample_means(
    values: np.ndarray, rng: np.random.Generator, n_resamples: int = N_RESAMPLES
) -> np.ndarray:
    """Bootstrap distribution of the mean of ``values`` (shape (n,)): shape (n_resamples,).

    With one value every resample is that value (the caller reports that there is no interval).
    """
    v = np.asarray(values, dtype=float)
    idx = rng.integers(0, len(v), size=(n_resamples, len(v)))
    return v[idx].mean(axis=1)


def resample_medians(
    values: np.ndarray, rng: np.random.Generator, n_resamples: int = N_RESAMPLES
) -> np.ndarray:
    """Bootstrap distribution of the median of ``values`` (shape (n,), +inf allowed: a seed that
    never got there): shape (n_resamples,). A median with an infinite middle value is +inf: the
    median seed did not get there."""
    v = np.asarray(values, dtype=float)
    idx = rng.integers(0, len(v), size=(n_resamples, len(v)))
    return np.median(v[idx], axis=1)


def percentile_interval(draws: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """The percentile interval of a bootstrap distribution (order statistics, so +inf ends stay
    +inf instead of turning into NaN by interpolation)."""
    tail = (1.0 - confidence) / 2.0
    d = np.asarray(draws, dtype=float)
    return float(np.quantile(d, tail, method="lower")), float(np.quantile(d, 1.0 - tail, method="higher"))
