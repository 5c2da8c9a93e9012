"""EGGROLL: Sarkar, Fellows, Duque et al. (2025), "Evolution Strategies at the Hyperscale",
arXiv:2511.16652 (Evolution Guided GeneRal Optimisation via Low-rank Learning).

Gaussian ES in which each member's perturbation of a weight matrix W (m x n) is low rank: with
A_i (m x r) and B_i (n x r) standard normal, member i is evaluated at

    W +/- sigma * E_i,    E_i = A_i B_i^T / sqrt(r)                                        (1)

(the paper's low-rank perturbation, in its method section). The 1/sqrt(r) gives E_i the identity
covariance of a full-rank Gaussian matrix (unit-variance, uncorrelated entries), so with raw
fitness the estimator below has OpenAI-ES's expectation on any quadratic; in general the paper
shows the low-rank update approaches the full-rank one as r grows (its O(1/r) result). Biases and
every other non-matrix block are perturbed full-rank, eps_i ~ N(0, I). The update is OpenAI-ES's
(Salimans et al. 2017, as this package's ``openai_es`` does it) with E_i in place of eps_i:

    g = sum_i (F_i(+) - F_i(-)) E_i / (2N)                                                  (2)

with F the centered ranks over all 2N returns (``fitness_shaping``), then the optimizer chosen at
construction steps on ``-g + l2 * theta`` (sigma folded into the step size). Each E_i has rank r,
but the sum (2) has rank min(N r, m, n): full rank once N r >= min(m, n). This is the paper's
update ``M <- M + alpha/N sum_i E_i f_i`` with antithetic pairs and shaped fitness.

What the paper buys with this structure is the forward pass: ``x (W + s E_i)^T = x W^T +
s/sqrt(r) (x B_i) A_i^T``, a shared product plus O(r (m + n)) per member, with no perturbed matrix
built (:class:`esbench.policies.lowrank.LowRankBatchedMLP`; the worker uses it when a strategy says
``low_rank``). :meth:`Eggroll.member_params` still returns the dense ``W + sign sigma E_i``.

Noise layout. A member is named by one noise-table offset; its draw is one contiguous slice
of ``draw_size`` entries read block by block in the policy's layout order: for a matrix block
(m, n), m*r entries for A (row-major (m, r)) then n*r for B ((n, r)); for any other block, its
size. With a vector-only layout (``make_strategy`` without one: one flat block) nothing is low
rank and EGGROLL *is* OpenAI-ES, to the bit: same offsets, same draws, same update.

Determinism. Workers replay ``tell`` and must reach the master's state bit for bit, though the
master's BLAS may run on more threads than a worker's. A sum of rank-r products through GEMM is
not safe for that (its rounding depends on the kernel's tiling, which depends on thread count),
so sums of outer products here are elementwise, in a fixed order (:func:`outer_sum`).
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
from esbench.utils.layout import Block, ParamLayout

#: One layer's factors for one member: A (out, r), B (in, r), and the bias draw (out,) or None.
LayerFactors = tuple[np.ndarray, np.ndarray, np.ndarray | None]


@dataclass
class EggrollConfig(GradientESConfig):
    """EGGROLL (Sarkar et al. 2025): OpenAI-ES's estimator with rank-r matrix perturbations. The
    other defaults are OpenAI-ES's, so a comparison isolates the perturbations' structure."""

    name: str = "eggroll"
    rank: int = _c(1, ge=1)  # r: rank of each member's perturbation of a weight matrix
    l2_coeff: float = _c(0.005, ge=0.0)  # weight decay (OpenAI-ES's 0.005)


@dataclass(frozen=True)
class _Part:
    """Where one layout block's share of a member's draw sits, and how it is read."""

    block: Block
    at: int  # position in the member's draw
    rank: int  # 0: full rank (the block's own size of entries); r > 0: factors A, B of rank r

    @property
    def draw(self) -> int:
        """Entries of the draw this block uses."""
        if self.rank:
            m, n = self.block.shape
            return (m + n) * self.rank
        return self.block.size

    def factors(self, draw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(A (m, r), B (n, r)): read-only views of a member's ``draw``."""
        m, n = self.block.shape
        mid = self.at + m * self.rank
        a = draw[self.at : mid].reshape(m, self.rank)
        b = draw[mid : mid + n * self.rank].reshape(n, self.rank)
        return a, b

    def vector(self, draw: np.ndarray) -> np.ndarray:
        """The full-rank draw of this block, shape (size,): a read-only view."""
        return draw[self.at : self.at + self.block.size]


