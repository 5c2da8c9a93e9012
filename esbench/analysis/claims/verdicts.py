"""The one verdict vocabulary and the one rule that turns an interval into a verdict.

A comparative claim is about a statistic (a difference of retention, a recovery, a ratio) and a
side of a limit: "below 0", "above 0", "below 10x". Its verdict, from the statistic's interval:

* **supported** when the whole interval lies on the claim's side of the limit;
* **contradicted** when it lies wholly on the other side;
* **undecided** when it holds the limit, or there is no interval (fewer than 2 seeds);
  an end may be unbounded (a time to a score whose runs did not all get there is ``> budget``
  above: an interval ``[low, inf)`` wholly above the limit still contradicts "below" it);
* **not testable: no learning** when the study did not learn what the claim is about (its primary
  measure's effect is not above the claim's minimum effect, :func:`learned`): the interval is then
  never read, whatever it says. A study must learn before it can decide;
* **not tested** when the runs lack the conditions the claim compares;
* **not decided: plan changed after the runs** when the runs were not made under the plan in force
  (their recorded claims differ from the recipe's, or they record none,
  :mod:`esbench.analysis.claims.plan`): a report rendered inside :func:`plan_changed` gives this
  verdict to every claim, whatever its interval, because a rule chosen after the data were seen
  decides nothing.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Literal

SUPPORTED = "supported"
CONTRADICTED = "contradicted"
UNDECIDED = "undecided"
NOT_TESTABLE = "not testable: no learning"
NOT_TESTED = "not tested"
NOT_DECIDED = "not decided: plan changed after the runs"

#: Every verdict a claim takes, in the order a reader meets them.
VERDICTS: tuple[str, ...] = (SUPPORTED, CONTRADICTED, UNDECIDED, NOT_TESTABLE, NOT_TESTED, NOT_DECIDED)

#: Whether the runs being decided were made under the plan in force (:func:`plan_changed`).
_PLAN_IN_FORCE: ContextVar[bool] = ContextVar("plan_in_force", default=True)


@contextlib.contextmanager
def plan_changed(changed: bool = True) -> Iterator[None]:
    """Within the block, every verdict is :data:`NOT_DECIDED` when ``changed`` (:func:`in_force`):
    a report wraps its analysis in it when its runs were not made under its recipe's current plan."""
    token = _PLAN_IN_FORCE.set(not changed)
    try:
        yield
    finally:
        _PLAN_IN_FORCE.reset(token)


def in_force(verdict: str) -> str:
    """``verdict``, or :data:`NOT_DECIDED` inside :func:`plan_changed`: every rule that gives a
    verdict returns it through here."""
    return verdict if _PLAN_IN_FORCE.get() else NOT_DECIDED


#: The claim's side of its limit: the statistic is below it, or above it.
Direction = Literal["below", "above"]

#: The minimum effect, in standard errors of one evaluation of the primary measure.
MIN_EFFECT_SE = 2.0


def learned(effect: float, se: float, factor: float = MIN_EFFECT_SE) -> bool:
    """Whether ``effect`` (a gain of the primary measure) exceeds ``factor`` standard errors of one
    evaluation of that measure (``se``); False when either is not finite or the effect is not
    positive. With ``se`` 0 (a solve rate of 0 at every point: no spread) any positive gain counts,
    and a gain of 0 never does."""
    if not (math.isfinite(effect) and math.isfinite(se)):
        return False
    return effect > 0 and effect > factor * se


def decide(
    low: float,
    high: float,
    direction: Direction,
    limit: float = 0.0,
    testable: bool = True,
    inclusive: bool = False,
) -> str:
    """The verdict of "the statistic is ``direction`` ``limit``" from its interval (module doc).

    Args:
        low, high: The statistic's interval (NaN: none; an end may be infinite).
        direction: ``"below"`` or ``"above"``: the claim's side of ``limit``.
        limit: The claim's bound.
        testable: Whether the study learned enough to decide (:func:`learned`); False gives
            :data:`NOT_TESTABLE` whatever the interval.
        inclusive: Whether the limit itself is on the claim's side ("at or below", "at least"):
            then an interval ending at the limit is wholly on the claim's side.

    Inside :func:`plan_changed` the verdict is :data:`NOT_DECIDED`, whatever the interval.
    """
    if direction not in ("below", "above"):
        raise ValueError(f"direction must be 'below' or 'above', got {direction!r}")
    if not testable:
        return in_force(NOT_TESTABLE)
    return in_force(side_of_limit(low, high, direction, limit, inclusive))


def side_of_limit(
    low: float, high: float, direction: Direction, limit: float = 0.0, inclusive: bool = False
) -> str:
    """What the interval alone says of "the statistic is ``direction`` ``limit``":
    :data:`SUPPORTED`, :data:`CONTRADICTED` or :data:`UNDECIDED` (arguments as :func:`decide`).

    Not a verdict: :func:`decide` is, with the plan and the minimum effect applied. This is the rule
    beneath it, for what reads an interval's side whatever the plan (a p-value by inversion).
    """
    if math.isnan(low) or math.isnan(high):
        return UNDECIDED
    if direction == "below":
        claim_side, other_side = (high <= limit if inclusive else high < limit), low > limit
    else:
        claim_side, other_side = (low >= limit if inclusive else low > limit), high < limit
    if claim_side:
        return SUPPORTED
    if other_side:
        return CONTRADICTED
    return UNDECIDED
