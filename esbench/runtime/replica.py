"""The trainer state that master and workers both hold, and the one function that advances it.

DESIGN.md promise 2: per generation only O(population) numbers cross the wire. The master sends
each task a :class:`SyncMessage` — the generation wanted, a digest of the state, and the last few
:class:`GenerationRecord` s (noise offsets, returns, observation sums). A worker that already holds
an earlier state replays those records with :func:`advance`, the very function the master applies,
so it reaches a bit-identical state; it checks the digest, and only a worker that is new, restarted
or too far behind (or whose replay disagrees) is sent a full snapshot.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from esbench.policies.obs_norm import ObsStats
from esbench.strategies.base import ESState, Population, Strategy


@dataclass(frozen=True)
class TrainerState:
    """Strategy state plus observation statistics (None when the policy does not normalize)."""

    es: ESState
    obs: ObsStats | None

    @property
    def generation(self) -> int:
        """Generations completed so far."""
        return self.es.generation


@dataclass(frozen=True)
class GenerationRecord:
    """What a generation produced, enough to advance any replica: O(population) numbers."""

    population: Population
    fitness: np.ndarray  # (n, 2) antithetic or (n, 1); may hold NaN for excluded members
    obs_total: np.ndarray | None = None  # (obs_dim,) float64, summed in member order
    obs_sumsq: np.ndarray | None = None
    obs_count: float = 0.0

    @property
    def generation(self) -> int:
        """The generation this record advances *from*."""
        return self.population.generation


@dataclass(frozen=True)
class SyncMessage:
    """Tells a worker which state to evaluate at and how to reach it."""

    generation: int
    digest: str
    records: tuple[GenerationRecord, ...] = field(default_factory=tuple)


def advance(strategy: Strategy, state: TrainerState, record: GenerationRecord) -> tuple[TrainerState, dict]:
    """The next state: ``strategy.tell`` on the record's fitness, then the observation sums added."""
    if record.generation != state.generation:
        raise ValueError(f"record of generation {record.generation} applied to state at {state.generation}")
    es, metrics = strategy.tell(state.es, record.population, record.fitness)
    obs = state.obs
    if (
        obs is not None
        and record.obs_total is not None
        and record.obs_sumsq is not None
        and record.obs_count > 0
    ):
        obs = obs.add(record.obs_total, record.obs_sumsq, record.obs_count)
    return TrainerState(es=es, obs=obs), metrics


def state_digest(state: TrainerState) -> str:
    """sha256 over the parameters and observation statistics: equal digests, equal rollouts."""
    h = hashlib.sha256()
    h.update(np.int64(state.generation).tobytes())
    h.update(np.ascontiguousarray(state.es.params).tobytes())
    if state.obs is not None:
        h.update(state.obs.total.tobytes())
        h.update(state.obs.sumsq.tobytes())
        h.update(np.float64(state.obs.count).tobytes())
    return h.hexdigest()
