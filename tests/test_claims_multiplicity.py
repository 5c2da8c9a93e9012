"""Claims over several tasks: Holm's step-down on a hand-computed case, p-values read off an
interval's guaranteed coverage, and the family verdict of a claim on some task and on every task."""

from __future__ import annotations

import numpy as np
import pytest

from esbench.analysis.claims import CONTRADICTED, SUPPORTED, UNDECIDED
from esbench.analysis.claims.multiplicity import decide_family, holm, holm_adjusted, p_value
from esbench.analysis.metrics import time_to_score
from esbench.analysis.metrics.intervals import median_interval_coverage


def test_holm_by_hand() -> None:
    """p = 0.01, 0.04, 0.03, 0.005 (m = 4). Sorted: 0.005 x 4 = 0.02; 0.01 x 3 = 0.03; 0.03 x 2 =
    0.06; 0.04 x 1 = 0.04, raised to 0.06 (adjusted p-values never fall along the sorted order).
    At 0.05 Holm rejects the first two and stops; Bonferroni (x 4) would reject only 0.005."""
    adjusted = holm_adjusted([0.01, 0.04, 0.03, 0.005])
    np.testing.assert_allclose(adjusted, [0.03, 0.06, 0.06, 0.02])
    assert holm([0.01, 0.04, 0.03, 0.005]).tolist() == [True, False, False, True]
    assert holm_adjusted([0.5, 0.9]).tolist() == [1.0, 1.0]  # capped at 1
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        holm_adjusted([1.5])


def _median_over(times: list[float]):  # type: ignore[no-untyped-def]
    t = np.array(times)

    def at(confidence: float) -> tuple[float, float, float]:
        _, low, high = time_to_score(t, np.ones(t.size, bool), confidence)
        return low, high, median_interval_coverage(t.size, confidence)

    return at


def test_p_value_is_one_minus_the_coverage_the_interval_guarantees() -> None:
    """Five runs at 1..5. Below 6: even the widest interval, [1, 5], is below, and it covers 93.75%
    at most, so p = 0.0625 (not ~0, whatever level is asked for). Below 4.5: only [2, 4] (62.5%)
    is: p = 0.375. Below 3.5: no interval is, p = 1. Above 0.5, the mirror: contradicted."""
    at = _median_over([1, 2, 3, 4, 5])
    assert p_value(at, 6.0, "below") == pytest.approx(0.0625)
    assert p_value(at, 4.5, "below") == pytest.approx(0.375)
    assert p_value(at, 3.5, "below") == 1.0
    assert p_value(at, 0.5, "below", CONTRADICTED) == pytest.approx(0.0625)
    assert p_value(at, 5.0, "below", inclusive=True) == pytest.approx(0.0625)  # "at or below"


def test_a_claim_on_some_task_is_corrected_by_holm_one_on_every_task_is_not() -> None:
    # Best of four: 0.03 alone would pass at 0.05, but not at 0.05 / 4.
    assert decide_family([0.03, 1, 1, 1], [1, 1, 1, 1], "some") == UNDECIDED
    assert decide_family([0.01, 1, 1, 1], [1, 1, 1, 1], "some") == SUPPORTED
    assert decide_family([1, 1], [0.01, 0.04], "some") == CONTRADICTED  # every task on the other side
    # Every task (intersection-union): each at 0.05, no correction.
    assert decide_family([0.04, 0.04], [1, 1], "every") == SUPPORTED
    assert decide_family([0.04, 1], [1, 1], "every") == UNDECIDED
    assert decide_family([0.04, 1], [1, 0.02], "every") == CONTRADICTED  # Holm on the other side
    assert decide_family([0.04, 1], [1, 0.04], "every") == UNDECIDED  # 0.04 x 2 > 0.05
    with pytest.raises(ValueError, match="quantifier"):
        decide_family([0.01], [1], "most")  # type: ignore[arg-type]
