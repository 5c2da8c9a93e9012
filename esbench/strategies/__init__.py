"""ES strategies as ask/tell over flat numpy parameter vectors; no environment, no Dask inside.

``STRATEGIES`` maps registry key -> class; the key is also the config file ``conf/algo/<key>.yaml``
and the module name (one name everywhere).
"""

from __future__ import annotations

from typing import Any

from esbench.strategies.base import ESState, Population, Strategy
from esbench.strategies.noise import NoiseTable
from esbench.strategies.openai_es import OpenAIES

STRATEGIES: dict[str, type[Strategy]] = {"openai_es": OpenAIES}


def make_strategy(algo_cfg: Any, dim: int, seed: int) -> Strategy:
    """The strategy named by ``algo_cfg.name``, over ``dim`` parameters, with its noise table."""
    cls = STRATEGIES[algo_cfg.name]
    noise = NoiseTable(algo_cfg.noise_seed, algo_cfg.noise_table_size)
    return cls(algo_cfg, noise, dim, seed)


__all__ = ["STRATEGIES", "ESState", "NoiseTable", "OpenAIES", "Population", "Strategy", "make_strategy"]
