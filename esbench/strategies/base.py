"""Ask/tell strategies over flat float32 parameter vectors, on frozen states (after evosax).

The public ``init/ask/tell`` do the shared bookkeeping (generation counter, best fitness, the
exclusion of non-finite returns); each strategy fills in one private hook, :meth:`Strategy._update`.
A strategy knows nothing about environments or Dask: it names perturbations by noise-table
offsets and turns a fitness array into a new state.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from esbench.strategies.noise import NoiseTable
from esbench.strategies.optimizers import OptState, init_opt_state
from esbench.utils.seeding import NOISE_OFFSETS, generator


@dataclass(frozen=True)
class ESState:
    """Everything a strategy needs between generations; checkpointable as it is."""

    params: np.ndarray  # (dim,) float32, the search distribution's mean
    opt: OptState
    generation: int = 0
    best_fitness: float = float("-inf")


@dataclass(frozen=True)
class Population:
    """One generation's perturbations: ``offsets[i]`` names epsilon_i in the noise table.

    With antithetic sampling member i is evaluated twice, at params + sigma*eps_i and
    params - sigma*eps_i, and its fitness row is (return(+), return(-)).
    """

    generation: int
    offsets: np.ndarray  # (n,) int64
    antithetic: bool

    @property
    def signs(self) -> tuple[int, ...]:
        """The signs each member is evaluated with."""
        return (1, -1) if self.antithetic else (1,)


class Strategy(ABC):
    """Base of every ES variant: shared bookkeeping around one ``_update`` hook."""

    def __init__(self, cfg: Any, noise: NoiseTable, dim: int, seed: int) -> None:
        self.cfg = cfg
        self.noise = noise
        self.dim = int(dim)
        self.seed = int(seed)
        self.sigma = float(cfg.sigma)

    def init(self, params: np.ndarray) -> ESState:
        """The initial state around ``params`` (shape (dim,))."""
        params = np.asarray(params, dtype=np.float32).copy()
        if params.shape != (self.dim,):
            raise ValueError(f"initial params have shape {params.shape}, expected ({self.dim},)")
        return ESState(params=params, opt=init_opt_state(self.dim))

    def ask(self, state: ESState) -> Population:
        """The perturbations of ``state.generation``: a pure function of (seed, generation)."""
        rng = generator(self.seed, NOISE_OFFSETS, state.generation)
        n = int(self.cfg.population_size)
        pairs = n // 2 if self.cfg.antithetic else n
        offsets = self.noise.sample_offsets(rng, self.dim, max(pairs, 1))
        return Population(generation=state.generation, offsets=offsets, antithetic=bool(self.cfg.antithetic))

    def member_params(self, state: ESState, population: Population, i: int, sign: int) -> np.ndarray:
        """params + sign * sigma * eps_i, shape (dim,), float32 (a new array)."""
        eps = self.noise.get(int(population.offsets[i]), self.dim)
        return state.params + np.float32(sign * self.sigma) * eps

    def tell(self, state: ESState, population: Population, fitness: np.ndarray) -> tuple[ESState, dict]:
        """The next state from the fitness of ``population`` (shape (n, 2) antithetic, else (n, 1)).

        Members with a NaN or inf return (either side of a pair) are excluded from the update and
        counted in the returned metrics; if none is left, the parameters stay as they are.
        """
        fitness = np.asarray(fitness, dtype=np.float64).reshape(len(population.offsets), -1)
        valid = np.isfinite(fitness).all(axis=1)
        metrics: dict[str, float] = {"nonfinite_members": float((~valid).sum() * fitness.shape[1])}
        best = state.best_fitness
        if valid.any():
            best = max(best, float(fitness[valid].max()))
            new_params, new_opt, extra = self._update(state, population.offsets[valid], fitness[valid])
            metrics.update(extra)
        else:
            new_params, new_opt = state.params, state.opt
            metrics.update(grad_norm=float("nan"))
        metrics["param_norm"] = float(np.linalg.norm(new_params))
        new_state = replace(
            state, params=new_params, opt=new_opt, generation=state.generation + 1, best_fitness=best
        )
        return new_state, metrics

    def weighted_noise_sum(self, weights: np.ndarray, offsets: np.ndarray, batch: int = 500) -> np.ndarray:
        """sum_i weights[i] * eps_i, shape (dim,), float32; batched to bound memory."""
        total = np.zeros(self.dim, dtype=np.float32)
        for start in range(0, len(offsets), batch):
            rows = np.stack([self.noise.get(int(o), self.dim) for o in offsets[start : start + batch]])
            total += weights[start : start + batch].astype(np.float32) @ rows
        return total

    @abstractmethod
    def _update(
        self, state: ESState, offsets: np.ndarray, fitness: np.ndarray
    ) -> tuple[np.ndarray, OptState, dict[str, float]]:
        """New params and optimizer state from the finite members (offsets (m,), fitness (m, k))."""
