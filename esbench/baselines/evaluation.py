"""Evaluation of a baseline on the ES ruler: fixed seeds, unclipped rewards, a chosen way of acting.

Episode ``k`` (``k < cfg.eval.episodes``) is reset with ``cfg.eval.seed + k`` every time, as ES does
(DESIGN.md promise 3), on an env made with ``training=False`` (Atari rewards unclipped, no life-loss
terminals; the env's own no-op starts, up to ``env.noop_max`` = 30, drawn from the reset seed). With
VecNormalize the observations go through the training statistics, frozen (``normalize_obs`` reads
them without updating).

How the policy acts is the run's :class:`~esbench.config.eval_protocol.EvalProtocol`:

* ``deterministic``: SB3's ``predict(deterministic=True)`` (the argmax, or the mean action).
* ``sampled``: an action drawn from the policy's distribution (``policy.get_distribution``), the
  way A3C's published Atari scores were obtained: categorical by inverse CDF on the probabilities,
  diagonal Gaussian as ``mean + std * z`` (clipped to the action bounds, as ``predict`` clips).
* ``epsilon_greedy``: with probability epsilon a uniform random action, else the deterministic one
  (DQN's published protocol, epsilon 0.05).

The random numbers come from :func:`esbench.utils.seeding.generator` on (run seed,
:data:`~esbench.utils.seeding.EVAL_ACTIONS`, timestep of the evaluation, episode): never from SB3's,
torch's or numpy's global RNG. Computing a distribution draws nothing, so evaluating does not change
the training run, and the evaluation itself is a pure function of the config (same numbers on every
re-run and after a resume).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.distributions import CategoricalDistribution, DiagGaussianDistribution
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.vec_env import VecNormalize

from esbench.config.eval_protocol import DETERMINISTIC, EvalProtocol
from esbench.measures.distribution import ActionDist, categorical, gaussian
from esbench.policies.episode import discrete_action, run_episode
from esbench.utils.seeding import EVAL_ACTIONS, generator


def sample_categorical(probs: np.ndarray, rng: np.random.Generator) -> int:
    """One index drawn from ``probs`` by inverse CDF (one uniform per draw).

    Args:
        probs: Shape (n_actions,), non-negative; renormalized here (float32 softmax outputs need
            not sum to exactly 1).
        rng: The episode's evaluation stream.

    Returns:
        An index in ``[0, n_actions)``.
    """
    cdf = np.cumsum(np.asarray(probs, dtype=np.float64))
    index = int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right"))
    return min(index, len(cdf) - 1)


def random_action(space: gym.Space[Any], rng: np.random.Generator) -> Any:
    """A uniform random action of a ``Discrete`` or bounded ``Box`` space, drawn from ``rng``."""
    if isinstance(space, gym.spaces.Discrete):
        return int(space.start + rng.integers(int(space.n)))
    if isinstance(space, gym.spaces.Box):
        return rng.uniform(space.low, space.high).astype(space.dtype)
    raise TypeError(f"epsilon-greedy evaluation supports Discrete and Box action spaces, not {space}")


def sampled_action(policy: BasePolicy, obs: Any, space: gym.Space[Any], rng: np.random.Generator) -> Any:
    """An action drawn from ``policy``'s distribution at ``obs``, with ``rng``'s numbers only.

    Args:
        policy: An SB3 actor-critic policy (``get_distribution``: A2C, PPO, TRPO).
        obs: One observation, as ``predict`` takes it (e.g. ``(4, 84, 84)`` uint8 frames).
        space: The env's action space.
        rng: The episode's evaluation stream.

    Returns:
        An int for a categorical policy; an array of shape ``space.shape`` for a Gaussian one.

    Raises:
        TypeError: The policy has another kind of distribution (or none: a Q-network).
    """
    get_distribution = getattr(policy, "get_distribution", None)
    if get_distribution is None:
        raise TypeError(f"{type(policy).__name__} has no action distribution to sample (eval.policy=sampled)")
    policy.set_training_mode(False)  # as predict() does
    obs_tensor, _ = policy.obs_to_tensor(obs)
    with torch.no_grad():
        dist = get_distribution(obs_tensor)
    if isinstance(dist, CategoricalDistribution):
        return sample_categorical(dist.distribution.probs[0].numpy(), rng)
    if isinstance(dist, DiagGaussianDistribution):
        mean = dist.distribution.mean[0].numpy().astype(np.float64)
        std = dist.distribution.stddev[0].numpy().astype(np.float64)
        action = (mean + std * rng.standard_normal(mean.shape)).astype(np.float32)
        if policy.squash_output:
            return policy.unscale_action(action)
        assert isinstance(space, gym.spaces.Box)
        return np.clip(action, space.low, space.high)
    raise TypeError(f"sampled evaluation supports categorical and diagonal Gaussian policies, not {dist}")


def action_distribution(
    model: BaseAlgorithm, states: np.ndarray, vec_normalize: VecNormalize | None
) -> ActionDist:
    """The model's action distributions on a batch of raw observations (for the policy KL).

    The observations go through ``vec_normalize``'s statistics (frozen), then the policy's own
    distribution (``get_distribution``): categorical logits (A2C, PPO, TRPO on discrete actions) or
    a diagonal Gaussian's mean and log std (continuous actions; before any squashing or
    clipping). DQN has no action distribution: its Q-values are taken as logits (a Boltzmann policy
    at temperature 1), a modelling choice stated with the numbers.

    Args:
        model: An SB3 model.
        states: Shape (n, *obs_shape), as the evaluation env returns them.
        vec_normalize: The VecNormalize whose statistics the model acts with, or None.

    Returns:
        The distributions on the n states.

    Raises:
        TypeError: Another kind of distribution.
    """
    policy = model.policy
    x = vec_normalize.normalize_obs(states) if vec_normalize is not None else states
    policy.set_training_mode(False)
    obs_tensor, _ = policy.obs_to_tensor(x)
    get_distribution = getattr(policy, "get_distribution", None)
    with torch.no_grad():
        if get_distribution is None:  # DQN: Q-values as logits
            q_net = cast(torch.nn.Module, policy.q_net)
            return categorical(q_net(obs_tensor).numpy())
        dist = get_distribution(obs_tensor)
        if isinstance(dist, CategoricalDistribution):
            return categorical(dist.distribution.logits.numpy())
        if isinstance(dist, DiagGaussianDistribution):
            normal = dist.distribution
            return gaussian(normal.mean.numpy(), normal.scale.log().numpy())
    raise TypeError(f"the policy KL supports categorical and diagonal Gaussian policies, not {dist}")


def deterministic_act(model: BaseAlgorithm, vec_normalize: VecNormalize | None) -> Callable[[Any], Any]:
    """``obs -> action`` of the deterministic policy (``predict(deterministic=True)``) on raw
    observations normalized with ``vec_normalize``: how the recorded states are visited."""

    def act_on(obs: Any) -> Any:
        x = vec_normalize.normalize_obs(obs) if vec_normalize is not None else obs
        return model.predict(x, deterministic=True)[0]

    return act_on


def act(
    model: BaseAlgorithm, obs: Any, space: gym.Space[Any], protocol: EvalProtocol, rng: np.random.Generator
) -> Any:
    """The action ``model`` takes at ``obs`` under ``protocol`` (random numbers from ``rng`` only)."""
    if protocol.policy == "sampled":
        return sampled_action(model.policy, obs, space, rng)
    if protocol.policy == "epsilon_greedy" and rng.random() < protocol.epsilon:
        return random_action(space, rng)
    return model.predict(obs, deterministic=True)[0]


class EvalActor:
    """An SB3 model acting as the evaluation protocol says, for the shared episode loop
    (:func:`esbench.policies.episode.run_episode`).

    ``act`` normalizes the raw observation with ``vec_normalize``'s frozen statistics, chooses the
    action with :func:`act` (random numbers from ``rng`` only) and, on a ``Discrete`` space, hands
    the env a plain ``int``.

    Args:
        model: The SB3 model.
        space: The evaluation env's action space.
        vec_normalize: The training VecNormalize (statistics read, never updated), or None.
        protocol: How the policy acts.
        rng: The episode's evaluation stream (one per episode:
            ``generator(run_seed, EVAL_ACTIONS, timestep, k)``).
    """

    __slots__ = ("discrete", "model", "protocol", "rng", "space", "vec_normalize")

    def __init__(
        self,
        model: BaseAlgorithm,
        space: gym.Space[Any],
        vec_normalize: VecNormalize | None,
        protocol: EvalProtocol,
        rng: np.random.Generator,
    ) -> None:
        self.model = model
        self.space = space
        self.vec_normalize = vec_normalize
        self.protocol = protocol
        self.rng = rng
        self.discrete = isinstance(space, gym.spaces.Discrete)

    def act(self, obs: Any) -> Any:
        """The action at one raw observation (as the evaluation env returns it)."""
        x = self.vec_normalize.normalize_obs(obs) if self.vec_normalize is not None else obs
        action = act(self.model, x, self.space, self.protocol, self.rng)
        return discrete_action(action) if self.discrete else action


def evaluate(
    model: BaseAlgorithm,
    env: gym.Env,
    seed: int,
    episodes: int,
    vec_normalize: VecNormalize | None,
    *,
    protocol: EvalProtocol = DETERMINISTIC,
    run_seed: int = 0,
    timestep: int = 0,
    first: int = 0,
) -> tuple[float, float, int]:
    """Play ``episodes`` seeded episodes with ``model`` acting as ``protocol`` says.

    Each episode is played by :func:`esbench.policies.episode.run_episode`, the loop ES episodes
    run, with an :class:`EvalActor` holding that episode's random stream: the two families' returns
    and step counts are summed by the same code.

    Args:
        model: The SB3 model being trained.
        env: An env made with ``training=False``.
        seed: ``cfg.eval.seed``: episode ``k`` is reset with ``seed + k``.
        episodes: ``cfg.eval.episodes``.
        vec_normalize: The training VecNormalize, whose frozen statistics normalize observations.
        protocol: How the policy acts (:func:`esbench.config.eval_protocol.eval_protocol`).
        run_seed: ``cfg.seed``: with ``timestep`` and ``k``, names episode ``k``'s random stream.
        timestep: The training timestep at which this evaluation happens.
        first: Play episodes ``first .. first + episodes - 1`` (reset seeds and random streams
            both), not ``0 ..``: a confirmation's fresh seeds (:class:`esbench.training.ruler.Confirmation`).

    Returns:
        ``(mean return, std of returns, environment steps)`` over the episodes.
    """
    returns: list[float] = []
    steps = 0
    for k in range(int(first), int(first) + episodes):
        rng = generator(run_seed, EVAL_ACTIONS, timestep, k)
        actor = EvalActor(model, env.action_space, vec_normalize, protocol, rng)
        episode = run_episode(env, actor, seed + k)
        returns.append(episode.ret)
        steps += episode.length
    arr = np.asarray(returns)
    return float(arr.mean()), float(arr.std()), steps
