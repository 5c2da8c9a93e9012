"""Ask/tell strategies over flat float32 parameter vectors, on frozen states (after evosax).

The public ``init/ask/tell`` do the shared bookkeeping (generation counter, best fitness, the
exclusion of non-finite returns); each strategy fills in one private hook, :meth:`Strategy._update`,
and may refine how a member is built from its recipe (:meth:`Strategy.perturbation`).

A strategy knows nothing about environments or Dask. A population member is named by a small,
seed-derived *recipe* (:class:`Population`): a noise-table offset (its standard-normal draw) and,
where a strategy needs one, a per-member scale. What turns a recipe into parameters — a global
sigma, a per-parameter sigma (PGPE, SNES), a covariance factor (CMA-ES), per-layer low-rank
factors (EGGROLL) — is part of the strategy's state, which every worker replicates by replaying
the same ``tell``. So a member's description stays O(1) numbers and the parameter vector never has
to cross the wire.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from esbench.strategies.noise import NoiseTable
from esbench.strategies.optimizers import OptState, init_opt_state
from esbench.utils.layout import ParamLayout, check_layout, flat_layout
from esbench.utils.seeding import NOISE_OFFSETS, generator


@dataclass(frozen=True)
class ESState:
    """Everything a strategy needs between generations; checkpointable as it is.

    ``aux`` holds a strategy's own arrays (PGPE's and SNES's per-parameter sigma, CMA-ES's state),
    so every strategy's state has the same shape for the runtime, the digest and checkpoints.
    """

    params: np.ndarray  # (dim,) float32, the search distribution's mean
    opt: OptState
    generation: int = 0
    best_fitness: float = float("-inf")
    aux: Mapping[str, np.ndarray] = field(default_factory=dict)


@dataclass(frozen=True)
class Population:
    """One generation's members, each named by a recipe of O(1) numbers.

    Member i's standard-normal draw is the noise-table slice at ``offsets[i]``; ``scales[i]``, when
    a strategy draws one, scales it. With antithetic sampling member i is evaluated twice, with
    the perturbation added and subtracted, and its fitness row is (return(+), return(-)).
    """

    generation: int
    offsets: np.ndarray  # (n,) int64
    antithetic: bool
    scales: np.ndarray | None = None  # (n,) float32, or None

    @property
    def signs(self) -> tuple[int, ...]:
        """The signs each member is evaluated with."""
        return (1, -1) if self.antithetic else (1,)

    def __len__(self) -> int:
        return len(self.offsets)

    def subset(self, mask: np.ndarray) -> Population:
        """The members where ``mask`` (shape (n,), bool) is true, in order."""
        scales = None if self.scales is None else self.scales[mask]
        return replace(self, offsets=self.offsets[mask], scales=scales)


#: ``ESState.aux`` key of Anchored Weight Decay's anchor (present only with ``l2_anchor: stage_start``).
ANCHOR_KEY = "l2_anchor"


def begin_stage_anchor(state: ESState) -> ESState:
    """The state a new stage of a task sequence starts from, for Anchored Weight Decay: the anchor
    moved to the current parameters. A state without an anchor (``l2_anchor: zero``) is returned
    as it is, so runs without the option are unchanged. The anchor lives in ``aux``: frozen,
    data-only, checkpointed and replicated with the rest of the state."""
    if ANCHOR_KEY not in state.aux:
        return state
    return replace(state, aux={**state.aux, ANCHOR_KEY: state.params.copy()})


class Strategy(ABC):
    """Base of every ES variant: shared bookkeeping around one ``_update`` hook.

    Args:
        cfg: the algorithm's config (an :class:`~esbench.config.schema.ESConfig` subclass).
        noise: the shared noise table.
        dim: number of parameters.
        seed: the run seed; every random stream derives from it and the generation.
        layout: how the policy lays out its weights (default: one vector).
    """

    def __init__(
        self, cfg: Any, noise: NoiseTable, dim: int, seed: int, layout: ParamLayout | None = None
    ) -> None:
        self.cfg = cfg
        self.noise = noise
        self.dim = int(dim)
        self.seed = int(seed)
        self.sigma = float(cfg.sigma)
        self.layout: ParamLayout = layout or flat_layout(self.dim)
        check_layout(self.layout, self.dim)

    # -- state ----------------------------------------------------------------------------------
    def init(self, params: np.ndarray) -> ESState:
        """The initial state around ``params`` (shape (dim,))."""
        params = np.asarray(params, dtype=np.float32).copy()
        if params.shape != (self.dim,):
            raise ValueError(f"initial params have shape {params.shape}, expected ({self.dim},)")
        aux = self._init_aux(params)
        if self.anchored:
            aux = {**aux, ANCHOR_KEY: params.copy()}
        return ESState(params=params, opt=init_opt_state(self.dim), aux=aux)

    @property
    def anchored(self) -> bool:
        """Whether weight decay pulls toward the stage's starting parameters (``l2_anchor``)."""
        return str(getattr(self.cfg, "l2_anchor", "zero")) == "stage_start"

    def weight_decay(self, state: ESState) -> np.ndarray:
        """The decay term added to the loss gradient, shape (dim,), float32.

        ``l2_coeff * params`` (toward zero, the default), or with ``l2_anchor: stage_start``
        ``l2_coeff * (params - anchor)``: Anchored Weight Decay, toward the parameters the current
        stage started from (``state.aux["l2_anchor"]``, set by :func:`begin_stage_anchor`).
        """
        l2 = np.float32(self.cfg.l2_coeff)
        if ANCHOR_KEY in state.aux:
            return l2 * (state.params - state.aux[ANCHOR_KEY])
        return l2 * state.params

    def _init_aux(self, params: np.ndarray) -> dict[str, np.ndarray]:
        """A strategy's own arrays at generation 0 (none by default)."""
        return {}

    # -- ask --------------------------------------------------------------------------------------
    @property
    def num_members(self) -> int:
        """Members per generation: population_size / 2 with antithetic pairs."""
        n = int(self.cfg.population_size)
        return max(n // 2 if self.cfg.antithetic else n, 1)

    def ask(self, state: ESState) -> Population:
        """The members of ``state.generation``: a pure function of (seed, generation), so every
        replica computes the same population with nothing sent."""
        rng = generator(self.seed, NOISE_OFFSETS, state.generation)
        offsets = self.noise.sample_offsets(rng, self.draw_size, self.num_members)
        return Population(generation=state.generation, offsets=offsets, antithetic=bool(self.cfg.antithetic))

    @property
    def draw_size(self) -> int:
        """Noise-table entries one member's draw uses (``dim`` unless a strategy draws less)."""
        return self.dim

    def perturbation(self, state: ESState, population: Population, i: int) -> np.ndarray:
        """Member i's perturbation, shape (dim,), float32: ``sigma * eps_i`` by default."""
        eps = self.noise.get(int(population.offsets[i]), self.dim)
        scale = self.sigma if population.scales is None else self.sigma * float(population.scales[i])
        return np.float32(scale) * eps

    def member_params(self, state: ESState, population: Population, i: int, sign: int) -> np.ndarray:
        """``params + sign * perturbation_i``, shape (dim,), float32 (a new array)."""
        return state.params + np.float32(sign) * self.perturbation(state, population, i)

    # -- tell -------------------------------------------------------------------------------------
    def tell(self, state: ESState, population: Population, fitness: np.ndarray) -> tuple[ESState, dict]:
        """The next state from the fitness of ``population`` (shape (n, 2) antithetic, else (n, 1)).

        Members with a NaN or inf return (either side of a pair) are excluded from the update and
        counted in the returned metrics; if none is left, the state stays as it is.
        """
        fitness = np.asarray(fitness, dtype=np.float64).reshape(len(population.offsets), -1)
        valid = np.asarray(np.isfinite(fitness).all(axis=1))
        metrics: dict[str, float] = {"nonfinite_members": float((~valid).sum() * fitness.shape[1])}
        best = state.best_fitness
        new = state
        if valid.any():
            best = max(best, float(fitness[valid].max()))
            new, extra = self._update(state, population.subset(valid), fitness[valid])
            metrics.update(extra)
        else:
            metrics.update(grad_norm=float("nan"))
        metrics["param_norm"] = float(np.linalg.norm(new.params))
        return replace(new, generation=state.generation + 1, best_fitness=best), metrics

    def weighted_noise_sum(
        self, weights: np.ndarray, offsets: np.ndarray, batch: int = 500, size: int | None = None
    ) -> np.ndarray:
        """sum_i weights[i] * eps_i, shape (size or dim,), float32; batched to bound memory."""
        size = self.dim if size is None else int(size)
        total = np.zeros(size, dtype=np.float32)
        for start in range(0, len(offsets), batch):
            rows = np.stack([self.noise.get(int(o), size) for o in offsets[start : start + batch]])
            total += weights[start : start + batch].astype(np.float32) @ rows
        return total

    @abstractmethod
    def _update(self, state: ESState, population: Population, fitness: np.ndarray) -> tuple[ESState, dict]:
        """The next state (params, opt, aux) from the finite members: ``population`` holds only
        them, ``fitness`` is (m, k). Generation and best fitness are the base class's business."""
