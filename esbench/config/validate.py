"""Early, clear errors: check a composed config before any work starts.

Types and unknown keys are caught by Hydra's structured-config merge; this module checks what
types cannot say: ranges and choices (from the schema's field metadata), that an environment id
exists, and combinations that cannot work (an algorithm that cannot act in an environment).
Every failure is one line naming the key, the bad value and what is allowed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from omegaconf import DictConfig, OmegaConf

from esbench.config.schema import (
    ALGO_SCHEMAS,
    BudgetConfig,
    ClusterConfig,
    EnvConfig,
    EvalConfig,
    PolicyConfig,
    RunConfig,
    TrackerConfig,
)


class ConfigError(ValueError):
    """A config that cannot run; the message is one line for the user."""


Check = Callable[[DictConfig], None]
EXTRA_CHECKS: list[Check] = []
"""Cross-field checks that other packages (baselines, Atari) register with :func:`register_check`."""


def register_check(check: Check) -> Check:
    """Add a cross-field check (usable as a decorator)."""
    if check not in EXTRA_CHECKS:
        EXTRA_CHECKS.append(check)
    return check


def check_fields(node: Any, schema: type, prefix: str) -> None:
    """Check ``node``'s values against the ``gt/ge/lt/le/choices`` metadata of ``schema``."""
    for f in dataclasses.fields(schema):
        meta = f.metadata
        if not meta:
            continue
        key = f"{prefix}.{f.name}" if prefix else f.name
        try:
            value = node[f.name]
        except Exception as e:  # a mandatory value (???) left unset
            raise ConfigError(f"{key} must be set ({type(e).__name__})") from None
        if value is None:
            continue
        if "choices" in meta and value not in meta["choices"]:
            raise ConfigError(
                f"{key}={value!r} is not allowed; allowed: {', '.join(map(str, meta['choices']))}"
            )
        for op, test, word in (
            ("gt", lambda v, b: v > b, ">"),
            ("ge", lambda v, b: v >= b, ">="),
            ("lt", lambda v, b: v < b, "<"),
            ("le", lambda v, b: v <= b, "<="),
        ):
            if op in meta and not test(value, meta[op]):
                raise ConfigError(f"{key}={value!r} is out of range; allowed: {key} {word} {meta[op]}")


def validate(cfg: DictConfig) -> None:
    """Raise :class:`ConfigError` if ``cfg`` cannot run. Cheap: no environment is stepped."""
    algo = cfg.algo.name
    if algo not in ALGO_SCHEMAS:
        raise ConfigError(f"algo.name={algo!r} is unknown; allowed: {', '.join(sorted(ALGO_SCHEMAS))}")
    check_fields(cfg.algo, ALGO_SCHEMAS[algo], "algo")
    for name, schema in (
        ("env", EnvConfig),
        ("policy", PolicyConfig),
        ("budget", BudgetConfig),
        ("eval", EvalConfig),
        ("cluster", ClusterConfig),
        ("tracker", TrackerConfig),
    ):
        check_fields(cfg[name], schema, name)
    check_fields(cfg, RunConfig, "")
    _check_env(cfg)
    if cfg.cluster.kind == "address" and not OmegaConf.select(cfg, "cluster.address", default=None):
        raise ConfigError(
            "cluster=address needs cluster.address=tcp://HOST:PORT (a running `dask scheduler`)"
        )
    if any(h <= 0 for h in cfg.policy.hidden_sizes):
        raise ConfigError(f"policy.hidden_sizes={list(cfg.policy.hidden_sizes)}; allowed: positive integers")
    for check in EXTRA_CHECKS:
        check(cfg)


def _check_env(cfg: DictConfig) -> None:
    from esbench.envs.factory import check_env_id, resolved_env_id

    try:
        env_id = resolved_env_id(cfg.env)
        check_env_id(env_id)
    except ValueError as e:
        raise ConfigError(str(e)) from None
    if cfg.policy.kind == "cnn" and cfg.env.kind != "atari":
        raise ConfigError(
            f"policy.kind=cnn needs an Atari env; env.kind={cfg.env.kind!r} (use policy.kind=mlp)"
        )
