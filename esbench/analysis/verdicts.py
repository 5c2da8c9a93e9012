"""Verdicts that say what the seeds support: time to a target and ratios, with checked intervals.

A Table 1 claim is about the timesteps ES needs to reach a target score, as a multiple of a
baseline's. ES's time to the target is read off its mean evaluation curve over seeds (the paper's
definition). Its interval inverts the pointwise Student-t band of that mean curve
(:func:`esbench.analysis.metrics.intervals.t_interval`): the earliest the true mean curve can have reached the
target is the first evaluation where the band's upper edge reaches it, the latest is the first
where its lower edge does; where the lower edge never reaches it within the runs' common span the
upper end is "not reached by L" (+inf). A bootstrap cannot do this at 3 seeds (every resample lies
within the seeds); the t band can, and :mod:`esbench.analysis.coverage` measures its coverage on
synthetic curves with a known true time.

A ratio ES / baseline (:func:`ratio_interval`) divides by a constant when the baseline is the
paper's published number, and by our baseline's own interval when we ran it (its seeds are
independent of ES's): then each side's interval is taken at ``sqrt(confidence)``, so both cover
together at least ``confidence`` of the time, and the ratio's ends are ES low / baseline high and
ES high / baseline low. A claim "ratio < limit" (:func:`ratio_verdict`) is then

* **supported** when the interval's upper end is below the limit,
* **contradicted** when its lower end is at or above it, counting "not reached by timestep L" as
  ">= L" (a run that went past the limit without reaching the target contradicts the claim),
* **undecided** otherwise, with what would decide it: runs long enough to pass the limit (and
  where ES's recent slope would put the target), or more seeds when the interval straddles it.

Whether we reproduced the paper's number (:func:`reproduce_verdict`) is a second, separate answer:
supported when our ratio's interval contains the paper's ratio, contradicted ("ours faster" or
"ours slower than the paper's ES") when it lies wholly on one side.

A run that ended at a target (``budget.stop_at_return``) has reached every score up to the one it
stopped at: for those targets its curve is carried forward at its last value, never treated as
censored. For a higher target it is genuinely censored at its stop (we do not know when it would
have got there): the common span then ends at that stop, and ``stopped_below`` counts such runs.

Holding a stopped run at the target is the least its stop certifies, but it is not a measurement,
and a mean curve made of held values cannot bound the time above: at the last stop every other run
holds exactly the target and the last one its confirmed score, ``target + d``, so the mean is
``target + d / n`` and the band's half-width ``t * d / n`` with ``t > 1``: the band's lower edge
stays below the target whatever ``n``. So where a run's stop is its first point at or above the
target (the score the runs stop at: their first confirmed point) and every run reached it, the time
is read per run instead (:func:`stopping_time_interval`): each run's first point at or above the
target, and the Student-t interval of their mean over seeds. Lower targets, which the runs passed
before they stopped, keep the mean curve (their per-run first points are single noisy
evaluations, never confirmed). :mod:`esbench.analysis.coverage` measures it on
synthetic runs that stop after a confirmation. Where a run never reached the target it is
censored, its time unknown, and the mean curve decides (open above); no study size is planned
where any run stopped at the target (:func:`seeds_to_decide_time` draws curves that do not stop).

The other claims (Table 2's win count, the scaling claim) are decided the same way from an
interval of their statistic (:func:`interval_verdict`): supported when the whole interval is on
the claim's side of its limit, contradicted when it is all on the other side, undecided when it
straddles the limit, always with the seed count.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from esbench.analysis.claims.verdicts import CONTRADICTED, SUPPORTED, UNDECIDED, in_force
from esbench.analysis.curves import first_reach
from esbench.analysis.metrics.intervals import N_RESAMPLES
from esbench.analysis.metrics.planning import PLANNING_POWER
from esbench.analysis.stats import REACH_COLUMN, interpolate_runs, reach_scores
from esbench.analysis.tables import fmt_num

#: The three labels an interval's verdict takes here (the whole vocabulary, with "not testable" and
#: "not tested": :data:`esbench.analysis.claims.verdicts.VERDICTS`).
VERDICT_LABELS: tuple[str, ...] = (SUPPORTED, CONTRADICTED, UNDECIDED)

#: The interval method of times to a target, as a report names it.
TIME_CI_METHOD = "inverted Student-t band of the mean curve over seeds"

#: The method where runs stopped at the target and every run reached it (:func:`stopping_time_interval`).
STOP_TIME_CI_METHOD = (
    "at the score the runs stop at, when every run reached it, the Student-t interval of the mean "
    "of each run's first confirmed point at or above it"
)

#: Marks a time read per run (:func:`stopping_time_interval`) in tables and reports.
PER_RUN_MARK = "‡"

#: The largest study :func:`seeds_to_decide_time` plans ("more than" beyond it).
MAX_PLANNED_SEEDS = 100


@dataclass(frozen=True)
class TimeToTarget:
    """Time for a condition to reach a target, with its interval: its mean curve's, or the mean of
    its runs' own times where runs stopped at the target (``per_run``).

    Attributes:
        point: First x of the mean curve at or above the target (+inf: not reached by ``last``);
            with ``per_run``, the mean of the runs' first x at or above it.
        low, high: Interval of the time (+inf ends: the band's edge did not reach the target by
            ``last``); NaN with fewer than 2 seeds.
        last: The last x every seed covers (the censoring point).
        n_seeds: Seeds (runs) in the condition.
        slope: The mean curve's slope over its last third (score per x), for extrapolation.
        last_value: The mean curve's value at ``last``.
        stopped_below: Runs that stopped at a score below this target: censored at their stop,
            which then bounds ``last``.
        confidence: Nominal level of ``[low, high]``.
        stop_times: x at which each run that stopped at or above this target stopped
            (``budget.stop_at_return``; its first confirmed point), ascending: such runs are
            carried forward at the target past their stop.
        per_run: Whether the time is the mean of the runs' own first times to the target
            (:func:`stopping_time_interval`: a run's stop first certified it, and every run
            reached it) rather than the mean curve's.
    """

    point: float
    low: float
    high: float
    last: float
    n_seeds: int
    slope: float
    last_value: float
    stopped_below: int = 0
    confidence: float = 0.95
    stop_times: tuple[float, ...] = ()
    per_run: bool = False

    @property
    def stopped_reached(self) -> int:
        """Runs that stopped at or above the target."""
        return len(self.stop_times)

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

    def marked_text(self) -> str:
        """:meth:`text`, with :data:`PER_RUN_MARK` after a time read per run: a table's cell."""
        return self.text() + (f" {PER_RUN_MARK}" if self.per_run else "")


