"""Atari preprocessing: shapes, frame accounting, seeded no-op resets, reward clipping, game names."""

from __future__ import annotations

import numpy as np
import pytest

from esbench.config.schema import EnvConfig
from esbench.envs.atari import ATARI_GAMES, make_atari_env, resolve_game


def _cfg(game: str = "Pong", **overrides) -> EnvConfig:
    return EnvConfig(name=game.lower(), id=f"ALE/{game}-v5", kind="atari", game=game, **overrides)


@pytest.mark.parametrize("frame_skip", [1, 2, 3, 4])
def test_observation_shape_and_frames_per_step(frame_skip: int) -> None:
    env = make_atari_env(_cfg(frame_skip=frame_skip), training=True)
    obs, info = env.reset(seed=0)
    assert obs.shape == (4, 84, 84) and obs.dtype == np.uint8
    assert env.observation_space.contains(obs)
    assert 1 <= info["frames"] <= 30
    ale = env.unwrapped.ale
    assert ale.getEpisodeFrameNumber() == info["frames"]
    rng = np.random.default_rng(0)
    steps, frames = 0, 0
    for _ in range(40):
        obs, _, terminated, truncated, step_info = env.step(int(rng.integers(env.action_space.n)))
        assert obs.shape == (4, 84, 84) and obs.dtype == np.uint8
        assert not (terminated or truncated)
        steps, frames = steps + 1, frames + step_info["frames"]
    assert frames == steps * frame_skip
    assert ale.getEpisodeFrameNumber() == info["frames"] + frames
    assert obs[-1].any() and not np.array_equal(obs[0], obs[-1])  # real, moving frames, oldest first
    env.close()


def test_frames_fewer_when_episode_ends_mid_skip() -> None:
    # ALE truncates the game after 50 frames: the 13th step at frame-skip 4 gets only 2 of them.
    cfg = _cfg(frame_skip=4, noop_max=0, kwargs={"max_num_frames_per_episode": 50})
    env = make_atari_env(cfg, training=False)
    _, info = env.reset(seed=0)
    assert info["frames"] == 0
    frames = []
    truncated = False
    while not truncated:
        _, _, terminated, truncated, info = env.step(0)
        assert not terminated
        frames.append(info["frames"])
    assert frames == [4] * 12 + [2]


def test_noop_reset_reproducible_per_seed() -> None:
    env_a = make_atari_env(_cfg(), training=False)
    env_b = make_atari_env(_cfg(), training=False)
    for seed in (3, 4):
        obs_a, info_a = env_a.reset(seed=seed)
        obs_b, info_b = env_b.reset(seed=seed)
        assert info_a["frames"] == info_b["frames"]
        np.testing.assert_array_equal(obs_a, obs_b)
        for action in (1, 2, 3, 2, 1):
            obs_a = env_a.step(action)[0]
            obs_b = env_b.step(action)[0]
        np.testing.assert_array_equal(obs_a, obs_b)
    noops = {env_a.reset(seed=seed)[1]["frames"] for seed in range(8)}
    assert len(noops) > 1


def test_defaults_no_sticky_actions_minimal_action_set() -> None:
    env = make_atari_env(_cfg(), training=False)
    assert env.unwrapped.ale.getFloat("repeat_action_probability") == 0.0
    assert env.action_space.n == 6
    assert make_atari_env(_cfg(full_action_space=True), training=False).action_space.n == 18
    with pytest.raises(ValueError, match="frameskip"):
        make_atari_env(_cfg(kwargs={"frameskip": 4}), training=False)


def _first_scoring_step(training: bool, clip_rewards: bool = True) -> tuple[float, float]:
    env = make_atari_env(_cfg("SpaceInvaders", clip_rewards=clip_rewards), training=training)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(400):
        _, reward, _, _, info = env.step(int(rng.integers(env.action_space.n)))
        if info["raw_reward"] != 0:
            return float(reward), float(info["raw_reward"])
    raise AssertionError("no reward in 400 random steps")


def test_rewards_clipped_only_when_training() -> None:
    reward, raw = _first_scoring_step(training=True)
    assert raw > 1 and reward == 1.0
    reward, raw = _first_scoring_step(training=False)
    assert reward == raw > 1
    reward, raw = _first_scoring_step(training=True, clip_rewards=False)
    assert reward == raw > 1


def test_max_episode_steps_truncates() -> None:
    env = make_atari_env(_cfg(max_episode_steps=5), training=False)
    env.reset(seed=0)
    flags = [env.step(0)[3] for _ in range(5)]
    assert flags == [False] * 4 + [True]


def test_table2_games_and_names() -> None:
    assert len(ATARI_GAMES) == 51 == len(set(ATARI_GAMES))
    assert resolve_game("pong") == resolve_game("PONG") == resolve_game("ALE/Pong-v5") == "ALE/Pong-v5"
    assert resolve_game("Space Invaders") == resolve_game("space_invaders") == "ALE/SpaceInvaders-v5"
    assert resolve_game("Q*Bert") == "ALE/Qbert-v5"
    assert all(resolve_game(g).startswith("ALE/") for g in ATARI_GAMES)


def test_unknown_game_message() -> None:
    with pytest.raises(ValueError) as exc:
        resolve_game("Pongg")
    msg = str(exc.value)
    assert "\n" not in msg and "'Pongg'" in msg
    assert msg.index("Pong") < msg.index("Alien")  # close matches come before the full list
    assert "Zaxxon" in msg
    with pytest.raises(ValueError, match="Space Invaders"):
        resolve_game("SpaceInvader")
