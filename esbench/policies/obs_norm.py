"""Running observation statistics (Salimans et al. 2017, supplement: "observation normalization").

Workers return per-rollout sums (sum, sum of squares, count) from a small share of rollouts; the
master (and every worker replica) adds them in member order, so the statistics are the same
whatever the number of workers. As in the reference code, the variance is floored at 1e-2 and the
statistics start from a tiny pseudo-count, giving mean 0 and std 1 before any data.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

_EPS = 1e-2


@dataclass(frozen=True)
class ObsStats:
    """Sufficient statistics over observations: sums of shape (obs_dim,), float64."""

    total: np.ndarray
    sumsq: np.ndarray
    count: float
    floor: float = _EPS  # the variance floor (a base's own, when a run starts from one: init.from_run)

    @classmethod
    def zeros(cls, obs_dim: int) -> ObsStats:
        """The prior: count 1e-2, sumsq 1e-2 (std 1), mean 0."""
        return cls(np.zeros(obs_dim), np.full(obs_dim, _EPS), _EPS)

    def add(self, total: np.ndarray, sumsq: np.ndarray, count: float) -> ObsStats:
        """New statistics including the given sums."""
        return replace(self, total=self.total + total, sumsq=self.sumsq + sumsq, count=self.count + count)

    @property
    def mean(self) -> np.ndarray:
        """Running mean, shape (obs_dim,)."""
        return self.total / self.count

    @property
    def std(self) -> np.ndarray:
        """Running std with the variance floored at ``floor`` (1e-2), shape (obs_dim,)."""
        return np.sqrt(np.maximum(self.sumsq / self.count - np.square(self.mean), self.floor))
