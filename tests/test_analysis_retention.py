"""Retention and forgetting metrics on small synthetic curves and vectors with hand-computed answers."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from esbench.analysis.retention import (
    NONE,
    SequenceCurves,
    average_performance,
    drop_matrices,
    final_scores,
    forgetting,
    forgetting_matrix,
    forward_transfer,
    forward_transfers,
    kl_categorical,
    kl_deterministic_gaussian,
    kl_diag_gaussian,
    layer_drift,
    normalization_from_runs,
    normalized_auc,
    normalized_scores,
    param_drift,
    reference_curve,
    retention_table,
    run_retention,
    score_matrix,
    sequence_curves,
    update_sparsity,
    write_retention_table,
)
from esbench.analysis.stats import IncompleteResultsError
from esbench.tracking.snapshot_drift import SnapshotDrift
from esbench.utils.layout import Block


def metrics_frame(
    stages: list[str], timesteps: list[float], train: list[str], returns: dict[str, list[float]]
) -> pd.DataFrame:
    """A metrics.csv as the sequence loop writes it: per point, one row per evaluated stage, plus a
    training-only row (no evaluation) between points."""
    rows = []
    for n, (t, tr) in enumerate(zip(timesteps, train, strict=True)):
        rows.append({"timesteps": t, "train_task": tr, "eval_task": "", "eval_return_mean": math.nan})
        for s in stages:
            rows.append({"timesteps": t, "train_task": tr, "eval_task": s, "eval_return_mean": returns[s][n]})
    return pd.DataFrame(rows)


# Two stages A, B; R_random 0 and R_ref 100, so p = R / 100. Points t = 0, 10, 20 train A; 30, 40 train B.
T2 = [0.0, 10.0, 20.0, 30.0, 40.0]
TRAIN2 = ["A", "A", "A", "B", "B"]
R2 = {"A": [0.0, 50.0, 100.0, 30.0, 70.0], "B": [0.0, 10.0, 20.0, 50.0, 80.0]}
STAGE2 = np.array([0, 0, 0, 1, 1])
P2 = np.array([R2["A"], R2["B"]]) / 100.0


def test_sequence_curves_reads_the_loop_rows() -> None:
    curves = sequence_curves(metrics_frame(["A", "B"], T2, TRAIN2, R2), ["A", "B"])
    assert curves.stages == ("A", "B")
    np.testing.assert_array_equal(curves.timesteps, T2)
    np.testing.assert_array_equal(curves.train_stage, STAGE2)
    np.testing.assert_array_equal(curves.returns, 100.0 * P2)
    np.testing.assert_array_equal(curves.boundaries, [20.0, 40.0])
    # The same from boundaries alone (no train_task labels).
    frame = metrics_frame(["A", "B"], T2, TRAIN2, R2).assign(train_task="")
    by_time = sequence_curves(frame, ["A", "B"], boundaries=[20.0, 40.0])
    np.testing.assert_array_equal(by_time.train_stage, STAGE2)
    np.testing.assert_array_equal(by_time.returns, curves.returns)


def test_sequence_curves_zero_budget_and_repeated_stages() -> None:
    # Stages A, B, C, A (a CW20-like repetition) where B has no training rows.
    tasks = ["A", "B", "C"]
    frame = metrics_frame(
        tasks,
        [0.0, 10.0, 20.0, 30.0, 40.0],
        ["A", "A", "A", "C", "A"],
        {"A": [0, 1, 2, 3, 4], "B": [5, 5, 5, 5, 5], "C": [6, 6, 6, 7, 6]},
    )
    curves = sequence_curves(frame, ["A", "B", "C", "A"])
    np.testing.assert_array_equal(curves.train_stage, [0, 0, 0, 2, 3])
    np.testing.assert_array_equal(curves.boundaries, [20.0, 20.0, 30.0, 40.0])
    np.testing.assert_array_equal(curves.returns[0], curves.returns[3])  # one eval_task, two stages
    # A zero-budget stage between two of one name merges their rows: the boundaries tell them apart.
    frame = metrics_frame(
        ["A", "B"], [0.0, 10.0, 20.0, 30.0], ["A"] * 4, {"A": [0, 1, 2, 3], "B": [5, 5, 5, 4]}
    )
    curves = sequence_curves(frame, ["A", "B", "A"], boundaries=[20.0, 20.0, 30.0])
    np.testing.assert_array_equal(curves.train_stage, [0, 0, 0, 2])
    np.testing.assert_array_equal(curves.returns[1], [5, 5, 5, 4])


def test_sequence_curves_fails_loudly() -> None:
    frame = metrics_frame(["A", "B"], T2, TRAIN2, R2)
    with pytest.raises(ValueError, match="not evaluated"):
        sequence_curves(frame.drop(index=frame.index[-1]), ["A", "B"])
    with pytest.raises(ValueError, match="evaluated twice"):
        sequence_curves(pd.concat([frame, frame.iloc[[-1]]]), ["A", "B"])
    with pytest.raises(ValueError, match="stage order"):
        sequence_curves(frame, ["B", "A"])
    with pytest.raises(ValueError, match="boundaries"):
        sequence_curves(frame.assign(train_task=""), ["A", "B"])


def test_normalized_scores_and_derivation() -> None:
    np.testing.assert_allclose(
        normalized_scores(np.array([[10.0, 60.0, 110.0]]), [10.0], [110.0]), [[0, 0.5, 1]]
    )
    with pytest.raises(ValueError, match="no scale"):
        normalized_scores(np.zeros((1, 2)), [1.0], [1.0])
    curves = sequence_curves(
        metrics_frame(["A", "B"], T2, TRAIN2, {"A": [7.0, *R2["A"][1:]], "B": R2["B"]}), ["A", "B"]
    )
    ref_a = metrics_frame(["A"], [0.0, 10.0, 20.0], ["A"] * 3, {"A": [1.0, 80.0, 90.0]})
    ref_b = metrics_frame(["B"], [0.0, 10.0, 20.0], ["B"] * 3, {"B": [2.0, 40.0, 60.0]})
    refs = [reference_curve(ref_a, "A"), reference_curve(ref_b, "B")]
    np.testing.assert_array_equal(refs[0][0], [0, 10, 20])
    r_random, r_ref = normalization_from_runs(curves, refs)
    np.testing.assert_allclose(r_random, [7.0, 0.0])  # the sequence run at timestep 0
    np.testing.assert_allclose(r_ref, [90.0, 60.0])  # the model each reference ended with, no mean
    r_random, r_ref = normalization_from_runs(curves, refs, random_from="reference")
    np.testing.assert_allclose(r_random, [1.0, 2.0])
    np.testing.assert_allclose(r_ref, [90.0, 60.0])


def test_curve_metrics_last_evaluation() -> None:
    e = score_matrix(P2, STAGE2, last_k=1)
    np.testing.assert_allclose(e, [[1.0, 0.7], [0.2, 0.8]])
    np.testing.assert_allclose(final_scores(P2, STAGE2, 1), [0.7, 0.8])
    assert average_performance(P2, STAGE2, 1) == pytest.approx(0.75)
    np.testing.assert_allclose(forgetting(P2, STAGE2, 1), [0.3, 0.0])
    m = forgetting_matrix(P2, STAGE2, 1)
    assert m[0, 1] == pytest.approx(0.3) and np.isnan(m[1, 0]) and np.isnan(m[0, 0])
    early, late, recovery = drop_matrices(P2, STAGE2, T2, [20.0, 40.0])
    # B runs 20 -> 40: its points at fractions 0.5 and 1; none in its first third.
    assert np.isnan(early[0, 1]) and np.isnan(recovery[0, 1])
    assert late[0, 1] == pytest.approx(0.3)  # 1.0 when B began, 0.7 over B's last third
    assert np.isnan(late[1, 0])


def test_curve_metrics_average_last_k() -> None:
    e = score_matrix(P2, STAGE2, last_k=2)
    np.testing.assert_allclose(e, [[0.75, 0.5], [0.15, 0.65]])
    assert average_performance(P2, STAGE2, 2) == pytest.approx(0.575)
    np.testing.assert_allclose(forgetting(P2, STAGE2, 2), [0.25, 0.0])
    # last_k beyond the points: every point of the stage, never the untrained policy at point 0.
    np.testing.assert_allclose(score_matrix(P2, STAGE2, 10)[:, 0], [0.75, 0.15])


def test_forgetting_matrix_rows_sum_to_forgetting() -> None:
    p = np.array([[0, 0.8, 0.5, 0.6], [0, 0.2, 0.9, 0.4], [0, 0, 0.1, 0.7]])
    stage = np.array([0, 0, 1, 2])
    m = forgetting_matrix(p, stage, 1)
    np.testing.assert_allclose([m[0, 1], m[0, 2], m[1, 2]], [0.3, -0.1, 0.5])
    f = forgetting(p, stage, 1)
    np.testing.assert_allclose(f, [0.2, 0.5, 0.0])
    np.testing.assert_allclose(np.nansum(m, axis=1), f)


def test_drop_windows_tell_a_recovery_from_a_steady_decline() -> None:
    """One definition (first third against last third of the later stage's budget, the same
    statistic at both ends): a dip that comes back recovers; a steady decline never does, though its
    lowest point lies below the mean of its last points."""
    t = np.array([0.0, 10, 20, 30, 40, 50, 60, 70])
    stage = np.array([0, 0, 1, 1, 1, 1, 1, 1])  # B: 10 -> 70, points at fractions 1/6 .. 1
    dip = np.array([[0.0, 1.0, 0.4, 0.5, 0.7, 0.8, 1.0, 1.0], np.zeros(8)])
    early, late, recovery = drop_matrices(dip, stage, t, [10.0, 70.0])
    assert early[0, 1] == pytest.approx(1.0 - 0.45)  # fractions 1/6, 1/3
    assert late[0, 1] == pytest.approx(0.0)  # fractions 5/6, 1
    assert recovery[0, 1] == pytest.approx(0.55)
    decline = np.array([[0.0, 1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4], np.zeros(8)])
    early, late, recovery = drop_matrices(decline, stage, t, [10.0, 70.0])
    assert recovery[0, 1] == pytest.approx(0.45 - 0.85)
    assert late[0, 1] > early[0, 1] > 0


def test_flat_later_stage_means_no_forgetting() -> None:
    # A's curve stays at its end-of-stage value all through B: no forgetting, no transient drop.
    p = np.array([[0.0, 0.6, 0.6, 0.6, 0.6], [0.0, 0.1, 0.1, 0.5, 0.9]])
    f = forgetting(p, STAGE2, 2)
    assert f[0] == 0.0 and f[1] == 0.0
    _, late, _ = drop_matrices(p, STAGE2, T2, [20.0, 40.0])
    assert late[0, 1] == 0.0


def test_zero_budget_stage_forgets_nothing_and_drifts_nothing() -> None:
    frame = metrics_frame(
        ["A", "B"], [0.0, 10.0, 20.0], ["A"] * 3, {"A": [0.0, 40.0, 90.0], "B": [5.0, 7.0, 9.0]}
    )
    curves = sequence_curves(frame, ["A", "B"])
    np.testing.assert_array_equal(curves.boundaries, [20.0, 20.0])
    theta0 = np.array([0.1, -0.2, 0.3], dtype=np.float32)
    theta1 = np.array([0.5, -0.25, 0.125], dtype=np.float32)
    snapshots = np.stack([theta0, theta1, theta1])  # start of A, start of B (= end of A), final
    table = run_retention(
        curves, np.array([0.0, 0.0]), np.array([100.0, 10.0]), drift=SnapshotDrift.of(snapshots), last_k=5
    )
    value = table.set_index(["stage_index", "during", "layer", "metric"])["value"]
    assert value[(0, NONE, NONE, "forgetting")] == 0.0
    assert value[(1, NONE, NONE, "forgetting")] == 0.0
    assert value[(0, NONE, NONE, "drift_l2")] == 0.0  # final = end of A
    assert value[(0, NONE, NONE, "drift_sparsity@1e-06")] == 1.0
    assert value[(1, NONE, NONE, "update_l2")] == 0.0  # B's own update: none
    assert value[(0, NONE, NONE, "update_l2")] == pytest.approx(
        float(np.linalg.norm(theta1.astype(float) - theta0.astype(float)))
    )
    assert (0, 1, NONE, "late_drop") not in value.index  # no evaluation during B: undefined


def test_normalized_auc_and_forward_transfer() -> None:
    assert normalized_auc(np.array([0.0, 10.0, 20.0]), np.array([0.0, 0.5, 1.0])) == pytest.approx(0.5)
    assert normalized_auc(np.array([0.0, 10.0, 20.0]), np.array([0.0, 0.0, 0.5])) == pytest.approx(0.125)
    assert forward_transfer(0.5, 0.125) == pytest.approx(3.0 / 7.0)
    assert np.isnan(forward_transfer(0.5, 1.0))
    assert normalized_auc(np.array([5.0]), np.array([0.3])) == pytest.approx(0.3)


def test_forward_transfer_zero_when_equal_to_the_reference_one_at_max_from_the_start() -> None:
    curves = SequenceCurves(("A", "B"), np.array(T2), STAGE2, 100.0 * P2, np.array([20.0, 40.0]))
    r_random, r_ref = np.zeros(2), np.full(2, 100.0)
    # Stage B's span is t = 20 (the parameters A left), 30, 40 with p_B = 0.2, 0.5, 0.8.
    same = (np.array([0.0, 10.0, 20.0]), np.array([20.0, 50.0, 80.0]))
    auc, auc_b, ft = forward_transfers(curves, P2, [None, same], r_random, r_ref)
    assert ft[1] == pytest.approx(0.0) and auc[1] == pytest.approx(auc_b[1]) and np.isnan(ft[0])
    assert auc[1] == pytest.approx((0.35 * 10 + 0.65 * 10) / 20)
    at_max = P2.copy()
    at_max[1, 2:] = 1.0
    _, _, ft = forward_transfers(curves, at_max, [None, same], r_random, r_ref)
    assert ft[1] == pytest.approx(1.0)
    # Stage A from scratch: AUC 0.5 (0, 0.5, 1.0 over 0..20) against a slower reference (0.125).
    slower = (np.array([0.0, 10.0, 20.0]), np.array([0.0, 0.0, 50.0]))
    _, _, ft = forward_transfers(curves, P2, [slower, None], r_random, r_ref)
    assert ft[0] == pytest.approx(3.0 / 7.0)


def test_param_drift_global_relative_and_per_layer() -> None:
    layout = (Block(0, (2, 2)), Block(4, (2,)))
    snapshot = np.array([3, 0, 0, 4, 0, 0], dtype=np.float32)
    current = np.array([3, 0, 0, 4, 6, 8], dtype=np.float32)
    drift = param_drift(current, snapshot)
    assert drift["l2"] == 10.0 and drift["rel"] == 2.0
    assert drift["sparsity@1e-06"] == pytest.approx(4 / 6) and drift["sparsity@0.0001"] == pytest.approx(
        4 / 6
    )
    layers = layer_drift(current, snapshot, layout)
    assert list(layers["shape"]) == ["2x2", "2"]
    assert list(layers["l2"]) == [0.0, 10.0]
    assert layers["rel"][0] == 0.0 and np.isnan(layers["rel"][1])  # the bias started at 0: no scale
    assert list(layers["sparsity@1e-06"]) == [1.0, 0.0]
    assert param_drift(current, current) == {
        "l2": 0.0,
        "rel": 0.0,
        "sparsity@1e-06": 1.0,
        "sparsity@0.0001": 1.0,
    }
    with pytest.raises(ValueError, match="covers"):
        layer_drift(current, snapshot, (Block(0, (4,)),))


def test_update_sparsity_at_both_thresholds() -> None:
    delta = np.array([0.0, 5e-7, 1e-6, -2e-7, 5e-5, -1e-4, 1e-3, -1e-2])
    assert update_sparsity(delta, 1e-6) == 0.5  # 0, 5e-7, 1e-6, -2e-7
    assert update_sparsity(delta, 1e-4) == 0.75  # and 5e-5, -1e-4
    drift = param_drift(delta, np.zeros_like(delta))
    assert (drift["sparsity@1e-06"], drift["sparsity@0.0001"]) == (0.5, 0.75)


def test_kl_zero_for_identical_policies() -> None:
    rng = np.random.default_rng(0)
    a = rng.normal(size=(4, 3))
    np.testing.assert_array_equal(kl_deterministic_gaussian(a, a), np.zeros(4))
    np.testing.assert_allclose(kl_categorical(a, a), np.zeros(4), atol=1e-15)
    np.testing.assert_allclose(
        kl_diag_gaussian(a, np.full(3, -0.5), a, np.full(3, -0.5)), np.zeros(4), atol=1e-15
    )


def test_kl_closed_forms() -> None:
    a_p = np.array([[0.0, 0.0], [1.0, 1.0]])
    a_q = np.array([[0.3, 0.4], [1.0, 1.0]])
    np.testing.assert_allclose(
        kl_deterministic_gaussian(a_p, a_q, sigma=0.5), [0.5, 0.0]
    )  # 0.25 / (2 * 0.25)
    np.testing.assert_allclose(kl_deterministic_gaussian(a_p, a_q), [0.25 / 2e-4, 0.0])  # σ = 0.01
    # Uniform (0.5, 0.5) against (0.75, 0.25): 0.5 ln(0.5/0.75) + 0.5 ln(0.5/0.25) = 0.5 ln(4/3).
    kl = kl_categorical(np.array([[0.0, 0.0]]), np.array([[math.log(3.0), 0.0]]))
    np.testing.assert_allclose(kl, [0.5 * math.log(4.0 / 3.0)])
    np.testing.assert_allclose(
        kl_categorical(np.array([[5.0, 5.0]]), np.array([[math.log(3.0) + 2, 2.0]])), kl
    )
    # N(0, 1) against N(1, 2²): ln 2 + (1 + 1) / 8 - 1/2.
    kl = kl_diag_gaussian(np.array([[0.0]]), np.array([0.0]), np.array([[1.0]]), np.array([math.log(2.0)]))
    np.testing.assert_allclose(kl, [math.log(2.0) - 0.25])
    # Equal stds: the deterministic-Gaussian form.
    log_s = np.full(2, math.log(0.5))
    np.testing.assert_allclose(kl_diag_gaussian(a_p, log_s, a_q, log_s), [0.5, 0.0])


def test_run_retention_table() -> None:
    curves = sequence_curves(metrics_frame(["A", "B"], T2, TRAIN2, R2), ["A", "B"])
    refs = [(np.array([0.0, 10.0, 20.0]), np.array([0.0, 0.0, 50.0])), None]
    table = run_retention(curves, np.zeros(2), np.full(2, 100.0), references=refs, kl=[0.5, 0.0], last_k=1)
    value = table.set_index(["stage_index", "during", "metric"])["value"]
    assert value[(0, NONE, "forgetting")] == pytest.approx(0.3)
    assert value[(0, 1, "forgetting_during")] == pytest.approx(0.3)
    assert value[(0, 1, "late_drop")] == pytest.approx(0.3)
    assert (0, NONE, "max_early_drop") not in value.index  # no point in B's first third
    assert value[(0, NONE, "forward_transfer")] == pytest.approx(3.0 / 7.0)
    assert (1, NONE, "forward_transfer") not in value.index  # no reference for B
    assert value[(NONE, NONE, "average_performance")] == pytest.approx(0.75)
    assert value[(NONE, NONE, "average_forgetting")] == pytest.approx(0.15)
    assert value[(NONE, NONE, "average_forward_transfer")] == pytest.approx(3.0 / 7.0)
    assert value[(0, NONE, "kl")] == 0.5
    assert set(table["stage"]) == {"A", "B", "all"}


def per_run_table(finals: dict[str, list[float]]) -> pd.DataFrame:
    frames = []
    for algo, values in finals.items():
        for seed, v in enumerate(values):
            frames.append(
                pd.DataFrame(
                    {"stage_index": [0, NONE], "stage": ["A", "all"], "during": NONE, "layer": NONE}
                    | {"metric": ["forgetting", "average_performance"], "value": [v, 1.0]}
                ).assign(algo=algo, sequence="ab", seed=seed)
            )
    return pd.concat(frames, ignore_index=True)


def test_retention_table_means_and_seeded_intervals() -> None:
    per_run = per_run_table({"openai_es": [0.1, 0.2, 0.3], "ppo": [0.0, 0.0, 0.0]})
    table = retention_table(per_run, np.random.default_rng(0))
    again = retention_table(per_run, np.random.default_rng(0))
    pd.testing.assert_frame_equal(table, again)
    row = table[(table["algo"] == "openai_es") & (table["metric"] == "forgetting")].iloc[0]
    assert row["n_seeds"] == 3 and row["mean"] == pytest.approx(0.2)
    # Student t: 0.2 +- 4.3027 x 0.1 / sqrt(3) = 0.2 +- 0.2484 (wider than the seeds' range)
    assert row["low"] == pytest.approx(-0.0484, abs=1e-4) and row["high"] == pytest.approx(0.4484, abs=1e-4)
    row = table[(table["algo"] == "ppo") & (table["metric"] == "forgetting")].iloc[0]
    assert (row["mean"], row["low"], row["high"]) == (0.0, 0.0, 0.0)  # all seeds equal: the point
    with pytest.raises(IncompleteResultsError, match="seed counts"):
        retention_table(per_run_table({"openai_es": [0.1, 0.2, 0.3], "ppo": [0.0]}), np.random.default_rng(0))
    short = retention_table(
        per_run_table({"openai_es": [0.1, 0.2], "ppo": [0.0]}), np.random.default_rng(0), allow_partial=True
    )
    assert list(short["n_seeds"]) == [2, 2, 1, 1]
    with pytest.raises(ValueError, match="two values"):
        retention_table(pd.concat([per_run, per_run.iloc[[0]]]), np.random.default_rng(0))


def test_write_retention_table(tmp_path: Path) -> None:
    table = retention_table(per_run_table({"openai_es": [0.1, 0.2, 0.3]}), np.random.default_rng(0))
    paths = write_retention_table(table, tmp_path)
    assert {p.name for p in paths.values()} == {"retention.csv", "retention.md", "retention.tex"}
    lines = paths["md"].read_text().splitlines()
    assert lines[2] == "| Algorithm | Sequence | Stage | Forgetting | Average performance |"
    assert lines[4] == "| ES (OpenAI) | ab | 0: A | 0.2 [-0.0484, 0.448] | — |"  # Student t, 3 seeds
    assert lines[5] == "| ES (OpenAI) | ab | all | — | 1 [1, 1] |"  # sequence averages after the stages
    assert r"\toprule" in paths["tex"].read_text()
    assert len(pd.read_csv(paths["csv"])) == len(table)
