"""A batch of MLP members that differ from shared base weights by low-rank perturbations.

EGGROLL (Sarkar et al. 2025, arXiv:2511.16652; :mod:`esbench.strategies.eggroll`) perturbs each
weight matrix W (out, in) of member i by ``s E_i`` with ``E_i = A_i B_i^T / sqrt(r)``, A_i
(out, r), B_i (in, r), s = sign * sigma. Its forward pass never builds ``W + s E_i``:

    (W + s E_i) x + b_i = W x + (s / sqrt(r)) A_i (B_i^T x) + b_i                            (1)

a product with the shared W plus O(r (in + out)) per member (the paper's method section). So a batch of
members holds one copy of the base weights, set once per generation (:meth:`set_base`), and per
slot only the factors and its bias (:meth:`set_slot`): loading a member costs O(r (in + out)) per
layer instead of O(in * out), and a step's forward pass reads the base weights once per slot from
cache instead of B different weight matrices from memory.

Row b of every output depends only on slot b's factors and observation, exactly as in
:class:`~esbench.policies.mlp.BatchedMLP`: the shared product ``W x`` is taken slot by slot (a
stacked matrix-vector product with W broadcast), not as one GEMM over the batch, whose rounding of
a row depends on the batch size and the row's position in it (measured with OpenBLAS here). An
episode's numbers therefore do not depend on which episodes share its batch, and a run stays bit
identical whatever the number of workers (DESIGN.md promise 1). The price against one GEMM is
measured by :mod:`esbench.bench.eggroll`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from esbench.policies.mlp import MLPPolicy

#: One layer's factors for one member: A (out, r), B (in, r), and its bias draw (out,) or None.
LayerFactors = tuple[np.ndarray, np.ndarray, np.ndarray | None]


@dataclass(frozen=True)
class LowRank:
    """One member, as a departure from the base weights: layer k has weights
    ``W_k + scale / sqrt(r) * A_k B_k^T`` and bias ``b_k + scale * bias_draw_k`` (Eq. 1).

    Attributes:
        factors: per layer (A (out, r), B (in, r), bias draw (out,) or None for no bias draw).
        scale: sign * sigma.
    """

    factors: tuple[LayerFactors, ...]
    scale: float


class LowRankSource(Protocol):
    """A strategy whose members can be described by factors (EGGROLL)."""

    low_rank: bool
    rank: int
    sigma: float

    def member_factors(self, state: Any, population: Any, i: int) -> tuple[LayerFactors, ...]:
        """Member i's factors, per layer, as :attr:`LowRank.factors`."""
        ...


class LowRankBatchedMLP:
    """``batch`` members of an :class:`MLPPolicy`'s architecture around shared base weights, each
    with its own rank-``rank`` factors per layer, run in one stacked forward pass (Eq. 1). Same
    interface as :class:`~esbench.policies.mlp.BatchedMLP` for the lockstep rollout: ``t``,
    ``batch``, :meth:`prefix`, :meth:`set_slot`, :meth:`act`; plus :meth:`set_base`, which must
    come before the slots of a generation are set.
    """

    def __init__(self, template: MLPPolicy, batch: int, rank: int) -> None:
        self.t = template
        self.batch = int(batch)
        self.rank = int(rank)
        shapes = template.layer_shapes
        self.W = [np.zeros((o, i), np.float32) for o, i in shapes]  # shared base weights
        self.base_b = [np.zeros(o, np.float32) for o, _ in shapes]  # shared base biases
        self.A = [np.zeros((self.batch, o, self.rank), np.float32) for o, _ in shapes]  # * scale/sqrt(r)
        self.Bt = [np.zeros((self.batch, self.rank, i), np.float32) for _, i in shapes]  # B^T
        self.b = [np.zeros((self.batch, o, 1), np.float32) for o, _ in shapes]  # perturbed biases
        self._x = np.zeros((self.batch, template.obs_dim, 1), np.float32)
        self._dims = np.arange(template.act_dim)[None, :]

    def prefix(self, n: int) -> LowRankBatchedMLP:
        """The first ``n`` slots as a batch of their own (views of this one's buffers; the base
        weights are shared)."""
        if not 1 <= n <= self.batch:
            raise ValueError(f"prefix of {n} slots from a batch of {self.batch}")
        if n == self.batch:
            return self
        view = object.__new__(LowRankBatchedMLP)
        view.t, view.batch, view.rank = self.t, n, self.rank
        view.W, view.base_b = self.W, self.base_b
        view.A, view.Bt, view.b = [a[:n] for a in self.A], [b[:n] for b in self.Bt], [b[:n] for b in self.b]
        view._x, view._dims = self._x[:n], self._dims
        return view

    def set_base(self, flat: np.ndarray) -> None:
        """Load the base weights (the search distribution's mean) from a flat vector of shape
        (num_params,), laid out as :meth:`MLPPolicy.param_layout` says."""
        pos = 0
        for k, (o, i) in enumerate(self.t.layer_shapes):
            self.W[k][...] = flat[pos : pos + o * i].reshape(o, i)
            pos += o * i
            if self.t.bias:
                self.base_b[k][...] = flat[pos : pos + o]
                pos += o

    def set_slot(self, slot: int, member: LowRank) -> None:
        """Load one slot's member (its factors are copied; the base must be set already).

        Raises:
            ValueError: the member's layers or rank do not fit this batch.
        """
        if len(member.factors) != len(self.W):
            raise ValueError(f"a member of {len(member.factors)} layers for an MLP of {len(self.W)}")
        coef = np.float32(member.scale / np.sqrt(self.rank))
        scale = np.float32(member.scale)
        for k, (a, b, bias_draw) in enumerate(member.factors):
            if a.shape != self.A[k].shape[1:] or b.shape[::-1] != self.Bt[k].shape[1:]:
                raise ValueError(f"layer {k}: factors {a.shape}, {b.shape} for rank {self.rank}")
            np.multiply(a, coef, out=self.A[k][slot])
            self.Bt[k][slot] = b.T
            bias = self.b[k][slot, :, 0]
            if bias_draw is None or not self.t.bias:
                bias[...] = self.base_b[k]
            else:
                np.add(self.base_b[k], scale * bias_draw, out=bias)  # = member_params' bias, bit for bit

    def act(self, obs: np.ndarray) -> np.ndarray:
        """Actions for observations of shape (batch, obs_dim): (batch, act_dim) float32, or
        (batch,) int64 for a discrete action space (as :meth:`BatchedMLP.act`)."""
        t = self.t
        x = self._x
        x[:, :, 0] = obs
        if t.obs_norm:
            np.subtract(x, t._mean[:, None], out=x)
            np.multiply(x, t._inv_std[:, None], out=x)
            np.clip(x, -t.obs_clip, t.obs_clip, out=x)
        last = len(self.W) - 1
        h = x
        for k in range(len(self.W)):
            u = np.matmul(self.Bt[k], h)  # (batch, r, 1): B_i^T x
            h = np.matmul(self.W[k], h)  # (batch, out, 1): W x, slot by slot (W broadcast)
            h += np.matmul(self.A[k], u)  # + s/sqrt(r) A_i (B_i^T x)  Eq. (1)
            h += self.b[k]
            if k < last:
                t._act_fn(h, out=h)
        out = h[:, :, 0]
        if t.discrete_n is not None:
            return out.argmax(axis=1)
        if t.action_bins > 0:
            idx = out.reshape(self.batch, t.act_dim, t.action_bins).argmax(axis=2)
            return t._bin_values[self._dims, idx]
        return np.clip(out, t.action_low, t.action_high)
