"""Register the RL baselines in the algorithm registry: schema, class, label, colour, checks.

Imported by :func:`esbench.runner.load_components`. Each of ``trpo``, ``a2c``, ``ppo``, ``dqn`` is
registered with family ``rl`` (the runner trains it with :func:`esbench.training.sb3.train_baseline`),
its schema (filled by ``conf/algo/<key>.yaml``), its SB3 class as a lazy entry point (importing
torch for every command would cost seconds), and one cross-field check run by
:func:`esbench.config.validate.validate` before any work starts.
"""

from __future__ import annotations

from omegaconf import DictConfig

from esbench.baselines.configs import A2CConfig, DQNConfig, PPOConfig, TRPOConfig, resolve_hparams
from esbench.config.errors import ConfigError
from esbench.config.lm import GRPOAlgoConfig
from esbench.config.registry import AlgorithmSpec, algorithms, get_algorithm, register_algorithm


def check_language_model(cfg: DictConfig) -> None:
    """GRPO trains language models only."""
    if cfg.env.kind != "lm":
        raise ConfigError(
            f"algo={cfg.algo.name} trains language models only (env.kind={cfg.env.kind}); allowed: env=lm"
        )


def check_baseline(cfg: DictConfig) -> None:
    """Hyperparameters after per-kind overrides, policy/env fit, DQN's discrete-action requirement."""
    name = str(cfg.algo.name)
    spec = get_algorithm(name)
    hp = resolve_hparams(cfg)
    if not cfg.policy.get("bias", True):
        raise ConfigError(f"algo={name}: SB3 networks always have biases; allowed: policy.bias=true")
    if cfg.env.kind == "atari" and cfg.policy.kind != "cnn":
        raise ConfigError(f"algo={name} on Atari needs policy.kind=cnn (the A3C CNN); got policy.kind=mlp")
    batch = hp.get("batch_size")
    if (
        "n_steps" in hp and batch is not None and batch > hp["n_steps"] * hp["n_envs"]
    ):  # on-policy minibatches
        raise ConfigError(
            f"algo.batch_size={batch} exceeds a rollout (algo.n_steps * algo.n_envs = "
            f"{hp['n_steps'] * hp['n_envs']}); allowed: batch_size <= n_steps * n_envs"
        )
    if spec.value_based and cfg.env.kind != "atari":  # ALE games always have Discrete actions
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
        able = [k for k, s in algorithms("rl").items() if not (s.value_based or s.language_models_only)]
        raise ConfigError(
            f"algo={cfg.algo.name} needs a discrete action space; env.id={resolved_env_id(cfg.env)} "
            f"has {space} (use algo={_one_of(able)})"
        )


def _one_of(keys: list[str]) -> str:
    """``a, b or c``."""
    return " or ".join([", ".join(keys[:-1]), keys[-1]]) if len(keys) > 1 else "".join(keys)


BASELINES: tuple[AlgorithmSpec, ...] = (
    AlgorithmSpec(
        key="trpo",
        family="rl",
        schema=TRPOConfig,
        cls="sb3_contrib:TRPO",
        label="TRPO",
        colour="#D55E00",
        description="TRPO, Schulman et al. 2015 (sb3-contrib), rl-baselines3-zoo's tuned settings",
        check=check_baseline,
        steps_per_s=1_700,
    ),
    AlgorithmSpec(
        key="a2c",
        family="rl",
        schema=A2CConfig,
        cls="stable_baselines3:A2C",
        label="A2C (sync. A3C)",
        colour="#009E73",
        description="A2C, the synchronous A3C of Mnih et al. 2016 (SB3), zoo settings",
        check=check_baseline,
        steps_per_s=1_200,
    ),
    AlgorithmSpec(
        key="ppo",
        family="rl",
        schema=PPOConfig,
        cls="stable_baselines3:PPO",
        label="PPO",
        colour="#CC79A7",
        description="PPO, Schulman et al. 2017 (SB3), zoo settings",
        check=check_baseline,
        steps_per_s=1_500,
    ),
    AlgorithmSpec(
        key="dqn",
        family="rl",
        schema=DQNConfig,
        cls="stable_baselines3:DQN",
        label="DQN",
        colour="#E69F00",
        description="DQN, Mnih et al. 2015 (SB3), zoo settings; discrete actions only",
        check=check_baseline,
        value_based=True,
        head="q_values",
        steps_per_s=400,  # assumed, not measured
    ),
    AlgorithmSpec(
        key="grpo",
        family="rl",
        schema=GRPOAlgoConfig,
        cls="trl:GRPOTrainer",
        label="GRPO",
        colour="#DDCC77",
        description="GRPO, Shao et al. 2024, with TRL's GRPOTrainer; language models only (env=lm)",
        check=check_language_model,
        trainer="esbench.training.lm_grpo:train_grpo_lm",
        language_models_only=True,
    ),
)

for _spec in BASELINES:
    register_algorithm(_spec)
