"""The simplest ES: a teaching baseline.

Salimans, Ho, Chen, Sidor, Sutskever (2017), arXiv:1703.03864, Algorithm 1 ("Evolution
Strategies"), in the form of Karpathy's 2017 note on it (the ``es.py`` gist
gist.github.com/karpathy/77fbb6a8dac5395f1b73e7a89300318d: ``A = (R - mean(R)) / std(R)``,
``w += alpha / (npop * sigma) * N.T @ A``). With n evaluations per generation::

    eps_i ~ N(0, I),  F_i = f(theta + sigma eps_i),  A_i = (F_i - mean F) / std F
    theta <- theta + alpha / (n sigma) * sum_i A_i eps_i          (Algorithm 1, line 5)

Gaussian perturbations, z-scored fitness, plain SGD: none of OpenAI-ES's refinements (mirrored
sampling, centered ranks, Adam, weight decay) by default, so the gap between the two measures what
those refinements buy. Each is one setting away (``antithetic``, ``fitness_shaping``,
``optimizer``, ``l2_coeff``); with ``antithetic: true`` the sum runs over all 2n evaluations, the
mirrored one with -eps_i, and n counts evaluations.
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
class SimpleESConfig(GradientESConfig):
    """The simplest ES (Salimans et al. 2017 Algorithm 1, Karpathy's note): defaults of the note."""

    name: str = "simple_es"
    population_size: int = _c(50, ge=2)  # npop
    antithetic: bool = False
    sigma: float = _c(0.1, gt=0.0)
    learning_rate: float = _c(0.001, gt=0.0)  # alpha
    optimizer: str = _c("sgd", choices=("adam", "sgd", "clipup"))
    momentum: float = _c(0.0, ge=0.0, lt=1.0)  # plain SGD
    fitness_shaping: str = _c("z_score", choices=("centered_rank", "z_score", "raw"))
    action_noise_std: float = _c(0.0, ge=0.0)  # the note perturbs parameters only


class SimpleES(Strategy):
    """theta += alpha / (n sigma) sum_i A_i eps_i; hyperparameters from :class:`SimpleESConfig`."""

    def __init__(self, cfg: Any, noise: NoiseTable, dim: int, seed: int, layout: Any = None) -> None:
        super().__init__(cfg, noise, dim, seed, layout)
        self.optimizer = make_optimizer(cfg)

    def _update(self, state: ESState, population: Population, fitness: np.ndarray) -> tuple[ESState, dict]:
        shaped = shape_fitness(fitness, self.cfg.fitness_shaping)  # A, over all n evaluations
        weights = shaped[:, 0] - shaped[:, 1] if shaped.shape[1] == 2 else shaped[:, 0]
        g = self.weighted_noise_sum(weights, population.offsets) / np.float32(fitness.size * self.sigma)
        loss_grad = -g + self.weight_decay(state)
        opt, step = self.optimizer.step(state.opt, loss_grad)  # plain SGD: step = alpha * g
        params = (state.params + step).astype(np.float32)
        metrics = {
            "grad_norm": float(np.linalg.norm(g)),
            "update_ratio": float(np.linalg.norm(step)) / max(float(np.linalg.norm(state.params)), 1e-12),
        }
        return replace(state, params=params, opt=opt), metrics


register_algorithm(
    AlgorithmSpec(
        key="simple_es",
        family="es",
        schema=SimpleESConfig,
        cls=SimpleES,
        label="Simple ES",
        colour="#999999",
        description="Simplest ES, Salimans et al. 2017 Alg. 1 as in Karpathy's note: z-scored fitness, SGD",
    )
)
