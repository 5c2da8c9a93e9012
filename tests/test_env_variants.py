"""Stage variants (``env.dynamics``, reward direction, Atari difficulty) change the world for real,
the same way every time, and bad settings fail with one line (esbench/envs/variants.py)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import mujoco
import numpy as np
import pytest
from omegaconf import DictConfig, OmegaConf

from esbench.config.compose import compose_run_config
from esbench.config.errors import ConfigError
from esbench.config.schema import EnvConfig
from esbench.envs import make_env
from esbench.envs.variants import CARTPOLE_DYNAMICS, MUJOCO_DYNAMICS, apply_dynamics


def env_cfg(**fields: Any) -> DictConfig:
    cfg = OmegaConf.merge(OmegaConf.structured(EnvConfig), fields)
    assert isinstance(cfg, DictConfig)
    return cfg


def rollout(env: gym.Env, steps: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Observations (steps+1, obs_dim) and rewards (steps,) of a fixed action sequence.

    The env is reset (same seed) whenever an episode ends, so every call sees the same actions.
    """
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    observations, rewards = [np.asarray(obs, dtype=np.float64)], []
    for _ in range(steps):
        obs, reward, terminated, truncated, _ = env.step(_action(env, rng))
        observations.append(np.asarray(obs, dtype=np.float64))
        rewards.append(float(reward))
        if terminated or truncated:
            obs, _ = env.reset(seed=seed)
    return np.array(observations), np.array(rewards)


def _action(env: gym.Env, rng: np.random.Generator) -> Any:
    space = env.action_space
    if isinstance(space, gym.spaces.Discrete):
        return int(rng.integers(space.n))
    assert isinstance(space, gym.spaces.Box)
    return rng.uniform(space.low, space.high).astype(space.dtype)


def test_body_mass_scale_changes_the_model_lasts_through_reset_and_repeats() -> None:
    base = make_env(env_cfg(name="hopper", id="Hopper-v5"))
    heavy = make_env(env_cfg(name="hopper", id="Hopper-v5", dynamics={"body_mass_scale": 1.5}))
    m0, m1 = base.unwrapped.model, heavy.unwrapped.model  # type: ignore[attr-defined]
    np.testing.assert_allclose(m1.body_mass, 1.5 * m0.body_mass, rtol=1e-12)
    np.testing.assert_allclose(m1.body_inertia, 1.5 * m0.body_inertia, rtol=1e-12)
    np.testing.assert_allclose(m1.body_subtreemass, 1.5 * m0.body_subtreemass, rtol=1e-12)
    assert m1.stat.meanmass == pytest.approx(1.5 * m0.stat.meanmass)

    obs_heavy, ret_heavy = rollout(heavy, 300)
    np.testing.assert_allclose(m1.body_mass, 1.5 * m0.body_mass, rtol=1e-12)  # survived resets
    obs_base, _ = rollout(base, 300)
    assert not np.allclose(obs_heavy, obs_base)  # same actions, different motion

    again = make_env(env_cfg(name="hopper", id="Hopper-v5", dynamics={"body_mass_scale": 1.5}))
    obs_again, ret_again = rollout(again, 300)
    np.testing.assert_array_equal(obs_again, obs_heavy)  # bit-identical: a pure function of the config
    np.testing.assert_array_equal(ret_again, ret_heavy)


def test_body_mass_scale_steps_as_the_xml_with_every_density_scaled() -> None:
    """Scaling the compiled model equals compiling Hopper's XML with density x1.5 (up to rounding)."""
    heavy = make_env(env_cfg(name="hopper", id="Hopper-v5", dynamics={"body_mass_scale": 1.5}))
    model = heavy.unwrapped.model  # type: ignore[attr-defined]
    spec = mujoco.MjSpec.from_file(heavy.unwrapped.fullpath)  # type: ignore[attr-defined]
    for geom in spec.geoms:
        geom.density *= 1.5
    compiled = spec.compile()
    np.testing.assert_allclose(model.body_mass, compiled.body_mass, rtol=1e-12)
    np.testing.assert_allclose(model.dof_invweight0, compiled.dof_invweight0, rtol=1e-12)
    assert model.stat.meaninertia == pytest.approx(compiled.stat.meaninertia, rel=1e-12)
    d1, d2 = mujoco.MjData(model), mujoco.MjData(compiled)
    rng = np.random.default_rng(0)
    for _ in range(300):
        d1.ctrl[:] = d2.ctrl[:] = rng.uniform(-1, 1, model.nu)
        mujoco.mj_step(model, d1)
        mujoco.mj_step(compiled, d2)
    np.testing.assert_allclose(d1.qpos, d2.qpos, atol=1e-9)


