"""Data-only checkpoints of a baseline run that resume *exactly*: model, environments, random streams.

SB3's ``model.save`` keeps parameters and optimizer state but not the environments' state (a
MuJoCo simulation mid-episode, an Atari emulator, Monitor and VecNormalize counters) nor the global
random streams SB3 draws from (python ``random``, numpy's global RNG for minibatch permutations and
DQN's replay sampling, torch's for action sampling, each space's own generator for DQN's
epsilon-greedy actions). Restoring only what ``save`` keeps gives a statistically equivalent run,
not the same one. And a checkpoint must never run code when loaded: a results directory may come
from anyone, and a matching run id resumes from it automatically. So a snapshot holds *state as
data* (:mod:`esbench.utils.statefile`: arrays in an ``.npz``, structure in JSON), and resuming
rebuilds the model and its environments from the config exactly as a fresh run does, then
overwrites their state in place:

* the policy's ``state_dict`` and its optimizers' ``state_dict``\\ s, tensors as arrays;
* every attribute of the model and of each layer of the VecEnv stack (VecNormalize -> DummyVecEnv
  -> Monitor -> gymnasium wrappers -> base env) whose value is data (numbers, strings, arrays and
  containers of these: counters, ``_last_obs``, episode buffers, frame stacks). Inside a few known
  holders of state, the same again, in place: replay and rollout buffers, VecNormalize's running
  statistics, gymnasium spaces (their generators). numpy ``Generator``\\ s are saved as their
  bit-generator state. Attributes that are neither (classes, schedules, networks, links between
  layers, the ``EnvSpec``) are *structure*, built again from the config, and not saved;
* MuJoCo's ``MjData`` as its full integration state (``mj_getState`` with
  ``mjSTATE_INTEGRATION``: time, qpos, qvel, act, warm start, controls, applied forces, ...) plus
  every other array of it that the rebuilt ``MjData`` holds at the same shape, so the derived
  quantities an environment reads before its next step (Ant's reward reads ``xpos``, Humanoid's
  ``xipos``) are the saved ones. Recomputing them from the restored ``qpos`` would not do: after
  ``mj_step`` they belong to the state before the last integration step (tested: Ant resumed
  from the integration state alone diverges). Arrays sized by the current contacts and
  constraints are rebuilt by the next ``mj_step`` and skipped when their shapes differ;
* the ALE emulator as ``cloneState(include_rng=True).serialize()`` bytes, restored with
  ``restoreState``;
* the python, numpy and torch global RNG states, and the trainer's :class:`Progress`.

Snapshots are taken at the start of a rollout (``on_rollout_start``): after the previous update,
before any step of the next rollout, where nothing is half-done. Resuming calls
``learn(..., reset_num_timesteps=False)``, which re-enters ``collect_rollouts`` at exactly that
point. On one machine and torch build the resumed run is bit-identical to an uninterrupted one
(tested through the CLI on CartPole with DQN, and by snapshot round trips with DQN on CartPole, TRPO on Ant
and A2C on Pong). Wall-clock and CPU columns differ, as for ES.
"""

from __future__ import annotations

import hashlib
import random
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.buffers import BaseBuffer
from stable_baselines3.common.running_mean_std import RunningMeanStd
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper

from esbench.measures.distribution import ActionDist
from esbench.tracking.stage_states import StageStates
from esbench.training.checkpoint import StateKind
from esbench.training.sb3_progress import Progress
from esbench.utils import statefile

#: Objects whose state is restored in place, attribute by attribute, into the rebuilt object.
_HOLDERS: tuple[type, ...] = (BaseBuffer, RunningMeanStd, gym.spaces.Space)
#: numpy bit generators a saved ``Generator`` may name.
_BIT_GENERATORS: dict[str, type[np.random.BitGenerator]] = {
    c.__name__: c
    for c in (np.random.PCG64, np.random.PCG64DXSM, np.random.MT19937, np.random.Philox, np.random.SFC64)
}


@dataclass(frozen=True)
class TensorData:
    """A torch tensor as an array (CPU; dtype and shape kept)."""

    array: np.ndarray


@dataclass(frozen=True)
class RngState:
    """A ``numpy.random.Generator``: its bit generator's name and state (``bit_generator.state``)."""

    state: dict[str, Any]


@dataclass(frozen=True)
class HolderState:
    """The saved attributes of an object restored in place (see :data:`_HOLDERS`)."""

    attrs: dict[str, Any]


@dataclass(frozen=True)
class MjDataState:
    """A MuJoCo ``MjData``: integration state (``mjSTATE_INTEGRATION``) and its other arrays by name."""

    integration: np.ndarray
    arrays: dict[str, np.ndarray]


@dataclass(frozen=True)
class AleState:
    """An ALE emulator: ``cloneState(include_rng=True).serialize()``."""

    blob: bytes


@dataclass(frozen=True)
class GlobalRng:
    """The global random streams SB3 draws from."""

    python: tuple[Any, ...]  # random.getstate()
    numpy: tuple[Any, ...]  # np.random.get_state()
    torch: np.ndarray  # torch.get_rng_state(), uint8


