"""Verdicts that say what the seeds support: times to a target and ratios of them.

A Table 1 claim is about the timesteps ES needs to reach a target score, as a multiple of a
baseline's. Every time to a target, in every report, is one estimator: each run gives its first
confirmed time at the target (a confirmed point counts at the lower of its evaluation and its
confirmation, :func:`esbench.analysis.stats.reach_scores`), or its budget (its last evaluated
timestep), right-censored, where it never got there; the time is the Kaplan-Meier median of those
runs with its order-statistic interval (:func:`esbench.analysis.metrics.time_to_score`), whether or
not runs stopped at the target and whether or not any run was censored. A run that stopped at a
score (``budget.stop_at_return``) reached every target up to it where its own curve did and is
censored at its stop above it, like a run whose budget ran out.

A ratio ES / baseline (:func:`ratio_interval`) divides ES's interval by a constant when the
baseline is the paper's published number, and carries both sides' uncertainty when we ran the
baseline (:func:`esbench.analysis.metrics.censored.time_ratio`: each side's interval at
``sqrt(confidence)``, the ratio from ES low / baseline high to ES high / baseline low; its measured
coverage is in docs/statistics.md). A claim "ratio below limit" is decided by the one rule of
:func:`esbench.analysis.claims.decide` (:func:`ratio_verdict` adds what would decide an undecided
one), and a claim over several tasks by :mod:`esbench.analysis.claims.multiplicity` (Holm over the
tasks a "some task" claim ranges over).

Whether we reproduced the paper's number (:func:`reproduce_verdict`) is a second, separate answer:
supported when our ratio's interval contains the paper's ratio, contradicted ("ours faster" or
"ours slower than the paper's ES") when it lies wholly on one side.

The other claims (Table 2's win count, the scaling claim) are decided the same way from an
interval of their statistic (:func:`interval_verdict`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from esbench.analysis.claims import CONTRADICTED, SUPPORTED, UNDECIDED, decide
from esbench.analysis.claims.verdicts import in_force
from esbench.analysis.curves import first_reach
from esbench.analysis.metrics import share_reached, time_to_score
from esbench.analysis.metrics.censored import time_ratio, time_ratio_level
from esbench.analysis.metrics.intervals import median_interval_coverage
from esbench.analysis.stats import REACH_COLUMN, reach_scores
from esbench.analysis.tables import fmt_num

#: The three labels an interval's verdict takes here (the whole vocabulary, with "not testable" and
#: "not tested": :data:`esbench.analysis.claims.verdicts.VERDICTS`).
VERDICT_LABELS: tuple[str, ...] = (SUPPORTED, CONTRADICTED, UNDECIDED)

#: The estimator of every time to a target, as a report names it.
TIME_CI_METHOD = (
    "Kaplan-Meier median of the runs' first confirmed times (a run that never got there censored at "
    "its budget), with its order-statistic interval; a time is the evaluation at which a run first "
    "confirmed the score, resolved only to the spacing between evaluations ([x, x]: every run got "
    "there between the same two evaluations)"
)


@dataclass(frozen=True)
class TimeToTarget:
    """Time for a condition's runs to reach a target: their Kaplan-Meier median, with its interval.

    Attributes:
        point: The median (+inf: fewer than half the runs are known to have reached it).
        low, high: Its interval at ``confidence`` (``high`` +inf: unbounded by the data; NaN with
            fewer than 2 runs).
        last: The longest follow-up, the latest time of any run (a censored run's budget, or a
            reached run's time): an unbounded end reads "> last".
        n_seeds: Runs (seeds) in the condition.
        times: Each run's first confirmed time at the target, or its budget.
        arrived: Whether each run reached the target (False: censored at its budget).
        stopped_below: Runs that stopped at their target score (``budget.stop_at_return``) before
            reaching this one: censored at their stop.
        confidence: Nominal level of ``[low, high]``.
    """

    point: float
    low: float
    high: float
    last: float
    n_seeds: int
    times: tuple[float, ...] = ()
    arrived: tuple[bool, ...] = ()
    stopped_below: int = 0
    confidence: float = 0.95

    @property
    def reached(self) -> bool:
        """Whether the median is bounded (at least half the runs reached the target)."""
        return bool(np.isfinite(self.point))

    @property
    def n_reached(self) -> int:
        """Runs that reached the target."""
        return int(sum(self.arrived))

    @property
    def censored(self) -> bool:
        """Whether any run never reached the target within its budget."""
        return self.n_reached < self.n_seeds

    def interval_at(self, confidence: float) -> tuple[float, float]:
        """The median's interval at another level (NaN with fewer than 2 runs)."""
        if self.n_seeds < 2:
            return float("nan"), float("nan")
        _, low, high = time_to_score(np.array(self.times), np.array(self.arrived), confidence)
        return low, high

    def share(self) -> tuple[float, float, float]:
        """The share of runs that reached the target, with its exact (Clopper-Pearson) 95% interval."""
        return share_reached(np.array(self.arrived))

    def share_text(self) -> str:
        """``reached 4/5 [0.28, 0.99]``: the share within the budget, shown where a run was censored."""
        _, low, high = self.share()
        return f"reached {self.n_reached}/{self.n_seeds} [{fmt_num(low, 2)}, {fmt_num(high, 2)}]"

    def text(self) -> str:
        """``point [low, high]``, with ``> last`` for an unbounded point or end."""

        def one(v: float) -> str:
            return f"> {fmt_num(self.last)}" if np.isposinf(v) else fmt_num(v)

        if np.isnan(self.low):
            return one(self.point)
        return f"{one(self.point)} [{one(self.low)}, {one(self.high)}]"

    def cell_text(self) -> str:
        """:meth:`text`, with :meth:`share_text` beside it where any run was censored: a table's cell."""
        return self.text() + (f"; {self.share_text()}" if self.censored else "")


def run_reach_times(
    curves: pd.DataFrame, target: float, x: str = "timesteps"
) -> dict[object, tuple[float, bool]]:
    """Each run's first confirmed x at or above ``target`` on its own evaluation points (a confirmed
    point at the lower of its evaluation and its confirmation, :func:`reach_scores`), or its last
    evaluated x where it never got there: ``(time, reached)`` by run_id."""
    rows = reach_scores(curves.dropna(subset=[x, "eval_return_mean"])).sort_values(x, kind="stable")
    out: dict[object, tuple[float, bool]] = {}
    for r, run in rows.groupby("run_id", sort=True):
        xs = run[x].to_numpy(float)
        t = first_reach(xs, run[REACH_COLUMN].to_numpy(float), target)
        out[r] = (float(xs.max()), False) if np.isnan(t) else (float(t), True)
    return out


def time_to_target(
    curves: pd.DataFrame,
    target: float,
    stopped: set[object] | None = None,
    x: str = "timesteps",
    confidence: float = 0.95,
) -> TimeToTarget:
    """:class:`TimeToTarget` of one condition's runs (curve-table rows of one algo on one env).

    Args:
        curves: Curve-table rows (``run_id``, ``x``, ``eval_return_mean``; ``confirm_return_mean``
            where runs confirmed a point before stopping).
        target: The score to reach.
        stopped: run_ids that ended at their target score (counted in ``stopped_below`` where they
            stopped short of this one; their times need nothing else).
        x: The time axis (``timesteps``, ``wall_clock_s``, ``frames``).
        confidence: Nominal level of the interval.
    """
    nan = float("nan")
    runs = run_reach_times(curves, target, x)
    if not runs:
        return TimeToTarget(np.inf, nan, nan, nan, 0, confidence=confidence)
    times = np.array([t for t, _ in runs.values()])
    arrived = np.array([a for _, a in runs.values()])
    point, low, high = time_to_score(times, arrived, confidence)
    if times.size < 2:
        low = high = nan
    last = float(times.max())  # the longest follow-up: an unbounded end is past every run
    below = sum(1 for r, (_, a) in runs.items() if not a and r in (stopped or set()))
    return TimeToTarget(
        point,
        low,
        high,
        last,
        int(times.size),
        tuple(times.tolist()),
        tuple(arrived.tolist()),
        below,
        confidence,
    )


@dataclass(frozen=True)
class RatioInterval:
    """ES's time to a target over a baseline's, with its interval.

    Attributes:
        point: ES's median time / the baseline's (+inf: ES's median is unbounded).
        low, high: The interval (+inf high: unbounded; NaN: no interval).
        last: ES's longest follow-up over the baseline's time: "> last" reads "not reached by L".
        n_es, n_base: Seeds on each side (``n_base`` 0 for a published constant).
    """

    point: float
    low: float
    high: float
    last: float
    n_es: int
    n_base: int

    def text(self, digits: int = 2) -> str:
        """``point [low, high]`` with ``> last`` for an unbounded end."""

        def one(v: float) -> str:
            return f"> {fmt_num(self.last, digits)}" if np.isposinf(v) else fmt_num(v, digits)

        if np.isnan(self.low):
            return one(self.point)
        return f"{one(self.point)} [{one(self.low)}, {one(self.high)}]"


def ratio_interval_at(
    es: TimeToTarget, base: TimeToTarget | float, confidence: float
) -> tuple[float, float, float]:
    """The interval of ES's median time over the baseline's at nominal ``confidence``, and the
    coverage it guarantees: ES's interval over a published constant (the order-statistic
    interval's exact coverage), or :func:`~esbench.analysis.metrics.censored.time_ratio` over our
    own baseline's runs, both sides' uncertainty
    (:func:`~esbench.analysis.metrics.censored.time_ratio_level`). NaN with fewer than 2 runs a side."""
    nan = float("nan")
    if isinstance(base, TimeToTarget):
        if es.n_seeds < 2 or base.n_seeds < 2:
            return nan, nan, nan
        _, low, high = time_ratio(
            np.array(es.times), np.array(es.arrived), np.array(base.times), np.array(base.arrived), confidence
        )
        return low, high, time_ratio_level(es.n_seeds, base.n_seeds, confidence)
    if not (np.isfinite(base) and base > 0) or es.n_seeds < 2:
        return nan, nan, nan
    low, high = es.interval_at(confidence)
    return low / base, high / base, median_interval_coverage(es.n_seeds, confidence)


def ratio_interval(es: TimeToTarget, base: TimeToTarget | float) -> RatioInterval:
    """ES's time over a baseline's (a published constant, or our own baseline's runs), with its
    interval at ES's confidence (:func:`ratio_interval_at`).

    Args:
        es: ES's time to the target.
        base: The baseline's timesteps to the same target, or its :class:`TimeToTarget`.
    """
    nan = float("nan")
    if isinstance(base, TimeToTarget):
        if es.n_seeds == 0 or base.n_seeds == 0:
            return RatioInterval(nan, nan, nan, nan, es.n_seeds, base.n_seeds)
        point, _, _ = time_ratio(
            np.array(es.times), np.array(es.arrived), np.array(base.times), np.array(base.arrived)
        )
        low, high, _ = ratio_interval_at(es, base, es.confidence)
        scale = base.point if np.isfinite(base.point) else base.last
        return RatioInterval(point, float(low), float(high), es.last / scale, es.n_seeds, base.n_seeds)
    b = float(base)
    if not (np.isfinite(b) and b > 0):
        return RatioInterval(nan, nan, nan, nan, es.n_seeds, 0)
    low, high, _ = ratio_interval_at(es, b, es.confidence)
    return RatioInterval(es.point / b, float(low), float(high), es.last / b, es.n_seeds, 0)


@dataclass(frozen=True)
class Verdict:
    """A claim's verdict and what would decide it (empty when decided); inside
    :func:`~esbench.analysis.claims.verdicts.plan_changed` the word is "not decided" whatever it was
    made with (:func:`~esbench.analysis.claims.verdicts.in_force`)."""

    word: str
    decide: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "word", in_force(self.word))


