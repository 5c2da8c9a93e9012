"""The one verdict rule and the drop's reading, on intervals whose answer is known."""

from __future__ import annotations

import math

import pytest

from esbench.analysis.claims.retention import RETENTION_CLAIMS, drop_reading
from esbench.analysis.claims.verdicts import (
    CONTRADICTED,
    NOT_TESTABLE,
    SUPPORTED,
    UNDECIDED,
    VERDICTS,
    decide,
    learned,
)

NAN = math.nan


def test_decide_reads_the_interval_on_the_claims_side() -> None:
    assert decide(-0.3, -0.1, "below") == SUPPORTED
    assert decide(-0.3, -0.1, "above") == CONTRADICTED
    assert decide(0.1, 0.3, "above") == SUPPORTED
    assert decide(0.1, 0.3, "below") == CONTRADICTED
    assert decide(-0.1, 0.1, "below") == UNDECIDED
    assert decide(0.0, 0.0, "above") == UNDECIDED  # an interval at the limit decides nothing
    assert decide(NAN, NAN, "below") == UNDECIDED
    assert decide(11.0, 12.0, "below", limit=10.0) == CONTRADICTED


def test_a_study_that_did_not_learn_is_not_testable_whatever_its_interval() -> None:
    assert decide(-0.3, -0.1, "below", testable=False) == NOT_TESTABLE
    assert NOT_TESTABLE == "not testable: no learning" and NOT_TESTABLE in VERDICTS
    with pytest.raises(ValueError, match="direction"):
        decide(0.0, 1.0, "sideways")  # type: ignore[arg-type]


def test_learned_needs_more_than_twice_the_standard_error() -> None:
    assert learned(0.05, 0.02)
    assert not learned(0.04, 0.02)  # exactly twice: not more
    assert not learned(0.0, 0.0)  # a solve rate of 0 at every point: no spread, no gain
    assert learned(0.01, 0.0)
    assert not learned(-0.5, 0.01) and not learned(0.5, NAN) and not learned(NAN, 0.01)


def test_drop_reading() -> None:
    assert drop_reading(0.2, -0.05, 0.1, 0.5) == "transient"
    assert drop_reading(0.2, 0.1, 0.05, 0.3) == "partly transient"
    assert drop_reading(0.2, 0.1, -0.2, 0.1) == "permanent"
    assert drop_reading(-0.1, -0.2, -0.3, 0.2) == "no drop shown"
    assert drop_reading(0.2, -0.1, -0.1, 0.3) == "unclear"


def test_every_claim_names_its_side() -> None:
    assert {c.direction for c in RETENTION_CLAIMS.values()} <= {"below", "above"}
    assert RETENTION_CLAIMS["es_forgets_more"].direction == "below"