def _first_reach_rows(means: np.ndarray, grid: np.ndarray, target: float) -> np.ndarray:
    """First grid x where each row of ``means`` (shape (m, g)) reaches ``target``; +inf if never."""
    tol = 1e-9 * max(1.0, abs(target))
    hit = means >= target - tol
    first = np.argmax(hit, axis=1)
    return np.where(hit.any(axis=1), grid[first], np.inf)


def time_intervals(
    values: np.ndarray, grid: np.ndarray, target: float, confidence: float = 0.95
) -> np.ndarray:
    """Times for mean curves to reach ``target``, with the intervals of their inverted Student-t
    bands (see the module doc), for a batch of conditions at once.

    Args:
        values: Shape (m, n_seeds, n_grid): m conditions' seed curves on ``grid``.
        grid: Shape (n_grid,), increasing.
        target: The score to reach.
        confidence: Nominal level of the band.

    Returns:
        Shape (m, 3): (point, low, high) per condition, the first grid x at which the mean, the
        band's upper edge and its lower edge reach the target; +inf where never; low and high NaN
        with fewer than 2 seeds.
    """
    m, n, _ = values.shape
    mean = values.mean(axis=1)
    out = np.full((m, 3), np.nan)
    out[:, 0] = _first_reach_rows(mean, grid, target)
    if n >= 2:
        half = stats.t.ppf(0.5 + confidence / 2.0, n - 1) * values.std(axis=1, ddof=1) / np.sqrt(n)
        out[:, 1] = _first_reach_rows(mean + half, grid, target)
        out[:, 2] = _first_reach_rows(mean - half, grid, target)
    return out


