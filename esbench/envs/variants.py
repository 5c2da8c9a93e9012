"""Stage variants: changes to the simulated world (``env.dynamics``) applied after construction.

A retention study trains stage after stage on environments that differ in their physics (issue #14:
a heavier Hopper, a CartPole with a longer pole). ``make_env`` builds the environment as
registered, then :func:`apply_dynamics` changes it in place, so ES workers and the SB3 baselines,
which both build their environments through ``make_env``, see the same world. The change lives in
the simulator's model (MuJoCo's ``MjModel``, CartPole's attributes), which ``reset`` never touches,
so it lasts for the life of the environment; building it again applies it again, identically.

MuJoCo (any env whose ``unwrapped.model`` is an ``mujoco.MjModel``: the Gymnasium MuJoCo tasks,
Meta-World through :mod:`esbench.envs.metaworld_compat`):

- ``body_mass_scale`` (> 0): every body's mass *and rotational inertia* times s, i.e. the density of
  every part times s. Scaling the mass alone would leave heavier limbs that turn as easily as
  before, a body no XML describes. The derived constants MuJoCo computes at compile time from
  masses (subtree masses, inverse weights used by the constraint solver, ``dof_M0``) are
  recomputed with ``mj_setConst``, and ``stat.meaninertia`` / ``stat.meanmass`` as the compiler
  computes them (mean of ``dof_M0``, mean body mass), so the model steps as one compiled from an
  XML with every density times s: on Hopper-v5 and Walker2d-v5 the two agree to 1e-13 after 1,000
  steps (tests/test_env_variants.py checks Hopper). Joint armature is not a mass and is unchanged.
- ``geom_friction_scale`` (>= 0): every geom's sliding friction (``geom_friction[:, 0]``) times s.
  MuJoCo combines two geoms' frictions with ``max`` by default, so every contact's sliding friction
  scales by s.
- ``gravity_z``: the vertical gravity ``opt.gravity[2]`` (m/s^2; Earth's -9.81 is the default).

CartPole (``gymnasium.envs.classic_control.CartPoleEnv``): ``gravity``, ``length`` (half the pole's
length, as Gymnasium names it), ``masspole``, ``masscart``, ``force_mag``. CartPole caches
``total_mass`` and ``polemass_length`` in its constructor; they are recomputed here.

Any other key, or any key on an environment that has none (Atari), is a ``ValueError`` naming the
key and the allowed keys.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np


@dataclass(frozen=True)
class DynamicsKey:
    """One ``env.dynamics`` setting: what it changes, its allowed range and how to apply it."""

    doc: str
    check: Callable[[float], bool]
    allowed: str  # the range, as the error message states it
    apply: Callable[[Any, float], None]  # (env.unwrapped, value) -> None


def _positive(v: float) -> bool:
    return v > 0


def _non_negative(v: float) -> bool:
    return v >= 0


def _any(v: float) -> bool:
    return True


def _scale_mass(env: Any, s: float) -> None:
    import mujoco

    model = env.model
    model.body_mass[:] *= s
    model.body_inertia[:] *= s  # same density change for every part: inertia scales with mass
    mujoco.mj_setConst(model, mujoco.MjData(model))  # subtree masses, invweight0, dof_M0, ...
    # The compiler's statistics (mj_setConst leaves them): the solver scales by meaninertia.
    model.stat.meaninertia = float(np.mean(model.dof_M0)) if model.nv else model.stat.meaninertia
    model.stat.meanmass = float(np.mean(model.body_mass[1:])) if model.nbody > 1 else model.stat.meanmass


def _scale_friction(env: Any, s: float) -> None:
    env.model.geom_friction[:, 0] *= s


def _set_gravity_z(env: Any, g: float) -> None:
    env.model.opt.gravity[2] = g


MUJOCO_DYNAMICS: dict[str, DynamicsKey] = {
    "body_mass_scale": DynamicsKey("every body's mass and inertia times s", _positive, "> 0", _scale_mass),
    "geom_friction_scale": DynamicsKey(
        "every geom's sliding friction times s", _non_negative, ">= 0", _scale_friction
    ),
    "gravity_z": DynamicsKey("vertical gravity (m/s^2)", _any, "finite", _set_gravity_z),
}
"""``env.dynamics`` keys of MuJoCo environments."""


def _cartpole_setter(attr: str) -> Callable[[Any, float], None]:
    def apply(env: Any, value: float) -> None:
        setattr(env, attr, float(value))

    return apply


CARTPOLE_DYNAMICS: dict[str, DynamicsKey] = {
    "gravity": DynamicsKey(
        "gravity (m/s^2, default 9.8)", _non_negative, ">= 0", _cartpole_setter("gravity")
    ),
    "length": DynamicsKey(
        "half the pole's length (m, default 0.5)", _positive, "> 0", _cartpole_setter("length")
    ),
    "masspole": DynamicsKey("pole mass (kg, default 0.1)", _positive, "> 0", _cartpole_setter("masspole")),
    "masscart": DynamicsKey("cart mass (kg, default 1.0)", _positive, "> 0", _cartpole_setter("masscart")),
    "force_mag": DynamicsKey("push force (N, default 10)", _positive, "> 0", _cartpole_setter("force_mag")),
}
"""``env.dynamics`` keys of Gymnasium's CartPole."""