def ratio_verdict(
    ri: RatioInterval, limit: float, denominator: float = float("nan"), inclusive: bool = False
) -> Verdict:
    """Verdict on "ratio below ``limit``" from its interval (:func:`esbench.analysis.claims.decide`),
    with what would decide an undecided one.

    Args:
        ri: The ratio and its interval (:func:`ratio_interval`).
        limit: The claimed bound on the ratio.
        denominator: The baseline's timesteps (for the note on how long the runs must be).
        inclusive: Whether a ratio at the limit satisfies the claim ("at or below").
    """
    if not np.isfinite(ri.last):
        return Verdict(UNDECIDED, "the baseline never reached this target")
    n = ri.n_es if ri.n_base == 0 else min(ri.n_es, ri.n_base)
    if np.isnan(ri.low):
        per_side = " per side" if ri.n_base else ""
        return Verdict(UNDECIDED, f"needs at least 2 seeds{per_side} for an interval (has {n})")
    word = decide(ri.low, ri.high, "below", limit, inclusive=inclusive)
    if word != UNDECIDED:
        return Verdict(word)
    if np.isposinf(ri.high) and ri.last < limit:
        if np.isfinite(denominator):
            return Verdict(
                UNDECIDED,
                f"needs runs past {fmt_num(limit * denominator)} timesteps (the longest censored run "
                f"ends at {fmt_num(ri.last * denominator)})",
            )
        return Verdict(UNDECIDED, "needs longer ES runs")
    return Verdict(UNDECIDED, f"the interval straddles {fmt_num(limit, 3)}x: more seeds (now {n})")