def time_interval(
    values: np.ndarray, grid: np.ndarray, target: float, confidence: float = 0.95
) -> tuple[float, float, float]:
    """(point, low, high) of :func:`time_intervals` for one condition (``values`` of shape
    (n_seeds, n_grid))."""
    point, low, high = time_intervals(np.asarray(values, dtype=float)[None], grid, target, confidence)[0]
    return float(point), float(low), float(high)


def reach_curves(
    curves: pd.DataFrame, target: float, stopped: set[object] | None = None, x: str = "timesteps"
) -> tuple[np.ndarray, np.ndarray, int, dict[object, float]]:
    """The seed curves a time to ``target`` is read from (:func:`time_to_target`).

    Returns:
        ``(grid, values, stopped_below, stops)``: the x values every seed covers, shape (g,);
        each seed's score on them, shape (n_seeds, g) (a confirmed point at the lower of its
        evaluation and its confirmation; a run that stopped at or above ``target`` holds ``target``
        past its stop); how many runs stopped below ``target`` (censored at their stop); and the x
        at which each run that stopped at or above it stopped, by run_id. No seeds: shape (0, 0).
    """
    xs = curves.dropna(subset=[x, "eval_return_mean"])[x].to_numpy(float)
    if xs.size == 0:
        return np.empty(0), np.empty((0, 0)), 0, {}
    tol = 1e-9 * max(1.0, abs(target))
    curves = reach_scores(curves)
    ends = _stopping_scores(curves, stopped or set(), x)
    reached = {r for r, (v, _) in ends.items() if v >= target - tol}
    grid, values, _ = interpolate_runs(
        curves, x=x, y=REACH_COLUMN, grid=np.unique(xs), carry=reached, held=float(target)
    )
    covered = np.all(np.isfinite(values), axis=0)
    stops = {r: ends[r][1] for r in sorted(reached, key=str)}
    return grid[covered], values[:, covered], len(ends) - len(reached), stops


def seeds_to_decide_time(
    values: np.ndarray,
    grid: np.ndarray,
    target: float,
    limit_time: float,
    inclusive: bool = False,
    confidence: float = 0.95,
    power: float = PLANNING_POWER,
    max_seeds: int = MAX_PLANNED_SEEDS,
    n_sims: int = 2000,
) -> float:
    """Seeds a new study needs for the claim "the time to ``target`` is below ``limit_time``" (at
    or below, when ``inclusive``) to be decided, either way, with probability ``power``: a planning
    number, not a promise and not a stopping rule (adding seeds until it is decided is optional
    stopping).

    The new seeds' curves are drawn from a Gaussian with the measured seeds' mean curve and their
    covariance across evaluation points (a parametric bootstrap: each simulated curve is the mean
    plus a standard normal combination of the measured seeds' deviations, so a seed that runs high
    stays high), and each simulated study is decided as :func:`ratio_verdict` decides ours: its
    t band's lower edge reaching the target before the limit supports the claim; its upper edge not
    reaching it on the runs' span up to the limit contradicts it (only when the runs cover it).

    Args:
        values: The measured seeds' curves on ``grid``, shape (n_seeds, g) (:func:`reach_curves`).
        grid: Increasing x values, shape (g,).
        target: The score to reach.
        limit_time: The claim's limit in x (limit x the baseline's time).
        inclusive: Whether reaching the target at ``limit_time`` itself satisfies the claim.
        confidence: Nominal level of the band.
        power: The probability of a decision to plan for.
        max_seeds: The largest study considered.
        n_sims: Simulated studies per seed count (the same draws for every count).

    Returns:
        The smallest seed count with at least that probability; +inf when none up to
        ``max_seeds`` has it; NaN with fewer than 2 measured seeds or no grid.
    """
    values, grid = np.asarray(values, dtype=float), np.asarray(grid, dtype=float)
    n0 = values.shape[0]
    if n0 < 2 or grid.size == 0:
        return float("nan")
    tol = 1e-9 * max(1.0, abs(target))
    mean = values.mean(axis=0)
    dev = (values - mean) / np.sqrt(n0 - 1)  # a simulated seed is mean + z @ dev, z ~ N(0, I)
    window = grid <= limit_time if inclusive else grid < limit_time
    covers = bool(grid[-1] >= limit_time)
    draws = np.random.default_rng(0).standard_normal((n_sims, max_seeds, n0))
    for n in range(2, max_seeds + 1):
        z = draws[:, :n]
        z_mean = z.mean(axis=1)
        centred = z - z_mean[:, None, :]
        scatter = np.einsum("sni,snj->sij", centred, centred)
        sim_mean = mean + z_mean @ dev
        sim_var = np.maximum(np.einsum("ig,sij,jg->sg", dev, scatter, dev) / (n - 1), 0.0)
        half = stats.t.ppf(0.5 + confidence / 2.0, n - 1) * np.sqrt(sim_var / n)
        supported = np.any((sim_mean - half >= target - tol)[:, window], axis=1)
        contradicted = covers & np.all((sim_mean + half < target - tol)[:, window], axis=1)
        if np.mean(supported | contradicted) >= power:
            return float(n)
    return float("inf")


