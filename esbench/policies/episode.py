"""One episode of an actor in an environment: the loop ES rollouts, RL evaluation and drift share.

Every number the benchmark reports comes from this loop: ES workers' returns
(:mod:`esbench.runtime.worker`), the RL baselines' evaluation (:func:`esbench.baselines.evaluation.
evaluate`) and the states a stage records for the policy KL (:func:`esbench.training.drift.
visited_states`). Written once, the two families cannot come to count steps, frames or returns
differently. What differs between them is only how an action is chosen, which is the actor's
business (:class:`Actor`).

Randomness comes in from outside (the reset seed, an action-noise generator, or whatever the actor
holds), so an episode is a pure function of its arguments.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import gymnasium as gym
import numpy as np

#: Action noise is drawn this many steps at a time (one ``standard_normal`` call per block). Part of
#: the numbers: a member's noise stream reads the same whatever plays it (here or in lockstep).
NOISE_BLOCK = 1024

#: Called with each observation an action is chosen on, before the actor sees it.
ObsCallback = Callable[[Any], None]


class Actor(Protocol):
    """Anything that chooses an action for one observation: an ES :class:`~esbench.policies.base.
    Policy`, or an adapter around an RL model (:class:`esbench.baselines.evaluation.EvalActor`)."""

    def act(self, obs: Any, /) -> Any:
        """The action for ``obs``, in (or convertible by ``env.step`` to) the env's action space."""
        ...


@dataclass
class Episode:
    """The outcome of one episode.

    Attributes:
        ret: Sum of the rewards (float, summed in the order received).
        length: Agent steps played.
        frames: Emulator frames (Atari's ``info["frames"]``, counting the reset's no-ops); equal to
            ``length`` for envs that do not report frames.
        obs_total: With ``collect_obs``, the sum of the observations an action was chosen on,
            shape (obs_dim,) float64 (observations flattened).
        obs_sumsq: With ``collect_obs``, the sum of their squares, shape (obs_dim,) float64.
    """

    ret: float
    length: int
    frames: int
    obs_total: np.ndarray | None = None
    obs_sumsq: np.ndarray | None = None


def discrete_action(action: Any) -> int:
    """``action`` (an int, a numpy integer, or a 0-d or one-element array as SB3's ``predict``
    returns) as the plain ``int`` a ``Discrete`` env takes."""
    return int(np.asarray(action).item())


def _observer(collect_obs: bool, on_obs: ObsCallback | None, into: list[np.ndarray]) -> ObsCallback | None:
    """The one per-step observation hook (None when nothing watches), so the loop tests once."""
    if not collect_obs:
        return on_obs

    def observe(obs: Any) -> None:
        into.append(np.asarray(obs, dtype=np.float64).ravel())
        if on_obs is not None:
            on_obs(obs)

    return observe


def run_episode(
    env: gym.Env,
    actor: Actor,
    seed: int,
    action_noise: tuple[np.random.Generator, float] | None = None,
    collect_obs: bool = False,
    max_steps: int | None = None,
    on_obs: ObsCallback | None = None,
) -> Episode:
    """Play one episode from ``env.reset(seed=seed)`` until terminated, truncated or ``max_steps``.

    Args:
        env: The environment (its own time limit ends the episode; ``max_steps`` may cap it earlier).
        actor: Chooses the actions (``actor.act(obs)`` once per step); an ES policy with its
            parameters already set, or an RL adapter.
        seed: The reset seed.
        action_noise: (generator, std) to add Gaussian noise to continuous actions (ES training
            only), drawn :data:`NOISE_BLOCK` steps at a time; ignored for discrete action spaces.
        collect_obs: Also return the sum and sum of squares of the observations seen
            (:attr:`Episode.obs_total`, :attr:`Episode.obs_sumsq`).
        max_steps: An optional cap on the episode length (agent steps).
        on_obs: Called with every observation an action is chosen on, before ``actor.act`` (the
            raw object the env returned: copy it to keep it). Drift records visited states this
            way. When None (and ``collect_obs`` False) the loop pays nothing per step for it.

    Returns:
        The episode's return, length and frames (and observation sums with ``collect_obs``).
    """
    obs, info = env.reset(seed=int(seed))
    frames = int(info.get("frames", 0))
    total, steps = 0.0, 0
    continuous = isinstance(env.action_space, gym.spaces.Box)
    noise_rng, noise_std = action_noise if (action_noise and continuous) else (None, 0.0)
    noise = None
    act_shape: tuple[int, ...] = tuple(env.action_space.shape or ()) if continuous else ()
    observations: list[np.ndarray] = []
    observe = _observer(collect_obs, on_obs, observations)
    limit = max_steps if max_steps is not None else np.inf
    while steps < limit:
        if observe is not None:
            observe(obs)
        action = actor.act(obs)
        if noise_rng is not None and noise_std > 0.0:
            k = steps % NOISE_BLOCK
            if k == 0:
                noise = noise_std * noise_rng.standard_normal((NOISE_BLOCK, *act_shape)).astype(np.float32)
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


__all__ = ["NOISE_BLOCK", "Actor", "Episode", "ObsCallback", "discrete_action", "run_episode"]
