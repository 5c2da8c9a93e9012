"""Lockstep rollouts give exactly the episodes the one-at-a-time loop gives, whatever the batch:
MLP policies (MuJoCo, classic control) and the Atari CNN."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from esbench.config.compose import compose_run_config
from esbench.envs import make_env
from esbench.policies import make_policy
from esbench.policies.episode import run_episode
from esbench.policies.mlp import BatchedMLP
from esbench.runtime.lockstep import EpisodeJob, run_lockstep
from esbench.runtime.worker import RunContext, RunSpec, balanced_batch
from tests.conftest import SMALL


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


@pytest.fixture
def one_torch_thread() -> Iterator[None]:
    """One torch thread, as in a worker (get_context sets it): two OpenMP threads on a busy
    2-core machine can spin far longer than the small CNN forwards take."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.usefixtures("one_torch_thread")
def test_atari_lockstep_equals_one_by_one_for_training_and_evaluation() -> None:
    """The CNN in lockstep (rollout_batch 3, 5 training and 4 evaluation episodes: slots refilled)
    plays exactly the episodes the one-by-one path plays. Breakout ending at the first lost life
    (training only) gives episodes of different lengths, so slots end and refill at different steps;
    evaluation runs on the evaluation envs (whole games, capped)."""
    overrides = [
        "algo=openai_es",
        "env=atari",
        "env.game=Breakout",
        "env.terminal_on_life_loss=true",
        "env.max_episode_steps=80",
        "policy.vbn_reference_size=16",
        *SMALL,
    ]
    one = RunContext(RunSpec.from_config(compose_run_config([*overrides, "algo.rollout_batch=1"]), "one"))
    many = RunContext(RunSpec.from_config(compose_run_config([*overrides, "algo.rollout_batch=3"]), "many"))
    try:
        assert one.batched is None and many.batched is not None
        base = one.policy.init_params(np.random.default_rng(0))

        def jobs(n: int, seed0: int) -> list[EpisodeJob]:
            rng = np.random.default_rng(seed0)
            return [
                EpisodeJob(base + 0.5 * rng.standard_normal(base.size, dtype=np.float32), seed0 + i)
                for i in range(n)
            ]

        for evaluation, todo in ((False, jobs(5, 10)), (True, jobs(4, 50))):
            singles = one.play(todo, evaluation)
            locked = many.play(todo, evaluation)
            assert [(e.ret, e.length, e.frames) for e in locked] == [
                (e.ret, e.length, e.frames) for e in singles
            ]
            if not evaluation:
                assert len({e.length for e in singles}) > 1  # slots refill at different steps
        assert (len(many.envs), len(many.eval_envs)) == (3, 2)  # as needed: 4 evaluations in 2 rounds of 2
        assert many.eval_envs[0] is many.eval_env and many.envs[0] is many.env
    finally:
        one.close()
        many.close()
