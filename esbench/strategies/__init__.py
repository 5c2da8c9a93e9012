"""ES strategies as ask/tell over flat numpy parameter vectors; no environment, no Dask inside.

Each module ``esbench/strategies/<key>.py`` defines one variant (its config schema and its
:class:`Strategy` subclass) and registers it in :mod:`esbench.config.registry` under ``<key>``,
which is also its config file ``conf/algo/<key>.yaml`` (one name everywhere). Importing this
package imports every such module, so adding a variant needs no list edited anywhere else.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from esbench.config.registry import get_algorithm
from esbench.strategies.base import ESState, Population, Strategy
from esbench.strategies.noise import NoiseTable
from esbench.utils.layout import ParamLayout

#: Modules of this package that are building blocks, not variants.
_NOT_VARIANTS = frozenset({"base", "noise", "optimizers", "shaping"})


def _import_variants() -> list[str]:
    """Import every variant module (each registers itself); returns their names."""
    names = []
    for info in pkgutil.iter_modules(__path__):
        if info.name not in _NOT_VARIANTS and not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")
            names.append(info.name)
    return names


VARIANT_MODULES: tuple[str, ...] = tuple(_import_variants())


def make_strategy(algo_cfg: Any, dim: int, seed: int, layout: ParamLayout | None = None) -> Strategy:
    """The strategy ``algo_cfg.name`` names, over ``dim`` parameters, with its noise table."""
    spec = get_algorithm(str(algo_cfg.name))
    if spec.family != "es":
        raise ValueError(f"algo={algo_cfg.name} is an RL baseline, not an ES strategy")
    noise = NoiseTable(algo_cfg.noise_seed, algo_cfg.noise_table_size)
    cls = spec.load_class()
    strategy = cls(algo_cfg, noise, dim, seed, layout)
    assert isinstance(strategy, Strategy), f"{cls.__qualname__} is not a Strategy"
    return strategy


__all__ = [
    "VARIANT_MODULES",
    "ESState",
    "NoiseTable",
    "Population",
    "Strategy",
    "make_strategy",
]
