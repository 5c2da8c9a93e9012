"""Meta-World 3.1.1 on MuJoCo 4 (esbench/envs/metaworld_compat.py) and Continual World's tasks
(esbench/envs/continual_world.py).

The weld-row fix is tested on synthetic arrays and a synthetic MuJoCo model, without Meta-World.
The CW tests need the optional extra, which ``make test`` installs (``make install-cw``); they are
never skipped: without Meta-World they fail.
"""

from __future__ import annotations

from types import ModuleType, SimpleNamespace
from typing import Any

import gymnasium as gym
import mujoco
import numpy as np
import pytest

from esbench.envs.metaworld_compat import METAWORLD_WELD_ROW, fit_weld_row, reset_mocap_welds

# A mocap body welded to a free body that starts 0.5 m away (as Meta-World welds its hand to a mocap).
WELD_XML = """
<mujoco>
  <worldbody>
    <body name="mocap" mocap="true"/>
    <body name="hand" pos="0.5 0 0"><freejoint/><geom size="0.1"/></body>
  </worldbody>
  <equality><weld body1="mocap" body2="hand"/></equality>
</mujoco>
"""


def test_fit_weld_row_pads_meaning_relpose_given_and_keeps_width_11() -> None:
    row = np.arange(11.0) + 1
    np.testing.assert_array_equal(fit_weld_row(row, 11), row)
    wide = fit_weld_row(row, 12)
    assert wide.shape == (12,) and wide.dtype == np.float64
    np.testing.assert_array_equal(wide[:11], row)
    assert wide[11] == 0.0  # MuJoCo 4: 0 = relative pose given, as a non-zero quaternion meant in 3.3
    with pytest.raises(ValueError, match="11 numbers"):
        fit_weld_row(row[:7], 12)
    with pytest.raises(ValueError, match="fewer than a weld's 11"):
        fit_weld_row(row, 10)


def test_patched_reset_mocap_welds_writes_metaworld_row_that_set_const_keeps() -> None:
    """On this MuJoCo the fixed row has the model's width, and mj_setConst (which
    env.dynamics.body_mass_scale calls) keeps Meta-World's identity pose instead of replacing it
    with the pose at qpos0, which the compiler's flag (1) would ask for."""
    model = mujoco.MjModel.from_xml_string(WELD_XML)
    assert model.eq_data[0, 3] == pytest.approx(0.5)  # compiled: relative pose from qpos0
    reset_mocap_welds(SimpleNamespace(model=model))
    expected = fit_weld_row(METAWORLD_WELD_ROW, model.eq_data.shape[1])
    np.testing.assert_array_equal(model.eq_data[0], expected)
    mujoco.mj_setConst(model, mujoco.MjData(model))
    np.testing.assert_array_equal(model.eq_data[0, 3:6], 0.0)  # the given pose survived
    if model.eq_data.shape[1] > 11:  # MuJoCo 4: the same row with the compiler's flag is overwritten
        flagged = mujoco.MjModel.from_xml_string(WELD_XML)
        flagged.eq_data[0, :11] = METAWORLD_WELD_ROW
        flagged.eq_data[0, 11] = 1.0
        mujoco.mj_setConst(flagged, mujoco.MjData(flagged))
        assert flagged.eq_data[0, 3] == pytest.approx(0.5)
    data = mujoco.MjData(model)  # the weld pulls the hand onto the mocap body: actuation works
    for _ in range(2000):
        mujoco.mj_step(model, data)
    np.testing.assert_allclose(data.xpos[2], data.xpos[1], atol=1e-3)


@pytest.fixture(scope="module")
def cw() -> ModuleType:
    """esbench.envs.continual_world (Meta-World is installed by ``make test``: a missing one fails)."""
    import esbench.envs.continual_world as module  # must import whenever Meta-World does

    return module


def make_cw(task: str, **kwargs: Any) -> gym.Env:
    return gym.make(f"esbench.envs.continual_world:CW/{task}", disable_env_checker=True, **kwargs)


def test_cw10_tasks_build_reset_step_and_share_spaces(cw: ModuleType) -> None:
    first = None
    for k, task in enumerate(cw.CW10):
        env = make_cw(task, one_hot_index=k, one_hot_len=10)
        assert env.unwrapped.model.eq_data.shape[1] >= 11
        spaces = (env.observation_space, env.action_space)
        first = first or spaces
        assert spaces == first, task
        obs, _ = env.reset(seed=7)
        assert obs.shape == (49,) and obs[39 + k] == 1.0 and obs[39:].sum() == 1.0
        rng = np.random.default_rng(0)
        steps, rewards = 0, []
        while True:
            obs, reward, terminated, truncated, info = env.step(rng.uniform(-1, 1, 4))
            steps += 1
            rewards.append(reward)
            assert np.all(np.isfinite(obs)) and "success" in info
            if terminated or truncated:
                break
        assert steps == cw.CW_TIME_HORIZON
        assert min(rewards) >= 0.0 and max(rewards) <= 10.0  # Meta-World v3's reward range


def test_cw_reset_seed_fixes_the_placement_and_seeds_differ(cw: ModuleType) -> None:
    a, b = make_cw("push-v3"), make_cw("push-v3")
    obs_a, _ = a.reset(seed=3)
    obs_b, _ = b.reset(seed=3)
    np.testing.assert_array_equal(obs_a, obs_b)
    obs_c, _ = a.reset(seed=4)
    assert not np.array_equal(obs_a[36:39], obs_c[36:39])  # another goal (random_init_all)
    actions = np.random.default_rng(1).uniform(-1, 1, (50, 4))
    for env in (a, b):
        env.reset(seed=5)
    for action in actions:  # same seed, same actions: bit-identical steps
        step_a, step_b = a.step(action), b.step(action)
        np.testing.assert_array_equal(step_a[0], step_b[0])
        assert step_a[1] == step_b[1]


@pytest.mark.filterwarnings("ignore:Constant:UserWarning")  # Meta-World's policies warn about their gains
@pytest.mark.parametrize("task", ["hammer-v3", "faucet-close-v3", "window-close-v3"])
def test_scripted_expert_succeeds_on_mujoco_4(cw: ModuleType, task: str) -> None:
    """Meta-World's own scripted policies still solve the tasks: the welded hand is actuated.

    These three: success on 20 of 20 seeded placements on both MuJoCo 4.0.0 (with the fix) and
    Meta-World's MuJoCo 3.3.0 (docs/guides/sequences.md)."""
    import metaworld.policies as policies

    name = "Sawyer" + "".join(w.capitalize() for w in task.removesuffix("-v3").split("-")) + "V3Policy"
    policy = getattr(policies, name)()
    env = make_cw(task)
    obs, _ = env.reset(seed=0)
    success = 0.0
    for _ in range(cw.CW_TIME_HORIZON):
        obs, _, _, truncated, info = env.step(policy.get_action(obs))
        success = max(success, float(info["success"]))
        if truncated:
            break
    assert success == 1.0


def test_dynamics_on_a_metaworld_env_keep_the_weld_pose(cw: ModuleType) -> None:
    from esbench.envs.variants import apply_dynamics

    env = apply_dynamics(make_cw("hammer-v3"), {"body_mass_scale": 1.5})
    model = env.unwrapped.model
    welds = model.eq_type == mujoco.mjtEq.mjEQ_WELD
    row = fit_weld_row(METAWORLD_WELD_ROW, model.eq_data.shape[1])
    np.testing.assert_array_equal(model.eq_data[welds], np.broadcast_to(row, model.eq_data[welds].shape))
    obs, _ = env.reset(seed=0)
    assert np.all(np.isfinite(obs))
