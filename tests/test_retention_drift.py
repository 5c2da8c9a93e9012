"""Drift logged during a run (issue #14): the KL formulas, the recorded states, the drift columns of
the ruler, what carries over between stages, and the report's path.

Fast: small synthetic arrays, one CartPole/Hopper env, SB3 models built without training (or a few
steps of it). The end-to-end columns are checked in ``tests/test_sequence_runs.py``.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from stable_baselines3.common.vec_env import unwrap_vec_normalize

from esbench.analysis.report import resolve_target
from esbench.baselines.configs import resolve_hparams
from esbench.baselines.evaluation import action_distribution, deterministic_act
from esbench.config.compose import compose_run_config
from esbench.envs import make_env
from esbench.measures.distribution import (
    ACTION_STD,
    categorical,
    deterministic_gaussian,
    gaussian,
    kl_divergence,
)
from esbench.policies.mlp import MLPPolicy
from esbench.policies.obs_norm import ObsStats
from esbench.runtime.worker import RunContext, RunSpec
from esbench.strategies.optimizers import OptState
from esbench.tracking.schema import DRIFT_COLUMNS, KL_COLUMN, METRIC_COLUMNS
from esbench.tracking.stage_states import StageStates, load_stage_states, write_stage_states
from esbench.training.drift import record_stage_states, visited_states
from esbench.training.es import begin_stage
from esbench.training.ruler import drift_at_point, point_rows, stage_end_states, stage_plan
from esbench.training.sb3 import build_stage, carry_over
from esbench.training.sb3_checkpoint import optimizers

BASE = ["tracker=none", "tracker.console=false"]


# --- KL on hand-computable cases --------------------------------------------------------------


def test_kl_hand_computed() -> None:
    """Categorical: KL((1/2, 1/2) || (3/4, 1/4)) = 1/2 log(2/3) + 1/2 log 2 = 1/2 log(4/3);
    Gaussian: KL(N(0, 1) || N(1, 2^2)) = log 2 + (1 + 1) / 8 - 1/2; ES's deterministic Gaussian:
    an action moved by σ gives 1/2; action bins sum the dimensions' KLs."""
    p = categorical(np.array([[0.0, 0.0]]))
    q = categorical(np.array([[math.log(3.0), 0.0]]))
    assert kl_divergence(p, q)[0] == pytest.approx(0.5 * math.log(4.0 / 3.0), rel=1e-12)
    g = kl_divergence(
        gaussian(np.array([[0.0]]), np.array([0.0])), gaussian(np.array([[1.0]]), np.array([math.log(2)]))
    )
    assert g[0] == pytest.approx(math.log(2.0) - 0.25, rel=1e-12)
    a = deterministic_gaussian(np.array([[0.0, 0.5]]))
    b = deterministic_gaussian(np.array([[ACTION_STD, 0.5]]))
    assert kl_divergence(a, b)[0] == pytest.approx(0.5, rel=1e-9)
    bins_p = categorical(np.zeros((1, 2, 2)))  # two dimensions, both uniform over 2 bins
    bins_q = categorical(np.array([[[math.log(3.0), 0.0], [0.0, 0.0]]]))  # the first one moved
    assert kl_divergence(bins_p, bins_q)[0] == pytest.approx(0.5 * math.log(4.0 / 3.0), rel=1e-12)


def test_kl_is_torch_kl_and_exactly_zero_for_identical() -> None:
    rng = np.random.default_rng(0)
    lp, lq = rng.normal(size=(5, 4)), rng.normal(size=(5, 4))
    ours = kl_divergence(categorical(lp), categorical(lq))
    theirs = torch.distributions.kl_divergence(
        torch.distributions.Categorical(logits=torch.tensor(lp)),
        torch.distributions.Categorical(logits=torch.tensor(lq)),
    )
    np.testing.assert_allclose(ours, theirs.numpy(), rtol=1e-10)
    mp, mq, sp, sq = rng.normal(size=(5, 3)), rng.normal(size=(5, 3)), rng.normal(size=3), rng.normal(size=3)
    ours = kl_divergence(gaussian(mp, sp), gaussian(mq, sq))
    normal = torch.distributions.Normal
    theirs = torch.distributions.kl_divergence(
        normal(torch.tensor(mp), torch.tensor(sp).exp()), normal(torch.tensor(mq), torch.tensor(sq).exp())
    ).sum(-1)  # SB3 sums log-probabilities over action dimensions
    np.testing.assert_allclose(ours, theirs.numpy(), rtol=1e-10)
    assert (kl_divergence(categorical(lp), categorical(lp.copy())) == 0.0).all()
    assert (kl_divergence(gaussian(mp, sp), gaussian(mp.copy(), sp.copy())) == 0.0).all()
    with pytest.raises(ValueError, match="one kind and shape"):
        kl_divergence(categorical(lp), gaussian(mp, sp))


# --- recorded states and the ruler's columns --------------------------------------------------


