"""The trainer state that master and workers both hold, and the one function that advances it.

DESIGN.md promise 2: per generation only O(population) numbers cross the wire. The master sends
each task a :class:`SyncMessage` — the generation wanted, a digest of the state, and the last
``algo.sync_history`` :class:`GenerationRecord` s (noise offsets, returns, observation sums; 4 by
default). A worker that already holds an earlier state replays those records with :func:`advance`,
the very function the master applies, so it reaches a bit-identical state; it checks the digest,
and only a worker that is new, restarted or more than ``sync_history`` generations behind (or whose
replay disagrees) is sent a full snapshot. The history length changes what crosses the wire (each
record is O(population): at 10,000 episodes most of a task's payload), never the numbers.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from threadpoolctl import ThreadpoolController

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


_BLAS: ThreadpoolController | None = None


def _one_blas_thread() -> Any:
    """A context in which BLAS (OpenBLAS, MKL) runs on one thread.

    A multi-threaded BLAS splits a long reduction (the weighted sum of noise rows in ``tell``, a
    covariance product) into per-thread partial sums, and their rounding differs from the
    one-thread result: on a 1M-parameter MLP the master (2 BLAS threads) and its workers (1 thread:
    Dask's nanny sets it) disagreed from the first update, every replay failed its digest, and
    every task was re-sent with a 12 MB snapshot (``esbench bench comm`` found it). So every
    replica applies ``tell`` on one thread. The controller is built once (about 2 µs per use).
    """
    global _BLAS
    if _BLAS is None:
        _BLAS = ThreadpoolController()
    return _BLAS.limit(limits=1, user_api="blas")


def advance(strategy: Strategy, state: TrainerState, record: GenerationRecord) -> tuple[TrainerState, dict]:
    """The next state: ``strategy.tell`` on the record's fitness, then the observation sums added.

    Master and workers call this one function, with BLAS on one thread (:func:`_one_blas_thread`),
    so their states agree bit for bit whatever threads each process would otherwise use.
    """
    if record.generation != state.generation:
        raise ValueError(f"record of generation {record.generation} applied to state at {state.generation}")
    with _one_blas_thread():
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
    """sha256 over the parameters, the strategy's own arrays and the observation statistics:
    equal digests, equal members and rollouts."""
    h = hashlib.sha256()
    h.update(np.int64(state.generation).tobytes())
    h.update(np.ascontiguousarray(state.es.params).tobytes())
    for key in sorted(state.es.aux):  # a strategy's own arrays (per-parameter sigma, CMA-ES state)
        h.update(key.encode())
        h.update(np.ascontiguousarray(state.es.aux[key]).tobytes())
    if state.obs is not None:
        h.update(state.obs.total.tobytes())
        h.update(state.obs.sumsq.tobytes())
        h.update(np.float64(state.obs.count).tobytes())
    return h.hexdigest()
