"""PGPE: Sehnke, Osendorfer, Rückstieß, Graves, Peters, Schmidhuber (2010), "Parameter-exploring
policy gradients", Neural Networks 23(4), 551-559; with ClipUp (Toklu, Liskowski, Srivastava 2020,
"ClipUp: a simple and powerful optimizer for distribution-based policy evolution", PPSN XVI).

The search distribution is a separable Gaussian N(mu, diag(sigma^2)) with one standard deviation
per parameter, kept in ``state.aux["sigma"]``. Members are symmetric pairs (Sec. 2.3, "symmetric
sampling"): ``theta_i(+/-) = mu +/- sigma * eps_i`` with ``eps_i`` the noise-table slice of member i.
The returns of all 2n evaluations are replaced by their centered ranks ``u`` in [-0.5, 0.5] (as
evotorch's and pgpelib's PGPE, after Salimans et al. 2017), and with ``s_i = sigma * eps_i``:

    g_mu    = 1/n sum_i (u_i(+) - u_i(-)) / 2 * s_i                                        (1)
    g_sigma = 1/n sum_i (u_i(+) + u_i(-)) / 2 * (s_i^2 - sigma^2) / sigma                  (2)
    mu     <- mu + ClipUp(g_mu)                                                             (3)
    sigma  <- clip(sigma + alpha_sigma g_sigma, (1 - c) sigma_old, (1 + c) sigma_old)       (4)

(1) and (2) are Sec. 2.3's symmetric-sampling estimators of the gradients of the expected return
with respect to mu and sigma, with the baseline of (2) the mean shaped return (zero for centered
ranks, so it drops out) and the step sizes alpha_mu, alpha_sigma of the paper; per-parameter
products, all shapes (dim,). The normalization by the number of directions n, the ranks, ClipUp on
the center and the relative clip ``c = stdev_max_change`` of (4) are evotorch's ``PGPE``
(``algorithms/distributed/gaussian.py``: ``SymmetricSeparableGaussian._compute_gradients`` with
``divide_*_grad_by="num_directions"``, ``stdev_max_change=0.2``, ``ranking_method="centered"``,
``optimizer="clipup"``) and pgpelib's ``pgpe.py``. Without antithetic sampling the same estimators
use ``u_i`` for both differences and 1/n over all members (evotorch's ``symmetric=False``).

ClipUp (:class:`esbench.strategies.optimizers.ClipUp`) is the default optimizer of (3): a
normalized gradient step into a momentum velocity capped at ``max_speed`` (the paper's rule of
thumb: step size = max_speed / 2). ``radius_init`` sets the initial ``sigma = radius / sqrt(dim)``
(pgpelib's ``train.py``: ``stdev_init = sqrt(radius^2 / N)``, radius = 15 * max_speed), so one
setting suits policies of any size; without it every parameter starts at ``sigma``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from esbench.config.registry import AlgorithmSpec, register_algorithm
from esbench.config.schema import GradientESConfig, _c
from esbench.strategies.base import ESState, Population, Strategy
from esbench.strategies.noise import NoiseTable
from esbench.strategies.optimizers import make_optimizer
from esbench.strategies.shaping import shape_fitness
from esbench.utils.layout import ParamLayout


@dataclass
class PGPEConfig(GradientESConfig):
    """PGPE with ClipUp; defaults from pgpelib's ``train.py`` (MLP policies) and evotorch's PGPE.

    ``learning_rate`` is the center step size (evotorch's ``center_learning_rate``, ClipUp's
    step size), ``sigma`` the initial per-parameter std when ``radius_init`` is unset.
    """

    name: str = "pgpe"
    optimizer: str = _c("clipup", choices=("adam", "sgd", "clipup"))
    learning_rate: float = _c(0.075, gt=0.0)  # ClipUp step size = max_speed / 2
    max_speed: float | None = _c(0.15, gt=0.0)  # ClipUp's velocity cap (pgpelib train.py: 0.15)
    sigma: float = _c(0.1, gt=0.0)  # initial std per parameter, when radius_init is None
    radius_init: float | None = _c(2.25, gt=0.0)  # initial ||sigma||: sigma_j = radius_init / sqrt(dim)
    stdev_learning_rate: float = _c(0.1, ge=0.0)  # alpha_sigma of Eq. (4) (evotorch, pgpelib: 0.1)
    stdev_max_change: float = _c(0.2, gt=0.0, lt=1.0)  # c of Eq. (4): relative change per generation


class PGPE(Strategy):
    """Symmetric-sampling PGPE with per-parameter sigma in ``state.aux["sigma"]`` (float32, (dim,)).

    Args:
        cfg: a :class:`PGPEConfig`.
        noise: the shared noise table.
        dim: number of parameters.
        seed: the run seed.
        layout: unused (PGPE perturbs every parameter independently).
    """

    def __init__(
        self, cfg: Any, noise: NoiseTable, dim: int, seed: int, layout: ParamLayout | None = None
    ) -> None:
        super().__init__(cfg, noise, dim, seed, layout)
        self.optimizer = make_optimizer(cfg)
        radius = cfg.get("radius_init")
        self.sigma0 = float(radius) / math.sqrt(self.dim) if radius is not None else float(cfg.sigma)

    def _init_aux(self, params: np.ndarray) -> dict[str, np.ndarray]:
        return {"sigma": np.full(self.dim, self.sigma0, dtype=np.float32)}

    def perturbation(self, state: ESState, population: Population, i: int) -> np.ndarray:
        """``s_i = sigma * eps_i``: member i's step, shape (dim,), float32."""
        return state.aux["sigma"] * self.noise.get(int(population.offsets[i]), self.dim)

    def _noise_moments(
        self, w_diff: np.ndarray, w_sum: np.ndarray, offsets: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(sum_i w_diff[i] eps_i, sum_i w_sum[i] (eps_i^2 - 1))``, each (dim,) float32.

        Members are stacked in batches of at most 500 rows and ~200 MB (the Atari CNN's 1.7M
        parameters: 29 rows), a function of ``dim`` alone, so every replica sums in one order.
        """
        batch = max(1, min(500, 50_000_000 // self.dim))
        first = np.zeros(self.dim, dtype=np.float32)
        second = np.zeros(self.dim, dtype=np.float32)
        for start in range(0, len(offsets), batch):
            eps = np.stack([self.noise.get(int(o), self.dim) for o in offsets[start : start + batch]])
            first += w_diff[start : start + batch] @ eps
            second += w_sum[start : start + batch] @ (eps * eps - np.float32(1.0))
        return first, second

    def _update(self, state: ESState, population: Population, fitness: np.ndarray) -> tuple[ESState, dict]:
        shaped = shape_fitness(fitness, self.cfg.fitness_shaping)  # over all returns
        if self.cfg.fitness_shaping == "raw":  # ranks and z-scores are centered already
            shaped = shaped - np.float32(shaped.mean())  # the baseline b of Eq. (2): the mean return
        if shaped.shape[1] == 2:
            w_diff = (shaped[:, 0] - shaped[:, 1]) / np.float32(2.0)  # Eq. (1)
            w_sum = (shaped[:, 0] + shaped[:, 1]) / np.float32(2.0)  # Eq. (2)
        else:  # evotorch's symmetric=False: one weight per member for both
            w_diff = w_sum = shaped[:, 0]
        n = np.float32(len(population))
        sigma = state.aux["sigma"]
        first, second = self._noise_moments(
            w_diff.astype(np.float32), w_sum.astype(np.float32), population.offsets
        )
        g_mu = sigma * first / n  # Eq. (1): s_i = sigma * eps_i
        g_sigma = sigma * second / n  # Eq. (2): (s_i^2 - sigma^2) / sigma = sigma (eps_i^2 - 1)
        loss_grad = -g_mu + self.weight_decay(state)  # the optimizer minimizes
        opt, step = self.optimizer.step(state.opt, loss_grad)  # Eq. (3)
        params = (state.params + step).astype(np.float32)
        change = np.float32(self.cfg.stdev_max_change)
        lo, hi = sigma * (np.float32(1.0) - change), sigma * (np.float32(1.0) + change)
        new_sigma = np.clip(sigma + np.float32(self.cfg.stdev_learning_rate) * g_sigma, lo, hi)  # Eq. (4)
        metrics = {
            "grad_norm": float(np.linalg.norm(g_mu)),
            "update_ratio": float(np.linalg.norm(step)) / max(float(np.linalg.norm(state.params)), 1e-12),
            "sigma_mean": float(new_sigma.mean()),
        }
        return replace(state, params=params, opt=opt, aux={**state.aux, "sigma": new_sigma}), metrics


register_algorithm(
    AlgorithmSpec(
        key="pgpe",
        family="es",
        schema=PGPEConfig,
        cls=PGPE,
        label="PGPE (ClipUp)",
        colour="#117733",
        description="PGPE, Sehnke et al. 2010: symmetric sampling, per-parameter sigma, ClipUp (Toklu 2020)",
        policy_kinds=("mlp", "linear", "cnn"),
    )
)