def _cartpole_policy(seed: int = 0) -> tuple[gym.Env, MLPPolicy]:
    env = gym.make("CartPole-v1")
    policy = MLPPolicy(4, 1, (8,), discrete_n=2, obs_norm=True)
    policy.set_params(policy.init_params(np.random.default_rng(seed)))
    policy.set_obs_stats(np.full(4, 0.1), np.full(4, 2.0))
    return env, policy


def test_visited_states_bounded_and_replayable() -> None:
    env, policy = _cartpole_policy()
    states, steps = visited_states(env, policy.act, [0, 1, 2], max_states=16)
    again, steps_again = visited_states(env, policy.act, [0, 1, 2], max_states=16)
    assert 1 <= len(states) <= 16 and states.shape[1:] == (4,) and steps >= len(states)
    np.testing.assert_array_equal(states, again)
    assert steps == steps_again
    first, _ = env.reset(seed=0)
    np.testing.assert_array_equal(states[0], first)  # evenly spaced from the first step on


def test_drift_and_kl_exactly_zero_when_nothing_moved_and_positive_when_it_did(tmp_path: Path) -> None:
    """The point right after a boundary with no training yet (params = snapshot, the same policy)
    logs drift 0, sparsity 1 and KL 0 exactly; moved parameters give positive numbers."""
    env, policy = _cartpole_policy()
    params = policy._flat.copy()
    record = record_stage_states("a", env, policy.act, policy.action_distribution, eval_seed=0, episodes=2)
    shared, per_stage = drift_at_point(params, params.copy(), [record], policy.action_distribution)
    assert shared == {
        "drift_l2": 0.0,
        "drift_rel": 0.0,
        "drift_sparsity_1e-6": 1.0,
        "drift_sparsity_1e-4": 1.0,
    }
    assert per_stage == {"a": {KL_COLUMN: 0.0}}
    moved = params + np.float32(0.05)
    policy.set_params(moved)
    shared, per_stage = drift_at_point(moved, params, [record], policy.action_distribution)
    assert shared["drift_l2"] > 0 and shared["drift_sparsity_1e-4"] == 0.0
    assert per_stage["a"][KL_COLUMN] > 0
    # The snapshot policy keeps its own normalization: new statistics alone move the policy.
    policy.set_params(params)
    policy.set_obs_stats(np.zeros(4), np.ones(4))
    assert drift_at_point(params, params, [record], policy.action_distribution)[1]["a"][KL_COLUMN] > 0
    # The file round-trips, data only.
    write_stage_states(tmp_path / "stage_states.npz", [record])
    (back,) = load_stage_states(tmp_path / "stage_states.npz")
    np.testing.assert_array_equal(back.states, record.states)
    np.testing.assert_array_equal(back.reference.loc, record.reference.loc)
    assert (back.stage, back.steps, back.reference.kind) == ("a", record.steps, "categorical")


def test_point_rows_put_drift_on_every_row_and_kl_on_its_stage() -> None:
    from esbench.training.ruler import Counters, StageEval

    counters = Counters(0, 10, 10, 1, 1.0, 1.0, 5, 1)
    shared = dict.fromkeys(DRIFT_COLUMNS, 0.5)
    rows = point_rows(
        counters,
        "b",
        [StageEval("a", 1.0, 0.0), StageEval("b", 2.0, 0.0)],
        {},
        shared,
        {"a": {KL_COLUMN: 0.25}},
    )
    assert [r[KL_COLUMN] for r in rows if KL_COLUMN in r] == [0.25] and KL_COLUMN not in rows[1]
    assert all(r["drift_l2"] == 0.5 for r in rows)
    assert set(DRIFT_COLUMNS) | {KL_COLUMN} <= set(METRIC_COLUMNS)


def test_states_recorded_once_and_only_when_a_later_stage_follows() -> None:
    plan = stage_plan(compose_run_config(["algo=openai_es", "sequence=cartpole_pair", *BASE]))
    calls: list[int] = []

    def record() -> StageStates:
        calls.append(1)
        return StageStates(plan.stages[0].name, np.zeros((1, 4)), categorical(np.zeros((1, 2))), 1)

    first = stage_end_states(plan, 0, record, [])
    assert len(first) == 1 and stage_end_states(plan, 0, record, first) == first  # not twice
    assert stage_end_states(plan, 1, record, first) == first  # the last stage: no later point
    assert len(calls) == 1


