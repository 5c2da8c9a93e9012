"""Config schemas of the RL baselines (TRPO, A2C, PPO, DQN) and their per-env-kind resolution.

Each dataclass is the schema of ``conf/algo/<name>.yaml``; field constraints (``gt``, ``ge``, ``le``,
``choices``) are checked by :func:`esbench.config.validate.check_fields`. Defaults are the tuned
hyperparameters of rl-baselines3-zoo (``hyperparams/{trpo,a2c,ppo,dqn}.yml``, DLR-RM/rl-baselines3-zoo);
the YAML files cite the entry each value comes from.

Per-env-kind differences are explicit: the plain fields hold the values for MuJoCo (and ``custom``
envs, such as the tests' fault-injection envs, which wrap MuJoCo tasks); ``classic_overrides`` and
``atari_overrides`` replace some of them when ``env.kind`` is ``classic`` or ``atari``. A per-kind
value wins over the plain field, so to change it from the command line set the override, e.g.
``algo.atari_overrides.n_envs=8``. :func:`resolve_hparams` returns the values a run actually uses.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

from omegaconf import DictConfig, OmegaConf

from esbench.config.errors import ConfigError
from esbench.config.registry import get_algorithm
from esbench.config.schema import _c
from esbench.config.validate import check_fields


@dataclass
class TRPOConfig:
    """TRPO (Schulman et al. 2015), sb3-contrib's ``TRPO``: zoo ``trpo.yml`` MuJoCo entries."""

    #: Hyperparameters passed to the SB3 constructor as they are (besides learning_rate, gamma).
    sb3_keys: ClassVar[tuple[str, ...]] = (
        "n_steps",
        "batch_size",
        "gae_lambda",
        "cg_max_steps",
        "cg_damping",
        "line_search_shrinking_factor",
        "line_search_max_iter",
        "n_critic_updates",
        "target_kl",
        "sub_sampling_factor",
        "normalize_advantage",
    )

    name: str = "trpo"
    n_envs: int = _c(2, ge=1)
    normalize: bool = True  # VecNormalize observations and rewards (zoo `normalize: true`)
    learning_rate: float = _c(1e-3, gt=0.0)  # value-function optimizer (TRPO's policy step is the KL)
    lr_schedule: str = _c("constant", choices=("constant", "linear"))
    n_steps: int = _c(1024, ge=1)  # per env per update
    batch_size: int = _c(128, ge=2)  # critic minibatch
    gamma: float = _c(0.99, ge=0.0, le=1.0)
    gae_lambda: float = _c(0.95, ge=0.0, le=1.0)
    cg_max_steps: int = _c(25, ge=1)
    cg_damping: float = _c(0.1, ge=0.0)
    line_search_shrinking_factor: float = _c(0.8, gt=0.0, lt=1.0)
    line_search_max_iter: int = _c(10, ge=1)
    n_critic_updates: int = _c(20, ge=1)
    target_kl: float = _c(0.01, gt=0.0)  # the trust-region size
    sub_sampling_factor: int = _c(1, ge=1)
    normalize_advantage: bool = True
    classic_overrides: dict[str, Any] = field(default_factory=dict)
    atari_overrides: dict[str, Any] = field(default_factory=dict)


@dataclass
class A2CConfig:
    """A2C, the synchronous A3C (Mnih et al. 2016), SB3's ``A2C``: zoo ``a2c.yml``."""

    #: Hyperparameters passed to the SB3 constructor as they are (besides learning_rate, gamma).
    sb3_keys: ClassVar[tuple[str, ...]] = (
        "n_steps",
        "gae_lambda",
        "ent_coef",
        "vf_coef",
        "max_grad_norm",
        "use_rms_prop",
        "rms_prop_eps",
        "normalize_advantage",
    )

    name: str = "a2c"
    n_envs: int = _c(1, ge=1)
    normalize: bool = True
    learning_rate: float = _c(7e-4, gt=0.0)
    lr_schedule: str = _c("constant", choices=("constant", "linear"))
    n_steps: int = _c(5, ge=1)
    gamma: float = _c(0.99, ge=0.0, le=1.0)
    gae_lambda: float = _c(1.0, ge=0.0, le=1.0)
    ent_coef: float = _c(0.0, ge=0.0)
    vf_coef: float = _c(0.5, ge=0.0)
    max_grad_norm: float = _c(0.5, gt=0.0)
    use_rms_prop: bool = True
    rms_prop_eps: float = _c(1e-5, gt=0.0)
    rmsprop_tf_like: bool = False  # SB3's RMSpropTFLike (TF1 semantics, the zoo's Atari choice)
    normalize_advantage: bool = False
    classic_overrides: dict[str, Any] = field(default_factory=dict)
    atari_overrides: dict[str, Any] = field(default_factory=dict)


