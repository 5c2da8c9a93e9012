"""Claims: verdict codes, the one rule that decides them, a recipe's plan (its claims files and
their hash), and the retention claims as data.

Nothing here computes a metric or writes a table: a metric comes in as numbers (an interval, a
gain and its minimum effect), a verdict code and its reason go out (rliable's layering: metric ->
interval -> verdict -> render).
"""

from esbench.analysis.claims.verdicts import (
    CONTRADICTED,
    NOT_DECIDED,
    NOT_TESTABLE,
    NOT_TESTED,
    SUPPORTED,
    UNDECIDED,
    VERDICTS,
    Direction,
    decide,
    in_force,
    learned,
    plan_changed,
)

__all__ = [
    "CONTRADICTED",
    "NOT_DECIDED",
    "NOT_TESTABLE",
    "NOT_TESTED",
    "SUPPORTED",
    "UNDECIDED",
    "VERDICTS",
    "Direction",
    "decide",
    "in_force",
    "learned",
    "plan_changed",
]