def time_to_target(
    curves: pd.DataFrame,
    target: float,
    rng: np.random.Generator | None = None,
    stopped: set[object] | None = None,
    x: str = "timesteps",
    n_resamples: int = N_RESAMPLES,
    confidence: float = 0.95,
) -> TimeToTarget:
    """:class:`TimeToTarget` of one condition's runs (curve-table rows of one algo on one env).

    Read off the mean curve over seeds (:func:`time_interval`), except where a run's stop is its
    first point at or above the target and every run reached it: then per run
    (:func:`stopping_time_interval`), since a stopped run's curve past its stop is held, not
    measured (the module doc).

    Args:
        curves: Curve-table rows (columns run_id, seed, ``x``, eval_return_mean).
        target: The score to reach.
        rng: Unused (the t band draws nothing); kept so every interval function takes one.
        stopped: run_ids that ended at a target score: for targets at or below the score they
            stopped at, held at the target itself past their stop ("at or above it": the least
            value it certifies, never the measured score), censored at their stop for higher ones.
            A point a run confirmed on fresh seeds counts at the lower of its evaluation and its
            confirmation (:func:`~esbench.analysis.stats.reach_scores`): the time to the stopping
            target is the first confirmed point.
        x: The x column.
        n_resamples: Unused (as ``rng``).
        confidence: Nominal level of the interval (``sqrt(0.95)`` for one side of a ratio whose
            two sides are both random: :func:`ratio_interval`).
    """
    del rng, n_resamples
    nan = float("nan")
    grid, values, below, stops = reach_curves(curves, target, stopped, x)
    stop_times = tuple(sorted(stops.values()))
    n = values.shape[0]
    if n == 0:
        return TimeToTarget(np.inf, nan, nan, nan, 0, nan, nan, confidence=confidence)
    if grid.size == 0:
        return TimeToTarget(np.inf, nan, nan, nan, n, nan, nan, below, confidence, stop_times)
    firsts = run_reach_times(curves, target, x) if stops else {}
    held_decides = any(firsts[r] == t for r, t in stops.items())  # a stop first certifies the target
    per_run = held_decides and all(np.isfinite(t) for t in firsts.values())
    if per_run:
        point, low, high = stopping_time_interval(np.array(list(firsts.values())), confidence)
    else:
        point, low, high = time_interval(values, grid, target, confidence)
    mean = values.mean(axis=0)
    tail = max(2, len(grid) // 3)
    gx, gy = grid[-tail:], mean[-tail:]
    slope = float(np.polyfit(gx, gy, 1)[0]) if len(gx) >= 2 and np.ptp(gx) > 0 else float("nan")
    return TimeToTarget(
        point, low, high, float(grid[-1]), n, slope, float(mean[-1]), below, confidence, stop_times, per_run
    )


def run_reach_times(curves: pd.DataFrame, target: float, x: str = "timesteps") -> dict[object, float]:
    """Each run's first x at or above ``target`` on its own evaluation points, a confirmed point
    at the lower of its evaluation and its confirmation (:func:`reach_scores`); +inf where a run
    never got there. By run_id."""
    rows = reach_scores(curves.dropna(subset=[x, "eval_return_mean"])).sort_values(x, kind="stable")
    times = {
        r: first_reach(run[x].to_numpy(float), run[REACH_COLUMN].to_numpy(float), target)
        for r, run in rows.groupby("run_id", sort=True)
    }
    return {r: np.inf if np.isnan(t) else t for r, t in times.items()}


def stopping_time_interval(times: np.ndarray, confidence: float = 0.95) -> tuple[float, float, float]:
    """(mean, low, high) of the runs' own times to a target: the Student-t interval of their mean,
    its low end at least 0 (a time is never negative); NaN ends with fewer than 2 runs.

    What a design that stops each run at the target measures: a run's curve past its stop is held,
    not measured, so the mean curve cannot bound the time above (the module doc).
    """
    times = np.asarray(times, dtype=float)
    n, point = times.size, float(np.mean(times))
    if n < 2:
        return point, float("nan"), float("nan")
    half = float(stats.t.ppf(0.5 + confidence / 2.0, n - 1) * np.std(times, ddof=1) / np.sqrt(n))
    return point, max(point - half, 0.0), point + half


#: Confidence of each side of a ratio whose two sides are both random, so the pair covers 95%.
SIDE_CONFIDENCE = float(np.sqrt(0.95))


@dataclass(frozen=True)
class RatioInterval:
    """ES's time to a target over a baseline's, with its interval.

    Attributes:
        point: ES's time / the baseline's (+inf: ES's mean curve did not reach the target).
        low, high: The interval (+inf high: ES's band did not reach the target by its last
            timestep; NaN: no interval).
        last: ES's last timestep over the baseline's time: "> last" reads "not reached by L".
        lower_bound: What the data certify the ratio is at least (``low``, or ES's last timestep
            over the baseline's latest when even the low end was not reached).
        n_es, n_base: Seeds on each side (``n_base`` 0 for a published constant).
    """

    point: float
    low: float
    high: float
    last: float
    lower_bound: float
    n_es: int
    n_base: int

    def text(self, digits: int = 2) -> str:
        """``point [low, high]`` with ``> last`` for an end ES did not reach."""

        def one(v: float) -> str:
            return f"> {fmt_num(self.last, digits)}" if np.isposinf(v) else fmt_num(v, digits)

        if not (np.isfinite(self.low) or np.isposinf(self.low)):
            return one(self.point)
        return f"{one(self.point)} [{one(self.low)}, {one(self.high)}]"


def ratio_interval(es: TimeToTarget, base: TimeToTarget | float) -> RatioInterval:
    """ES's time over a baseline's: a published constant, or our own baseline's interval.

    With a constant the ends are ES's ends over it. With our baseline (a :class:`TimeToTarget`,
    its seeds independent of ES's), pass both sides at :data:`SIDE_CONFIDENCE`: the ratio runs
    from ES low / baseline high to ES high / baseline low. An end of the baseline the band never
    reached makes the ratio's low end 0 (the baseline may be arbitrarily slow).

    Args:
        es: ES's time to the target.
        base: The baseline's timesteps to the same target, or its :class:`TimeToTarget`.
    """
    nan = float("nan")
    if isinstance(base, TimeToTarget):
        b_point, b_low, b_high, n_base = base.point, base.low, base.high, base.n_seeds
    else:
        b_point = b_low = b_high = float(base)
        n_base = 0
    if not (np.isfinite(b_point) and b_point > 0):
        return RatioInterval(nan, nan, nan, nan, nan, es.n_seeds, n_base)
    last = es.last / b_point
    point = es.point / b_point
    interval = np.isfinite(es.low) or np.isposinf(es.low)
    if not interval or not (np.isfinite(b_low) or np.isposinf(b_low)):
        bound = point if np.isfinite(point) else last
        return RatioInterval(point, nan, nan, last, bound, es.n_seeds, n_base)
    low = 0.0 if np.isposinf(b_high) else (np.inf if np.isposinf(es.low) else es.low / b_high)
    high = np.inf if (np.isposinf(es.high) or b_low <= 0) else es.high / b_low
    bound = low if np.isfinite(low) else (0.0 if np.isposinf(b_high) else es.last / b_high)
    return RatioInterval(float(point), float(low), float(high), float(last), float(bound), es.n_seeds, n_base)


@dataclass(frozen=True)
class Verdict:
    """A claim's verdict and what would decide it (empty when decided); inside
    :func:`~esbench.analysis.claims.verdicts.plan_changed` the word is "not decided" whatever it was
    made with (:func:`~esbench.analysis.claims.verdicts.in_force`)."""

    word: str
    decide: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "word", in_force(self.word))


