"""SNES: Schaul, Glasmachers, Schmidhuber (2011), "High dimensions and heavy tails for natural
evolution strategies", GECCO 2011, Algorithm 2 (separable NES, with fitness shaping).

The search distribution is N(mu, diag(sigma^2)) with one sigma per parameter, kept in
``state.aux["sigma"]`` so every replica holds it (the runtime digests ``aux``). Per generation,
with lambda evaluations and d parameters:

* s_k ~ N(0, I), z_k = mu + sigma * s_k  (element-wise; :meth:`SNES.perturbation`).
* Utilities by rank k (1 = best), :func:`snes_utilities`::

      u_k = max(0, log(lambda/2 + 1) - log k) / sum_j max(0, log(lambda/2 + 1) - log j) - 1/lambda

* Natural gradients and the updates::

      grad_mu    = sum_k u_k s_k
      grad_sigma = sum_k u_k (s_k^2 - 1)
      mu    <- mu + eta_mu * sigma * grad_mu
      sigma <- sigma * exp(eta_sigma / 2 * grad_sigma)

with eta_mu = 1 and eta_sigma = (3 + ln d) / (5 sqrt d) by default (the paper's; the same as
PyBrain's ``0.6 (3 + ln d) / (3 sqrt d)``, the authors' reference code).

Sampling: the paper draws the lambda samples independently, and so does this class by default
(``antithetic: false``), so the defaults are the published algorithm. With ``antithetic: true``
each draw s is evaluated as +s and -s (mirrored sampling); both are ordinary samples of the same
distribution, ranked together among all 2n evaluations, so the formulas above apply unchanged
(the pair shares s^2, so its sigma term is (u(+) + u(-)) (s^2 - 1)).

The paper's population size, lambda = 4 + floor(3 ln d), depends on the policy's size; esbench
fixes ``population_size`` in the config instead (see ``conf/algo/snes.yaml``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from esbench.config.registry import AlgorithmSpec, register_algorithm
from esbench.config.schema import ESConfig, _c
from esbench.strategies.base import ESState, Population, Strategy
from esbench.strategies.noise import NoiseTable


@dataclass
class SNESConfig(ESConfig):
    """SNES (Schaul et al. 2011, Algorithm 2); ``sigma`` is every parameter's initial std."""

    name: str = "snes"
    antithetic: bool = False  # the paper samples independently
    mean_learning_rate: float = _c(1.0, gt=0.0)  # eta_mu (paper: 1)
    sigma_learning_rate: float | None = _c(None, gt=0.0)  # eta_sigma; None: (3 + ln d) / (5 sqrt d)


def snes_utilities(fitness: np.ndarray) -> np.ndarray:
    """The paper's rank-based utilities of ``fitness`` (any shape, higher is better): float64 of
    the same shape, summing to 0. Rank 1 is the best; ties are broken by position (first wins)."""
    flat = np.asarray(fitness, dtype=np.float64).ravel()
    lam = flat.size
    raw = np.maximum(0.0, math.log(lam / 2.0 + 1.0) - np.log(np.arange(1, lam + 1)))
    by_rank = raw / raw.sum() - 1.0 / lam
    u = np.empty(lam)
    u[np.argsort(-flat, kind="stable")] = by_rank
    return u.reshape(np.shape(fitness))


def default_sigma_learning_rate(dim: int) -> float:
    """eta_sigma = (3 + ln d) / (5 sqrt d), the paper's default for d parameters."""
    return (3.0 + math.log(dim)) / (5.0 * math.sqrt(dim))


class SNES(Strategy):
    """Separable NES; hyperparameters from :class:`SNESConfig`, per-parameter sigma in ``aux``."""

    def __init__(self, cfg: Any, noise: NoiseTable, dim: int, seed: int, layout: Any = None) -> None:
        super().__init__(cfg, noise, dim, seed, layout)
        self.eta_mu = float(cfg.mean_learning_rate)
        eta_sigma = cfg.get("sigma_learning_rate")
        self.eta_sigma = default_sigma_learning_rate(self.dim) if eta_sigma is None else float(eta_sigma)

    def _init_aux(self, params: np.ndarray) -> dict[str, np.ndarray]:
        """sigma = ``cfg.sigma`` for every parameter, shape (dim,), float32."""
        return {"sigma": np.full(self.dim, self.sigma, dtype=np.float32)}

    def perturbation(self, state: ESState, population: Population, i: int) -> np.ndarray:
        """sigma * s_i, element-wise, shape (dim,), float32."""
        return state.aux["sigma"] * self.noise.get(int(population.offsets[i]), self.dim)

    def _update(self, state: ESState, population: Population, fitness: np.ndarray) -> tuple[ESState, dict]:
        u = snes_utilities(fitness)  # (m, k), over all evaluations
        if u.shape[1] == 2:  # +s and -s: s enters grad_mu with its sign, s^2 with none
            w_mu, w_sigma = u[:, 0] - u[:, 1], u[:, 0] + u[:, 1]
        else:
            w_mu = w_sigma = u[:, 0]
        grad_mu, grad_sigma = self._gradients(w_mu, w_sigma, population.offsets)
        sigma = state.aux["sigma"].astype(np.float64)
        params = (state.params + self.eta_mu * sigma * grad_mu).astype(np.float32)
        new_sigma = (sigma * np.exp(0.5 * self.eta_sigma * grad_sigma)).astype(np.float32)
        step = params - state.params
        metrics = {
            "grad_norm": float(np.linalg.norm(grad_mu)),
            "update_ratio": float(np.linalg.norm(step)) / max(float(np.linalg.norm(state.params)), 1e-12),
            "sigma_mean": float(new_sigma.mean()),
        }
        return replace(state, params=params, aux={**state.aux, "sigma": new_sigma}), metrics

    def _gradients(
        self, w_mu: np.ndarray, w_sigma: np.ndarray, offsets: np.ndarray, batch: int = 500
    ) -> tuple[np.ndarray, np.ndarray]:
        """(sum_k w_mu[k] s_k, sum_k w_sigma[k] (s_k^2 - 1)), each (dim,) float64, in one batched
        pass over the noise rows."""
        grad_mu = np.zeros(self.dim)
        grad_sigma = np.zeros(self.dim)
        for start in range(0, len(offsets), batch):
            rows = np.stack([self.noise.get(int(o), self.dim) for o in offsets[start : start + batch]])
            rows = rows.astype(np.float64)
            grad_mu += w_mu[start : start + batch] @ rows
            grad_sigma += w_sigma[start : start + batch] @ (rows * rows - 1.0)
        return grad_mu, grad_sigma


register_algorithm(
    AlgorithmSpec(
        key="snes",
        family="es",
        schema=SNESConfig,
        cls=SNES,
        label="SNES",
        colour="#882255",
        description="SNES, Schaul et al. 2011: separable NES, per-parameter sigma, rank utilities",
    )
)