def reproduce_verdict(ri: RatioInterval, paper_ratio: float) -> Verdict:
    """Did we reproduce the paper's ratio: supported when our interval contains it, contradicted
    when it lies wholly on one side (the note says "ours faster" or "ours slower than the paper's
    ES", with the interval), undecided without an interval or when it is open above and the
    paper's ratio lies past what the runs cover."""
    if not np.isfinite(paper_ratio):
        return Verdict(UNDECIDED, "the paper gives no ratio here")
    if not np.isfinite(ri.last):
        return Verdict(UNDECIDED, "the baseline never reached this target")
    if np.isnan(ri.low):
        return Verdict(UNDECIDED, "needs at least 2 seeds for an interval")
    interval = ri.text()
    if ri.high < paper_ratio:
        return Verdict(
            CONTRADICTED, f"ours faster than the paper's ES: {interval} vs {fmt_num(paper_ratio, 3)}"
        )
    if ri.low > paper_ratio:
        return Verdict(
            CONTRADICTED, f"ours slower than the paper's ES: {interval} vs {fmt_num(paper_ratio, 3)}"
        )
    if np.isfinite(ri.high):
        return Verdict(SUPPORTED)
    return Verdict(UNDECIDED, f"{interval} is open above: the runs end before the paper's ratio")


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
    word = decide(low, high, "above" if at_least else "below", limit, inclusive=at_least)
    if word != UNDECIDED:
        return Verdict(word)
    return Verdict(
        UNDECIDED,
        f"the interval [{fmt_num(low, 3)}, {fmt_num(high, 3)}] straddles {fmt_num(limit, 3)}: "
        f"more {what} (now {n_seeds})",
    )