def outer_sum(coef: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """sum_k coef[k] * a[k] @ b[k]^T, shape (m, n), float32, for a (K, m, r) and b (K, n, r).

    Computed as K * r elementwise outer products added in a fixed order (no BLAS reduction), so
    the bits depend on the inputs only, never on thread count or matrix tiling.
    """
    k, m, r = a.shape
    n = b.shape[1]
    total = np.zeros((m, n), np.float32)
    term = np.empty((m, n), np.float32)
    for j in range(k):
        c = np.float32(coef[j])
        for col in range(r):
            np.multiply.outer(a[j, :, col] * c, b[j, :, col], out=term)
            total += term
    return total


class Eggroll(Strategy):
    """EGGROLL over a policy's layout: rank-``cfg.rank`` perturbations of its weight matrices.

    Attributes:
        rank: r.
        low_rank: whether members can be played from factors (:meth:`member_factors`): true when
            the layout is layers, each a weight matrix (out, in) optionally followed by its bias
            (out,). The runtime then plays them with a low-rank batched forward pass.
    """

    def __init__(
        self, cfg: Any, noise: NoiseTable, dim: int, seed: int, layout: ParamLayout | None = None
    ) -> None:
        super().__init__(cfg, noise, dim, seed, layout)
        self.rank = int(cfg.rank)
        self.optimizer = make_optimizer(cfg)
        parts, at = [], 0
        for block in self.layout:
            part = _Part(block, at, self.rank if len(block.shape) == 2 else 0)
            parts.append(part)
            at += part.draw
        self.parts: tuple[_Part, ...] = tuple(parts)
        self._draw_size = at
        self.layers = _layers(self.parts)
        self.low_rank = bool(self.layers)

    @property
    def draw_size(self) -> int:
        """Entries of one member's draw: (m + n) r per matrix block, the size of any other."""
        return self._draw_size

    def _draw(self, population: Population, i: int) -> np.ndarray:
        return self.noise.get(int(population.offsets[i]), self._draw_size)

    def perturbation(self, state: ESState, population: Population, i: int) -> np.ndarray:
        """``sigma * eps_i``, shape (dim,), float32: E_i = A_i B_i^T / sqrt(r) (Eq. 1) on matrix
        blocks (row-major (out, in)), the draw itself elsewhere."""
        draw = self._draw(population, i)
        eps = np.empty(self.dim, np.float32)
        inv_sqrt_r = np.ones(1) / math.sqrt(self.rank)
        for p in self.parts:
            if p.rank:
                a, b = p.factors(draw)
                eps[p.block.start : p.block.stop] = outer_sum(inv_sqrt_r, a[None], b[None]).ravel()  # Eq. (1)
            else:
                eps[p.block.start : p.block.stop] = p.vector(draw)
        return np.float32(self.sigma) * eps

    def member_factors(self, state: ESState, population: Population, i: int) -> tuple[LayerFactors, ...]:
        """Member i's perturbation as factors, per layer: (A_i (out, r), B_i (in, r), bias draw
        (out,) or None), read-only views of the noise table.

        Member i with sign s has layer weights ``W + s sigma A_i B_i^T / sqrt(r)`` and bias
        ``b + s sigma bias_draw``: exactly :meth:`member_params`, in factored form.

        Raises:
            ValueError: the layout is not layers of weight matrices (``low_rank`` is false).
        """
        if not self.low_rank:
            raise ValueError(
                "member_factors needs a layout of weight matrices (out, in), each followed by its bias"
            )
        draw = self._draw(population, i)
        out: list[LayerFactors] = []
        for weight, bias in self.layers:
            a, b = weight.factors(draw)
            out.append((a, b, None if bias is None else bias.vector(draw)))
        return tuple(out)

    def _update(self, state: ESState, population: Population, fitness: np.ndarray) -> tuple[ESState, dict]:
        shaped = shape_fitness(fitness, self.cfg.fitness_shaping)  # over all 2N returns
        weights = shaped[:, 0] - shaped[:, 1] if shaped.shape[1] == 2 else shaped[:, 0]
        g = self._weighted_sum(weights, population) / np.float32(fitness.size)  # Eq. (2)
        loss_grad = -g + self.weight_decay(state)
        opt, step = self.optimizer.step(state.opt, loss_grad)
        params = (state.params + step).astype(np.float32)
        metrics = {
            "grad_norm": float(np.linalg.norm(g)),
            "update_ratio": float(np.linalg.norm(step)) / max(float(np.linalg.norm(state.params)), 1e-12),
        }
        return replace(state, params=params, opt=opt), metrics

    def _weighted_sum(self, weights: np.ndarray, population: Population) -> np.ndarray:
        """sum_i weights[i] * eps_i, shape (dim,), float32, eps_i as in :meth:`perturbation`."""
        total = np.empty(self.dim, np.float32)
        offsets = population.offsets
        draws = [self.noise.get(int(o), self._draw_size) for o in offsets]
        coef = weights.astype(np.float64) / math.sqrt(self.rank)
        for p in self.parts:
            if p.rank:
                factors = [p.factors(d) for d in draws]
                a = np.stack([f[0] for f in factors])  # (N, m, r)
                b = np.stack([f[1] for f in factors])  # (N, n, r)
                total[p.block.start : p.block.stop] = outer_sum(coef, a, b).ravel()  # Eq. (2), matrices
            else:
                total[p.block.start : p.block.stop] = self.weighted_noise_sum(
                    weights, offsets + p.at, size=p.block.size
                )
        return total


def _layers(parts: tuple[_Part, ...]) -> tuple[tuple[_Part, _Part | None], ...]:
    """The layout as layers (weight part, bias part or None), or () if it is not one."""
    layers: list[tuple[_Part, _Part | None]] = []
    for p in parts:
        if p.rank:
            layers.append((p, None))
        elif layers and layers[-1][1] is None and p.block.shape == layers[-1][0].block.shape[:1]:
            layers[-1] = (layers[-1][0], p)  # the bias (out,) of the weight (out, in) before it
        else:
            return ()
    return tuple(layers)


register_algorithm(
    AlgorithmSpec(
        key="eggroll",
        family="es",
        schema=EggrollConfig,
        cls=Eggroll,
        label="EGGROLL",
        colour="#AA4499",
        description="EGGROLL, Sarkar et al. 2025: OpenAI-ES with rank-r matrix perturbations A B^T/sqrt(r)",
        policy_kinds=("mlp", "linear"),
    )
)
