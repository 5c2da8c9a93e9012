"""Config checks for environments, registered with :func:`esbench.config.validate.register_check`.

Importing :mod:`esbench.envs` registers them (:func:`esbench.runner.load_components` does, for every
entry point), so they apply to every validated config. Each failure is one line naming the key, the
value and what is allowed.
An unknown game is reported by the env-id check itself (:func:`esbench.envs.atari.resolve_game`:
close matches first, then the valid names).
"""

from __future__ import annotations

import json
from typing import Any

from omegaconf import DictConfig, OmegaConf

from esbench.config.sequence import stage_env_configs, stage_label
from esbench.config.validate import ConfigError, register_check


@register_check
def check_env(cfg: DictConfig) -> None:
    """The environment id exists (close matches suggested); the CNN only on Atari frames."""
    from esbench.envs.factory import check_env_id, resolved_env_id

    if cfg.env.kind == "lm":  # not a Gymnasium id: prompts and a verifier (esbench.envs.lm)
        return
    try:
        check_env_id(resolved_env_id(cfg.env))
    except ValueError as e:
        raise ConfigError(str(e)) from None
    if cfg.policy.kind == "cnn" and cfg.env.kind != "atari":
        raise ConfigError(
            f"policy.kind=cnn needs an Atari env; env.kind={cfg.env.kind!r} (use policy.kind=mlp)"
        )


@register_check
def check_env_id_maps(cfg: DictConfig) -> None:
    """The keys of ``budget.stop_at_return_by_env`` are Gymnasium ids: a misspelled id
    (``HalfChetah-v5``) would silently never stop its run, so it is refused, with close matches."""
    import difflib

    from esbench.envs.factory import known_env_ids

    ids = known_env_ids()
    for env_id in cfg.budget.get("stop_at_return_by_env") or {}:
        if str(env_id).split(":")[-1] not in ids:
            close = difflib.get_close_matches(str(env_id), ids, n=3, cutoff=0.6)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise ConfigError(
                f"budget.stop_at_return_by_env.{env_id}: not a registered Gymnasium environment id{hint}; "
                "allowed: an id such as HalfCheetah-v5 or ALE/Pong-v5"
            )


#: The learners that train a language model (esbench.training.lm, esbench.training.lm_grpo).
LM_ALGORITHMS = ("openai_es", "eggroll", "grpo")
#: The tasks an env=lm stage may train (``env.kwargs.task``; esbench.training.lm).
LM_TASKS = ("countdown", "addition")


@register_check
def check_lm(cfg: DictConfig) -> None:
    """env=lm needs its ``lm`` block, within the ranges of :class:`esbench.config.lm.LMConfig`."""
    if cfg.env.kind != "lm":
        return
    from esbench.config import lm
    from esbench.config.validate import check_fields

    if OmegaConf.select(cfg, "lm", default=None) is None:
        raise ConfigError("env.kind=lm needs the lm block: use env=lm (conf/env/lm.yaml)")
    for name, schema in (
        ("model", lm.ModelConfig),
        ("pretrain", lm.PretrainConfig),
        ("task_a", lm.TaskAConfig),
        ("task_b", lm.TaskBConfig),
        ("decoding", lm.DecodingConfig),
        ("population", lm.PopulationConfig),
    ):
        check_fields(cfg.lm[name], schema, f"lm.{name}")
    algo = str(cfg.algo.name)
    if algo not in LM_ALGORITHMS:
        raise ConfigError(f"algo={algo} with env=lm; allowed: {', '.join(LM_ALGORITHMS)}")
    if algo != "grpo" and (not bool(cfg.algo.antithetic) or int(cfg.algo.population_size) % 2):
        raise ConfigError(
            f"algo.population_size={cfg.algo.population_size} algo.antithetic={cfg.algo.antithetic} "
            "with env=lm; allowed: algo.antithetic=true and an even algo.population_size"
        )
    easier = float(OmegaConf.select(cfg, "lm.pretrain.countdown_fraction", default=0.0))
    solved = float(OmegaConf.select(cfg, "lm.pretrain.solved_fraction", default=0.0))
    if easier + solved > 1:
        raise ConfigError(
            f"lm.pretrain.countdown_fraction={easier} plus "
            f"lm.pretrain.solved_fraction={solved} exceeds 1; allowed: shares of a batch "
            "that sum to at most 1 (the rest is task A)"
        )
    model = cfg.lm.model
    if model.hub_id is None and model.hidden_size % model.num_heads:
        raise ConfigError(
            f"lm.model.hidden_size={model.hidden_size} is not a multiple of "
            f"lm.model.num_heads={model.num_heads}"
        )


@register_check
def check_atari_policy(cfg: DictConfig) -> None:
    """Atari frames need the CNN; the CNN has no use for observation normalization."""
    if cfg.env.kind != "atari":
        return
    if cfg.policy.kind != "cnn":
        raise ConfigError(
            f"policy.kind={cfg.policy.kind!r} cannot act on Atari frames (env.kind='atari'); "
            "allowed: policy.kind=cnn"
        )
    if cfg.policy.obs_norm:
        raise ConfigError(
            "policy.obs_norm=true has no effect with policy.kind=cnn (virtual batch norm normalizes); "
            "allowed: policy.obs_norm=false"
        )


@register_check
def check_atari_kwargs(cfg: DictConfig) -> None:
    """``env.kwargs`` may not set what the Atari fields control (frame skip, sticky actions ...)."""
    if cfg.env.kind != "atari":
        return
    from esbench.envs.atari import _CONTROLLED_KWARGS

    clash = sorted(set(cfg.env.kwargs or {}) & set(_CONTROLLED_KWARGS))
    if clash:
        fields = "env.frame_skip, env.sticky_action_prob, env.full_action_space"
        raise ConfigError(f"env.kwargs may not set {', '.join(clash)}; allowed: use {fields} instead")


