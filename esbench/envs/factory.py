"""``make_env(cfg)``: the one environment factory for ES and the RL baselines alike.

DESIGN.md promise 3: both sides see the same environments and wrappers. MuJoCo and classic-control
tasks are any registered Gymnasium id; Atari games go through :mod:`esbench.envs.atari` (Mnih et
al. 2016 preprocessing). Ids are checked against Gymnasium's registry before any work starts, with
close matches in the error message.
"""

from __future__ import annotations

import difflib
import importlib
import logging
from typing import Any

import gymnasium as gym

from esbench.envs.variants import append_stage_id, apply_dynamics

log = logging.getLogger(__name__)

_REGISTERED = False
_MUJOCO_WARNED: set[str] = set()
# Gymnasium's own half_cheetah.xml uses this attribute; nothing a user can act on.
_MUJOCO_ASSET_NOISE = ("'settotalmass' is deprecated",)


def _mujoco_warning(message: str) -> None:
    """MuJoCo's C warnings, through logging and once per distinct message per process.

    MuJoCo's default handler prints every warning to the terminal, once per model compiled: a
    sweep of HalfCheetah runs printed the same asset deprecation hundreds of times.
    """
    if message in _MUJOCO_WARNED:
        return
    _MUJOCO_WARNED.add(message)
    known_noise = any(fragment in message for fragment in _MUJOCO_ASSET_NOISE)
    log.log(logging.DEBUG if known_noise else logging.WARNING, "MuJoCo: %s", message)


def _route_mujoco_warnings() -> None:
    try:
        import mujoco
    except ImportError:  # pragma: no cover - mujoco is a dependency
        return
    mujoco.set_mju_user_warning(_mujoco_warning)


def _ensure_registered() -> None:
    """Register ALE's and esbench's environments with Gymnasium once per process."""
    global _REGISTERED
    if _REGISTERED:
        return
    try:
        import ale_py

        gym.register_envs(ale_py)
    except ImportError:  # pragma: no cover - ale-py is a dependency
        pass
    _route_mujoco_warnings()
    _REGISTERED = True


def known_env_ids() -> list[str]:
    """Every environment id Gymnasium knows here (MuJoCo, classic control, ALE, imported modules')."""
    _ensure_registered()
    return sorted(gym.registry.keys())


def check_env_id(env_id: str) -> None:
    """Raise ``ValueError`` naming close matches if ``env_id`` is not a registered id.

    ``module:id`` (Gymnasium's form for environments a package registers on import) imports the
    module first; a module that does not import is named in the error.
    """
    if ":" in env_id:
        module, _, env_id = env_id.partition(":")
        try:
            importlib.import_module(module)
        except ImportError as e:
            raise ValueError(f"env.id={module}:{env_id}: cannot import module {module!r} ({e})") from None
    ids = known_env_ids()
    if env_id in ids:
        return
    close = difflib.get_close_matches(env_id, ids, n=5, cutoff=0.6)
    mujoco = [i for i in ids if i.endswith("-v5") and "/" not in i][:12]
    hint = f"close matches: {', '.join(close)}" if close else f"e.g. {', '.join(mujoco)}"
    raise ValueError(f"env.id={env_id!r} is not a registered Gymnasium environment; {hint}")


def resolved_env_id(env_cfg: Any) -> str:
    """The Gymnasium id a config names (``env.game`` wins for Atari)."""
    game = getattr(env_cfg, "game", None)
    if env_cfg.kind == "atari" and game:
        from esbench.envs.atari import resolve_game

        return resolve_game(game)
    return str(env_cfg.id)


def make_env(env_cfg: Any, *, training: bool = True) -> gym.Env:
    """Build the environment a config names.

    Args:
        env_cfg: an ``EnvConfig`` (or a DictConfig with its fields).
        training: Atari only: clip rewards (RL training only; evaluation is never clipped).

    ``env_cfg.dynamics`` (mass, friction, gravity, ...) is applied to the built env by
    :func:`esbench.envs.variants.apply_dynamics`; ``env_cfg.stage_id`` (``[k, K]``, a task
    sequence's ``sequence.stage_id_obs``) appends a one-hot stage id to the observation
    (:func:`esbench.envs.variants.append_stage_id`).
    """
    _ensure_registered()
    dynamics = getattr(env_cfg, "dynamics", None)
    stage_id = getattr(env_cfg, "stage_id", None)
    if env_cfg.kind == "atari":
        from esbench.envs.atari import make_atari_env

        env = apply_dynamics(make_atari_env(env_cfg, training=training), dynamics)
        return append_stage_id(env, stage_id)
    kwargs = dict(env_cfg.kwargs or {})
    if env_cfg.max_episode_steps is not None:
        kwargs["max_episode_steps"] = int(env_cfg.max_episode_steps)
    env = apply_dynamics(gym.make(str(env_cfg.id), disable_env_checker=True, **kwargs), dynamics)
    return append_stage_id(env, stage_id)
