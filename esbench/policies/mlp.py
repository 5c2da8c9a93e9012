"""The MuJoCo policy: an MLP over normalized observations (the paper: 64x64 tanh).

Hot path: ``act`` runs once per environment step in every rollout, so it works on preallocated
float32 buffers with ``out=`` arguments. Actions are either continuous (linear output, clipped to
the action bounds) or discretized into ``action_bins`` bins per dimension (argmax over each
dimension's logits), the paper's choice on Hopper and Swimmer.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from esbench.measures.distribution import ActionDist, categorical, deterministic_gaussian
from esbench.policies.base import Policy
from esbench.utils.layout import Block, ParamLayout


class MLPPolicy(Policy):
    """Deterministic MLP; weights are views into one flat float32 buffer."""

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        hidden_sizes: Sequence[int] = (64, 64),
        activation: str = "tanh",
        action_bins: int = 0,
        action_low: np.ndarray | None = None,
        action_high: np.ndarray | None = None,
        discrete_n: int | None = None,
        obs_norm: bool = True,
        obs_clip: float = 5.0,
        bias: bool = True,
        raw_tail: int = 0,
    ) -> None:
        self.obs_dim = int(obs_dim)
        # Trailing observation entries never normalized: a one-hot stage id (sequence.stage_id_obs),
        # constant within a stage, which per-stage statistics would turn into zeros.
        self.raw_tail = int(raw_tail)
        self.bias = bool(bias)  # False: weights only (ARS's linear policy, Mania et al. 2018)
        self.act_dim = int(act_dim)
        self.discrete_n = discrete_n  # Discrete action space: argmax over n logits
        self.action_bins = int(action_bins)
        self.obs_norm = bool(obs_norm)
        self.obs_clip = float(obs_clip)
        self._act_fn = np.tanh if activation == "tanh" else _relu
        if discrete_n is not None:
            out = int(discrete_n)
        elif self.action_bins > 0:
            out = self.act_dim * self.action_bins
        else:
            out = self.act_dim
        sizes = [self.obs_dim, *[int(h) for h in hidden_sizes], out]
        self.layer_shapes = [(sizes[i + 1], sizes[i]) for i in range(len(sizes) - 1)]
        nb = 1 if self.bias else 0
        self._num_params = sum(o * i + nb * o for o, i in self.layer_shapes)
        self._flat = np.zeros(self._num_params, dtype=np.float32)
        self._weights: list[tuple[np.ndarray, np.ndarray]] = []
        pos = 0
        for o, i in self.layer_shapes:
            w = self._flat[pos : pos + o * i].reshape(o, i)
            pos += o * i
            b = self._flat[pos : pos + nb * o] if self.bias else np.zeros(o, np.float32)
            pos += nb * o
            self._weights.append((w, b))
        self._bufs = [np.empty(o, dtype=np.float32) for o, _ in self.layer_shapes]
        self._x = np.empty(self.obs_dim, dtype=np.float32)
        self._mean = np.zeros(self.obs_dim, dtype=np.float32)
        self._inv_std = np.ones(self.obs_dim, dtype=np.float32)
        low = np.full(self.act_dim, -1.0) if action_low is None else np.asarray(action_low)
        high = np.full(self.act_dim, 1.0) if action_high is None else np.asarray(action_high)
        self.action_low = low.astype(np.float32)
        self.action_high = high.astype(np.float32)
        if self.action_bins > 0:
            frac = np.arange(self.action_bins, dtype=np.float32) / max(self.action_bins - 1, 1)
            # bin_values[d, k]: the action value of bin k on dimension d
            self._bin_values = self.action_low[:, None] + (self.action_high - self.action_low)[:, None] * frac

    @property
    def num_params(self) -> int:
        return self._num_params

    @property
    def uses_obs_norm(self) -> bool:
        return self.obs_norm

    def param_layout(self) -> ParamLayout:
        """Per layer: the weight matrix (out, in), then the bias (out,)."""
        blocks, pos = [], 0
        for o, i in self.layer_shapes:
            blocks.append(Block(pos, (o, i)))
            pos += o * i
            if self.bias:
                blocks.append(Block(pos, (o,)))
                pos += o
        return tuple(blocks)

    def init_params(self, rng: np.random.Generator) -> np.ndarray:
        """Normalized-column init (the reference code's ``normc_initializer``): hidden layers with
        column norm 1, the output layer with norm 0.01; biases zero."""
        flat = np.zeros(self._num_params, dtype=np.float32)
        pos = 0
        for k, (o, i) in enumerate(self.layer_shapes):
            std = 0.01 if k == len(self.layer_shapes) - 1 else 1.0
            w = rng.standard_normal((o, i)).astype(np.float32)
            w *= std / np.sqrt(np.square(w).sum(axis=1, keepdims=True))
            flat[pos : pos + o * i] = w.ravel()
            pos += o * i + (o if self.bias else 0)
        return flat

    def set_params(self, flat: np.ndarray) -> None:
        np.copyto(self._flat, flat)

    def set_obs_stats(self, mean: np.ndarray, std: np.ndarray) -> None:
        self._mean[:] = mean
        self._inv_std[:] = 1.0 / np.asarray(std)
        if self.raw_tail:
            self._mean[-self.raw_tail :] = 0.0
            self._inv_std[-self.raw_tail :] = 1.0

    def act(self, obs: np.ndarray) -> np.ndarray | int:
        x = self._x
        x[:] = obs
        if self.obs_norm:
            np.subtract(x, self._mean, out=x)
            np.multiply(x, self._inv_std, out=x)
            np.clip(x, -self.obs_clip, self.obs_clip, out=x)
        last = len(self._weights) - 1
        for k, (w, b) in enumerate(self._weights):
            h = self._bufs[k]
            np.matmul(w, x, out=h)
            np.add(h, b, out=h)
            if k < last:
                self._act_fn(h, out=h)
            x = h
        if self.discrete_n is not None:
            return int(np.argmax(x))
        if self.action_bins > 0:
            logits = x.reshape(self.act_dim, self.action_bins)
            return self._bin_values[np.arange(self.act_dim), logits.argmax(axis=1)]
        return np.clip(x, self.action_low, self.action_high)

    def action_distribution(self, obs: np.ndarray) -> ActionDist:
        """The forward pass of :meth:`act` on a batch, shape (n, obs_dim), as distributions:
        categorical over the logits (``discrete_n``), one categorical per action dimension over its
        bins' logits (``action_bins``), else Gaussians of std ``ACTION_STD`` around the clipped
        action."""
        x = np.asarray(obs, dtype=np.float32).reshape(-1, self.obs_dim)
        if self.obs_norm:
            x = np.clip((x - self._mean) * self._inv_std, -self.obs_clip, self.obs_clip)
        last = len(self._weights) - 1
        for k, (w, b) in enumerate(self._weights):
            x = x @ w.T + b
            if k < last:
                x = self._act_fn(x, out=x)
        if self.discrete_n is not None:
            return categorical(x)
        if self.action_bins > 0:
            return categorical(x.reshape(len(x), self.act_dim, self.action_bins))
        return deterministic_gaussian(np.clip(x, self.action_low, self.action_high))


def _relu(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0, out=out)


class BatchedMLP:
    """``batch`` copies of an :class:`MLPPolicy`'s architecture, each with its own weights, run in
    one stacked forward pass: the rollout hot path for B episodes stepped in lockstep.

    Row b of every output depends only on slot b's weights and observation (a stacked matmul is
    a loop of independent products), so an episode's numbers do not depend on which other
    episodes share its batch: results stay the same whatever the number of workers.
    """

    def __init__(self, template: MLPPolicy, batch: int) -> None:
        self.t = template
        self.batch = int(batch)
        self.W = [np.zeros((self.batch, o, i), np.float32) for o, i in template.layer_shapes]
        self.b = [np.zeros((self.batch, o, 1), np.float32) for o, _ in template.layer_shapes]
        self._x = np.zeros((self.batch, template.obs_dim, 1), np.float32)
        self._dims = np.arange(template.act_dim)[None, :]

    def prefix(self, n: int) -> BatchedMLP:
        """The first ``n`` slots as a batch of their own (views of this one's buffers), so a task
        with fewer episodes than slots computes no empty rows."""
        if not 1 <= n <= self.batch:
            raise ValueError(f"prefix of {n} slots from a batch of {self.batch}")
        if n == self.batch:
            return self
        view = object.__new__(BatchedMLP)
        view.t, view.batch = self.t, n
        view.W, view.b = [w[:n] for w in self.W], [b[:n] for b in self.b]
        view._x, view._dims = self._x[:n], self._dims
        return view

    def set_slot(self, slot: int, flat: np.ndarray) -> None:
        """Load one slot's weights from a flat vector of shape (num_params,)."""
        pos = 0
        for k, (o, i) in enumerate(self.t.layer_shapes):
            self.W[k][slot] = flat[pos : pos + o * i].reshape(o, i)
            pos += o * i
            if self.t.bias:
                self.b[k][slot, :, 0] = flat[pos : pos + o]
                pos += o

    def act(self, obs: np.ndarray) -> np.ndarray:
        """Actions for observations of shape (batch, obs_dim): (batch, act_dim) float32, or
        (batch,) int64 for a discrete action space."""
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
            h = np.matmul(self.W[k], h)
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
