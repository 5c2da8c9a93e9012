"""The retention claims, as data: ``experiments/claims/retention.yaml`` (the plan of the retention
and LM retention recipes) loads into :class:`RetentionClaim`, validated, and the reading of a drop
(transient or permanent).

Every claim names its primary measure and its minimum effect: at matched gain, the matched gain of
the primary measure (a normalized score for a MuJoCo sequence, the solve rate for the language
model, never its format score) must exceed ``minimum_effect_se`` standard errors of one evaluation
of that measure (:func:`~esbench.analysis.claims.verdicts.learned`); below it the verdict is
:data:`~esbench.analysis.claims.verdicts.NOT_TESTABLE`. The file says what each claim is; the
analysis computes the estimand of each key it knows (:data:`RETENTION_CLAIM_KEYS`), so a file may
change a claim's words, limit, side, minimum effect or family, never invent an estimand.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from esbench.analysis.claims.plan import PlanError, read_claims_file
from esbench.analysis.claims.verdicts import Direction
from esbench.utils.resources import experiments_dir

#: The claims file of the retention recipes, as they name it.
RETENTION_CLAIMS_NAME = "experiments/claims/retention.yaml"

#: The claims whose estimands the retention analysis computes, in the order its tables show them.
RETENTION_CLAIM_KEYS: tuple[str, ...] = (
    "es_forgets_more",
    "drop_recovers",
    "larger_population_forgets_less",
    "awd_keeps_retention",
)

#: Corrections for multiplicity the retention analysis applies: none (each comparison of a family is
#: decided at its own 95% level, and the family is named beside it).
RETENTION_CORRECTIONS: tuple[str, ...] = ("none",)


@dataclass(frozen=True)
class RetentionClaim:
    """One claim about retention, as its claims file states it.

    Attributes:
        key: Its name in tables (``claim`` / ``decision`` columns): one of :data:`RETENTION_CLAIM_KEYS`.
        text: The claim in words.
        source: The paper that makes it.
        sentence: What the paper says.
        estimand: The statistic decided: ``a - b`` of retention at matched gain, or the recovery.
        estimator: How it is estimated, with its interval.
        limit: The bound the statistic is compared with.
        direction: The side of ``limit`` that supports the claim.
        primary_measure: The measure the study must learn on before the claim is testable.
        minimum_effect_se: The minimum effect, in standard errors of one evaluation of that measure.
        family: The comparisons decided together (the multiplicity family).
        correction: The correction for multiplicity over the family (:data:`RETENTION_CORRECTIONS`).
    """

    key: str
    text: str
    source: str
    sentence: str
    estimand: str
    estimator: str
    limit: float
    direction: Direction
    primary_measure: str
    minimum_effect_se: float
    family: str
    correction: str

    @property
    def cited(self) -> str:
        """The paper and what it says, as the claims tables cite it."""
        return f"{self.source}: {self.sentence}"


def _claim(path: Path, i: int, raw: Any) -> RetentionClaim:
    """One validated claim of ``path`` (entry ``i``); PlanError naming the file, entry and key."""
    names = [f.name for f in fields(RetentionClaim)]
    where = f"{path}: claims[{i}]"
    if not isinstance(raw, dict):
        raise PlanError(f"{where}: a claim is a mapping with keys {', '.join(names)}")
    if set(raw) != set(names):
        missing, unknown = sorted(set(names) - set(raw)), sorted(set(raw) - set(names))
        raise PlanError(f"{where}: missing {missing}, unknown {unknown}; allowed keys: {', '.join(names)}")
    if raw["key"] not in RETENTION_CLAIM_KEYS:
        raise PlanError(f"{where}.key={raw['key']!r}; allowed: {', '.join(RETENTION_CLAIM_KEYS)}")
    if raw["direction"] not in ("below", "above"):
        raise PlanError(f"{where}.direction={raw['direction']!r}; allowed: below, above")
    if raw["correction"] not in RETENTION_CORRECTIONS:
        raise PlanError(
            f"{where}.correction={raw['correction']!r}; allowed: {', '.join(RETENTION_CORRECTIONS)}"
        )
    for key in ("limit", "minimum_effect_se"):
        value = raw[key]
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise PlanError(f"{where}.{key}={value!r} must be a finite number")
    if raw["minimum_effect_se"] < 0:
        raise PlanError(f"{where}.minimum_effect_se={raw['minimum_effect_se']!r} must be >= 0")
    texts = [k for k in names if k not in ("limit", "minimum_effect_se", "direction")]
    for key in texts:
        if not isinstance(raw[key], str) or not raw[key].strip():
            raise PlanError(f"{where}.{key} must be a non-empty string")
    return RetentionClaim(
        **{k: raw[k] for k in texts},
        direction=raw["direction"],
        limit=float(raw["limit"]),
        minimum_effect_se=float(raw["minimum_effect_se"]),
    )


def load_retention_claims(path: str | Path) -> dict[str, RetentionClaim]:
    """The retention claims of the claims file ``path``, by key, validated: ``kind: retention`` and a
    ``claims`` list holding each of :data:`RETENTION_CLAIM_KEYS` once.

    Raises:
        PlanError: The file, an entry or a key is bad; the message names it and what is allowed.
    """
    path = Path(path)
    data = read_claims_file(path)
    if not isinstance(data, dict) or set(data) != {"kind", "claims"} or data["kind"] != "retention":
        raise PlanError(f"{path}: a retention claims file is a mapping of kind: retention and claims: [...]")
    if not isinstance(data["claims"], list):
        raise PlanError(f"{path}: claims must be a list of claims")
    claims = [_claim(path, i, raw) for i, raw in enumerate(data["claims"])]
    keys = [c.key for c in claims]
    if sorted(keys) != sorted(RETENTION_CLAIM_KEYS):
        raise PlanError(
            f"{path}: claims must hold each of {', '.join(RETENTION_CLAIM_KEYS)} once; has {keys}"
        )
    return {c.key: c for c in sorted(claims, key=lambda c: RETENTION_CLAIM_KEYS.index(c.key))}


#: Every retention claim, by key, from the shipped claims file: the one table the report's tables
#: and claims rows read.
RETENTION_CLAIMS: dict[str, RetentionClaim] = load_retention_claims(
    experiments_dir() / "claims" / "retention.yaml"
)

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