@dataclass
class Snapshot:
    """One snapshot: everything of a baseline run that is not rebuilt from its config."""

    model: dict[str, Any]  # the SB3 model's attributes (see the module docstring)
    policy: dict[str, TensorData]  # model.policy.state_dict()
    optimizers: dict[str, Any]  # attribute of the policy -> that optimizer's state_dict
    layers: list[str]  # class of each VecEnv layer, outermost first (checked on restore)
    env: list[dict[str, Any]]  # each layer's attributes
    rng: GlobalRng
    progress: Any


_SNAPSHOT_TYPES: tuple[type, ...] = (
    Snapshot, TensorData, RngState, HolderState, MjDataState, AleState, GlobalRng, StageStates, ActionDist
)  # fmt: skip


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


# --- capture --------------------------------------------------------------------------------------


def _is_data(v: Any) -> bool:
    """Whether a state file holds ``v`` as it is (the exact types of :mod:`esbench.utils.statefile`)."""
    t = type(v)
    if v is None or t in (bool, int, float, str, bytes) or isinstance(v, np.generic):
        return True
    if t is np.ndarray:
        return not v.dtype.hasobject
    if t in (list, tuple, deque):
        return all(_is_data(x) for x in v)
    if t in (dict, OrderedDict):
        return all(_is_data(k) and _is_data(x) for k, x in v.items())
    return False


def _capture(v: Any) -> tuple[bool, Any]:
    """(saved?, what to save) for one attribute value; structure is not saved."""
    if isinstance(v, np.random.Generator):
        return True, RngState(dict(v.bit_generator.state))
    if type(v).__name__ == "MjData":
        return True, _capture_mjdata(v)
    if type(v).__name__ == "ALEInterface":
        return True, AleState(v.cloneState(include_rng=True).serialize())
    if isinstance(v, _HOLDERS):
        return True, HolderState(_capture_attrs(v))
    if _is_data(v):
        return True, v
    return False, None


def _capture_attrs(obj: Any) -> dict[str, Any]:
    out = {}
    for name, value in vars(obj).items():
        saved, state = _capture(value)
        if saved:
            out[name] = state
    return out


def _capture_mjdata(data: Any) -> MjDataState:
    import mujoco

    spec = mujoco.mjtState.mjSTATE_INTEGRATION
    state = np.empty(mujoco.mj_stateSize(data.model, spec), dtype=np.float64)
    mujoco.mj_getState(data.model, data, state, spec)
    arrays = {}
    for name in dir(data):
        if not name.startswith("_"):
            value = getattr(data, name)
            if type(value) is np.ndarray:
                arrays[name] = value.copy()
    return MjDataState(state, arrays)


def _tensors_to_data(v: Any) -> Any:
    """An optimizer ``state_dict`` with every tensor as :class:`TensorData`."""
    if isinstance(v, torch.Tensor):
        return TensorData(v.detach().cpu().numpy().copy())
    if type(v) is dict:
        return {k: _tensors_to_data(x) for k, x in v.items()}
    if type(v) in (list, tuple):
        return type(v)(_tensors_to_data(x) for x in v)
    return v


def optimizers(model: BaseAlgorithm) -> dict[str, torch.optim.Optimizer]:
    """The policy's optimizers by attribute name (``optimizer``; TRPO's value optimizer too)."""
    return {k: v for k, v in vars(model.policy).items() if isinstance(v, torch.optim.Optimizer)}


def snapshot(model: BaseAlgorithm, progress: Any) -> bytes:
    """The state of ``model``, its environments, the global RNGs and ``progress``, as state-file bytes."""
    env = model.get_env()
    assert env is not None
    layers = _layers(env)
    np_state = np.random.get_state()  # legacy form: ('MT19937', keys, pos, has_gauss, cached_gaussian)
    assert isinstance(np_state, tuple)
    snap = Snapshot(
        model=_capture_attrs(model),
        policy={k: TensorData(t.detach().cpu().numpy().copy()) for k, t in model.policy.state_dict().items()},
        optimizers={k: _tensors_to_data(o.state_dict()) for k, o in optimizers(model).items()},
        layers=[_class_name(layer) for layer in layers],
        env=[_capture_attrs(layer) for layer in layers],
        rng=GlobalRng(random.getstate(), np_state, torch.get_rng_state().numpy().copy()),
        progress=progress,
    )
    return statefile.dumps(snap, (*_SNAPSHOT_TYPES, Progress))


def _class_name(obj: Any) -> str:
    return statefile.qualified_name(type(obj))


# --- restore --------------------------------------------------------------------------------------


class SnapshotMismatch(ValueError):
    """A snapshot that does not fit the model and environments built from the config."""


def load_snapshot(blob: bytes) -> Snapshot:
    """Parse snapshot bytes (no code runs).

    Raises:
        statefile.StateFileError: the bytes are not a readable state file.
        SnapshotMismatch: they hold something else than a baseline snapshot.
    """
    snap = statefile.loads(blob, (*_SNAPSHOT_TYPES, Progress))
    if not isinstance(snap, Snapshot) or not isinstance(snap.progress, Progress):
        raise SnapshotMismatch("not a baseline snapshot")
    return snap


