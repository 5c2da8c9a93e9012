"""OpenAI-ES: Salimans, Ho, Chen, Sidor, Sutskever (2017), arXiv:1703.03864.

Algorithm 2 (parallel ES with a shared noise table) with the tricks of Sec. 2.2: antithetic
(mirrored) sampling, centered-rank fitness shaping over all 2n returns, weight decay, and Adam on
the estimated gradient. The update follows the paper's public reference code:
``g = sum_i (r_i(+) - r_i(-)) eps_i / (2n)`` with r the shaped returns (Eq. 1's estimator with
mirrored samples), then the optimizer steps on ``-g + l2 * theta`` (sigma is folded into the step
size).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from esbench.config.registry import AlgorithmSpec, register_algorithm
from esbench.config.schema import GradientESConfig, _c
from esbench.strategies.base import ESState, Population, Strategy
from esbench.strategies.noise import NoiseTable
from esbench.strategies.optimizers import make_optimizer
from esbench.strategies.shaping import shape_fitness


@dataclass
class OpenAIESConfig(GradientESConfig):
    """OpenAI-ES (Salimans et al. 2017, Algorithm 2 with the tricks of Sec. 2.2 and the supplement)."""

    name: str = "openai_es"
    l2_coeff: float = _c(0.005, ge=0.0)  # weight decay (paper: 0.005)


class OpenAIES(Strategy):
    """The paper's ES; hyperparameters from :class:`OpenAIESConfig`."""

    def __init__(self, cfg: Any, noise: NoiseTable, dim: int, seed: int, layout: Any = None) -> None:
        super().__init__(cfg, noise, dim, seed, layout)
        self.optimizer = make_optimizer(cfg)

    def _update(self, state: ESState, population: Population, fitness: np.ndarray) -> tuple[ESState, dict]:
        shaped = shape_fitness(fitness, self.cfg.fitness_shaping)  # over all 2n returns
        weights = shaped[:, 0] - shaped[:, 1] if shaped.shape[1] == 2 else shaped[:, 0]
        g = self.weighted_noise_sum(weights, population.offsets) / np.float32(fitness.size)
        loss_grad = -g + self.weight_decay(state)
        opt, step = self.optimizer.step(state.opt, loss_grad)
        params = (state.params + step).astype(np.float32)
        pnorm = float(np.linalg.norm(state.params))
        metrics = {
            "grad_norm": float(np.linalg.norm(g)),
            "update_ratio": float(np.linalg.norm(step)) / max(pnorm, 1e-12),
        }
        return replace(state, params=params, opt=opt), metrics


register_algorithm(
    AlgorithmSpec(
        key="openai_es",
        family="es",
        schema=OpenAIESConfig,
        cls=OpenAIES,
        label="ES (OpenAI)",
        colour="#0072B2",
        description="OpenAI-ES, Salimans et al. 2017: antithetic Gaussian ES, centered ranks, Adam",
    )
)
