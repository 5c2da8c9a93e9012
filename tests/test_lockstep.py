"""Lockstep rollouts give exactly the episodes the one-at-a-time loop gives, whatever the batch."""

from __future__ import annotations

import numpy as np
import pytest

from esbench.config.compose import compose_run_config
from esbench.envs import make_env
from esbench.policies import make_policy
from esbench.policies.mlp import BatchedMLP
from esbench.runtime.lockstep import EpisodeJob, run_lockstep
from esbench.runtime.rollout import run_episode
from esbench.runtime.worker import balanced_batch


@pytest.mark.parametrize(
    "overrides",
    [
        ["env=halfcheetah", "env.max_episode_steps=60"],  # continuous, action noise
        ["env=halfcheetah", "env.max_episode_steps=1100"],  # a second block of action-noise draws
        ["env=hopper", "env.max_episode_steps=60"],  # 10 bins per dimension
        ["env=cartpole"],  # discrete
    ],
)
def test_lockstep_equals_single_episodes_for_any_batch(overrides: list[str]) -> None:
    cfg = compose_run_config(overrides)
    env = make_env(cfg.env)
    policy = make_policy(cfg.policy, env)
    base = policy.init_params(np.random.default_rng(0))
    policy.set_obs_stats(np.full(policy.obs_dim, 0.1), np.full(policy.obs_dim, 2.0))

    def job(i: int) -> EpisodeJob:
        params = base + 0.5 * np.random.default_rng(i).standard_normal(base.size).astype(np.float32)
        noise = None if i == 3 else (np.random.default_rng(i), 0.01)  # batches mix noisy and noiseless
        return EpisodeJob(params, seed=100 + i, noise=noise, collect_obs=i % 2 == 0)

    singles = []
    for i in range(7):
        j = job(i)
        policy.set_params(j.params)
        singles.append(run_episode(env, policy, j.seed, j.noise, collect_obs=j.collect_obs))
    for batch, slots in ((1, 1), (3, 3), (8, 8), (8, 5)):  # (8, 5): the first 5 slots of 8 as a batch
        envs = [make_env(cfg.env) for _ in range(slots)]
        episodes = run_lockstep(envs, BatchedMLP(policy, batch).prefix(slots), [job(i) for i in range(7)])
        for single, ep in zip(singles, episodes, strict=True):
            assert (ep.ret, ep.length, ep.frames) == (single.ret, single.length, single.frames)
            if single.obs_total is None:
                assert ep.obs_total is None
            else:
                np.testing.assert_array_equal(ep.obs_total, single.obs_total)
                np.testing.assert_array_equal(ep.obs_sumsq, single.obs_sumsq)


def test_balanced_batch_plays_full_rounds() -> None:
    assert balanced_batch(40, 32) == 20  # 2 rounds of 20, not 32 and a tail of 8
    assert balanced_batch(20, 16) == 10
    assert balanced_batch(10, 16) == 10  # fewer episodes than slots: one round, no empty rows
    assert balanced_batch(48, 16) == 16
    assert balanced_batch(1, 16) == 1
