"""Claims over several tasks: p-values from intervals, Holm's step-down, and a family's verdict.

A claim about "some task" (the paper's "up to 3x better") is supported when at least one task's
statistic is on the claim's side of its limit; choosing the best of m tasks after the fact makes
that m chances, so the tasks it ranges over are one family, corrected by Holm's step-down
(Holm 1979; at its first step it is Bonferroni's alpha / m). A claim about "every task" is an
intersection-union test: it is supported only when every task's is, each at the plain level, and
needs no correction (Berger 1982). Its negation, "some task is on the other side", is a "some
task" statement, so the evidence against an "every task" claim is corrected by Holm likewise.

A task's p-value is read off its interval, inverted at the claim's limit: ``1 - coverage`` of the
widest interval that lies wholly on the claim's side, its coverage being what the interval
guarantees, not its nominal level (an interval of a median over 5 runs never covers more than
93.75%, whatever it is asked for: the smallest p it gives is 0.0625). Intervals widen with their
level, so the levels that decide form an interval and bisection finds its end.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np

from esbench.analysis.claims.verdicts import (
    CONTRADICTED,
    SUPPORTED,
    UNDECIDED,
    Direction,
    in_force,
    side_of_limit,
)

#: An interval of a statistic as a function of its nominal two-sided level: ``(low, high,
#: coverage)``, coverage being the level the interval guarantees (at most the nominal one where the
#: data cannot reach it).
IntervalAt = Callable[[float], tuple[float, float, float]]

#: How a claim ranges over its tasks.
Quantifier = Literal["every", "some"]

#: The family-wise error rate a family of tasks is decided at.
ALPHA = 0.05

#: Confidence levels the inversion searches (a level closer to 0 or 1 decides nothing more).
_LOWEST, _HIGHEST = 1e-6, 1.0 - 1e-9


def p_value(
    interval: IntervalAt,
    limit: float,
    direction: Direction,
    verdict: str = SUPPORTED,
    inclusive: bool = False,
    tol: float = 1e-6,
) -> float:
    """``1 - coverage`` of the widest interval that gives ``verdict`` (:data:`SUPPORTED`: wholly on
    ``direction``'s side of ``limit``; :data:`CONTRADICTED`: wholly on the other), by bisection over
    the nominal level; 1 where no level gives it.

    Args:
        interval: The statistic's interval, and its guaranteed coverage, at a nominal level.
        limit: The claim's bound.
        direction: The claim's side of it.
        verdict: :data:`SUPPORTED` or :data:`CONTRADICTED`.
        inclusive: Whether the limit itself is on the claim's side (:func:`decide`).
        tol: Precision of the returned p-value.
    """
    if verdict not in (SUPPORTED, CONTRADICTED):
        raise ValueError(f"verdict must be {SUPPORTED!r} or {CONTRADICTED!r}, got {verdict!r}")

    def gives(confidence: float) -> bool:
        low, high, _ = interval(confidence)
        return side_of_limit(low, high, direction, limit, inclusive) == verdict

    if not gives(_LOWEST):
        return 1.0
    lo = _HIGHEST
    if not gives(_HIGHEST):
        lo, hi = _LOWEST, _HIGHEST  # gives(lo), not gives(hi)
        while hi - lo > tol:
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if gives(mid) else (lo, mid)
    return float(min(1.0, max(0.0, 1.0 - interval(lo)[2])))


def holm_adjusted(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm's adjusted p-values, in the input's order: the i-th smallest p times (m - i + 1),
    made non-decreasing along the sorted order and capped at 1. A hypothesis is rejected at
    family-wise level alpha where its adjusted p-value is at most alpha."""
    p = np.asarray(p_values, dtype=float)
    if p.ndim != 1 or np.any((p < 0) | (p > 1)) or np.any(~np.isfinite(p)):
        raise ValueError(f"p_values must be a 1-D sequence of numbers in [0, 1]; got {p.tolist()}")
    m = p.size
    order = np.argsort(p, kind="stable")
    stepped = np.maximum.accumulate(p[order] * (m - np.arange(m)))
    out = np.empty(m)
    out[order] = np.minimum(stepped, 1.0)
    return out


def holm(p_values: Sequence[float] | np.ndarray, alpha: float = ALPHA) -> np.ndarray:
    """Which hypotheses Holm's step-down rejects at family-wise level ``alpha`` (bool per p-value)."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha={alpha} must be in (0, 1)")
    return holm_adjusted(p_values) <= alpha


def decide_family(
    p_supported: Sequence[float],
    p_contradicted: Sequence[float],
    quantifier: Quantifier,
    alpha: float = ALPHA,
) -> str:
    """The verdict of a claim over a family of tasks, from each task's p-values (:func:`p_value`)
    for the claim's side and for the other (module doc).

    * ``some``: supported where Holm rejects "not on the claim's side" for at least one task;
      contradicted where every task is on the other side at ``alpha`` (an intersection);
    * ``every``: supported where every task is on the claim's side at ``alpha`` (intersection-union,
      no correction); contradicted where Holm rejects "on the claim's side" for at least one task.

    A task that cannot decide the claim (no runs, or excluded: a target near the task's ceiling or
    beaten at timestep 0) enters with p = 1 on both sides: it is still one of the family's chances.

    Returns:
        :data:`SUPPORTED`, :data:`CONTRADICTED` or :data:`UNDECIDED` (:data:`NOT_DECIDED` inside
        :func:`~esbench.analysis.claims.verdicts.plan_changed`).
    """
    if quantifier not in ("every", "some"):
        raise ValueError(f"quantifier must be 'every' or 'some', got {quantifier!r}")
    sup, con = np.asarray(p_supported, dtype=float), np.asarray(p_contradicted, dtype=float)
    if sup.size == 0 or sup.shape != con.shape:
        raise ValueError(f"a family needs one p-value per task on each side; got {sup.size} and {con.size}")
    if quantifier == "some":
        if holm(sup, alpha).any():
            return in_force(SUPPORTED)
        return in_force(CONTRADICTED if bool(np.all(con <= alpha)) else UNDECIDED)
    if bool(np.all(sup <= alpha)):
        return in_force(SUPPORTED)
    return in_force(CONTRADICTED if holm(con, alpha).any() else UNDECIDED)
