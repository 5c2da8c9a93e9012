"""Task sequences (conf/sequence/): every file composes, every stage's env builds with stage 0's
spaces and steps, and bad sequences fail before any work with one line (exit 2 through the CLI)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from omegaconf import DictConfig

from esbench.config.compose import CONF_DIR, compose_run_config
from esbench.config.errors import ConfigError
from esbench.config.sequence import stage_env_configs
from esbench.envs import make_env
from tests.conftest import REPO, esbench

SEQUENCES = sorted(p.stem for p in (CONF_DIR / "sequence").glob("*.yaml"))
#: Sequences of Gymnasium environments (lm_* are a language model's tasks: tests/test_lm_training.py).
GYM_SEQUENCES = [s for s in SEQUENCES if not s.startswith("lm_")]


def compose(name: str, *overrides: str) -> DictConfig:
    return compose_run_config([f"sequence={name}", "budget=smoke", *overrides])


def test_the_issue_sequences_exist() -> None:
    assert {"none", "cheetah_dir", "hopper_mass", "atari_mode", "cartpole_pair", "cw10"} <= set(SEQUENCES)


@pytest.mark.parametrize("name", GYM_SEQUENCES)
def test_sequence_composes_and_every_stage_builds_with_stage_0_spaces(name: str) -> None:
    cfg = compose(name)
    envs = stage_env_configs(cfg)
    assert len(envs) == max(len(cfg.sequence.stages), 1)
    if name != "none":
        assert cfg.sequence.name == name and len(cfg.sequence.stages) >= 2
        assert all(stage.timesteps >= 1 for stage in cfg.sequence.stages)
    first: tuple[gym.Space, gym.Space] | None = None
    for k, env_cfg in enumerate(envs):
        env = make_env(env_cfg, training=False)
        spaces = (env.observation_space, env.action_space)
        first = first or spaces
        assert spaces == first, f"stage {k}"
        obs, _ = env.reset(seed=k)
        assert env.observation_space.contains(obs)
        for _ in range(50):  # a few steps on every stage: built, not just declared
            obs, _, terminated, truncated, _ = env.step(env.action_space.sample())
            if terminated or truncated:
                obs, _ = env.reset()
        env.close()


def test_stage_envs_are_the_run_env_with_each_stage_override() -> None:
    cheetah = stage_env_configs(compose("cheetah_dir"))
    assert [dict(e.kwargs) for e in cheetah] == [{}, {"forward_reward_weight": -1.0}]
    assert {e.id for e in cheetah} == {"HalfCheetah-v5"}
    hopper = stage_env_configs(compose("hopper_mass"))
    assert [dict(e.dynamics) for e in hopper] == [{}, {"body_mass_scale": 1.5}]
    assert compose("hopper_mass").policy.action_bins == 10  # conf/env/hopper.yaml's setting came along
    atari = compose("atari_mode")
    assert atari.policy.kind == "cnn" and atari.algo.sigma == 0.005  # env group atari, ES on Atari
    assert [dict(e.kwargs) for e in stage_env_configs(atari)] == [{}, {"difficulty": 2}]
    # A stage that changes the game also changes the interpolated name and id (not validated:
    # Breakout's 4 actions are not Pong's 6, which the spaces check rejects).
    game = ["sequence=atari_mode", "+sequence.stages.1.env.game=Breakout", "~sequence.stages.1.env.kwargs"]
    pairs = stage_env_configs(compose_run_config(game, validate_config=False))
    assert [(e.name, e.id) for e in pairs] == [("Pong", "ALE/Pong-v5"), ("Breakout", "ALE/Breakout-v5")]
    with pytest.raises(ConfigError, match=r"action space Discrete\(4\) differs from stage 0's Discrete\(6\)"):
        compose_run_config(game)


def test_cartpole_pair_stages_differ_in_the_simulated_world() -> None:
    base, long_pole = (make_env(e) for e in stage_env_configs(compose("cartpole_pair")))
    assert long_pole.unwrapped.length == 2 * base.unwrapped.length  # type: ignore[attr-defined]
    trajectories = []
    for env in (base, long_pole):
        obs, _ = env.reset(seed=0)
        states = [obs]
        for _ in range(30):
            obs, *_ = env.step(1)
            states.append(obs)
        trajectories.append(np.array(states))
    assert not np.allclose(*trajectories)


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (["sequence.stages.1.timesteps=0"], "sequence.stages[1].timesteps=0 is out of range"),
        (["+sequence.stages.1.env.framskip=2"], "env.framskip: no such env key (did you mean frame_skip"),
        # Hopper (11 entries) plus the two-stage id of cheetah_dir: 13.
        (["+sequence.stages.1.env.id=Hopper-v5"], "observation space Box(-inf, inf, (13,), float64) differs"),
        (["+sequence.stages.1.env.id=Hoper-v5"], "close matches: Hopper-v5"),
        (["sequence.stages.1.name=forward"], "repeats sequence.stages[0].name"),
        (["sequence.only_stage=2"], "sequence.only_stage=2 is out of range"),
        (["+sequence.stages.1.env.kwargs.forward_reward_wieght=1"], "unexpected keyword argument"),
        (["+sequence.stages.1.env.dynamics.body_mass=2"], "did you mean body_mass_scale?"),
    ],
)
def test_bad_stage_is_one_line_naming_the_stage(overrides: list[str], expected: str) -> None:
    with pytest.raises(ConfigError) as err:
        compose_run_config(["sequence=cheetah_dir", *overrides])
    message = str(err.value)
    assert expected in message and "\n" not in message
    if "only_stage" not in message:
        assert message.startswith("sequence.stages[")


def test_atari_stage_with_an_unavailable_difficulty_names_the_allowed_ones() -> None:
    with pytest.raises(ConfigError, match=r"allowed: mode in \[0, 1\], difficulty in \[0, 1, 2, 3\]"):
        compose_run_config(["sequence=atari_mode", "sequence.stages.1.env.kwargs.difficulty=7"])


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["sequence=cheetah_dri"], "sequence=cheetah_dri: no such option (did you mean cheetah_dir"),
        (["sequence=cheetah_dir", "+sequence.stages.1.env.id=Hopper-v5"], "differs from stage 0's"),
        (["sequence=hopper_mass", "sequence.stages.0.timesteps=-5"], "sequence.stages[0].timesteps=-5"),
    ],
)
def test_cli_rejects_a_bad_sequence_before_any_work(tmp_path: Path, args: list[str], expected: str) -> None:
    proc = esbench("run", *args, f"results_dir={tmp_path}", check=False, timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and expected in lines[0], proc.stderr
    assert not any(tmp_path.iterdir())  # nothing was started


def test_cw10_without_metaworld_says_how_to_install_it() -> None:
    """Meta-World hidden from the import system: the config check names the extra, one line."""
    code = (
        "import sys; sys.modules['metaworld'] = None\n"
        "from esbench.runner import load_components; load_components()\n"
        "from esbench.config.compose import compose_run_config\n"
        "from esbench.config.errors import ConfigError\n"
        "try:\n    compose_run_config(['sequence=cw10'])\n"
        "except ConfigError as e:\n    print(e)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    out = proc.stdout.strip()
    assert proc.returncode == 0 and "make install-cw" in out and "\n" not in out, proc.stderr[-2000:]