def _check_snapshot(blob: bytes) -> None:
    """A checkpoint's snapshot parses as a baseline snapshot (checked on the driver, in one line,
    before the task starts)."""
    load_snapshot(blob)


#: A baseline checkpoint's state for the resume checks (:mod:`esbench.training.checkpoint`): the
#: snapshot's bytes, a state file of its own, so the checkpoint file holds only the envelope.
SB3_STATE = StateKind(
    name="a baseline", state_type=bytes, types=(), digest=digest, word="snapshot", check=_check_snapshot
)
#: The dataclasses a baseline checkpoint file may hold.
CHECKPOINT_TYPES: tuple[type, ...] = SB3_STATE.file_types


def restore(blob: bytes, model: BaseAlgorithm) -> Any:
    """Overwrite ``model`` (built from the config as for a fresh run, its environments attached) with
    the state in ``blob``; returns the snapshot's progress.

    The global RNG states are restored last: call this right before ``learn``.

    Raises:
        statefile.StateFileError: the bytes are not a readable snapshot.
        SnapshotMismatch: the snapshot does not fit this model or environment stack.
    """
    snap = load_snapshot(blob)
    env = model.get_env()
    assert env is not None
    layers = _layers(env)
    if snap.layers != [_class_name(layer) for layer in layers]:
        raise SnapshotMismatch("its environment stack differs from the one this config builds")
    model.policy.load_state_dict({k: torch.from_numpy(t.array.copy()) for k, t in snap.policy.items()})
    built = optimizers(model)
    if set(snap.optimizers) != set(built):
        raise SnapshotMismatch("its optimizers differ from the model's")
    for name, state in snap.optimizers.items():
        built[name].load_state_dict(_data_to_tensors(state))
    _restore_attrs(model, snap.model)
    for layer, attrs in zip(layers, snap.env, strict=True):
        _restore_attrs(layer, attrs)
    random.setstate(snap.rng.python)
    np.random.set_state(snap.rng.numpy)
    torch.set_rng_state(torch.from_numpy(snap.rng.torch.copy()))
    return snap.progress


def _data_to_tensors(v: Any) -> Any:
    if isinstance(v, TensorData):
        return torch.from_numpy(v.array.copy())
    if type(v) is dict:
        return {k: _data_to_tensors(x) for k, x in v.items()}
    if type(v) in (list, tuple):
        return type(v)(_data_to_tensors(x) for x in v)
    return v


def _restore_attrs(obj: Any, attrs: dict[str, Any]) -> None:
    for name, saved in attrs.items():
        if not isinstance(name, str) or not name.isidentifier() or name.startswith("__"):
            raise SnapshotMismatch(f"bad attribute name {str(name)[:40]!r}")
        current = getattr(obj, name, None)
        if isinstance(saved, HolderState):
            if not isinstance(current, _HOLDERS):
                raise SnapshotMismatch(f"{type(obj).__name__}.{name} holds no state to restore")
            _restore_attrs(current, saved.attrs)
        elif isinstance(saved, MjDataState):
            _restore_mjdata(current, saved)
        elif isinstance(saved, AleState):
            import ale_py

            ale: Any = current
            if type(ale).__name__ != "ALEInterface":
                raise SnapshotMismatch(f"{type(obj).__name__}.{name} is not an ALE emulator")
            ale.restoreState(ale_py.ALEState(saved.blob))
        elif isinstance(saved, RngState):
            setattr(obj, name, _generator(saved))
        else:
            setattr(obj, name, saved)


def _generator(saved: RngState) -> np.random.Generator:
    name = saved.state.get("bit_generator") if isinstance(saved.state, dict) else None
    bit_generator = _BIT_GENERATORS.get(name) if isinstance(name, str) else None
    if bit_generator is None:
        raise SnapshotMismatch(f"unknown bit generator {str(name)[:40]!r}")
    gen = np.random.Generator(bit_generator())
    try:
        gen.bit_generator.state = saved.state
    except (TypeError, ValueError, KeyError) as e:
        raise SnapshotMismatch(f"bad generator state ({e})") from None
    return gen


def _restore_mjdata(data: Any, saved: MjDataState) -> None:
    import mujoco

    if type(data).__name__ != "MjData":
        raise SnapshotMismatch("a MuJoCo state for an environment without MuJoCo")
    spec = mujoco.mjtState.mjSTATE_INTEGRATION
    if saved.integration.shape != (mujoco.mj_stateSize(data.model, spec),):
        raise SnapshotMismatch("its MuJoCo state has another size than this model's")
    mujoco.mj_setState(data.model, data, np.ascontiguousarray(saved.integration, dtype=np.float64), spec)
    for name, array in saved.arrays.items():
        target = getattr(data, name, None) if isinstance(name, str) and not name.startswith("_") else None
        # arrays sized by the current contacts/constraints are rebuilt by the next mj_step: skip those
        if type(target) is np.ndarray and target.shape == array.shape and target.flags.writeable:
            target[...] = array
