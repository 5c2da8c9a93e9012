"""Register the RL baselines with esbench: schemas, trainers and the checks that fail early.

Imported by :func:`esbench.runner.load_algorithms`. For each of ``trpo``, ``a2c``, ``ppo``, ``dqn`` it
registers the config schema (``algo/<name>_schema`` in Hydra's ConfigStore, filled by
``conf/algo/<name>.yaml``) and :func:`esbench.baselines.trainer.train_baseline` as the trainer; and
one cross-field check, run by :func:`esbench.config.validate.validate` before any work starts.
"""

from __future__ import annotations

from omegaconf import DictConfig

from esbench.baselines.configs import SCHEMAS, resolve_hparams
from esbench.config.schema import register_algo_schema
from esbench.config.validate import ConfigError, register_check
from esbench.runner import register_trainer


def check_baseline(cfg: DictConfig) -> None:
    """Hyperparameters after per-kind overrides, policy/env fit, DQN's discrete-action requirement."""
    name = str(cfg.algo.name)
    if name not in SCHEMAS:
        return
    hp = resolve_hparams(cfg)
    if cfg.env.kind == "atari" and cfg.policy.kind != "cnn":
        raise ConfigError(f"algo={name} on Atari needs policy.kind=cnn (the A3C CNN); got policy.kind=mlp")
    batch = hp.get("batch_size")
    if name in ("ppo", "trpo") and batch is not None and batch > hp["n_steps"] * hp["n_envs"]:
        raise ConfigError(
            f"algo.batch_size={batch} exceeds a rollout (algo.n_steps * algo.n_envs = "
            f"{hp['n_steps'] * hp['n_envs']}); allowed: batch_size <= n_steps * n_envs"
        )
    if name == "dqn" and cfg.env.kind != "atari":  # ALE games always have Discrete actions
        _check_discrete(cfg)


def _check_discrete(cfg: DictConfig) -> None:
    """Build the env (no reset, no step) to read its action space."""
    import gymnasium as gym

    from esbench.envs import make_env, resolved_env_id

    env = make_env(cfg.env, training=True)
    try:
        space = env.action_space
    finally:
        env.close()
    if not isinstance(space, gym.spaces.Discrete):
        raise ConfigError(
            f"algo=dqn needs a discrete action space; env.id={resolved_env_id(cfg.env)} has {space} "
            "(use algo=trpo, a2c or ppo)"
        )


def register() -> None:
    """Register every baseline (idempotent)."""
    from esbench.baselines.trainer import train_baseline

    for name, schema in SCHEMAS.items():
        register_algo_schema(name, schema)
        register_trainer(name, train_baseline)
    register_check(check_baseline)


register()