@dataclass
class PPOConfig:
    """PPO (Schulman et al. 2017), SB3's ``PPO``: zoo ``ppo.yml``."""

    #: Hyperparameters passed to the SB3 constructor as they are (besides learning_rate, gamma).
    sb3_keys: ClassVar[tuple[str, ...]] = (
        "n_steps",
        "batch_size",
        "n_epochs",
        "gae_lambda",
        "ent_coef",
        "vf_coef",
        "max_grad_norm",
        "target_kl",
        "normalize_advantage",
    )

    name: str = "ppo"
    n_envs: int = _c(1, ge=1)
    normalize: bool = True
    learning_rate: float = _c(3e-4, gt=0.0)
    lr_schedule: str = _c("constant", choices=("constant", "linear"))
    n_steps: int = _c(2048, ge=1)
    batch_size: int = _c(64, ge=2)
    n_epochs: int = _c(10, ge=1)
    gamma: float = _c(0.99, ge=0.0, le=1.0)
    gae_lambda: float = _c(0.95, ge=0.0, le=1.0)
    clip_range: float = _c(0.2, gt=0.0)
    clip_range_schedule: str = _c("constant", choices=("constant", "linear"))
    ent_coef: float = _c(0.0, ge=0.0)
    vf_coef: float = _c(0.5, ge=0.0)
    max_grad_norm: float = _c(0.5, gt=0.0)
    target_kl: float | None = _c(None, gt=0.0)  # None: no early stop on KL
    normalize_advantage: bool = True
    classic_overrides: dict[str, Any] = field(default_factory=dict)
    atari_overrides: dict[str, Any] = field(default_factory=dict)


@dataclass
class DQNConfig:
    """DQN (Mnih et al. 2015), SB3's ``DQN``: zoo ``dqn.yml``. Discrete actions only.

    DQN cannot act in MuJoCo, so its plain fields hold the classic-control values (zoo CartPole-v1).
    """

    #: Hyperparameters passed to the SB3 constructor as they are (besides learning_rate, gamma).
    sb3_keys: ClassVar[tuple[str, ...]] = (
        "buffer_size",
        "learning_starts",
        "batch_size",
        "tau",
        "train_freq",
        "gradient_steps",
        "target_update_interval",
        "exploration_fraction",
        "exploration_initial_eps",
        "exploration_final_eps",
        "max_grad_norm",
        "optimize_memory_usage",
    )

    name: str = "dqn"
    n_envs: int = _c(1, ge=1)
    normalize: bool = False
    learning_rate: float = _c(2.3e-3, gt=0.0)
    lr_schedule: str = _c("constant", choices=("constant", "linear"))
    buffer_size: int = _c(100_000, ge=1)
    learning_starts: int = _c(1000, ge=0)
    batch_size: int = _c(64, ge=1)
    tau: float = _c(1.0, ge=0.0, le=1.0)
    gamma: float = _c(0.99, ge=0.0, le=1.0)
    train_freq: int = _c(256, ge=1)  # environment steps between updates
    gradient_steps: int = _c(128, ge=1)
    target_update_interval: int = _c(10, ge=1)
    exploration_fraction: float = _c(0.16, ge=0.0, le=1.0)
    exploration_initial_eps: float = _c(1.0, ge=0.0, le=1.0)
    exploration_final_eps: float = _c(0.04, ge=0.0, le=1.0)
    max_grad_norm: float = _c(10.0, gt=0.0)
    optimize_memory_usage: bool = False
    classic_overrides: dict[str, Any] = field(default_factory=dict)
    atari_overrides: dict[str, Any] = field(default_factory=dict)


_OVERRIDE_FIELDS = ("classic_overrides", "atari_overrides")


def override_field(env_kind: str) -> str | None:
    """The overrides field that applies to ``env_kind`` (None: the plain fields are used)."""
    return {"classic": "classic_overrides", "atari": "atari_overrides"}.get(env_kind)


def resolve_hparams(cfg: DictConfig) -> dict[str, Any]:
    """The hyperparameters a baseline run uses: plain fields, then the env kind's overrides.

    Raises:
        ConfigError: an override names an unknown field, has the wrong type or is out of range.
    """
    name = str(cfg.algo.name)
    schema = get_algorithm(name).schema
    algo = OmegaConf.to_container(cfg.algo, resolve=True)
    assert isinstance(algo, dict)
    hp: dict[str, Any] = {str(k): v for k, v in algo.items() if k not in _OVERRIDE_FIELDS}
    which = override_field(str(cfg.env.kind))
    if which is None:
        return hp
    fields = {f.name: f for f in dataclasses.fields(schema) if f.name not in (*_OVERRIDE_FIELDS, "name")}
    overrides: dict[str, Any] = {str(k): v for k, v in (algo.get(which) or {}).items()}
    for key, value in overrides.items():
        where = f"algo.{which}.{key}"
        if key not in fields:
            raise ConfigError(f"{where}: no such {name} hyperparameter; allowed: {', '.join(fields)}")
        default = _default(fields[key])
        if isinstance(default, bool) != isinstance(value, bool) or (
            isinstance(default, (int, float)) and not isinstance(value, (int, float))
        ):
            raise ConfigError(f"{where}={value!r} has the wrong type; expected {type(default).__name__}")
        hp[key] = value
    try:
        check_fields(hp, schema, "algo")  # the plain fields passed already: a failure is an override
    except ConfigError as e:
        msg = str(e)
        for key in overrides:
            msg = msg.replace(f"algo.{key}", f"algo.{which}.{key}")
        raise ConfigError(msg) from None
    return hp


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    return f.default_factory()  # type: ignore[misc,operator]