def _recompute_cartpole(env: Any) -> None:
    """CartPole's constructor caches these two; its ``step`` reads the cached values."""
    env.total_mass = env.masspole + env.masscart
    env.polemass_length = env.masspole * env.length


def dynamics_family(env: gym.Env) -> tuple[str, dict[str, DynamicsKey]]:
    """``(family name, allowed keys)`` of an environment: MuJoCo, CartPole or none."""
    unwrapped = env.unwrapped
    try:
        import mujoco

        if isinstance(getattr(unwrapped, "model", None), mujoco.MjModel):
            return "MuJoCo", MUJOCO_DYNAMICS
    except ImportError:  # pragma: no cover - mujoco is a dependency
        pass
    from gymnasium.envs.classic_control.cartpole import CartPoleEnv

    if isinstance(unwrapped, CartPoleEnv):
        return "CartPole", CARTPOLE_DYNAMICS
    return type(unwrapped).__name__, {}


def apply_dynamics(env: gym.Env, dynamics: Mapping[str, Any] | None) -> gym.Env:
    """Apply ``env.dynamics`` to a freshly built environment, in place; return it.

    Args:
        env: The environment as ``gymnasium.make`` built it (wrappers allowed).
        dynamics: ``{key: value}`` (see the module docstring); empty or None changes nothing.

    Returns:
        ``env`` itself.

    Raises:
        ValueError: An unknown key (close matches and the allowed keys are named), a value out of
            range or not a finite number, or dynamics applied twice to one environment.
    """
    if not dynamics:
        return env
    unwrapped: Any = env.unwrapped
    if getattr(unwrapped, "_esbench_dynamics", None) is not None:
        raise ValueError("env.dynamics already applied to this environment (it would scale twice)")
    family, keys = dynamics_family(env)
    settings: dict[str, float] = {}
    for key, raw in dynamics.items():
        if key not in keys:
            allowed = ", ".join(keys) if keys else "none (this environment has no dynamics settings)"
            close = difflib.get_close_matches(str(key), list(keys), n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise ValueError(
                f"env.dynamics.{key}: no such setting for {family} environments{hint}; allowed: {allowed}"
            )
        try:
            value = float(raw)
        except (TypeError, ValueError):
            raise ValueError(f"env.dynamics.{key}={raw!r} is not a number") from None
        if not math.isfinite(value) or not keys[key].check(value):
            raise ValueError(
                f"env.dynamics.{key}={raw!r} is out of range; allowed: {key} {keys[key].allowed}"
            )
        settings[key] = value
    for key, value in settings.items():
        keys[key].apply(unwrapped, value)
    if family == "CartPole":
        _recompute_cartpole(unwrapped)
    unwrapped._esbench_dynamics = dict(settings)
    return env


class StageIdObservation(gym.ObservationWrapper):
    """A one-hot stage id appended to a flat observation (Continual World's convention: the task's
    one-hot id is part of the observation, so one policy can tell the stages of a sequence apart
    and solve stages whose rewards conflict). The observation space grows by the number of
    stages."""

    def __init__(self, env: gym.Env, index: int, count: int) -> None:
        super().__init__(env)
        space = env.observation_space
        if not isinstance(space, gym.spaces.Box) or len(space.shape) != 1:
            raise ValueError(
                f"env.stage_id needs a flat Box observation, got {space}; allowed: sequence.stage_id_obs "
                "only on vector-observation environments (MuJoCo, classic control)"
            )
        self.one_hot = np.zeros(count, dtype=space.dtype)
        self.one_hot[index] = 1
        # The new entries' bounds hold [0, 1] and keep a space with one bound for every entry
        # (MuJoCo's -inf..inf) uniform, so it still prints as one.
        low, high = min(float(space.low.min()), 0.0), max(float(space.high.max()), 1.0)
        self.observation_space = gym.spaces.Box(
            low=np.concatenate([space.low, np.full(count, low, space.dtype)]),
            high=np.concatenate([space.high, np.full(count, high, space.dtype)]),
            dtype=space.dtype,  # type: ignore[arg-type]
        )

    def observation(self, observation: Any) -> np.ndarray:
        """The observation with the stage's one-hot id after it."""
        return np.concatenate([np.asarray(observation, dtype=self.one_hot.dtype), self.one_hot])


def append_stage_id(env: gym.Env, stage_id: Any) -> gym.Env:
    """Wrap ``env`` in :class:`StageIdObservation` for ``stage_id = [k, K]``; empty or None: as it is.

    Raises:
        ValueError: ``stage_id`` is not two integers with ``0 <= k < K``, or the observation is not
            a flat Box.
    """
    if not stage_id:
        return env
    values = list(stage_id)
    if len(values) != 2 or not 0 <= int(values[0]) < int(values[1]):
        raise ValueError(f"env.stage_id={values}; allowed: [k, K] with 0 <= k < K (stage k of K)")
    return StageIdObservation(env, int(values[0]), int(values[1]))