def ratio_verdict(ri: RatioInterval, limit: float, inclusive: bool = False, es: TimeToTarget | None = None,
                  target: float = float("nan"), denominator: float = float("nan"),
                  plan: Callable[[], float] | None = None) -> Verdict:  # fmt: skip
    """Verdict on ``ratio < limit`` (``<=`` when ``inclusive``) from its interval; see the module doc.

    Args:
        ri: The ratio and its interval (:func:`ratio_interval`).
        limit: The claimed bound on the ratio.
        inclusive: Whether the bound itself satisfies the claim.
        es: ES's time to the target (for the note on what would decide an undecided claim).
        target: The target score (for the extrapolation note).
        denominator: The baseline's timesteps (for the note on how long the runs must be).
        plan: Called when the interval straddles the limit: the seeds a study needs to decide it
            (:func:`seeds_to_decide_time`), named in the note.
    """
    if not np.isfinite(ri.last):
        return Verdict(UNDECIDED, "the baseline never reached this target")
    n = ri.n_es if ri.n_base == 0 else min(ri.n_es, ri.n_base)
    if not (np.isfinite(ri.low) or np.isposinf(ri.low)):
        per_side = " per side" if ri.n_base else ""
        return Verdict(UNDECIDED, f"needs at least 2 seeds{per_side} for an interval (has {n})")
    below = (lambda v: v <= limit) if inclusive else (lambda v: v < limit)
    if np.isfinite(ri.high) and below(ri.high):
        return Verdict(SUPPORTED)
    if np.isfinite(ri.lower_bound) and not below(ri.lower_bound) and ri.lower_bound > 0:
        return Verdict(CONTRADICTED)
    if np.isposinf(ri.high) and ri.last < limit:
        note = "needs longer ES runs"
        if es is not None and np.isfinite(denominator):
            bound = limit * denominator
            note = f"needs runs past {fmt_num(bound)} timesteps (now {fmt_num(es.last)})"
            if np.isfinite(es.slope) and es.slope > 0 and not es.reached:
                est = es.last + (target - es.last_value) / es.slope
                note += (
                    f"; at its recent slope the mean curve would reach {fmt_num(target, 4)} near "
                    f"{fmt_num(est)}"
                )
            elif not es.reached:
                note += "; the mean curve is not rising over its last third"
        return Verdict(UNDECIDED, note)
    note = f"the interval straddles {fmt_num(limit, 3)}x: more seeds (now {n})"
    if es is not None and es.stopped_reached:
        return Verdict(UNDECIDED, note + f"; {_NOT_PLANNED.format(runs=_runs(es.stopped_reached))}")
    return Verdict(UNDECIDED, _more_seeds(note, plan))


