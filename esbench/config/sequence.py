"""Task sequences: the env config of every stage, and the checks a sequence must pass before work.

A sequence (``conf/sequence/<name>.yaml``, :class:`~esbench.config.schema.SequenceConfig`) lists its
stages; each stage's ``env`` dict holds only what differs from the run's ``env`` (a reward
weight, a dynamics setting, a game mode, a Meta-World task). Stage k's environment is the run's
``env`` node with stage k's overrides merged over it, not over stage k-1's, so every stage reads
at a glance as "the run's env, except ...". With ``sequence.stage_id_obs``, stage k's env also
gets ``stage_id: [k, K]`` (a one-hot stage id appended to the observation). Interpolations
(Atari's ``name: ${env.game}``) are resolved after the merge, so a stage that changes ``game``
also changes ``name`` and ``id``.

:func:`check_sequence` (registered with :func:`esbench.config.validate.register_check`) checks
what a config alone can say: stage names, budgets, unknown keys in a stage's ``env``, ranges. Checks
that must build environments (ids, dynamics, equal observation and action spaces) live in
:mod:`esbench.envs.checks`, a layer above.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib

from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import ConfigKeyError, OmegaConfBaseException, ValidationError

from esbench.config.errors import ConfigError
from esbench.config.schema import EnvConfig, SequenceConfig, StageConfig
from esbench.config.validate import check_fields, register_check

_ENV_KEYS = [f.name for f in dataclasses.fields(EnvConfig)]


def stage_label(cfg: DictConfig, k: int) -> str:
    """``sequence.stages[k] (name)``: how error messages name a stage."""
    name = OmegaConf.select(cfg, f"sequence.stages.{k}.name", default=None)
    return f"sequence.stages[{k}] ({name})" if name else f"sequence.stages[{k}]"


def _stage_env(cfg: DictConfig, k: int | None) -> DictConfig:
    """The run's ``env`` with stage k's overrides merged over it (k=None: none), resolved."""
    root = copy.deepcopy(cfg)
    if k is not None:
        overrides = root.sequence.stages[k].env
        try:
            with open_dict(root):
                root.env = OmegaConf.merge(root.env, overrides)
                if OmegaConf.select(root, "sequence.stage_id_obs", default=False):
                    root.env.stage_id = [k, len(root.sequence.stages)]
        except ConfigKeyError as e:
            key = str(e.key) if e.key is not None else "?"
            close = difflib.get_close_matches(key, _ENV_KEYS, n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise ConfigError(
                f"{stage_label(cfg, k)}: env.{key}: no such env key{hint}; allowed: {', '.join(_ENV_KEYS)}"
            ) from None
        except (ValidationError, OmegaConfBaseException) as e:
            key = str(getattr(e, "full_key", None) or "env")
            where = key if key.startswith("env") else f"env.{key}"
            msg = str(e).splitlines()[0]
            raise ConfigError(f"{stage_label(cfg, k)}: {where}: {msg}") from None
    try:
        resolved = OmegaConf.to_container(root.env, resolve=True)
    except OmegaConfBaseException as e:
        where = stage_label(cfg, k) if k is not None else "env"
        raise ConfigError(f"{where}: cannot resolve the env config: {str(e).splitlines()[0]}") from None
    env = OmegaConf.merge(OmegaConf.structured(EnvConfig), resolved)
    assert isinstance(env, DictConfig)
    return env


def stage_env_configs(cfg: DictConfig) -> list[DictConfig]:
    """One full, resolved env config per stage of ``cfg.sequence`` (``[cfg.env]`` without stages).

    Each is the run's ``env`` with that stage's ``env`` overrides merged over it, typed as
    :class:`~esbench.config.schema.EnvConfig` and detached from ``cfg`` (``make_env`` takes it as
    is). ``sequence.stage_timesteps`` and ``only_stage`` are the training loop's business: every
    stage is returned.

    Raises:
        ConfigError: A stage's ``env`` names a key EnvConfig does not have (close matches and the
            allowed keys are named), or a value of the wrong type.
    """
    stages = OmegaConf.select(cfg, "sequence.stages", default=None) or []
    if not stages:
        return [_stage_env(cfg, None)]
    return [_stage_env(cfg, k) for k in range(len(stages))]


@register_check
def check_sequence(cfg: DictConfig) -> None:
    """Stage names set and distinct, budgets and ranges valid, stage env keys known.

    A sequence run's stage budget comes from ``sequence.stage_timesteps`` (the sequence files read
    the budget preset's ``budget.stage_timesteps`` there); with neither set, a budget preset gives
    no stage budget and the run refuses rather than silently train each stage's own ``timesteps``
    (the published protocol's). ``sequence.stage_timesteps=null`` with a preset's stage budget
    set keeps the stages' own ``timesteps``.

    One line per failure, before any work (issue #14: "an unknown stage ..., a stage budget of zero
    or less: one line, exit 2").
    """
    seq = OmegaConf.select(cfg, "sequence", default=None)
    if seq is None:
        return
    check_fields(seq, SequenceConfig, "sequence")
    stages = seq.stages or []
    names: dict[str, int] = {}
    for k in range(len(stages)):
        check_fields(stages[k], StageConfig, f"sequence.stages[{k}]")
        if OmegaConf.is_missing(stages[k], "name"):
            raise ConfigError(f"sequence.stages[{k}].name must be set; allowed: a non-empty stage name")
        name = str(stages[k].name)
        if not name.strip():
            raise ConfigError(f"sequence.stages[{k}].name is empty; allowed: a non-empty stage name")
        if name in names:
            raise ConfigError(
                f"sequence.stages[{k}].name={name!r} repeats sequence.stages[{names[name]}].name; "
                "allowed: distinct stage names"
            )
        names[name] = k
        if int(stages[k].timesteps) == 0 and cfg.env.kind != "lm":
            raise ConfigError(
                f"sequence.stages[{k}].timesteps=0 is out of range; allowed: >= 1 (0 only on env=lm, "
                "for the stage the cached task-A model already trained)"
            )
    if stages and seq.stage_timesteps is None and OmegaConf.select(cfg, "budget.stage_timesteps") is None:
        scale = OmegaConf.select(cfg, "budget.scale", default="?")
        raise ConfigError(
            f"sequence.stage_timesteps is not set and budget={scale} gives no budget.stage_timesteps; "
            "allowed: sequence.stage_timesteps=N (N >= 1 timesteps per stage)"
        )
    only = seq.only_stage
    if only is not None and not 0 <= int(only) < max(len(stages), 1):
        raise ConfigError(
            f"sequence.only_stage={only} is out of range; allowed: 0 <= sequence.only_stage < "
            f"{max(len(stages), 1)} (the number of stages of sequence={seq.name})"
        )
    if stages:
        for k, env in enumerate(stage_env_configs(cfg)):
            try:
                check_fields(env, EnvConfig, "env")
            except ConfigError as e:
                raise ConfigError(f"{stage_label(cfg, k)}: {e}") from None
