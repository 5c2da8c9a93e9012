"""The Atari policy of Salimans et al. 2017: the A3C feed-forward CNN with virtual batch normalization.

Network (Mnih et al. 2016, "A3C FF"), input a uint8 frame stack ``(C, 84, 84)`` scaled to [0, 1]::

    conv 16 @ 8x8 stride 4 -> [VBN] -> ReLU -> conv 32 @ 4x4 stride 2 -> [VBN] -> ReLU
    -> fc 256 -> [VBN] -> ReLU -> linear n_actions (logits; the action is their argmax)

Virtual batch normalization (Salimans et al. 2016, "Improved techniques for training GANs", Sec. 3.4;
used for Atari by Salimans et al. 2017, Sec. 2.2) normalizes each layer's pre-activations with the mean
and variance of a *fixed reference batch* of observations (:func:`collect_reference_batch`: random play
in a seeded env), then applies a learned per-channel affine ``gamma * x_hat + beta``. The statistics
depend on the weights below them, so :meth:`CNNPolicy.set_params` recomputes them with one batched
forward of the reference batch. Acting then uses fixed statistics, so the policy is a deterministic
function of (params, observation). Layers followed by VBN have no bias (``beta`` takes its place).

Parameters live in one contiguous float32 numpy buffer; every torch parameter is a view of it, so
setting a vector is a single copy. :meth:`CNNPolicy.param_layout` lists the order (PyTorch
``named_parameters`` order of :func:`a3c_cnn`).

:class:`BatchedCNN` runs B differently-perturbed members in one forward pass (the lockstep rollout
of ES workers), each member's logits bit-identical to :class:`CNNPolicy` alone.

:func:`a3c_cnn` builds the same network as a plain ``nn.Module`` for the RL baselines (e.g. as an SB3
features extractor), so both sides of a comparison use one architecture.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from esbench.measures.distribution import ActionDist, categorical
from esbench.policies.base import Policy
from esbench.utils.layout import Block, ParamLayout

if TYPE_CHECKING:
    from esbench.config.schema import EnvConfig, PolicyConfig


_INV_255 = np.float32(1.0 / 255.0)


def scale_obs(obs: np.ndarray) -> np.ndarray:
    """uint8 pixels to float32 in [0, 1] (one rounding rule for acting and the reference batch)."""
    return np.multiply(obs, _INV_255, dtype=np.float32)


class VirtualBatchNorm(nn.Module):
    """Normalization with statistics from a reference batch, then a per-channel affine.

    In ``train()`` mode a forward pass computes the per-channel mean and (biased) variance of its input
    over every axis but 1 and stores them; in ``eval()`` mode the stored statistics are used. Feed the
    reference batch in train mode, act in eval mode.

    Args:
        num_features: Channels (axis 1 of the input, shape (N, C) or (N, C, H, W)).
        eps: Added to the variance.
    """

    mean: torch.Tensor
    var: torch.Tensor

    def __init__(self, num_features: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(num_features))  # gamma
        self.bias = nn.Parameter(torch.zeros(num_features))  # beta
        self.register_buffer("mean", torch.zeros(num_features))
        self.register_buffer("var", torch.ones(num_features))
        self._frozen: tuple[torch.Tensor, torch.Tensor] | None = None

    def _affine(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-channel ``(scale, shift)``, each shape (C,), folding statistics and gamma/beta."""
        scale = self.weight * torch.rsqrt(self.var + self.eps)
        return scale, self.bias - self.mean * scale

    def freeze(self) -> None:
        """Cache the folded affine for eval-mode forwards. Only for callers that change neither the
        statistics nor gamma/beta before the next :meth:`train` call (as :class:`CNNPolicy` does)."""
        with torch.no_grad():
            self._frozen = tuple(t.detach().clone() for t in self._affine())  # type: ignore[assignment]

    def train(self, mode: bool = True) -> VirtualBatchNorm:
        """Switch mode; drops the cache of :meth:`freeze`."""
        self._frozen = None
        return super().train(mode)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Normalize ``x`` of shape (N, C) or (N, C, H, W) per channel; same shape out."""
        if self.training:
            dims = [d for d in range(x.dim()) if d != 1]
            var, mean = torch.var_mean(x, dim=dims, correction=0)
            self.mean.copy_(mean)
            self.var.copy_(var)
        scale, shift = self._frozen if self._frozen is not None and not self.training else self._affine()
        shape = (1, -1) + (1,) * (x.dim() - 2)
        return torch.addcmul(shift.view(shape), x, scale.view(shape))


def conv_output_size(size: int) -> int:
    """Spatial side after the two A3C convolutions (84 -> 20 -> 9)."""
    return ((size - 8) // 4 + 1 - 4) // 2 + 1


def a3c_cnn(
    n_actions: int | None, vbn: bool = False, in_channels: int = 4, screen_size: int = 84
) -> nn.Sequential:
    """The A3C feed-forward CNN as a plain ``nn.Module``.

    Args:
        n_actions: Size of the output layer; ``None`` omits it (the module then ends with the
            256-unit ReLU layer, the shape of an SB3 features extractor with ``features_dim=256``).
        vbn: Insert :class:`VirtualBatchNorm` before each hidden ReLU (and drop those layers' biases).
        in_channels: Frames stacked in the input.
        screen_size: Input height and width.

    Returns:
        ``nn.Sequential`` mapping float input (N, in_channels, screen_size, screen_size), already
        scaled to [0, 1], to logits (N, n_actions) (or features (N, 256)).
    """
    side = conv_output_size(screen_size)

    def norm(n: int) -> list[nn.Module]:
        return [VirtualBatchNorm(n)] if vbn else []

    layers: list[nn.Module] = [
        nn.Conv2d(in_channels, 16, kernel_size=8, stride=4, bias=not vbn),
        *norm(16),
        nn.ReLU(),
        nn.Conv2d(16, 32, kernel_size=4, stride=2, bias=not vbn),
        *norm(32),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(32 * side * side, 256, bias=not vbn),
        *norm(256),
        nn.ReLU(),
    ]
    if n_actions is not None:
        layers.append(nn.Linear(256, n_actions))
    return nn.Sequential(*layers)


def a3c_cnn_num_params(n_actions: int, vbn: bool, in_channels: int = 4, screen_size: int = 84) -> int:
    """Parameter count of :func:`a3c_cnn` in closed form (biases, or gamma and beta with VBN)."""
    side = conv_output_size(screen_size)
    per_unit = 2 if vbn else 1  # bias, or gamma + beta
    conv1 = 16 * in_channels * 8 * 8 + per_unit * 16
    conv2 = 32 * 16 * 4 * 4 + per_unit * 32
    fc = 32 * side * side * 256 + per_unit * 256
    out = 256 * n_actions + n_actions
    return conv1 + conv2 + fc + out


class CNNPolicy(Policy):
    """The A3C CNN over a flat float32 parameter vector, with VBN from a reference batch.

    Acting is deterministic (argmax of the logits). Forward passes run on CPU under
    ``torch.inference_mode()``; the number of torch threads is left to the caller.

    Args:
        obs_shape: Observation shape ``(frame_stack, screen_size, screen_size)``.
        n_actions: Number of discrete actions.
        reference_batch: uint8 observations, shape (B, *obs_shape), from
            :func:`collect_reference_batch`; ``None`` builds the plain network without VBN (with
            biases), e.g. for ablations.
    """

    def __init__(self, obs_shape: Sequence[int], n_actions: int, reference_batch: np.ndarray | None) -> None:
        c, h, w = (int(s) for s in obs_shape)
        if h != w:
            raise ValueError(f"expected square frames, got obs_shape {tuple(obs_shape)}")
        self.obs_shape = (c, h, w)
        self.n_actions = int(n_actions)
        self.vbn = reference_batch is not None
        with torch.random.fork_rng(devices=[]):  # leave the caller's torch RNG untouched
            self.net = a3c_cnn(self.n_actions, vbn=self.vbn, in_channels=c, screen_size=h).eval()

        self._layout: list[tuple[str, tuple[int, ...], int]] = []
        offset = 0
        for name, p in self.net.named_parameters():
            self._layout.append((name, tuple(p.shape), offset))
            offset += p.numel()
        self._flat = np.zeros(offset, dtype=np.float32)
        flat_t = torch.from_numpy(self._flat)
        for (_, shape, start), p in zip(self._layout, self.net.parameters(), strict=True):
            p.requires_grad_(False)
            p.data = flat_t[start : start + int(np.prod(shape))].view(shape)
        self._vbn_modules = [m for m in self.net.modules() if isinstance(m, VirtualBatchNorm)]

        self._ref: torch.Tensor | None = None
        if reference_batch is not None:
            ref = np.asarray(reference_batch)
            if ref.ndim != 4 or ref.shape[1:] != self.obs_shape:
                raise ValueError(f"reference_batch must have shape (B, {self.obs_shape}), got {ref.shape}")
            self._ref = torch.from_numpy(scale_obs(ref))
        self._in_np = np.zeros((1, *self.obs_shape), dtype=np.float32)
        self._in = torch.from_numpy(self._in_np)
        self.set_params(self._initial_params())

    def _initial_params(self) -> np.ndarray:
        """The module's own initial values (gamma 1); replaced by :meth:`init_params` in practice."""
        return self.init_params(np.random.default_rng(0))

    @property
    def num_params(self) -> int:
        """Length of the flat parameter vector."""
        return self._flat.size

    def param_layout(self) -> ParamLayout:
        """Each tensor's block of the flat vector, in order (conv kernels (out, in, kh, kw),
        linear weights (out, in), biases and VBN scales as vectors); names in ``_layout``."""
        return tuple(Block(start, shape) for _, shape, start in self._layout)

    def init_params(self, rng: np.random.Generator) -> np.ndarray:
        """Normc initialization (Salimans et al. 2017's reference code), drawn from ``rng`` only.

        Each output unit's incoming weights (a conv filter, or a row of a linear layer) are standard
        normal rescaled to L2 norm 1.0 for hidden layers and 0.01 for the output layer (near-uniform
        initial logits). Biases and VBN ``beta`` are 0, VBN ``gamma`` is 1.

        Returns:
            Shape (num_params,), float32.
        """
        flat = np.empty(self.num_params, dtype=np.float32)
        last_weight = [name for name, shape, _ in self._layout if len(shape) > 1][-1]
        for name, shape, start in self._layout:
            n = int(np.prod(shape))
            if len(shape) > 1:  # conv (out, in, kh, kw) or linear (out, in) weight
                w = rng.standard_normal((shape[0], n // shape[0]), dtype=np.float32)
                std = 0.01 if name == last_weight else 1.0
                w *= std / np.sqrt(np.square(w).sum(axis=1, keepdims=True))
                flat[start : start + n] = w.ravel()
            elif name.endswith("weight"):  # VBN gamma
                flat[start : start + n] = 1.0
            else:  # bias, VBN beta
                flat[start : start + n] = 0.0
        return flat

    def set_params(self, flat: np.ndarray) -> None:
        """Copy ``flat`` (shape (num_params,)) into the weight buffer and recompute VBN statistics."""
        flat = np.asarray(flat)
        if flat.shape != self._flat.shape:
            raise ValueError(f"expected params of shape {self._flat.shape}, got {flat.shape}")
        np.copyto(self._flat, flat, casting="same_kind")
        if self._ref is not None:
            with torch.inference_mode():
                for m in self._vbn_modules:
                    m.train()
                self.net(self._ref)
                for m in self._vbn_modules:
                    m.eval()
                    m.freeze()

    def get_params(self) -> np.ndarray:
        """A copy of the current flat parameters, shape (num_params,), float32."""
        return self._flat.copy()

    def logits(self, obs: np.ndarray) -> np.ndarray:
        """Action logits.

        Args:
            obs: uint8 observations, shape (*obs_shape) or (N, *obs_shape).

        Returns:
            float32 logits, shape (n_actions,) or (N, n_actions).
        """
        obs = np.asarray(obs)
        single = obs.ndim == 3
        x = torch.from_numpy(scale_obs(obs[None] if single else obs))
        with torch.inference_mode():
            out = self.net(x).numpy()
        return out[0] if single else out

    def action_distribution(self, obs: np.ndarray) -> ActionDist:
        """Categorical distributions over the logits of a batch of uint8 observations (N, *obs_shape)."""
        return categorical(self.logits(np.asarray(obs).reshape(-1, *self.obs_shape)))

    def act(self, obs: np.ndarray) -> int:
        """The greedy action for one observation of shape ``obs_shape`` (uint8)."""
        np.multiply(obs, _INV_255, out=self._in_np[0], dtype=np.float32)
        with torch.inference_mode():
            return int(self.net(self._in).argmax(dim=1).item())


def collect_reference_batch(env_cfg: EnvConfig, size: int, seed: int, keep_prob: float = 0.05) -> np.ndarray:
    """Observations from uniformly random play, the fixed reference batch for VBN.

    The env is built with ``make_atari_env(env_cfg, training=False)`` and reset with ``seed``; actions
    and the keep/skip decisions come from ``np.random.default_rng(seed)``, so the batch is
    bit-identical for the same (config, seed) on any worker. Each visited observation is kept with
    probability ``keep_prob``, so the batch spans more of the game than its first few frames.

    Args:
        env_cfg: The Atari env config (the same one the policy will act in).
        size: Number of observations B.
        seed: Seed of the env and of the action / selection stream.
        keep_prob: Probability of keeping each visited observation (1.0 keeps consecutive frames);
            about ``size / keep_prob`` agent steps are played.

    Returns:
        uint8 array, shape (B, frame_stack, screen_size, screen_size).
    """
    from esbench.envs.atari import make_atari_env

    if size < 1 or not 0.0 < keep_prob <= 1.0:
        raise ValueError("size must be >= 1 and keep_prob in (0, 1]")
    env = make_atari_env(env_cfg, training=False)
    rng = np.random.default_rng(seed)
    n_actions = int(env.action_space.n)  # type: ignore[attr-defined]
    obs, _ = env.reset(seed=seed)
    batch: list[np.ndarray] = []
    try:
        while len(batch) < size:
            if rng.random() < keep_prob:
                batch.append(obs)
            obs, _, terminated, truncated, _ = env.step(int(rng.integers(n_actions)))
            if terminated or truncated:
                obs, _ = env.reset()
    finally:
        env.close()
    return np.stack(batch)


def make_cnn_policy(env_cfg: EnvConfig, policy_cfg: PolicyConfig, reference_seed: int) -> CNNPolicy:
    """The Atari policy for a run: collect the reference batch, read the action count, build.

    Args:
        env_cfg: The Atari env config.
        policy_cfg: Supplies ``vbn_reference_size`` (0 is not allowed by the schema; VBN is always on).
        reference_seed: Seed of the reference batch; derive it from the run seed only, so every
            worker of a run builds the same batch.

    Returns:
        A :class:`CNNPolicy` with VBN statistics from the reference batch.
    """
    from esbench.envs.atari import make_atari_env

    env = make_atari_env(env_cfg, training=False)
    obs_shape = tuple(env.observation_space.shape or ())
    n_actions = int(env.action_space.n)  # type: ignore[attr-defined]
    env.close()
    ref = collect_reference_batch(env_cfg, policy_cfg.vbn_reference_size, reference_seed)
    return CNNPolicy(obs_shape, n_actions, ref)


class BatchedCNN:
    """``batch`` members of a :class:`CNNPolicy`'s architecture, each with its own weights and VBN
    statistics, run in one batched forward pass: the Atari rollout hot path for B episodes stepped
    in lockstep (:func:`esbench.runtime.lockstep.run_lockstep`).

    Every layer keeps the members apart, and each member's arithmetic is the one
    :meth:`CNNPolicy.act` performs alone: the first convolution runs member by member (the same
    call as the one-member path; oneDNN's grouped kernel for 4 input channels per group is slower
    than the per-call overhead it saves), the second is one *grouped* convolution with one group per
    member (inputs stacked along channels, weights along output channels), the fully connected
    layers are batched matrix products over per-member weight matrices (``bmm`` on CPU is one matrix
    product per member), and VBN applies per-member statistics. So the logits are bit-identical to
    the one-member path whatever shares the batch (``tests/test_cnn_policy.py`` checks it on the
    machine that runs the tests, the grouped convolution included), an episode stays a pure
    function of its own job, and ``algo.rollout_batch`` stays an execution knob.

    Speed: batching saves the per-call overhead of the small layers (about 40 us per oneDNN
    convolution call), but each member brings its own 2.6 MB fully connected matrix, read once per
    step. A few slots per worker keep those in the last-level cache; many spill to memory and are
    slower per member than playing one by one (``esbench bench atari``, docs/benchmarks.md).

    A slot's VBN statistics come from its own parameters on the template's reference batch:
    :meth:`set_slot` runs :meth:`CNNPolicy.set_params` on the template (one reference forward pass
    per episode, as the one-member path does) and copies the folded per-channel affine.

    Args:
        template: The policy whose architecture, reference batch and parameter layout are used;
            :meth:`set_slot` overwrites its parameters.
        batch: Number of slots B.
    """

    def __init__(self, template: CNNPolicy, batch: int) -> None:
        self.t = template
        self.batch = int(batch)
        b = self.batch
        mods = list(template.net)
        self._convs = [m for m in mods if isinstance(m, nn.Conv2d)]
        self._linears = [m for m in mods if isinstance(m, nn.Linear)]
        # Per-member weights, members stacked on the first axis (grouped-convolution layout for
        # the convolutions: member k's filters are rows k*out .. (k+1)*out - 1).
        # Buffers come from np.zeros (calloc): memory a task never uses (slots past its prefix)
        # is never touched, so a large ``batch`` costs address space, not RAM.
        self.conv_w = [_zeros(b * m.out_channels, *m.weight.shape[1:]) for m in self._convs]
        self.conv_b = [_zeros(b * m.out_channels) if m.bias is not None else None for m in self._convs]
        self.lin_w = [_zeros(b, *m.weight.shape) for m in self._linears]  # (B, out, in)
        self.lin_b = [_zeros(b, 1, m.out_features) if m.bias is not None else None for m in self._linears]
        # VBN's folded affine (scale, shift) per member, one pair per hidden layer when VBN is on.
        self.scale = [_zeros(b, m.weight.numel()) for m in template._vbn_modules]
        self.shift = [_zeros(b, m.weight.numel()) for m in template._vbn_modules]
        self._x_np = np.zeros((b, *template.obs_shape), np.float32)
        self._x = torch.from_numpy(self._x_np)

    def prefix(self, n: int) -> BatchedCNN:
        """The first ``n`` slots as a batch of their own (views of this one's buffers), so a task
        with fewer episodes than slots computes no empty members."""
        if not 1 <= n <= self.batch:
            raise ValueError(f"prefix of {n} slots from a batch of {self.batch}")
        if n == self.batch:
            return self
        view = object.__new__(BatchedCNN)
        view.t, view.batch = self.t, n
        view._convs, view._linears = self._convs, self._linears
        rows = [n * m.out_channels for m in self._convs]  # the first n members' filters
        view.conv_w = [w[:r] for w, r in zip(self.conv_w, rows, strict=True)]
        view.conv_b = [None if c is None else c[:r] for c, r in zip(self.conv_b, rows, strict=True)]
        view.lin_w = [w[:n] for w in self.lin_w]
        view.lin_b = [None if c is None else c[:n] for c in self.lin_b]
        view.scale, view.shift = [s[:n] for s in self.scale], [s[:n] for s in self.shift]
        view._x_np = self._x_np[:n]
        view._x = self._x[:n]
        return view

    def set_slot(self, slot: int, flat: np.ndarray) -> None:
        """Load one member's parameters (shape (num_params,)) into ``slot``, with the VBN statistics
        of those parameters on the reference batch."""
        self.t.set_params(flat)
        with torch.no_grad():
            for w, c, conv in zip(self.conv_w, self.conv_b, self._convs, strict=True):
                rows = slice(slot * conv.out_channels, (slot + 1) * conv.out_channels)
                w[rows] = conv.weight
                if c is not None and conv.bias is not None:
                    c[rows] = conv.bias
            for w, c, lin in zip(self.lin_w, self.lin_b, self._linears, strict=True):
                w[slot] = lin.weight
                if c is not None and lin.bias is not None:
                    c[slot, 0] = lin.bias
            for scale, shift, v in zip(self.scale, self.shift, self.t._vbn_modules, strict=True):
                assert v._frozen is not None  # set_params froze the statistics it computed
                scale[slot], shift[slot] = v._frozen

    def logits(self, obs: np.ndarray) -> torch.Tensor:
        """Every slot's logits for its observation.

        Args:
            obs: uint8 observations, shape (batch, *obs_shape); row b is slot b's.

        Returns:
            float32 tensor (batch, n_actions), row b equal to slot b's policy alone on ``obs[b]``.
        """
        n = self.batch
        np.multiply(obs, _INV_255, out=self._x_np, dtype=np.float32)
        vbn = iter(zip(self.scale, self.shift, strict=True))
        with torch.inference_mode():
            h = self._x  # (B, C, H, W)
            for k, (w, c, m) in enumerate(zip(self.conv_w, self.conv_b, self._convs, strict=True)):
                o = m.out_channels
                if k == 0:
                    # The first convolution member by member, the very call CNNPolicy.act makes:
                    # oneDNN's grouped kernel for 4 input channels per group is ~2.5x slower than
                    # its ungrouped one, more than the per-call overhead that grouping saves.
                    h = torch.cat(
                        [
                            F.conv2d(
                                h[b : b + 1],
                                w[b * o : (b + 1) * o],
                                None if c is None else c[b * o : (b + 1) * o],
                                m.stride,
                            )
                            for b in range(n)
                        ]
                    )
                else:  # one grouped convolution, members stacked along channels
                    h = F.conv2d(h.reshape(1, -1, *h.shape[2:]), w, c, m.stride, groups=n)
                    h = h.reshape(n, o, *h.shape[2:])
                if self.scale:
                    scale, shift = next(vbn)
                    h = torch.addcmul(shift[:, :, None, None], h, scale[:, :, None, None])
                h = torch.relu_(h)
            h = h.reshape(n, 1, -1)  # (B, 1, features): the per-member flatten
            for k, (w, c) in enumerate(zip(self.lin_w, self.lin_b, strict=True)):
                wt = w.transpose(1, 2)
                h = torch.bmm(h, wt) if c is None else torch.baddbmm(c, h, wt)
                if k < len(self.lin_w) - 1:
                    if self.scale:
                        scale, shift = next(vbn)
                        h = torch.addcmul(shift[:, None, :], h, scale[:, None, :])
                    h = torch.relu_(h)
            return h.view(n, -1)

    def act(self, obs: np.ndarray) -> np.ndarray:
        """Greedy actions for observations of shape (batch, *obs_shape): (batch,) int64."""
        return self.logits(obs).argmax(dim=1).numpy()


def _zeros(*shape: int) -> torch.Tensor:
    """A float32 zero tensor over numpy memory (calloc'd: pages are mapped when first written)."""
    return torch.from_numpy(np.zeros(shape, np.float32))