#: Why no study is planned where runs stopped at the target (the planner's curves do not stop).
_NOT_PLANNED = (
    "no study size is planned ({runs} stopped at the target; the planner's simulated curves never stop)"
)


def _runs(k: int) -> str:
    """``1 run`` or ``k runs``."""
    return f"{k} run" if k == 1 else f"{k} runs"


def _more_seeds(note: str, plan: Callable[[], float] | None) -> str:
    """``note``, with the study :func:`seeds_to_decide_time` plans when ``plan`` is given."""
    seeds = plan() if plan is not None else float("nan")
    if np.isposinf(seeds):
        note += f"; no study of up to {MAX_PLANNED_SEEDS} seeds decides it with {PLANNING_POWER:.0%} power"
    elif np.isfinite(seeds):
        note += (
            f"; a study of {int(seeds)} seeds decides it with {PLANNING_POWER:.0%} power if the mean "
            "curve and its spread are as measured"
        )
    return note


def reproduce_verdict(ri: RatioInterval, paper_ratio: float) -> Verdict:
    """Did we reproduce the paper's ratio: supported when our interval contains it, contradicted
    when it lies wholly on one side (the note says "ours faster" or "ours slower than the paper's
    ES", with the interval), undecided without an interval or when it is open above and the
    paper's ratio lies past what the runs cover."""
    if not np.isfinite(paper_ratio):
        return Verdict(UNDECIDED, "the paper gives no ratio here")
    if not np.isfinite(ri.last):
        return Verdict(UNDECIDED, "the baseline never reached this target")
    if not (np.isfinite(ri.low) or np.isposinf(ri.low)):
        return Verdict(UNDECIDED, "needs at least 2 seeds for an interval")
    interval = ri.text()
    if np.isfinite(ri.high) and ri.high < paper_ratio:
        return Verdict(
            CONTRADICTED, f"ours faster than the paper's ES: {interval} vs {fmt_num(paper_ratio, 3)}"
        )
    if ri.lower_bound > paper_ratio:
        return Verdict(
            CONTRADICTED, f"ours slower than the paper's ES: {interval} vs {fmt_num(paper_ratio, 3)}"
        )
    if np.isfinite(ri.high):
        return Verdict(SUPPORTED)
    return Verdict(UNDECIDED, f"{interval} is open above: the runs end before the paper's ratio")


