"""Build a Stable-Baselines3 / sb3-contrib model on esbench's own environments and networks.

DESIGN.md promise 3 (one ruler): the training VecEnv is ``DummyVecEnv`` over
``esbench.envs.make_env(cfg.env, training=True)``, each wrapped in SB3's ``Monitor`` to count
episodes; with ``normalize`` (the zoo's ``normalize: true``) a ``VecNormalize`` normalizes observations
and rewards. Networks are the ones ES uses:

* MuJoCo / classic: an MLP with ``cfg.policy.hidden_sizes`` and ``cfg.policy.activation`` for the
  policy and (separately) the value function (SB3 ``net_arch=dict(pi=..., vf=...)``; DQN: the Q-net).
* Atari: SB3 ``CnnPolicy`` whose features extractor is :func:`esbench.policies.cnn.a3c_cnn` without
  VBN (16@8x8/4, 32@4x4/2, fc 256) on channel-first uint8 ``(4, 84, 84)`` observations (SB3 scales
  images to [0, 1]); the policy/value (or Q) heads are linear on its 256 features, as in A3C FF.

Sources: SB3 ``common/policies.py`` (net_arch, features extractors), ``common/vec_env`` and
``a2c/a2c.py`` (RMSprop setup), sb3-contrib ``trpo/trpo.py``; rl-baselines3-zoo ``hyperparams/*.yml``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from omegaconf import DictConfig
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.sb2_compat.rmsprop_tf_like import RMSpropTFLike
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecNormalize
from torch import Tensor, nn

from esbench.config.registry import get_algorithm
from esbench.envs import make_env
from esbench.policies.cnn import a3c_cnn

ACTIVATIONS: dict[str, type[nn.Module]] = {"tanh": nn.Tanh, "relu": nn.ReLU}


class Linear:
    """SB3 schedule ``progress_remaining -> value``: linear decay from ``initial`` to 0 (zoo ``lin_``)."""

    def __init__(self, initial: float) -> None:
        self.initial = float(initial)

    def __call__(self, progress_remaining: float) -> float:
        return progress_remaining * self.initial


class A3CFeatures(BaseFeaturesExtractor):
    """The A3C FF CNN (no VBN) as an SB3 features extractor: input (N, C, H, W) in [0, 1], output (N, 256)."""

    def __init__(self, observation_space: gym.spaces.Box) -> None:
        super().__init__(observation_space, features_dim=256)
        channels, side = int(observation_space.shape[0]), int(observation_space.shape[1])
        self.net = a3c_cnn(None, vbn=False, in_channels=channels, screen_size=side)

    def forward(self, observations: Tensor) -> Tensor:
        return self.net(observations)


def make_training_env(cfg: DictConfig, hp: dict[str, Any]) -> VecEnv:
    """``hp["n_envs"]`` Monitor-wrapped copies of the run's env, VecNormalize-d when ``hp["normalize"]``."""

    def thunk() -> gym.Env:
        return Monitor(make_env(cfg.env, training=True))

    venv: VecEnv = DummyVecEnv([thunk] * int(hp["n_envs"]))
    if hp["normalize"] and cfg.env.kind != "atari":  # pixels are never normalized (SB3 scales them)
        stage_id = list(cfg.env.get("stage_id") or [])
        if stage_id:  # the one-hot stage id passes unnormalized, as in the ES policy
            return StageIdVecNormalize(venv, int(stage_id[1]), gamma=float(hp["gamma"]))
        venv = VecNormalize(venv, gamma=float(hp["gamma"]), norm_obs=True, norm_reward=True)
    return venv


class StageIdVecNormalize(VecNormalize):
    """SB3's VecNormalize that leaves the last ``raw_tail`` observation entries as they are: a
    one-hot stage id (``sequence.stage_id_obs``) is constant within a stage, so statistics reset
    at a stage boundary would normalize it to zeros and hide which stage the policy is in."""

    def __init__(self, venv: VecEnv, raw_tail: int, gamma: float) -> None:
        super().__init__(venv, gamma=gamma, norm_obs=True, norm_reward=True)
        self.raw_tail = int(raw_tail)

    def normalize_obs(self, obs: Any) -> Any:
        """Normalized observations, the trailing stage id copied back unchanged."""
        out = super().normalize_obs(obs)
        if self.raw_tail and isinstance(out, np.ndarray):
            out[..., -self.raw_tail :] = np.asarray(obs)[..., -self.raw_tail :]
        return out


def policy_spec(cfg: DictConfig, algo: str) -> tuple[str, dict[str, Any]]:
    """SB3 policy name and ``policy_kwargs``: the same network sizes as the ES policy, with the
    head the algorithm's registry entry names (:attr:`~esbench.config.registry.AlgorithmSpec.head`)."""
    q_net = get_algorithm(algo).head == "q_values"
    if cfg.env.kind == "atari":
        heads: Any = [] if q_net else {"pi": [], "vf": []}
        return "CnnPolicy", {"features_extractor_class": A3CFeatures, "net_arch": heads}
    hidden = [int(h) for h in cfg.policy.hidden_sizes]
    arch: Any = hidden if q_net else {"pi": hidden, "vf": hidden}
    return "MlpPolicy", {"net_arch": arch, "activation_fn": ACTIVATIONS[str(cfg.policy.activation)]}


def _schedule(value: float, kind: str) -> Any:
    return Linear(value) if kind == "linear" else float(value)


def algo_kwargs(algo: str, hp: dict[str, Any]) -> dict[str, Any]:
    """Constructor arguments of the SB3 class for resolved hyperparameters ``hp``: the schema's
    ``sb3_keys`` as they are, plus the schedules and the options SB3 spells differently."""
    kwargs: dict[str, Any] = {
        "learning_rate": _schedule(hp["learning_rate"], hp["lr_schedule"]),
        "gamma": float(hp["gamma"]),
    }
    keys: tuple[str, ...] = get_algorithm(algo).schema.sb3_keys  # type: ignore[attr-defined]
    kwargs.update({k: hp[k] for k in keys})
    if "clip_range" in hp:  # PPO
        kwargs["clip_range"] = _schedule(hp["clip_range"], hp["clip_range_schedule"])
    if hp.get("optimize_memory_usage"):  # DQN: SB3 cannot combine it with timeout handling
        kwargs["replay_buffer_kwargs"] = {"handle_timeout_termination": False}
    return kwargs


def build_model(cfg: DictConfig, hp: dict[str, Any], venv: VecEnv) -> BaseAlgorithm:
    """A fresh SB3 model, seeded with ``cfg.seed`` (SB3 seeds python, numpy, torch and the env)."""
    algo = str(cfg.algo.name)
    policy, policy_kwargs = policy_spec(cfg, algo)
    if hp.get("use_rms_prop") and hp.get("rmsprop_tf_like"):  # A2C's zoo Atari optimizer
        policy_kwargs["optimizer_class"] = RMSpropTFLike  # zoo Atari: dict(eps=1e-5)
        eps = float(hp["rms_prop_eps"])
        policy_kwargs["optimizer_kwargs"] = {"alpha": 0.99, "eps": eps, "weight_decay": 0}
    sb3_class = get_algorithm(algo).load_class()
    return sb3_class(
        policy,
        venv,
        policy_kwargs=policy_kwargs,
        seed=int(cfg.seed),
        device="cpu",
        verbose=0,
        **algo_kwargs(algo, hp),
    )
