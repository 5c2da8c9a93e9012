"""Evaluation of a baseline on the ES protocol: deterministic policy, fixed seeds, unclipped rewards.

Episode ``k`` (``k < cfg.eval.episodes``) is reset with ``cfg.eval.seed + k`` every time, as ES does
(DESIGN.md promise 3), on an env made with ``training=False`` (Atari rewards unclipped, no life-loss
terminals). With VecNormalize the observations go through the training statistics, frozen
(``normalize_obs`` reads them without updating). No global random stream is touched, so evaluating
does not change the training run.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecNormalize


def evaluate(
    model: BaseAlgorithm, env: gym.Env, seed: int, episodes: int, vec_normalize: VecNormalize | None
) -> tuple[float, float, int]:
    """``(mean return, std of returns, environment steps)`` over ``episodes`` seeded episodes."""
    returns: list[float] = []
    steps = 0
    for k in range(episodes):
        obs, _ = env.reset(seed=seed + k)
        total, done = 0.0, False
        while not done:
            x: Any = vec_normalize.normalize_obs(obs) if vec_normalize is not None else obs
            action: Any = model.predict(x, deterministic=True)[0]
            if isinstance(env.action_space, gym.spaces.Discrete):
                action = int(np.asarray(action).item())
            obs, reward, terminated, truncated, _ = env.step(action)
            total += float(reward)
            steps += 1
            done = terminated or truncated
        returns.append(total)
    arr = np.asarray(returns)
    return float(arr.mean()), float(arr.std()), steps