def _stopping_scores(curves: pd.DataFrame, stopped: set[object], x: str) -> dict[object, tuple[float, float]]:
    """(score, x) each run of ``curves`` in ``stopped`` stopped at: its last point's
    :data:`~esbench.analysis.stats.REACH_COLUMN` and ``x`` (``curves`` from :func:`reach_scores`)."""
    rows = curves[curves["run_id"].isin(stopped)].dropna(subset=[x, REACH_COLUMN])
    last = rows.sort_values([x], kind="stable").groupby("run_id", sort=True)[[REACH_COLUMN, x]].last()
    return {r: (float(v), float(t)) for r, v, t in last.itertuples()}


def combine(verdicts: Sequence[Verdict]) -> Verdict:
    """A claim on every part: all supported -> supported; any contradicted -> contradicted; else
    undecided (with notes)."""
    words = [v.word for v in verdicts]
    if words and all(w == SUPPORTED for w in words):
        return Verdict(SUPPORTED)
    if CONTRADICTED in words:
        against = sorted({v.decide for v in verdicts if v.decide and v.word == CONTRADICTED})
        return Verdict(CONTRADICTED, "; ".join(against))
    notes = sorted({v.decide for v in verdicts if v.decide})
    return Verdict(UNDECIDED, "; ".join(notes))


def combine_any(verdicts: Sequence[Verdict]) -> Verdict:
    """A claim on at least one part: any supported -> supported; all contradicted -> contradicted;
    else undecided (with notes)."""
    words = [v.word for v in verdicts]
    if SUPPORTED in words:
        return Verdict(SUPPORTED)
    if words and all(w == CONTRADICTED for w in words):
        return Verdict(CONTRADICTED)
    notes = sorted({v.decide for v in verdicts if v.decide and v.word != CONTRADICTED})
    return Verdict(UNDECIDED, "; ".join(notes))


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
    other side, undecided when it straddles the limit (then more seeds would decide it) or when
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
        return Verdict(UNDECIDED, f"needs at least 2 {what} for an interval (has {n_seeds})")
    on_side = (lambda v: v >= limit) if at_least else (lambda v: v < limit)
    if on_side(low) and on_side(high):
        return Verdict(SUPPORTED)
    if not on_side(low) and not on_side(high):
        return Verdict(CONTRADICTED)
    return Verdict(
        UNDECIDED,
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


def percentile_interval(draws: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """The percentile interval of a bootstrap distribution (order statistics, so +inf ends stay
    +inf instead of turning into NaN by interpolation)."""
    tail = (1.0 - confidence) / 2.0
    d = np.asarray(draws, dtype=float)
    return float(np.quantile(d, tail, method="lower")), float(np.quantile(d, 1.0 - tail, method="higher"))
