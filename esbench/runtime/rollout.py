"""One episode of a policy in an environment: the inner loop every ES rollout runs.

Randomness comes in from outside (the reset seed and an action-noise generator), so an episode is
a pure function of its arguments.
"""

from __future__ import annotations

from dataclasses import dataclass

import gymnasium as gym
import numpy as np

from esbench.policies.base import Policy

_NOISE_BLOCK = 1024


@dataclass
class Episode:
    """The outcome of one rollout."""

    ret: float
    length: int
    frames: int
    obs_total: np.ndarray | None = None  # (obs_dim,) float64 when observations were collected
    obs_sumsq: np.ndarray | None = None


def run_episode(
    env: gym.Env,
    policy: Policy,
    seed: int,
    action_noise: tuple[np.random.Generator, float] | None = None,
    collect_obs: bool = False,
    max_steps: int | None = None,
) -> Episode:
    """Play one episode from ``env.reset(seed=seed)``.

    Args:
        env: the environment (its own time limit ends the episode; ``max_steps`` may cap it earlier).
        policy: a policy with parameters already set.
        seed: the reset seed.
        action_noise: (generator, std) to add Gaussian noise to continuous actions (training only).
        collect_obs: also return the sum and sum of squares of the observations seen.
        max_steps: an optional cap on the episode length (agent steps).
    """
    obs, info = env.reset(seed=int(seed))
    frames = int(info.get("frames", 0))
    total, steps = 0.0, 0
    continuous = isinstance(env.action_space, gym.spaces.Box)
    noise_rng, noise_std = action_noise if (action_noise and continuous) else (None, 0.0)
    noise = None
    act_shape: tuple[int, ...] = tuple(env.action_space.shape or ()) if continuous else ()
    observations: list[np.ndarray] = []
    limit = max_steps if max_steps is not None else np.inf
    while steps < limit:
        if collect_obs:
            observations.append(np.asarray(obs, dtype=np.float64).ravel())
        action = policy.act(obs)
        if noise_rng is not None and noise_std > 0.0:
            k = steps % _NOISE_BLOCK
            if k == 0:
                noise = noise_std * noise_rng.standard_normal((_NOISE_BLOCK, *act_shape)).astype(np.float32)
            action = action + noise[k]  # type: ignore[index]
        obs, reward, terminated, truncated, info = env.step(action)
        total += float(reward)
        steps += 1
        frames += int(info.get("frames", 1))
        if terminated or truncated:
            break
    episode = Episode(ret=total, length=steps, frames=frames)
    if collect_obs and observations:
        stacked = np.stack(observations)
        episode.obs_total = stacked.sum(axis=0)
        episode.obs_sumsq = np.square(stacked).sum(axis=0)
    return episode
