"""Behavioural distance on one scale (esbench.analysis.retention_behaviour): hand-computed values,
ES and SB3 policies measured by one ruler, the KL only between stochastic policies, the two kinds
of rows kept apart, and a smoke sequence run that writes its probes."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from stable_baselines3 import PPO

from esbench.analysis.retention import load_snapshots
from esbench.analysis.retention_behaviour import (
    DRIFT_AFTER,
    KL_STOCHASTIC,
    OWN_UPDATE,
    Probes,
    behaviour_rows,
    behaviour_table,
    display_behaviour,
    kl_both_stochastic,
    load_probes,
    mean_action,
    rms_action_change,
    rms_param_change,
    write_probes,
)
from esbench.baselines.evaluation import action_distribution
from esbench.measures.distribution import categorical, gaussian
from esbench.policies.mlp import MLPPolicy
from esbench.tracking.schema import PROBE_STATES_FILE, PROBES_FILE
from esbench.tracking.snapshot_drift import SnapshotDrift
from esbench.tracking.stage_states import load_stage_states
from esbench.training.sequence_loop import SequenceLoop, SequenceProgress
from tests.conftest import SMALL, esbench, only_run_dir
from tests.test_sequence_loop import ScriptedLearner, _plan

STATES = np.array([[0.1, 0.2], [0.3, -0.4]], dtype=np.float32)


def _linear(scale: float, bound: float) -> MLPPolicy:
    """A 2 -> 2 linear ES policy ``a = clip(scale * s, -bound, bound)`` (no hidden layer)."""
    pol = MLPPolicy(
        2, 2, hidden_sizes=(), action_low=np.full(2, -bound), action_high=np.full(2, bound), obs_norm=False
    )
    pol.set_params(np.array([scale, 0.0, 0.0, scale, 0.0, 0.0], dtype=np.float32))  # W (2x2), then b
    return pol


def test_rms_action_change_of_two_tiny_policies_by_hand() -> None:
    """a = s against a = 2 s on two states, bounds ±2: the change (0.1, 0.2), (0.3, -0.4) in
    action units is halved by the rescaling to [-1, 1]: sqrt(mean(.01, .04, .09, .16)) / 2."""
    a, b = _linear(1.0, 2.0), _linear(2.0, 2.0)
    low, high = a.action_low, a.action_high
    ma = mean_action(a.action_distribution(STATES), False, low, high)
    mb = mean_action(b.action_distribution(STATES), False, low, high)
    np.testing.assert_allclose(ma, STATES / 2.0, rtol=1e-6)
    assert rms_action_change(ma, mb) == pytest.approx(math.sqrt(0.075) / 2.0, rel=1e-6)
    assert rms_action_change(ma, ma) == 0.0
    # Clipping: a = 10 s leaves the bounds where |10 s| > 2, as the env would see it.
    big = mean_action(_linear(10.0, 2.0).action_distribution(STATES), False, low, high)
    np.testing.assert_allclose(big, [[0.5, 1.0], [1.0, -1.0]], rtol=1e-6)


def test_rms_parameter_change_is_per_parameter() -> None:
    """||Δθ|| / sqrt(n): four parameters each moved by 1 give 1, (3, 4) gives 5 / sqrt(2)."""
    assert rms_param_change(np.zeros(4), np.ones(4)) == pytest.approx(1.0)
    assert rms_param_change(np.zeros(2), np.array([3.0, 4.0])) == pytest.approx(5.0 / math.sqrt(2.0))
    with pytest.raises(ValueError, match="differ in size"):
        rms_param_change(np.zeros(2), np.zeros(3))


def test_discrete_mean_action_one_hot_when_deterministic_probabilities_when_stochastic() -> None:
    """The expected one-hot action: argmax's one-hot for ES/DQN, the softmax for a sampling policy;
    binned continuous actions as the bins' values on [-1, 1]."""
    logits = np.array([[0.0, math.log(3.0)], [2.0, 0.0]])
    np.testing.assert_array_equal(mean_action(categorical(logits), False), [[0.0, 1.0], [1.0, 0.0]])
    p = 1.0 / (1.0 + math.exp(-2.0))
    np.testing.assert_allclose(mean_action(categorical(logits), True), [[0.25, 0.75], [p, 1 - p]])
    # One switched action of two on one of two states: entries (1, -1) out of four -> sqrt(2/4).
    a = mean_action(categorical(logits), False)
    b = mean_action(categorical(np.array([[0.0, math.log(3.0)], [0.0, 2.0]])), False)
    assert rms_action_change(a, b) == pytest.approx(math.sqrt(0.5))
    bins = np.array([[[0.0, 5.0, 0.0], [0.0, 0.0, 1.0]]])  # (1 state, 2 dims, 3 bins): -1, 0, +1
    np.testing.assert_array_equal(mean_action(categorical(bins), False), [[0.0, 1.0]])


