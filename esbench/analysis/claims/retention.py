"""The retention claims as data: what each says, where it comes from, its measure and side, and
the reading of a drop (transient or permanent).

Every claim names its primary measure and its minimum effect: at matched gain, the matched gain of
the primary measure (a normalized score for a MuJoCo sequence, the solve rate for the language
model, never its format score) must exceed twice the standard error of one evaluation of that
measure (:func:`~esbench.analysis.claims.verdicts.learned`); below it the verdict is
:data:`~esbench.analysis.claims.verdicts.NOT_TESTABLE`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from esbench.analysis.claims.verdicts import Direction


@dataclass(frozen=True)
class RetentionClaim:
    """One claim about retention.

    Attributes:
        key: Its name in tables (``claim`` / ``decision`` columns).
        text: The claim in words.
        source: The paper that makes it, and what it says.
        statistic: The statistic decided: ``a - b`` of retention at matched gain, or the recovery.
        direction: The side of 0 that supports the claim.
    """

    key: str
    text: str
    source: str
    statistic: str
    direction: Direction


#: Every retention claim, by key: the one table the report's tables and claims rows read.
RETENTION_CLAIMS: dict[str, RetentionClaim] = {
    c.key: c
    for c in (
        RetentionClaim(
            "es_forgets_more",
            "ES forgets more than RL at matched new-stage gain",
            "Abdi, Gupta et al. 2026: ES loses more prior capability than GRPO at matched new-task "
            "reward (LLM fine-tuning)",
            "retention at matched gain, a - b",
            "below",
        ),
        RetentionClaim(
            "drop_recovers",
            "the earlier stage's drop recovers by the later stage's end (drift, not forgetting)",
            "Schweighofer et al. 2026: the drop is mostly drift that recovers during ES training",
            "recovery: mean over the last third of the stage minus mean over its first third",
            "above",
        ),
        RetentionClaim(
            "larger_population_forgets_less",
            "a larger ES population forgets less at matched gain",
            "Schweighofer et al. 2026: larger populations reduce the drop",
            "retention at matched gain, a - b",
            "above",
        ),
        RetentionClaim(
            "awd_keeps_retention",
            "Anchored Weight Decay keeps more retention at matched gain",
            "Schweighofer et al. 2026: decay toward the initial parameters removes most of it",
            "retention at matched gain, a - b",
            "above",
        ),
    )
}

#: Readings of a drop during a later stage (:func:`drop_reading`).
TRANSIENT, PERMANENT, PARTLY_TRANSIENT, NO_DROP, UNCLEAR = (
    "transient",
    "permanent",
    "partly transient",
    "no drop shown",
    "unclear",
)


def drop_reading(early_low: float, late_low: float, recovery_low: float, recovery_high: float) -> str:
    """What a drop did, from the intervals of the early drop, the late drop and the recovery
    (:func:`esbench.analysis.retention_measures.drop_and_recovery`, over seeds).

    * **transient**: the early drop's interval lies above 0, the recovery's above 0, the late
      drop's holds 0 (back where it started);
    * **partly transient**: the late drop's and the recovery's both lie above 0;
    * **permanent**: the late drop's lies above 0 and the recovery's does not;
    * **no drop shown**: neither drop's interval lies above 0 and the recovery's is not above 0;
    * **unclear** otherwise (an early drop whose end is undecided, or no interval).
    """

    def above(v: float) -> bool:
        return math.isfinite(v) and v > 0

    recovers = above(recovery_low)
    if above(late_low):
        return PARTLY_TRANSIENT if recovers else PERMANENT
    if above(early_low) and recovers:
        return TRANSIENT
    if not above(early_low) and not recovers and math.isfinite(recovery_high):
        return NO_DROP
    return UNCLEAR
