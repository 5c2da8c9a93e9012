"""Continual World's metrics (and Lopez-Paz & Ranzato's transfers) against values computed by hand
on a small synthetic run whose later stages have fewer points than the end-of-stage window."""

from __future__ import annotations

import numpy as np
import pytest

from esbench.analysis.retention import (
    SequenceCurves,
    average_backward_transfer,
    backward_transfer,
    forgetting,
    run_retention,
    score_matrix,
    zero_shot_transfer,
)

# Three stages; stage 0 has 3 points, stage 1 two, stage 2 one: with a window of 3, a window that
# reached into earlier stages would average stage 0's last point into stage 1's end (and so on).
P = np.array(
    [
        [0.0, 0.5, 1.0, 0.6, 0.4, 0.2],
        [0.0, 0.1, 0.2, 0.5, 0.9, 0.7],
        [0.0, 0.0, 0.1, 0.2, 0.3, 0.8],
    ]
)
STAGE = np.array([0, 0, 0, 1, 1, 2])
T = np.array([0.0, 10, 20, 30, 40, 50])
K = 3


def test_score_matrix_averages_only_the_active_stages_own_points() -> None:
    e = score_matrix(P, STAGE, last_k=K)
    expected = np.array(
        [
            [0.75, 0.5, 0.2],  # col 0: never the untrained point 0; col 1: (0.6 + 0.4) / 2
            [0.15, 0.7, 0.7],
            [0.05, 0.25, 0.8],
        ]
    )
    np.testing.assert_allclose(e, expected)


def test_a_stage_with_no_point_repeats_the_stage_before() -> None:
    e = score_matrix(P[:, [0, 1, 4, 5]], np.array([0, 0, 2, 2]), last_k=2)
    np.testing.assert_allclose(e[:, 1], e[:, 0])
    np.testing.assert_allclose(e[:, 0], [0.5, 0.1, 0.0])  # point 1 alone: point 0 is the untrained policy


def test_forgetting_backward_and_zero_shot_transfer_by_hand() -> None:
    np.testing.assert_allclose(forgetting(P, STAGE, K), [0.75 - 0.2, 0.0, 0.0])
    bwt = backward_transfer(P, STAGE, K)
    np.testing.assert_allclose(bwt[:2], [-0.55, 0.0])
    assert np.isnan(bwt[2])
    assert average_backward_transfer(P, STAGE, K) == pytest.approx(-0.275)
    zst = zero_shot_transfer(P, STAGE, K)
    assert np.isnan(zst[0])
    np.testing.assert_allclose(zst[1:], [0.15, 0.25])


def test_run_retention_every_metric_by_hand_and_raw_returns_beside() -> None:
    raw = 10.0 + 100.0 * P  # R^random 10, R^ref 110: normalized back to P
    curves = SequenceCurves(("a", "b", "c"), T, STAGE, raw, np.array([20.0, 40, 50]))
    ref_b = (np.array([0.0, 10, 20]), 10.0 + 100.0 * np.array([0.0, 0.5, 1.0]))
    table = run_retention(
        curves, np.full(3, 10.0), np.full(3, 110.0), references=[None, ref_b, None], last_k=K
    )
    got = {(r.stage_index, r.metric): r.value for r in table.itertuples() if r.during == -1}
    assert got[(0, "end_of_stage_score")] == pytest.approx(0.75)
    assert got[(0, "final_score")] == pytest.approx(0.2)
    assert got[(0, "forgetting")] == pytest.approx(0.55)
    assert got[(0, "backward_transfer")] == pytest.approx(-0.55)
    assert got[(0, "end_of_stage_return")] == pytest.approx(85.0)
    assert got[(2, "final_return")] == pytest.approx(90.0)
    assert got[(2, "zero_shot_transfer")] == pytest.approx(0.25)
    assert (2, "backward_transfer") not in got  # the last stage has none
    assert got[(-1, "average_performance")] == pytest.approx((0.2 + 0.7 + 0.8) / 3)
    assert got[(-1, "average_forgetting")] == pytest.approx(0.55 / 3)
    assert got[(-1, "average_backward_transfer")] == pytest.approx(-0.275)
    # Continual World's forward transfer of stage b: its span is points 2..4 (from the parameters
    # stage a left): AUC = ((0.2+0.5)/2*10 + (0.5+0.9)/2*10) / 20 = 0.525; the reference's
    # ((0+0.5)/2*10 + (0.5+1)/2*10) / 20 = 0.5; FT = (0.525 - 0.5) / (1 - 0.5) = 0.05.
    assert got[(1, "auc")] == pytest.approx(0.525)
    assert got[(1, "auc_ref")] == pytest.approx(0.5)
    assert got[(1, "forward_transfer")] == pytest.approx(0.05)
    # Stage a's drop during b (T 20 -> 40; points at fractions 0.5 and 1): from 1.0 (the model b
    # started from) to 0.4 over b's last third; b's first third holds no point. During c (40 -> 50,
    # one point at fraction 1): from 0.4 to 0.2.
    during = {(r.stage_index, r.during, r.metric): r.value for r in table.itertuples() if r.during != -1}
    assert during[(0, 1, "late_drop")] == pytest.approx(0.6)
    assert (0, 1, "early_drop") not in during
    assert during[(0, 2, "late_drop")] == pytest.approx(0.2)
    assert during[(0, 1, "forgetting_during")] == pytest.approx(0.25)  # 0.75 at the end of a, 0.5 of b
