"""EGGROLL (Sarkar et al. 2025): low-rank perturbations, the low-rank forward pass, the update
against full-rank ES, and a real run through the CLI.

Promises tested here:
* member i's dense parameters are the mean plus sign * sigma * A_i B_i^T / sqrt(r) on every weight
  matrix (a rank-r matrix) and a full-rank draw on every bias; with a vector-only layout EGGROLL is
  OpenAI-ES to the bit.
* The low-rank forward pass (:class:`LowRankBatchedMLP`) equals the dense one with the same
  perturbed weights within rtol 1e-5, atol 1e-6 (float32), for a batch of mixed members; a slot's
  outputs do not depend, to the bit, on which slots share its batch, so lockstep episodes do not.
* The update's rank is min(N r, m, n); on a quadratic its direction agrees more with full-rank
  ES's (OpenAI-ES, same population and sigma, plain SGD both) as r grows, and at r = min(m, n) it
  agrees within 0.05 of how well two independent OpenAI-ES populations agree with each other.
* ``esbench run algo=eggroll env=hopper budget=smoke`` completes, playing members from factors,
  with the same parameters on one worker and on two.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from omegaconf import OmegaConf

from esbench.config.compose import compose_run_config
from esbench.config.registry import get_algorithm
from esbench.envs import make_env
from esbench.policies import make_policy
from esbench.policies.lowrank import LowRank, LowRankBatchedMLP
from esbench.policies.mlp import BatchedMLP, MLPPolicy
from esbench.runner import load_components
from esbench.runtime.lockstep import EpisodeJob, run_lockstep
from esbench.runtime.worker import RunContext, RunSpec
from esbench.strategies import ESState, Strategy, make_strategy
from esbench.strategies.eggroll import Eggroll
from esbench.utils.layout import Block, ParamLayout
from tests.conftest import SMALL, esbench, only_run_dir

load_components()


def algo_cfg(name: str, **overrides: Any) -> Any:
    """The structured config of ``name`` with a small noise table and ``overrides``."""
    cfg = OmegaConf.structured(get_algorithm(name).schema)
    cfg.noise_table_size = 1_000_000
    for k, v in overrides.items():
        cfg[k] = v
    return cfg


def mlp(obs_dim: int = 5, hidden: tuple[int, ...] = (7,), act_dim: int = 3, bias: bool = True) -> MLPPolicy:
    """A small MLP with continuous actions whose bounds never clip, and set obs statistics."""
    low, high = np.full(act_dim, -1e3), np.full(act_dim, 1e3)
    policy = MLPPolicy(obs_dim, act_dim, hidden, action_low=low, action_high=high, bias=bias)
    policy.set_obs_stats(np.full(obs_dim, 0.2), np.full(obs_dim, 1.5))
    return policy


def eggroll(policy: MLPPolicy, rank: int, sigma: float = 0.5, population: int = 16) -> Eggroll:
    s = make_strategy(
        algo_cfg("eggroll", rank=rank, sigma=sigma, population_size=population),
        policy.num_params,
        seed=7,
        layout=policy.param_layout(),
    )
    assert isinstance(s, Eggroll)
    return s


def start(s: Strategy, dim: int, seed: int = 0) -> ESState:
    return s.init(np.random.default_rng(seed).normal(0, 0.5, dim).astype(np.float32))


# -- perturbations --------------------------------------------------------------------------------
def test_member_params_are_the_mean_plus_rank_r_matrices_and_full_rank_biases() -> None:
    policy = mlp()
    s = eggroll(policy, rank=2)
    assert s.low_rank and s.draw_size == (7 + 5) * 2 + 7 + (3 + 7) * 2 + 3
    state = start(s, policy.num_params)
    pop = s.ask(state)
    for i, sign in ((0, 1), (3, -1)):
        delta = s.member_params(state, pop, i, sign) - state.params
        factors = s.member_factors(state, pop, i)
        for (a, b, bias_draw), (w_block, b_block) in zip(factors, pairs(policy.param_layout()), strict=True):
            e = delta[w_block.start : w_block.stop].reshape(w_block.shape)
            np.testing.assert_allclose(e, sign * 0.5 * a @ b.T / np.sqrt(2), rtol=1e-5, atol=1e-6)
            assert np.linalg.matrix_rank(e) == 2
            np.testing.assert_allclose(delta[b_block.start : b_block.stop], sign * 0.5 * bias_draw, rtol=1e-6)


def pairs(layout: ParamLayout) -> list[tuple[Block, Block]]:
    """(weight, bias) blocks of an MLP layout with biases."""
    return [(layout[k], layout[k + 1]) for k in range(0, len(layout), 2)]


def test_with_a_vector_only_layout_eggroll_is_openai_es_to_the_bit() -> None:
    """No weight matrix, nothing low rank: the same offsets, draws and update as OpenAI-ES."""
    cfgs = {
        k: algo_cfg(k, population_size=10, sigma=0.1, learning_rate=0.05) for k in ("eggroll", "openai_es")
    }
    egg, oes = (make_strategy(cfgs[k], dim=12, seed=5) for k in ("eggroll", "openai_es"))
    assert not egg.low_rank  # type: ignore[attr-defined]
    se, so = egg.init(np.zeros(12, np.float32)), oes.init(np.zeros(12, np.float32))
    for _ in range(3):
        pe, po = egg.ask(se), oes.ask(so)
        np.testing.assert_array_equal(pe.offsets, po.offsets)
        fit = np.array(
            [[-np.sum((egg.member_params(se, pe, i, sg) - 1) ** 2) for sg in pe.signs] for i in range(5)]
        )
        np.testing.assert_array_equal(egg.member_params(se, pe, 2, -1), oes.member_params(so, po, 2, -1))
        se, so = egg.tell(se, pe, fit)[0], oes.tell(so, po, fit)[0]
    np.testing.assert_array_equal(se.params, so.params)


@pytest.mark.parametrize(
    ("members", "rank", "expected"), [(2, 1, 2), (3, 1, 3), (6, 1, 6), (3, 2, 6), (8, 3, 6)]
)
def test_update_rank_is_members_times_rank_up_to_full(members: int, rank: int, expected: int) -> None:
    """On an 8 x 6 matrix the update of N members of rank r has rank min(N r, 8, 6)."""
    layout = (Block(0, (8, 6)),)
    s = make_strategy(
        algo_cfg(
            "eggroll", population_size=2 * members, rank=rank, optimizer="sgd", momentum=0.0, l2_coeff=0.0
        ),
        48,
        seed=1,
        layout=layout,
    )
    state = s.init(np.zeros(48, np.float32))
    pop = s.ask(state)
    fit = np.random.default_rng(0).normal(size=(members, 2))
    new, _ = s.tell(state, pop, fit)
    assert np.linalg.matrix_rank((new.params - state.params).reshape(8, 6), tol=1e-6) == expected


def test_eggroll_converges_on_a_sphere_over_weight_matrices() -> None:
    """A 2-layer layout (44 parameters) from 0 to all-ones: below 5% of the start in 300 generations."""
    policy = MLPPolicy(4, 2, (6,))
    s = make_strategy(
        algo_cfg("eggroll", population_size=50, sigma=0.1, learning_rate=0.05, l2_coeff=0.0),
        policy.num_params,
        seed=0,
        layout=policy.param_layout(),
    )
    state = s.init(np.zeros(policy.num_params, np.float32))
    for _ in range(300):
        pop = s.ask(state)
        fit = np.array(
            [
                [-np.sum((s.member_params(state, pop, i, sg) - 1.0) ** 2) for sg in pop.signs]
                for i in range(len(pop))
            ]
        )
        state, _ = s.tell(state, pop, fit)
    assert np.sum((state.params - 1.0) ** 2) < 0.05 * policy.num_params


# -- the low-rank forward pass --------------------------------------------------------------------
MIXED = ((0, 1), (0, -1), (3, 1), (5, -1), (7, 1))  # (member, sign) per slot


@pytest.mark.parametrize(("hidden", "bias"), [((7,), True), ((7,), False), ((), False)])
def test_low_rank_forward_equals_dense_forward_with_the_same_weights(
    hidden: tuple[int, ...], bias: bool
) -> None:
    """A 2-layer MLP (5 -> 7 -> 3; with and without biases; and a linear policy), rank 2,
    sigma 0.5, a batch of mixed members and signs."""
    policy = mlp(hidden=hidden, bias=bias)
    s = eggroll(policy, rank=2)
    state = start(s, policy.num_params)
    pop = s.ask(state)
    dense, low = BatchedMLP(policy, len(MIXED)), LowRankBatchedMLP(policy, len(MIXED), rank=2)
    low.set_base(state.params)
    for slot, (i, sign) in enumerate(MIXED):
        dense.set_slot(slot, s.member_params(state, pop, i, sign))
        low.set_slot(slot, LowRank(s.member_factors(state, pop, i), sign * s.sigma))
    rng = np.random.default_rng(1)
    for _ in range(3):
        obs = rng.normal(0, 3, (len(MIXED), 5)).astype(np.float32)
        want, got = dense.act(obs), low.act(obs)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        assert np.abs(want[0] - want[1]).max() > 0.1  # the perturbation matters: +/- differ
    np.testing.assert_array_equal(low.b[-1][2, :, 0], dense.b[-1][2, :, 0])  # biases bit for bit


def test_a_slot_does_not_depend_on_its_batch() -> None:
    """Member 3 (+) gives the same bits alone, first in a prefix, or third in a batch of five."""
    policy = mlp(obs_dim=17, hidden=(64, 64), act_dim=6)
    s = eggroll(policy, rank=1, sigma=0.1)
    state = start(s, policy.num_params)
    pop = s.ask(state)
    obs = np.random.default_rng(2).normal(size=(len(MIXED), 17)).astype(np.float32)

    def outputs(members: tuple[tuple[int, int], ...], batch: int, rows: int) -> np.ndarray:
        low = LowRankBatchedMLP(policy, batch, rank=1)
        low.set_base(state.params)
        view = low.prefix(rows)
        for slot, (i, sign) in enumerate(members[:rows]):
            view.set_slot(slot, LowRank(s.member_factors(state, pop, i), sign * s.sigma))
        return view.act(obs[[MIXED.index(m) for m in members[:rows]]])

    full = outputs(MIXED, 5, 5)[2]
    np.testing.assert_array_equal(outputs(((3, 1),), 1, 1)[0], full)
    np.testing.assert_array_equal(outputs(((3, 1), (0, 1)), 8, 2)[0], full)


def test_low_rank_lockstep_episodes_are_the_same_for_any_batch() -> None:
    cfg = compose_run_config(["algo=eggroll", "env=hopper", "env.max_episode_steps=60"])
    env = make_env(cfg.env)
    policy = make_policy(cfg.policy, env)
    assert isinstance(policy, MLPPolicy)
    s = eggroll(policy, rank=1, sigma=0.1)
    state = start(s, policy.num_params)
    pop = s.ask(state)
    policy.set_obs_stats(np.full(policy.obs_dim, 0.1), np.full(policy.obs_dim, 2.0))

    def jobs() -> list[EpisodeJob]:
        return [
            EpisodeJob(
                LowRank(s.member_factors(state, pop, i), sg * s.sigma),
                100 + i,
                (np.random.default_rng(i), 0.01),
            )
            for i in range(4)
            for sg in (1, -1)
        ]

    runs = []
    for batch, slots in ((1, 1), (3, 3), (8, 5)):
        low = LowRankBatchedMLP(policy, batch, rank=1)
        low.set_base(state.params)
        episodes = run_lockstep([make_env(cfg.env) for _ in range(slots)], low.prefix(slots), jobs())
        runs.append([(e.ret, e.length) for e in episodes])
    assert runs[0] == runs[1] == runs[2]


# -- the update against full-rank ES --------------------------------------------------------------
def update(s: Strategy, dim: int, target: np.ndarray, generation: int) -> np.ndarray:
    """One plain-SGD step (lr 1) from 0 on f(x) = -||x - target||^2 at ``generation``."""
    state = replace(s.init(np.zeros(dim, np.float32)), generation=generation)
    pop = s.ask(state)
    fit = np.array(
        [
            [-np.sum((s.member_params(state, pop, i, sg) - target) ** 2) for sg in pop.signs]
            for i in range(len(pop))
        ]
    )
    return s.tell(state, pop, fit)[0].params - state.params


def test_update_approaches_full_rank_es_as_rank_grows() -> None:
    """A 6 x 4 matrix, 32 members, sigma 0.1, plain SGD for both, 400 paired generations: the mean
    cosine between EGGROLL's and OpenAI-ES's update directions rises with r, and at r = 4 =
    min(m, n) is within 0.05 of the mean cosine between two independent OpenAI-ES populations.
    (Both are unbiased on a quadratic; what r changes is the spread of EGGROLL's estimate.)"""
    m, n, members, trials = 6, 4, 32, 400
    layout, dim = (Block(0, (m, n)),), m * n
    target = np.random.default_rng(0).standard_normal(dim).astype(np.float32)
    common = {"population_size": 2 * members, "sigma": 0.1, "optimizer": "sgd", "momentum": 0.0}
    common.update(learning_rate=1.0, l2_coeff=0.0)

    def directions(name: str, seed: int, **kw: Any) -> np.ndarray:
        s = make_strategy(algo_cfg(name, **common, **kw), dim, seed, layout)
        d = np.stack([update(s, dim, target, g) for g in range(trials)])
        return d / np.linalg.norm(d, axis=1, keepdims=True)

    full = directions("openai_es", seed=1)
    baseline = float(np.mean(np.sum(full * directions("openai_es", seed=2), axis=1)))
    agreement = {
        r: float(np.mean(np.sum(full * directions("eggroll", 3, rank=r), axis=1))) for r in (1, 2, 4)
    }
    assert agreement[1] < agreement[2] < agreement[4], agreement
    assert agreement[4] - agreement[1] > 0.01, agreement
    assert agreement[4] > baseline - 0.05, (agreement, baseline)


# -- the runtime ------------------------------------------------------------------------------------
def test_workers_play_eggroll_members_from_factors() -> None:
    cfg = compose_run_config(
        ["algo=eggroll", "env=hopper", "algo.noise_table_size=1000000", "algo.rollout_batch=4"]
    )
    ctx = RunContext(RunSpec.from_config(cfg, "eggroll-test"))
    try:
        assert ctx.lowrank is not None
        state = ctx.initial_state().es
        member = ctx.member(state, ctx.strategy.ask(state), 0, -1)
        assert isinstance(member, LowRank) and member.scale == -cfg.algo.sigma
    finally:
        ctx.close()


def test_hopper_smoke_run_is_the_same_on_one_and_two_workers(tmp_path: Path) -> None:
    args = ["run", "algo=eggroll", "env=hopper", "budget=smoke", *SMALL, "budget.timesteps=4000",
            "eval.interval_timesteps=2000"]  # fmt: skip
    summaries = []
    for workers in (1, 2):
        esbench(*args, f"cluster.n_workers={workers}", f"results_dir={tmp_path / str(workers)}", timeout=600)
        summaries.append(json.loads((only_run_dir(tmp_path / str(workers)) / "summary.json").read_text()))
    one, two = summaries
    assert one["total_timesteps"] >= 4000
    assert (one["workers"], two["workers"]) == (1, 2)
    assert one["params_sha256"] == two["params_sha256"]
    assert one["final_eval_return"] == two["final_eval_return"]