def test_es_and_sb3_policies_on_the_same_scale_and_kl_only_when_stochastic(tmp_path: Path) -> None:
    """An ES MLP and a real SB3 PPO policy whose mean action is the same constant give the same
    mean action, clipped and rescaled by Pendulum's bounds (±2) alike; PPO's KL between two of its
    versions is defined, ES's is NaN (not 0)."""
    ppo = PPO("MlpPolicy", "Pendulum-v1", n_steps=64, batch_size=64, device="cpu", seed=0)
    states = np.random.default_rng(0).uniform(-1, 1, (5, 3)).astype(np.float32)
    low, high = ppo.action_space.low, ppo.action_space.high
    for c in (0.5, 3.0):  # inside the bounds, then clipped
        with torch.no_grad():
            ppo.policy.action_net.weight.zero_()
            ppo.policy.action_net.bias.fill_(c)
        es = MLPPolicy(3, 1, hidden_sizes=(), action_low=low, action_high=high, obs_norm=False)
        es.set_params(np.array([0.0, 0.0, 0.0, c], dtype=np.float32))
        m_es = mean_action(es.action_distribution(states), False, low, high)
        m_rl = mean_action(action_distribution(ppo, states, None), True, low, high)
        np.testing.assert_allclose(m_es, np.full((5, 1), min(c, 2.0) / 2.0), rtol=1e-6)
        np.testing.assert_allclose(m_rl, m_es, rtol=1e-6)
    d0 = action_distribution(ppo, states, None)
    with torch.no_grad():
        ppo.policy.action_net.bias.fill_(0.0)
    d1 = action_distribution(ppo, states, None)
    assert kl_both_stochastic(d0, d0, True) == 0.0
    assert kl_both_stochastic(d0, d1, True) > 0.0
    es_dist = es.action_distribution(states)
    assert math.isnan(kl_both_stochastic(es_dist, es_dist, False))


def _two_stage_probes() -> Probes:
    """Two stages, deterministic continuous policies (bounds ±1), two states each."""
    g = lambda a: gaussian(np.asarray(a, float), np.zeros(1))  # noqa: E731
    return Probes(
        stages=("a", "b"),
        start=(g([[0.0], [0.0]]), g([[0.2], [0.2]])),
        ends=((g([[0.4], [0.0]]),), (g([[0.1], [-0.3]]), g([[0.2], [0.6]]))),
        stochastic=False,
        low=np.array([-1.0]),
        high=np.array([1.0]),
        n_states=(2, 2),
    )


def test_own_update_and_drift_after_are_separate_rows(tmp_path: Path) -> None:
    """Stage a's own update (start -> end of a), the drift after it (end of a -> end of b, on a's
    states) and b's own update, each hand-computed, with the parameter change from the snapshots;
    the file round-trips; the display shows both kinds as their own rows."""
    probes = _two_stage_probes()
    snaps = np.array([[0.0, 0.0], [1.0, 1.0], [1.0, 3.0]])
    write_probes(tmp_path / PROBES_FILE, probes)
    rows = behaviour_rows(load_probes(tmp_path / PROBES_FILE), SnapshotDrift.of(snaps)).set_index(
        ["kind", "stage"]
    )
    assert list(rows.index) == [(OWN_UPDATE, "a"), (DRIFT_AFTER, "a"), (OWN_UPDATE, "b")]
    own_a, after_a, own_b = (rows.loc[k] for k in rows.index)
    assert own_a["rms_action_change"] == pytest.approx(math.sqrt((0.4**2 + 0.0) / 2))
    assert after_a["rms_action_change"] == pytest.approx(math.sqrt((0.3**2 + 0.3**2) / 2))
    assert own_b["rms_action_change"] == pytest.approx(math.sqrt((0.0 + 0.4**2) / 2))
    assert own_a["rms_param_change"] == pytest.approx(1.0)
    assert after_a["rms_param_change"] == pytest.approx(2.0 / math.sqrt(2.0))
    assert own_b["rms_param_change"] == after_a["rms_param_change"]  # both: end of a -> end of b
    assert rows[KL_STOCHASTIC].isna().all()
    assert (after_a["to_stage"], bool(after_a["to_end"]), bool(own_a["to_end"])) == ("b", True, False)
    # Over seeds: two seeds give a Student-t interval; the display keeps the kinds apart.
    per_run = pd.concat(
        [
            behaviour_rows(probes, SnapshotDrift.of(snaps)).assign(algo="openai_es", sequence="s", seed=s)
            for s in (0, 1)
        ]
    )
    per_run.loc[per_run["seed"] == 1, "rms_action_change"] += 0.1
    table = behaviour_table(per_run)
    first = table[(table["kind"] == OWN_UPDATE) & (table["stage"] == "a")].iloc[0]
    assert first["rms_action_change_low"] < first["rms_action_change_mean"] < first["rms_action_change_high"]
    assert first["rms_action_change_n"] == 2 and first[f"{KL_STOCHASTIC}_n"] == 0
    shown = display_behaviour(table)
    assert list(shown["Row"]) == ["own update", "drift after (to the end of b)", "own update"]
    assert (shown["KL (both stochastic)"] == "—").all()


