"""``sequence.stage_id_obs``: a one-hot stage id appended to the observation of every stage, the
same for ES policies and RL, and never normalized away (it is constant within a stage)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from esbench.baselines.sb3 import StageIdVecNormalize, make_training_env
from esbench.config.compose import compose_run_config
from esbench.envs import make_env
from esbench.envs.variants import append_stage_id
from esbench.policies import make_policy
from esbench.training.ruler import stage_plan
from esbench.training.sb3 import stage_config


def test_cheetah_dir_shows_the_stage_and_cheetah_mass_does_not() -> None:
    envs = [
        s.env_cfg() for s in stage_plan(compose_run_config(["sequence=cheetah_dir", "budget=smoke"])).stages
    ]
    assert [list(e["stage_id"]) for e in envs] == [[0, 2], [1, 2]]
    plain = stage_plan(compose_run_config(["sequence=cheetah_mass", "budget=smoke"])).stages
    assert all(not list(s.env_cfg().get("stage_id") or []) for s in plain)


@pytest.mark.parametrize("k", [0, 1])
def test_es_and_rl_see_the_one_hot_unnormalized(k: int) -> None:
    cfg = compose_run_config(
        ["sequence=cartpole_pair", "budget=smoke", "sequence.stage_id_obs=true", "algo=ppo"]
    )
    stage = stage_plan(cfg).stages[k]
    env = make_env(stage.env_cfg())
    obs, _ = env.reset(seed=0)
    assert env.observation_space.shape == (6,) and list(obs[-2:]) == [k == 0, k == 1]
    assert env.observation_space.contains(obs)
    # ES: the MLP's input grows by the stage count; statistics never touch the id.
    policy = make_policy(cfg.policy, env, stage.env_cfg())
    assert policy.obs_dim == 6
    policy.set_obs_stats(np.full(6, 3.0), np.full(6, 0.5))
    np.testing.assert_array_equal(policy._mean, [3, 3, 3, 3, 0, 0])
    np.testing.assert_array_equal(policy._inv_std, [2, 2, 2, 2, 1, 1])
    # RL: VecNormalize normalizes the physics, and the id passes as it is after many steps.
    venv = make_training_env(stage_config(cfg, stage), {"n_envs": 1, "normalize": True, "gamma": 0.99})
    assert isinstance(venv, StageIdVecNormalize) and venv.observation_space.shape == (6,)
    venv.reset()
    for _ in range(50):
        out, *_ = venv.step(np.zeros(1, dtype=int))
    np.testing.assert_array_equal(out[0, -2:], [k == 0, k == 1])
    venv.close()
    env.close()


def test_stage_id_needs_a_flat_observation_and_a_valid_index() -> None:
    class Pixels(gym.Env):
        observation_space = gym.spaces.Box(0, 255, (4, 4), np.uint8)
        action_space = gym.spaces.Discrete(2)

    with pytest.raises(ValueError, match="flat Box"):
        append_stage_id(Pixels(), [0, 2])
    with pytest.raises(ValueError, match=r"0 <= k < K"):
        append_stage_id(gym.make("CartPole-v1"), [2, 2])
