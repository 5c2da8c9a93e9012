"""Checkpoints of a baseline run that resume *exactly*: model, environments and random streams.

SB3's ``model.save`` keeps parameters and optimizer state but not the environments' state (a
MuJoCo simulation mid-episode, an Atari emulator, Monitor and VecNormalize counters) nor the global
random streams SB3 draws from (python ``random``, numpy's global RNG for minibatch permutations and
DQN's epsilon-greedy, torch's for action sampling). Restoring only what ``save`` keeps gives a
statistically equivalent run, not the same one. So a snapshot here holds, pickled together (shared
references such as ``model.action_space`` / ``env.action_space`` stay shared):

* the model object itself (policy, optimizer, rollout or replay buffer, counters, ``_last_obs``,
  schedules), with its env, VecNormalize link and logger detached;
* every layer of the VecEnv stack (VecNormalize -> DummyVecEnv -> Monitor -> gymnasium wrappers ->
  base env) as its ``__dict__`` minus the links between layers and native handles; MuJoCo's
  ``MjData`` is pickled whole and copied back with ``mujoco.mj_copyData`` (bit-exact: derived
  quantities such as ``xpos`` are kept, not recomputed), the ALE emulator with
  ``cloneState(include_rng=True)`` / ``restoreState``;
* the python, numpy and torch global RNG states, and the trainer's :class:`Progress`.

Snapshots are taken at the start of a rollout (``on_rollout_start``): after the previous update,
before any step of the next rollout, where nothing is half-done. Resuming builds fresh envs the same
way, overwrites their state, and calls ``learn(..., reset_num_timesteps=False)``, which re-enters
``collect_rollouts`` at exactly that point. On one machine and torch build the resumed run is
bit-identical to an uninterrupted one (tested on CartPole-v1; MuJoCo and Atari rely on the same
mechanism). Wall-clock and CPU columns differ, as for ES.
"""

from __future__ import annotations

import hashlib
import pickle
import random
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper, unwrap_vec_normalize

# Links between layers (restored by building the stack again) and native handles (restored below).
_SKIP = frozenset(
    {"env", "venv", "envs", "class_attributes", "ale", "_ale", "model", "data", "mujoco_renderer",
     "viewer", "renderer", "screen", "clock"}
)  # fmt: skip


@dataclass
class BaselineCheckpoint:
    """What the results store keeps: the snapshot bytes, their digest, the metric rows so far."""

    state: bytes
    digest: str
    rows: list[dict[str, Any]]


def digest(blob: bytes) -> str:
    """sha256 of a snapshot (checked on load)."""
    return hashlib.sha256(blob).hexdigest()


def _layers(venv: VecEnv) -> list[Any]:
    """Every object of the VecEnv stack, outermost first, then each env's wrapper chain."""
    out: list[Any] = []
    obj: Any = venv
    while isinstance(obj, VecEnvWrapper):
        out.append(obj)
        obj = obj.venv
    out.append(obj)
    for env in obj.envs:
        while isinstance(env, gym.Wrapper):
            out.append(env)
            env = env.env
        out.append(env)
    return out


def _env_state(venv: VecEnv) -> list[dict[str, Any]]:
    states = []
    for layer in _layers(venv):
        attrs = vars(layer)
        state = {k: v for k, v in attrs.items() if k not in _SKIP}
        if type(attrs.get("data")).__name__ == "MjData":
            state["__mjdata__"] = attrs["data"]
        if type(attrs.get("ale")).__name__ == "ALEInterface":
            state["__ale__"] = attrs["ale"].cloneState(include_rng=True)
        states.append(state)
    return states


def _restore_env_state(venv: VecEnv, states: list[dict[str, Any]]) -> None:
    layers = _layers(venv)
    if len(layers) != len(states):
        raise RuntimeError("checkpoint does not match the environment stack (config changed?)")
    for layer, saved in zip(layers, states, strict=True):
        state = dict(saved)
        mjdata = state.pop("__mjdata__", None)
        ale_state = state.pop("__ale__", None)
        vars(layer).update(state)
        if mjdata is not None:
            import mujoco

            mujoco.mj_copyData(layer.data, layer.model, mjdata)
        if ale_state is not None:
            layer.ale.restoreState(ale_state)


def snapshot(model: BaseAlgorithm, progress: Any) -> bytes:
    """Pickle the model, its environments, the global RNG states and ``progress`` together."""
    env, vec_normalize, logger = model.env, model._vec_normalize_env, model._logger
    assert env is not None
    model.env, model._vec_normalize_env, model._logger = None, None, None  # type: ignore[assignment]
    try:
        payload = {
            "model": model,
            "env_state": _env_state(env),
            "rng": (random.getstate(), np.random.get_state(), torch.get_rng_state()),
            "progress": progress,
        }
        return pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
    finally:
        model.env, model._vec_normalize_env, model._logger = env, vec_normalize, logger


def restore(blob: bytes, venv: VecEnv) -> tuple[BaseAlgorithm, Any]:
    """The model of a snapshot, attached to ``venv`` (built as before) with its state restored.

    The global RNG states are restored last: call this right before ``learn``.
    """
    payload = pickle.loads(blob)
    _restore_env_state(venv, payload["env_state"])
    model: BaseAlgorithm = payload["model"]
    model.env = venv
    model._vec_normalize_env = unwrap_vec_normalize(venv)
    py_state, np_state, torch_state = payload["rng"]
    random.setstate(py_state)
    np.random.set_state(np_state)
    torch.set_rng_state(torch_state)
    return model, payload["progress"]