def test_a_smoke_sequence_run_writes_its_probes(tmp_path: Path) -> None:
    """``budget=smoke`` ES sequence: probes.npz and probe_states.npz are written; its rows hold
    each stage's own update and the drift after stage 0, finite, with ES's KL NaN; the probe
    states are the stage-start policy's on each stage."""
    esbench(
        "run", "algo=openai_es", "sequence=cartpole_pair", "budget=smoke", *SMALL, "cluster.n_workers=1",
        f"results_dir={tmp_path}",
    )  # fmt: skip
    run = only_run_dir(tmp_path)
    probes = load_probes(run / PROBES_FILE)
    assert probes.stages == ("default", "long_pole") and not probes.stochastic
    assert len(probes.ends) == 2 and [len(e) for e in probes.ends] == [1, 2]
    states = load_stage_states(run / PROBE_STATES_FILE)
    assert [s.stage for s in states] == list(probes.stages)
    assert all(0 < len(s.states) <= 256 for s in states)
    rows = behaviour_rows(probes, SnapshotDrift.of(load_snapshots(run / "snapshots.npz").params))
    assert [(r.kind, r.stage_index, r.to_index) for r in rows.itertuples()] == [
        (OWN_UPDATE, 0, 0), (DRIFT_AFTER, 0, 1), (OWN_UPDATE, 1, 1),
    ]  # fmt: skip
    assert np.isfinite(rows[["rms_action_change", "rms_param_change"]].to_numpy()).all()
    assert (rows["rms_param_change"] > 0).all()
    assert rows[KL_STOCHASTIC].isna().all()


@pytest.mark.slow
def test_an_rl_sequence_run_writes_stochastic_probes(tmp_path: Path) -> None:
    """An A2C sequence (a sampling policy): its probes are marked stochastic, every row has a
    finite KL beside the RMS changes, and its discrete mean actions are probabilities."""
    esbench(
        "run", "algo=a2c", "sequence=cartpole_pair", "eval.episodes=3", "tracker=none",
        "tracker.console=false", "sequence.stage_timesteps=1500", "eval.interval_timesteps=1000",
        f"results_dir={tmp_path}",
    )  # fmt: skip
    run = only_run_dir(tmp_path)
    probes = load_probes(run / PROBES_FILE)
    assert probes.stochastic and probes.low is None  # Discrete actions: no bounds
    rows = behaviour_rows(probes, SnapshotDrift.of(load_snapshots(run / "snapshots.npz").params))
    assert list(rows["kind"]) == [OWN_UPDATE, DRIFT_AFTER, OWN_UPDATE]
    values = rows[["rms_action_change", "rms_param_change", KL_STOCHASTIC]].to_numpy()
    assert np.isfinite(values).all() and (values >= 0).all()
    probs = mean_action(probes.start[0], True)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0)
    assert ((probs > 0) & (probs < 1)).all()


def test_the_loop_records_one_probe_set_per_stage_and_the_ends_on_every_one_so_far() -> None:
    """SequenceLoop on the hand-made learner of test_sequence_loop: a probe set when each stage
    begins (counted as evaluation steps), the ends on every set so far, each once; nothing for
    one stage or a loop without probes, and nothing after a resume from a run without probes."""
    learner = ScriptedLearner(np.array([1.0, 0.0, 2.0]), [3.0, -1.0])
    p = SequenceProgress()
    loop = SequenceLoop(_plan(2), p, interval=50, target=None, probes=True)
    loop.record_probe(learner)
    loop.record_probe(learner)  # once per stage
    assert learner.recorded == 1 and len(p.probes) == 1 and p.eval_timesteps == 11
    loop.end_probes(learner)
    loop.end_probes(learner)
    assert [len(e) for e in p.probe_ends] == [1]
    p.stage = 1
    loop.end_probes(learner)  # stage 1 has no probe set yet: nothing
    assert len(p.probe_ends) == 1
    loop.record_probe(learner)
    loop.end_probes(learner)
    assert [len(e) for e in p.probe_ends] == [1, 2] and p.eval_timesteps == 22
    one_stage = SequenceLoop(_plan(1), SequenceProgress(), 50, None, probes=True)
    no_probes = SequenceLoop(_plan(2), SequenceProgress(), 50, None)
    old_run = SequenceLoop(_plan(2), SequenceProgress(stage=1), 50, None, probes=True)  # resumed in stage 1
    for loop_ in (one_stage, no_probes, old_run):
        loop_.record_probe(learner)
        loop_.end_probes(learner)
        assert loop_.p.probes == [] and loop_.p.probe_ends == []