# --- the SB3 side ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("algo", "sequence"), [("ppo", "cartpole_pair"), ("a2c", "hopper_mass"), ("dqn", "cartpole_pair")]
)
def test_sb3_action_distribution_zero_on_itself_positive_after_a_step(algo: str, sequence: str) -> None:
    cfg = compose_run_config([f"algo={algo}", f"sequence={sequence}", *BASE])
    plan, hp = stage_plan(cfg), resolve_hparams(cfg)
    model, venv = build_stage(cfg, hp, plan.stages[0])
    try:
        vn = unwrap_vec_normalize(venv)
        env = make_env(plan.stages[0].env_cfg(), training=False)
        dist = lambda s: action_distribution(model, s, vn)  # noqa: E731
        record = record_stage_states("s0", env, deterministic_act(model, vn), dist, eval_seed=0, episodes=1)
        assert record.reference.kind == ("gaussian" if sequence == "hopper_mass" else "categorical")
        params = torch.nn.utils.parameters_to_vector(model.policy.parameters()).detach().numpy().copy()
        _, per_stage = drift_at_point(params, params, [record], dist)
        assert per_stage["s0"][KL_COLUMN] == 0.0
        with torch.no_grad():
            for p in model.policy.parameters():
                p.add_(0.05)
        assert drift_at_point(params, params, [record], dist)[1]["s0"][KL_COLUMN] > 0
        env.close()
    finally:
        venv.close()


# --- what carries over between stages ----------------------------------------------------------


@pytest.mark.parametrize("reset", [True, False])
def test_es_begin_stage_resets_or_carries_optimizer_and_obs_stats(reset: bool) -> None:
    flag = str(reset).lower()
    cfg = compose_run_config(
        ["algo=openai_es", "sequence=hopper_mass", f"sequence.reset_optimizer={flag}",
         f"sequence.reset_obs_norm={flag}", *BASE, "algo.noise_table_size=1000000"]
    )  # fmt: skip
    plan = stage_plan(cfg)
    assert (plan.reset_optimizer, plan.reset_obs_norm) == (reset, reset)
    state = RunContext(RunSpec.from_config(cfg, "k")).initial_state()
    assert state.obs is not None
    n, d = state.es.params.shape[0], state.obs.total.shape[0]
    trained = replace(
        state,
        es=replace(state.es, opt=OptState(np.full(n, 0.5, np.float32), np.full(n, 0.25, np.float32), 7)),
        obs=state.obs.add(np.full(d, 3.0), np.full(d, 20.0), 10.0),
    )
    after = begin_stage(trained, plan)
    np.testing.assert_array_equal(after.es.params, trained.es.params)  # always carried
    assert after.obs is not None
    if reset:
        assert after.es.opt.t == 0 and not after.es.opt.m.any() and not after.es.opt.v.any()
        np.testing.assert_array_equal(after.obs.total, ObsStats.zeros(d).total)
        assert after.obs.count == ObsStats.zeros(d).count
    else:
        assert after.es.opt is trained.es.opt
        assert after.obs is trained.obs


@pytest.mark.parametrize("reset", [True, False])
def test_rl_carry_over_resets_or_carries_optimizer_and_obs_stats(reset: bool) -> None:
    flag = str(reset).lower()
    cfg = compose_run_config(
        [
            "algo=a2c",
            "sequence=hopper_mass",
            f"sequence.reset_optimizer={flag}",
            f"sequence.reset_obs_norm={flag}",
            *BASE,
        ]
    )
    plan, hp = stage_plan(cfg), resolve_hparams(cfg)
    old, old_venv = build_stage(cfg, hp, plan.stages[0])
    new, new_venv = build_stage(cfg, hp, plan.stages[1])
    try:
        old.learn(4 * int(hp["n_steps"]) * int(hp["n_envs"]))
        carry_over(old, new, plan)
        for a, b in zip(old.policy.state_dict().values(), new.policy.state_dict().values(), strict=True):
            assert torch.equal(a, b)  # the parameters always carry over
        before, after = optimizers(old)["optimizer"].state_dict(), optimizers(new)["optimizer"].state_dict()
        assert before["state"]  # the old optimizer has moments to carry
        old_rms, new_rms = unwrap_vec_normalize(old_venv).obs_rms, unwrap_vec_normalize(new_venv).obs_rms
        assert old_rms.count > 1
        if reset:
            assert not after["state"]
            assert new_rms.count < 1 and not new_rms.mean.any()
        else:
            for k, moments in before["state"].items():
                for name, value in moments.items():
                    assert torch.equal(torch.as_tensor(value), torch.as_tensor(after["state"][k][name]))
            np.testing.assert_array_equal(new_rms.mean, old_rms.mean)
            assert new_rms.count == old_rms.count
    finally:
        old_venv.close()
        new_venv.close()


# --- the report's path -------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["retention", "table1", "curves"])
def test_report_target_accepts_the_parent_or_the_target_directory(tmp_path: Path, target: str) -> None:
    runs = tmp_path / "runs"
    (runs / target / "run0").mkdir(parents=True)
    (runs / target / "run0" / "config.yaml").write_text("seed: 0\n")
    assert resolve_target(target, runs) == (target, runs / target, target)
    assert resolve_target(target, runs / target) == (target, runs / target, target)
    copy = tmp_path / "elsewhere"  # one experiment's runs under another name
    (copy / "run0").mkdir(parents=True)
    (copy / "run0" / "config.yaml").write_text("seed: 0\n")
    assert resolve_target(target, copy) == (target, copy, target)
    assert resolve_target(target, tmp_path / "missing") == (target, tmp_path / "missing" / target, target)