_SPACES: dict[str, tuple[Any, Any]] = {}
"""(observation space, action space) per env config already built by a check in this process: a
sweep validates every job before the first runs, and its jobs share a handful of env configs."""


def _env_spaces(env_cfg: DictConfig, where: str) -> tuple[Any, Any]:
    """Build ``env_cfg``'s environment (never stepped) for its spaces; a failure is one line."""
    from esbench.envs.factory import make_env

    key = json.dumps(OmegaConf.to_container(env_cfg, resolve=True), sort_keys=True, default=str)
    if key not in _SPACES:
        try:
            env = make_env(env_cfg, training=False)
        except Exception as e:  # any failure to build means the config cannot run
            msg = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise ConfigError(
                f"{where}: cannot build env.id={env_cfg.id}: {msg}{_ale_variants(env_cfg)}"
            ) from None
        _SPACES[key] = (env.observation_space, env.action_space)
        env.close()
    return _SPACES[key]


def _ale_variants(env_cfg: DictConfig) -> str:
    """``; allowed: mode in [...], difficulty in [...]`` for an Atari env that sets either kwarg."""
    kwargs = env_cfg.kwargs or {}
    if env_cfg.kind != "atari" or not {"mode", "difficulty"} & set(kwargs):
        return ""
    import gymnasium as gym

    from esbench.envs.atari import resolve_game

    try:
        env = gym.make(resolve_game(env_cfg.game or env_cfg.id))
        ale = env.unwrapped.ale  # type: ignore[attr-defined]
        modes, difficulties = list(ale.getAvailableModes()), list(ale.getAvailableDifficulties())
        env.close()
    except Exception:  # the game itself does not build: nothing to add
        return ""
    return f"; allowed: mode in {modes}, difficulty in {difficulties}"


#: ALE v5's own episode cap in emulator frames (30 minutes of play): the paper's evaluation cap.
ALE_MAX_EPISODE_FRAMES = 108_000


@register_check
def check_eval_frame_cap(cfg: DictConfig) -> None:
    """``env.eval_max_episode_frames`` is an Atari evaluation cap, at most ALE's own 108,000 frames."""
    cap = cfg.env.get("eval_max_episode_frames")
    if cap is None:
        return
    if cfg.env.kind != "atari":
        raise ConfigError(
            f"env.eval_max_episode_frames={cap}: an evaluation cap in emulator frames applies to Atari "
            f"only (env.kind={cfg.env.kind!r}); allowed: null (use env.max_episode_steps)"
        )
    limit = int((cfg.env.get("kwargs") or {}).get("max_num_frames_per_episode", ALE_MAX_EPISODE_FRAMES))
    if not 1 <= int(cap) <= limit:
        raise ConfigError(
            f"env.eval_max_episode_frames={cap}: ALE ends every episode at {limit:,} frames; "
            f"allowed: null or an integer in [1, {limit}] (the paper's cap: {ALE_MAX_EPISODE_FRAMES})"
        )


@register_check
def check_env_dynamics(cfg: DictConfig) -> None:
    """``env.dynamics`` names settings the environment has, with values in range.

    Builds the env (never stepped) when ``env.dynamics`` is set, as
    :func:`esbench.envs.variants.apply_dynamics` knows the allowed keys only from the built
    simulator (MuJoCo model or CartPole). A sequence's stages are checked by
    :func:`check_stage_envs`.
    """
    if OmegaConf.select(cfg, "sequence.stages", default=None) or not cfg.env.get("dynamics"):
        return
    _env_spaces(stage_env_configs(cfg)[0], "env")


def _check_lm_stage_tasks(cfg: DictConfig) -> None:
    """Every stage of an env=lm sequence names a task (``env.kwargs.task``) the LM learners know."""
    for k, env_cfg in enumerate(stage_env_configs(cfg)):
        task = (env_cfg.get("kwargs") or {}).get("task", "countdown")
        if task not in LM_TASKS:
            raise ConfigError(
                f"{stage_label(cfg, k)}: env.kwargs.task={task!r}; allowed: {', '.join(LM_TASKS)}"
            )


@register_check
def check_stage_envs(cfg: DictConfig) -> None:
    """Every stage's environment exists, builds, and has stage 0's observation and action spaces.

    A policy trained on stage 0 acts on every later stage, and every stage is evaluated all along
    (issue #14): stages whose spaces differ cannot share one parameter vector. Each stage's env is
    built once per process (never stepped), as the DQN discrete-action check does.
    """
    if not OmegaConf.select(cfg, "sequence.stages", default=None):
        return
    if cfg.env.kind == "lm":  # prompts and a verifier, no spaces: each stage names its task
        _check_lm_stage_tasks(cfg)
        return
    from esbench.envs.factory import check_env_id, resolved_env_id

    first: tuple[Any, Any] | None = None
    for k, env_cfg in enumerate(stage_env_configs(cfg)):
        label = stage_label(cfg, k)
        try:
            check_env_id(resolved_env_id(env_cfg))
        except ValueError as e:
            raise ConfigError(f"{label}: {e}") from None
        spaces = _env_spaces(env_cfg, label)
        if first is None:
            first = spaces
            continue
        for what, mine, theirs in (("observation", spaces[0], first[0]), ("action", spaces[1], first[1])):
            if mine != theirs:
                raise ConfigError(
                    f"{label}: {what} space {mine} differs from stage 0's {theirs}; "
                    "allowed: stages with stage 0's observation and action spaces"
                )
