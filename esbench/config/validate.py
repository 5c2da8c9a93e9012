"""Early, clear errors: check a composed config before any work starts.

Types and unknown keys are caught by Hydra's structured-config merge; this module checks what
types cannot say: ranges and choices (from the schema's field metadata), that an environment id
exists, and combinations that cannot work (an algorithm that cannot act in an environment).
Every failure is one line naming the key, the bad value and what is allowed.
"""

from __future__ import annotations

import dataclasses
import difflib
import typing
from collections.abc import Callable
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from esbench.config.errors import ConfigError
from esbench.config.registry import get_algorithm
from esbench.config.schema import (
    BudgetConfig,
    ClusterConfig,
    EnvConfig,
    EvalConfig,
    InitConfig,
    PolicyConfig,
    RunConfig,
    TrackerConfig,
)
from esbench.utils.paths import check_path_component

Check = Callable[[DictConfig], None]
EXTRA_CHECKS: list[Check] = []
"""Cross-field checks that lower layers register with :func:`register_check` (the env checks in
:mod:`esbench.envs.checks`); an algorithm's own check is its registry entry's ``check``."""


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
            choices = list(map(str, meta["choices"]))
            raise ConfigError(
                f"{key}={value!r} is not allowed{did_you_mean(str(value), choices)}; "
                f"allowed: {', '.join(choices)}"
            )
        for op, test, word in (
            ("gt", lambda v, b: v > b, ">"),
            ("ge", lambda v, b: v >= b, ">="),
            ("lt", lambda v, b: v < b, "<"),
            ("le", lambda v, b: v <= b, "<="),
        ):
            if op in meta and not test(value, meta[op]):
                raise ConfigError(f"{key}={value!r} is out of range; allowed: {key} {word} {meta[op]}")


def did_you_mean(name: str, allowed: list[str]) -> str:
    """`` (did you mean X, Y?)`` for the close matches of ``name`` in ``allowed``, or ``""``."""
    close = difflib.get_close_matches(name, allowed, n=3)
    return f" (did you mean {', '.join(close)}?)" if close else ""


def check_keys(node: Any, schema: type, prefix: str) -> None:
    """Every key of ``node`` is a field of the dataclass ``schema`` (recursively), so a key added
    with ``+`` (``+algo.sigmaa=0.1``) is refused like any misspelled key. Maps (``dict`` fields, such
    as ``env.kwargs``) take any key; their values are not walked."""
    fields = {f.name: f for f in dataclasses.fields(schema)}
    hints = typing.get_type_hints(schema)
    for key in node:
        full = f"{prefix}.{key}" if prefix else str(key)
        if key not in fields:
            allowed = sorted(fields)
            where = f" in {prefix}" if prefix else ""
            raise ConfigError(
                f"{full}: no such config key{did_you_mean(str(key), allowed)}; "
                f"allowed keys{where}: {', '.join(allowed)}"
            )
        value = node._get_node(key)
        hint = hints[key]
        if dataclasses.is_dataclass(hint) and isinstance(value, DictConfig):
            check_keys(value, hint, full)  # type: ignore[arg-type]
        elif typing.get_origin(hint) is list and isinstance(value, ListConfig):
            (item,) = typing.get_args(hint) or (Any,)
            if dataclasses.is_dataclass(item):
                for i, element in enumerate(value):
                    check_keys(element, item, f"{full}[{i}]")  # type: ignore[arg-type]


def validate(cfg: DictConfig) -> None:
    """Raise :class:`ConfigError` if ``cfg`` cannot run. Cheap: no environment is stepped.

    The algorithm comes from the registry (:mod:`esbench.config.registry`): its schema's ranges and
    choices, the policy kinds it can act with, and its own cross-field check.
    """
    spec = get_algorithm(str(cfg.algo.name))
    check_keys(cfg.algo, spec.schema, "algo")
    check_keys(cfg, RunConfig, "")  # algo (``Any`` in the run schema) was checked just above
    check_fields(cfg.algo, spec.schema, "algo")
    for name, schema in (
        ("env", EnvConfig),
        ("policy", PolicyConfig),
        ("budget", BudgetConfig),
        ("eval", EvalConfig),
        ("cluster", ClusterConfig),
        ("tracker", TrackerConfig),
        ("init", InitConfig),
    ):
        if name in cfg:
            check_fields(cfg[name], schema, name)
    check_fields(cfg, RunConfig, "")
    if cfg.cluster.kind == "address" and not OmegaConf.select(cfg, "cluster.address", default=None):
        raise ConfigError(
            "cluster=address needs cluster.address=tcp://HOST:PORT (a running `dask scheduler`)"
        )
    if any(h <= 0 for h in cfg.policy.hidden_sizes):
        raise ConfigError(f"policy.hidden_sizes={list(cfg.policy.hidden_sizes)}; allowed: positive integers")
    kind = policy_kind(cfg)
    if kind not in spec.policy_kinds:
        raise ConfigError(
            f"algo={spec.key} cannot act with a {kind} policy (policy.kind={cfg.policy.kind}, "
            f"policy.hidden_sizes={list(cfg.policy.hidden_sizes)}); allowed: {', '.join(spec.policy_kinds)}"
        )
    for check in EXTRA_CHECKS:
        check(cfg)
    if spec.check is not None:
        spec.check(cfg)
    for key in ("experiment", "run_id"):  # they name directories: keep them inside the store
        value = OmegaConf.select(cfg, key, default=None)
        if key == "experiment" or value is not None:
            try:
                check_path_component(key, value)
            except ValueError as e:
                raise ConfigError(str(e)) from None


def policy_kind(cfg: DictConfig) -> str:
    """``cnn``, ``linear`` (an MLP with no hidden layer) or ``mlp``."""
    if cfg.policy.kind == "cnn":
        return "cnn"
    return "linear" if len(cfg.policy.hidden_sizes) == 0 else "mlp"
