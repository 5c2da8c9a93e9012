"""The algorithm registry: one entry per algorithm key, read by everything that needs to know one.

Modelled on Gymnasium's ``register(id, entry_point, kwargs)`` / ``make(id)``: an algorithm is
registered once, by the module that implements it (``esbench/strategies/<key>.py`` for the ES
family, ``esbench/baselines/registry.py`` for the RL baselines), with its config schema, its
trainer family, its class, and how reports show it. Config validation, the runner (which trainer
to call), the results loader (which side of a comparison a run is on), figures (label, colour),
recipes and cost estimates all read this table; ``conf/algo/<key>.yaml`` is the only other place
a key appears.

This module sits at the bottom layer (config): it imports no algorithm. The registry is filled by
importing the algorithm packages, which :func:`esbench.runner.load_components` does for every
entry point (CLI, sweep jobs, tests); a lookup that misses imports them once itself (their names
are strings here, as Gymnasium's entry points are), so a library caller, such as a notebook
rendering a report, sees the same labels, colours and families as the CLI.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig

from esbench.config.errors import ConfigError

Family = Literal["es", "rl"]
FAMILIES: tuple[str, ...] = ("es", "rl")


@dataclass(frozen=True)
class AlgorithmSpec:
    """Everything esbench knows about one algorithm.

    Attributes:
        key: the registry key = config file ``conf/algo/<key>.yaml`` = module name = run-id prefix.
        family: ``"es"`` (ask/tell strategy on the Dask ES runtime) or ``"rl"`` (an SB3 baseline).
        schema: the structured-config dataclass of ``conf/algo/<key>.yaml``.
        cls: the implementing class (a :class:`esbench.strategies.base.Strategy` subclass), or a
            ``"module:attr"`` entry point imported on first use (the SB3 classes: importing torch
            for every ``esbench`` command would cost seconds); see :meth:`load_class`.
        label: how reports and figures name it.
        colour: its fixed colour in every figure (hex).
        description: one line for ``esbench run --help``: what it is and its source.
        policy_kinds: the policy kinds it can act with (``mlp``, ``linear``: an MLP with no hidden
            layer, ``cnn``: the Atari CNN).
        check: an optional cross-field check of a whole run config; raises :class:`ConfigError`.
        value_based: RL: a value-based learner (a Q-network): no action distribution to sample
            (evaluated deterministically or epsilon-greedily, never ``sampled``), discrete actions only.
        head: RL: the network's head on the shared hidden sizes: ``actor_critic`` (separate policy
            and value heads, SB3 ``net_arch=dict(pi=..., vf=...)``) or ``q_values`` (one Q-network).
        steps_per_s: RL: estimated training steps per second on one thread on MuJoCo (the cost
            estimates of :mod:`esbench.recipes`; None: the estimate's default).
        trainer: The training function as a ``"module:function"`` entry point, for a learner of
            its own (:mod:`esbench.training`); None: its family's (the ES loop, or an SB3 task).
        language_models_only: trains language models only (``env=lm``): never offered as an
            alternative for a control task.
    """

    key: str
    family: Family
    schema: type
    cls: type | str
    label: str
    colour: str
    description: str
    policy_kinds: tuple[str, ...] = ("mlp", "linear", "cnn")
    check: Callable[[DictConfig], None] | None = None
    value_based: bool = False
    head: Literal["actor_critic", "q_values"] = "actor_critic"
    steps_per_s: float | None = None
    trainer: str | None = None
    language_models_only: bool = False

    def load_class(self) -> type:
        """The implementing class (imports an entry point given as ``"module:attr"``)."""
        if isinstance(self.cls, type):
            return self.cls
        module, _, attr = self.cls.partition(":")
        cls = getattr(importlib.import_module(module), attr)
        assert isinstance(cls, type), f"{self.cls} is not a class"
        return cls


_REGISTRY: dict[str, AlgorithmSpec] = {}

#: The packages whose import registers algorithms: every ES strategy module, the RL baselines.
REGISTERING_MODULES: tuple[str, ...] = ("esbench.strategies", "esbench.baselines.registry")
_registering_imported = False


def _import_registering() -> None:
    """Import :data:`REGISTERING_MODULES` once (a no-op after the first call, and while they are
    being imported: the guard is set first)."""
    global _registering_imported
    if not _registering_imported:
        _registering_imported = True
        for module in REGISTERING_MODULES:
            importlib.import_module(module)


def _lookup(key: str) -> AlgorithmSpec | None:
    """The spec of ``key``; on the first miss, the registering packages are imported, then it is
    looked up again (None: nothing registers ``key``, e.g. a run from an old results store)."""
    spec = _REGISTRY.get(str(key))
    if spec is None and not _registering_imported:
        _import_registering()
        spec = _REGISTRY.get(str(key))
    return spec


def register_algorithm(spec: AlgorithmSpec) -> AlgorithmSpec:
    """Add ``spec`` (idempotent for the same spec) and store its schema as ``algo/<key>_schema``.

    Raises:
        ValueError: the key is taken by a different algorithm, or the family is unknown.
    """
    if spec.family not in FAMILIES:
        raise ValueError(f"algorithm {spec.key!r}: family={spec.family!r}; allowed: {', '.join(FAMILIES)}")
    old = _REGISTRY.get(spec.key)
    if old is not None and (old.cls != spec.cls or old.schema is not spec.schema):
        raise ValueError(f"algorithm key {spec.key!r} is already registered by {old.cls}")
    _REGISTRY[spec.key] = spec
    ConfigStore.instance().store(group="algo", name=f"{spec.key}_schema", node=spec.schema)
    return spec


def algorithms(family: str | None = None) -> dict[str, AlgorithmSpec]:
    """Every registered algorithm (of one family when given), by key, in registration order."""
    _import_registering()
    return {k: s for k, s in _REGISTRY.items() if family is None or s.family == family}


def get_algorithm(key: str) -> AlgorithmSpec:
    """The spec of ``key``.

    Raises:
        ConfigError: no such algorithm; the message suggests close matches and lists the keys.
    """
    spec = _lookup(key)
    if spec is None:
        raise ConfigError(unknown_algorithm_message(str(key)))
    return spec


def unknown_algorithm_message(key: str) -> str:
    """One line: the unknown key, close matches, the allowed keys."""
    keys = sorted(_REGISTRY)
    close = difflib.get_close_matches(key, keys, n=3, cutoff=0.5)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    return f"algo={key}: no such algorithm{hint}; allowed: {', '.join(keys) or '(none registered)'}"


def family_of(key: str) -> str | None:
    """The family of ``key``, or None for a key nothing registered (e.g. an old results store)."""
    spec = _lookup(key)
    return spec.family if spec else None


def label_of(key: str) -> str:
    """The report label of ``key`` (the key itself when unregistered)."""
    spec = _lookup(key)
    return spec.label if spec else str(key)


def colour_of(key: str, default: str = "#777777") -> str:
    """The figure colour of ``key`` (``default`` when unregistered)."""
    spec = _lookup(key)
    return spec.colour if spec else default


def is_value_based(key: str) -> bool:
    """Whether ``key`` is a value-based learner (False when unregistered)."""
    spec = _lookup(key)
    return bool(spec and spec.value_based)


def check_registered(cfg: Any) -> AlgorithmSpec:
    """The spec of ``cfg.algo.name``; raises :class:`ConfigError` for an unknown one."""
    return get_algorithm(str(cfg.algo.name))