def test_friction_and_gravity_change_the_model_and_the_motion() -> None:
    cfg = {"name": "halfcheetah", "id": "HalfCheetah-v5"}
    base = make_env(env_cfg(**cfg))
    slippery = make_env(env_cfg(**cfg, dynamics={"geom_friction_scale": 0.5, "gravity_z": -4.9}))
    m0, m1 = base.unwrapped.model, slippery.unwrapped.model  # type: ignore[attr-defined]
    np.testing.assert_allclose(m1.geom_friction[:, 0], 0.5 * m0.geom_friction[:, 0])
    np.testing.assert_array_equal(m1.geom_friction[:, 1:], m0.geom_friction[:, 1:])  # torsional, rolling
    assert m1.opt.gravity[2] == -4.9 and m0.opt.gravity[2] == pytest.approx(-9.81)
    obs0, _ = rollout(base, 200)
    obs1, _ = rollout(slippery, 200)
    assert not np.allclose(obs0, obs1)


CARTPOLE = {"name": "cartpole", "id": "CartPole-v1", "kind": "classic"}


def test_cartpole_dynamics_recompute_cached_quantities_and_change_the_episode() -> None:
    base = make_env(env_cfg(**CARTPOLE))
    long_pole = make_env(env_cfg(**CARTPOLE, dynamics={"length": 1.0, "masspole": 0.2}))
    u = long_pole.unwrapped
    assert (u.length, u.masspole) == (1.0, 0.2)  # type: ignore[attr-defined]
    assert u.total_mass == pytest.approx(1.2)  # type: ignore[attr-defined]
    assert u.polemass_length == pytest.approx(0.2)  # type: ignore[attr-defined]
    obs0, _ = rollout(base, 300)
    obs1, _ = rollout(long_pole, 300)
    np.testing.assert_array_equal(obs0[0], obs1[0])  # same seeded start
    assert not np.allclose(obs0, obs1)  # the pole falls differently
    obs2, _ = rollout(make_env(env_cfg(**CARTPOLE, dynamics={"length": 1.0, "masspole": 0.2})), 300)
    np.testing.assert_array_equal(obs2, obs1)  # built again: the same episode


def test_halfcheetah_backward_stage_flips_the_forward_reward_only() -> None:
    forward = make_env(env_cfg(name="halfcheetah", id="HalfCheetah-v5"))
    backward = make_env(
        env_cfg(name="halfcheetah", id="HalfCheetah-v5", kwargs={"forward_reward_weight": -1.0})
    )
    for env in (forward, backward):
        env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(200):
        action = rng.uniform(-1, 1, 6)
        obs_f, _, _, _, info_f = forward.step(action)
        obs_b, _, _, _, info_b = backward.step(action)
        np.testing.assert_array_equal(obs_f, obs_b)  # the body does not change
        assert info_b["reward_forward"] == -info_f["reward_forward"]
        assert info_b["reward_ctrl"] == info_f["reward_ctrl"]


def test_atari_difficulty_reaches_the_game() -> None:
    """Pong difficulty 2 draws the agent's paddle 8 pixels tall instead of 16 (esbench Atari env)."""

    def paddle_height(difficulty: int) -> int:
        kwargs = {"difficulty": difficulty} if difficulty else {}
        env = make_env(env_cfg(name="Pong", id="ALE/Pong-v5", kind="atari", game="Pong", kwargs=kwargs))
        env.reset(seed=0)
        ale = env.unwrapped.ale  # type: ignore[attr-defined]
        height = 0
        for _ in range(60):
            env.step(2)  # UP: the paddle moves through the field
            screen = ale.getScreenRGB()[34:194, 140:144]  # the agent's (right) paddle column
            height = max(height, int(np.all(screen == (92, 186, 92), axis=-1).any(axis=1).sum()))
        return height

    assert paddle_height(0) == 16
    assert paddle_height(2) == 8


@pytest.mark.parametrize(
    ("env", "dynamics", "expected"),
    [
        ("env=hopper", {"body_mass": 2}, "did you mean body_mass_scale?"),
        ("env=hopper", {"body_mass_scale": 0}, "allowed: body_mass_scale > 0"),
        ("env=cartpole", {"lenght": 1}, "allowed: " + ", ".join(CARTPOLE_DYNAMICS)),
        ("env=atari", {"gravity_z": -1}, "allowed: none"),
    ],
)
def test_bad_dynamics_fail_before_work_with_one_line(
    env: str, dynamics: dict[str, float], expected: str
) -> None:
    overrides = [env, *(f"+env.dynamics.{k}={v}" for k, v in dynamics.items())]
    with pytest.raises(ConfigError) as err:
        compose_run_config(overrides)
    key = next(iter(dynamics))
    assert f"env.dynamics.{key}" in str(err.value) and expected in str(err.value)
    assert "\n" not in str(err.value)


def test_apply_dynamics_names_the_allowed_keys_and_refuses_to_scale_twice() -> None:
    env = gym.make("Hopper-v5")
    with pytest.raises(ValueError, match="allowed: " + ", ".join(MUJOCO_DYNAMICS)):
        apply_dynamics(env, {"friction": 2.0})
    with pytest.raises(ValueError, match="not a number"):
        apply_dynamics(env, {"gravity_z": "down"})
    apply_dynamics(env, {"body_mass_scale": 2.0})
    with pytest.raises(ValueError, match="already applied"):
        apply_dynamics(env, {"body_mass_scale": 2.0})
    assert apply_dynamics(gym.make("Hopper-v5"), {}) is not None  # empty: nothing to do
