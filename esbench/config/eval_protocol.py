"""How a run's policy acts at evaluation: ``eval.policy`` and ``eval.epsilon`` resolved per family.

Published Atari numbers were not all obtained the same way, and a baseline is only comparable with
its own published score when it is evaluated as that score was:

* **ES** (Salimans et al. 2017): the deterministic policy (argmax of the CNN's logits, the MLP's
  output on MuJoCo). ES has no other evaluation: ``sampled`` or ``epsilon_greedy`` is refused.
* **Policy-gradient baselines on Atari** (A2C, PPO, TRPO): actions *sampled* from the policy, as
  A3C's scores in Mnih et al. (2016) were obtained (their agents act by sampling). Early in training
  the argmax of a near-uniform policy collapses to one action (Breakout never serves, Pong never
  returns), scoring below random play; sampling does not.
* **DQN on Atari**: epsilon-greedy with epsilon 0.05 (Mnih et al. 2015, the Nature DQN protocol).
* **Everything else** (MuJoCo, classic control, custom ids): deterministic, as before.

``eval.policy: auto`` (the default) applies that table; ``deterministic``, ``sampled`` and
``epsilon_greedy`` force one protocol. A config written before ``eval.policy`` existed was
evaluated deterministically, and :func:`eval_protocol` says so for it. This module sits at the
bottom layer (config) so that the baselines, which act on it, and the analysis, which reports it,
read the same resolution. Importing it registers :func:`check_eval_policy` with
:func:`esbench.config.validate.register_check` (:mod:`esbench.baselines` imports it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from esbench.config.errors import ConfigError
from esbench.config.registry import family_of, is_value_based
from esbench.config.validate import register_check

#: The values of ``eval.policy``.
EVAL_POLICIES: tuple[str, ...] = ("auto", "deterministic", "sampled", "epsilon_greedy")

#: What ``auto`` gives on Atari, per family (value-based RL: ``epsilon_greedy``).
ATARI_DEFAULTS: dict[str, str] = {"es": "deterministic", "rl": "sampled"}


@dataclass(frozen=True)
class EvalProtocol:
    """A resolved evaluation protocol.

    Attributes:
        policy: ``deterministic``, ``sampled`` or ``epsilon_greedy`` (never ``auto``).
        epsilon: The chance of a uniform random action per step under ``epsilon_greedy``; 0 otherwise.
    """

    policy: str
    epsilon: float = 0.0

    @property
    def label(self) -> str:
        """How reports name it: ``deterministic``, ``sampled`` or ``epsilon-greedy (0.05)``."""
        if self.policy == "epsilon_greedy":
            return f"epsilon-greedy ({self.epsilon:g})"
        return self.policy


DETERMINISTIC = EvalProtocol("deterministic")


def resolve_eval_protocol(
    algo: str, family: str | None, env_kind: str, policy: str = "auto", epsilon: float = 0.05
) -> EvalProtocol:
    """The protocol ``eval.policy=policy`` means for ``algo`` (of ``family``) on an ``env_kind`` env.

    Args:
        algo: The registry key (``a2c``, ``dqn``, ``openai_es``, ...).
        family: ``"es"``, ``"rl"``, or None for a key nothing registered (treated as ES when it
            ends in ``_es``, as the results loader does, else as RL).
        env_kind: ``cfg.env.kind`` (``atari``, ``mujoco``, ``classic``, ``custom``).
        policy: One of :data:`EVAL_POLICIES`.
        epsilon: ``eval.epsilon``.

    Returns:
        The resolved protocol; ``auto`` follows the module docstring's table.

    Raises:
        ValueError: ``policy`` is not one of :data:`EVAL_POLICIES`.
    """
    if policy not in EVAL_POLICIES:
        raise ValueError(f"eval.policy={policy!r}; allowed: {', '.join(EVAL_POLICIES)}")
    if policy == "auto":
        fam = family if family is not None else ("es" if algo.endswith("_es") else "rl")
        if env_kind != "atari":
            policy = "deterministic"
        elif fam == "rl" and is_value_based(algo):
            policy = "epsilon_greedy"
        else:
            policy = ATARI_DEFAULTS.get(fam, "deterministic")
    return EvalProtocol(policy, float(epsilon) if policy == "epsilon_greedy" else 0.0)


def _get(node: Any, key: str, default: Any) -> Any:
    """``node[key]`` for a DictConfig or a plain dict, ``default`` where it is absent."""
    try:
        value = node.get(key, default) if node is not None else default
    except Exception:  # an OmegaConf node without that key in struct mode
        return default
    return default if value is None else value


def eval_protocol(cfg: Any, family: str | None = None) -> EvalProtocol:
    """The protocol a run config (a DictConfig or a plain ``config.yaml`` mapping) evaluates with.

    Args:
        cfg: The run config.
        family: The algorithm's family when the caller knows it (a baseline's own process need
            not have filled the registry); None reads it from the registry.

    Returns:
        The resolved protocol. A config without ``eval.policy`` predates it and was evaluated
        deterministically: :data:`DETERMINISTIC`.
    """
    evaluation = _get(cfg, "eval", None)
    policy = _get(evaluation, "policy", None)
    if policy is None:
        return DETERMINISTIC
    algo = str(_get(_get(cfg, "algo", None), "name", ""))
    env_kind = str(_get(_get(cfg, "env", None), "kind", ""))
    return resolve_eval_protocol(
        algo,
        family if family is not None else family_of(algo),
        env_kind,
        str(policy),
        float(_get(evaluation, "epsilon", 0.05)),
    )


@register_check
def check_eval_policy(cfg: Any) -> None:
    """ES evaluates deterministically only; a value-based baseline has no distribution to sample.

    Raises:
        ConfigError: One line naming ``eval.policy``, the algorithm and the allowed values.
    """
    policy = str(_get(cfg.eval, "policy", "auto"))
    algo = str(cfg.algo.name)
    check_also_stochastic(cfg)
    if policy in ("auto", "deterministic"):
        return
    if family_of(algo) == "es":
        raise ConfigError(
            f"eval.policy={policy}: algo={algo} is an ES policy, evaluated deterministically as the "
            "paper does; allowed: eval.policy=auto or deterministic"
        )
    if policy == "sampled" and is_value_based(algo):
        raise ConfigError(
            f"eval.policy=sampled: algo={algo} has no action distribution to sample (a Q-network); "
            "allowed: eval.policy=auto, deterministic or epsilon_greedy"
        )


def check_also_stochastic(cfg: Any) -> None:
    """``eval.also_stochastic`` adds a stochastic evaluation beside a deterministic one: refused
    where the main protocol is already stochastic (nothing to compare) and for a value-based
    baseline (no action distribution to sample).

    Raises:
        ConfigError: One line naming ``eval.also_stochastic`` and what to set instead.
    """
    if not bool(_get(cfg.eval, "also_stochastic", False)):
        return
    algo = str(cfg.algo.name)
    if family_of(algo) != "es" and is_value_based(algo):
        raise ConfigError(
            f"eval.also_stochastic=true: algo={algo} has no action distribution to sample (a "
            "Q-network); allowed: eval.also_stochastic=false"
        )
    protocol = eval_protocol(cfg)
    if protocol.policy != "deterministic":
        raise ConfigError(
            f"eval.also_stochastic=true: eval.policy resolves to {protocol.label} for algo={algo} on "
            f"env.kind={cfg.env.kind}, already stochastic; allowed: eval.policy=deterministic with "
            "eval.also_stochastic=true, or eval.also_stochastic=false"
        )
