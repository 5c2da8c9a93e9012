"""Retention measures as numpy functions, against values computed by hand."""

from __future__ import annotations

import numpy as np
import pytest

from esbench.analysis.retention_measures import (
    DropWindows,
    drop_and_recovery,
    evaluation_se,
    gain_and_retention,
    pooled_se,
    stage_end_value,
    stage_fractions,
    window_mean,
)


def test_windows_are_fractions_of_the_stage_budget_and_never_its_start() -> None:
    f = stage_fractions([100.0, 110.0, 120.0, 130.0, 160.0], 100.0, 160.0)
    np.testing.assert_allclose(f, [0.0, 1 / 6, 1 / 3, 0.5, 1.0])
    values = np.array([9.0, 1.0, 2.0, 3.0, 4.0])
    assert window_mean(f, values, (0.0, 1 / 3)) == pytest.approx(1.5)  # not the start's 9
    assert window_mean(f, values, (2 / 3, 1.0)) == pytest.approx(4.0)
    assert np.isnan(window_mean(f, values, (0.6, 0.9)))
    assert np.isnan(stage_fractions([1.0], 5.0, 5.0)).all()  # a stage of no budget


def test_drop_and_recovery_use_the_same_statistic_at_both_ends() -> None:
    f = np.array([0.0, 0.25, 0.3, 0.5, 0.8, 1.0])
    y = np.array([1.0, 0.6, 0.4, 0.5, 0.9, 0.7])
    early, late, recovery = drop_and_recovery(f, y, 1.0)
    assert early == pytest.approx(0.5) and late == pytest.approx(0.2) and recovery == pytest.approx(0.3)
    halves = DropWindows(early=(0.0, 0.5), late=(0.5, 1.0))
    assert drop_and_recovery(f, y, 1.0, halves)[2] == pytest.approx(0.8 - 0.5)


def test_drop_windows_refuse_bad_bounds() -> None:
    with pytest.raises(ValueError, match="early"):
        DropWindows(early=(0.5, 0.2))
    with pytest.raises(ValueError, match="overlaps"):
        DropWindows(early=(0.0, 0.8), late=(0.5, 1.0))


def test_retention_as_a_difference_or_a_ratio() -> None:
    gain, kept = gain_and_retention([0.1, 0.3, 0.6], [0.8, 0.4, 0.6], "difference")
    np.testing.assert_allclose(gain, [0.0, 0.2, 0.5])
    np.testing.assert_allclose(kept, [0.0, -0.4, -0.2])
    _, kept = gain_and_retention([0.1, 0.3, 0.6], [0.8, 0.4, 0.6], "ratio")
    np.testing.assert_allclose(kept, [1.0, 0.5, 0.75])
    assert np.isnan(gain_and_retention([0.0, 1.0], [0.0, 1.0], "ratio")[1]).all()
    with pytest.raises(ValueError, match="difference"):
        gain_and_retention([0.0], [0.0], "percent")  # type: ignore[arg-type]


def test_standard_errors_and_a_stages_end_value() -> None:
    np.testing.assert_allclose(evaluation_se([0.3, 0.6], 9), [0.1, 0.2])
    assert np.isnan(evaluation_se([0.3], float("nan"))).all()
    assert pooled_se([np.array([0.1, np.nan]), np.array([0.2])]) == pytest.approx(np.sqrt(0.025))
    returns = np.array([[0.0, 0.84, 0.7], [0.0, 0.0, 0.1]])
    np.testing.assert_allclose(stage_end_value(returns, [0, 0, 1], 0), [0.84, 0.0])  # the trained model
    np.testing.assert_allclose(stage_end_value(returns, [0, 0, 1], 1), [0.7, 0.1])
