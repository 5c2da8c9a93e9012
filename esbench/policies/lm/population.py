"""ES members of a language model, evaluated together in one batched forward pass.

A member is ``theta + s * E_i`` with ``s = sign * sigma``: member ``i``'s perturbation ``E_i`` is
regenerated from (run seed, generation, member index) alone (DESIGN.md promises 1 and 2: a
perturbation is named by a seed, never shipped). Two kinds, chosen by ``rank``:

- **Full rank** (``rank=None``; OpenAI-ES, Salimans et al. 2017; Qiu et al. 2025 fine-tune every
  parameter this way): ``E_i ~ N(0, I)`` for every parameter tensor.
- **Low rank** (``rank=r``; EGGROLL, Sarkar et al. 2025, arXiv:2511.16652): for every weight
  matrix W (out, in), ``E_i = A_i B_i^T / sqrt(r)`` with A_i (out, r), B_i (in, r) standard
  normal (Eq. 1 of :mod:`esbench.strategies.eggroll`); vectors (norm weights, biases) full rank.

The forward pass runs P members on the same B prompts as one batch of P*B sequences, member-major
(rows ``p*B .. p*B+B-1`` are member p). Each weight matrix's layer computes, per member,

    x (W + s E_i)^T = x W^T + (s / sqrt(r)) (x B_i) A_i^T                                   (1)

one GEMM with the shared W over the whole batch plus O(r (in + out)) per row: no perturbed matrix
is ever built (EGGROLL's batched inference). Full-rank members do build their P dense matrices
``W + s E_i`` and run a batched matmul, which is what makes them expensive. The embedding table is
perturbed the same way (a lookup of row t of ``W + s E_i`` is ``W[t] + s/sqrt(r) A_i[t] B_i^T``).

The ES update (OpenAI-ES's, with sigma folded into the learning rate as in Qiu et al. 2025) is

    theta <- theta + lr / P * sum_i z_i * sign_i * E_i                                      (2)

with ``z`` the members' fitness standardized over the population. For low rank each matrix's
sum is one product ``(A * z) B^T`` of the stacked factors.

:class:`PopulationModel` swaps the model's ``nn.Linear``, ``nn.Embedding`` and RMSNorm modules for
population-aware ones *in place*, sharing the original parameters. With no population set it is
the original model, bit for bit, so the same object serves plain inference, generation with
``model.generate`` and TRL. Other parameters (none in the Llama architecture) stay unperturbed
and are listed in :attr:`PopulationModel.unperturbed`.

A weight two modules share (tied input and output embeddings, as SmolLM2's) is one parameter:
the later module (the output head) takes the earlier one's perturbation (:attr:`PopulationModel.tied`),
so a member perturbs it once, the same in both places, and the update steps it once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from esbench.utils.seeding import derive_seed

#: Seeding purpose of LM perturbations: (run seed, LM_NOISE, generation, member index).
LM_NOISE = 21


@dataclass(frozen=True)
class Member:
    """One member: the perturbation drawn for ``index`` at this generation, with a ``sign``.

    With antithetic sampling members ``2k`` and ``2k+1`` share index ``k`` with signs +1 and -1.
    """

    index: int
    sign: int = 1


def antithetic(population_size: int) -> list[Member]:
    """``population_size`` members (even) in antithetic pairs: (0,+), (0,-), (1,+), (1,-), ..."""
    if population_size < 2 or population_size % 2:
        raise ValueError(f"population_size={population_size} must be even and >= 2 for antithetic pairs")
    return [Member(k, s) for k in range(population_size // 2) for s in (1, -1)]


class _Population:
    """State shared by every swapped module: how many members, their scales, the mode."""

    def __init__(self) -> None:
        self.size = 0  # 0: no population (plain model)
        self.scale = torch.zeros(0)  # (P,) sign * sigma


def _is_rms_norm(module: nn.Module) -> bool:
    w = getattr(module, "weight", None)
    return (
        isinstance(w, nn.Parameter)
        and w.dim() == 1
        and hasattr(module, "variance_epsilon")
        and len(list(module.parameters(recurse=False))) == 1
    )


class _PopModule(nn.Module):
    """A swapped module: the original (its parameters shared) plus this generation's noise."""

    def __init__(self, inner: nn.Module, pop: _Population) -> None:
        super().__init__()
        self.inner = inner
        self._pop = [pop]  # a list, so the shared state is not registered as a submodule
        self.noise: dict[str, torch.Tensor] = {}  # per member, stacked on dim 0

    @property
    def pop(self) -> _Population:
        return self._pop[0]

    @property
    def weight(self) -> torch.Tensor:
        """The original module's weight (shared, updated in place by the ES step)."""
        w = self.inner.weight
        assert isinstance(w, torch.Tensor)
        return w

    @property
    def bias(self) -> torch.Tensor | None:
        """The original module's bias, if it has one."""
        b = getattr(self.inner, "bias", None)
        return b if isinstance(b, torch.Tensor) else None

    def _scale(self, ndim: int) -> torch.Tensor:
        return self.pop.scale.view(-1, *([1] * (ndim - 1)))


class PopLinear(_PopModule):
    """``nn.Linear`` over P members: Eq. (1) with factors, or P dense matrices for full rank."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        lin: nn.Linear = self.inner  # type: ignore[assignment]
        p = self.pop.size
        if not p:
            return lin(x)
        rows = x.reshape(p, -1, x.shape[-1])  # (P, B*T, in), member-major
        if "A" in self.noise:  # low rank, Eq. (1)
            y = F.linear(rows, lin.weight)  # shared product, one GEMM for all members
            u = torch.bmm(rows, self.noise["B"])  # (P, B*T, r): x B_i
            y = y.baddbmm_(u, self.noise["At"])  # + (s/sqrt(r)) (x B_i) A_i^T, fused, in place
        else:  # full rank: P perturbed matrices
            w = lin.weight + self._scale(3) * self.noise["W"]  # (P, out, in)
            y = torch.bmm(rows, w.transpose(1, 2))
        if lin.bias is not None:
            bias = lin.bias + self._scale(2) * self.noise["b"] if "b" in self.noise else lin.bias
            y = y + (bias[:, None, :] if bias.dim() == 2 else bias)
        return y.reshape(*x.shape[:-1], y.shape[-1])


class PopEmbedding(_PopModule):
    """``nn.Embedding`` over P members: row t of ``W + s E_i`` for each member's tokens."""

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        emb: nn.Embedding = self.inner  # type: ignore[assignment]
        p = self.pop.size
        if not p:
            return emb(ids)
        flat = ids.reshape(p, -1)  # (P, B*T)
        member = torch.arange(p)[:, None]
        if "A" in self.noise:
            rows = F.embedding(flat, emb.weight)  # (P, B*T, d)
            a = self.noise["A"][member, flat]  # (P, B*T, r): A_i[t]
            r = a.shape[-1]
            rows = rows + torch.bmm(a, self.noise["B"].transpose(1, 2)) * self._scale(3) / math.sqrt(r)
        else:
            rows = (emb.weight + self._scale(3) * self.noise["W"])[member, flat]
        return rows.reshape(*ids.shape, -1)


class PopRMSNorm(_PopModule):
    """A Llama-style RMSNorm over P members, each with its own weight ``w + s eps_i``."""

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        norm = self.inner
        p = self.pop.size
        if not p:
            return norm(h)
        dtype = h.dtype
        x = h.to(torch.float32)
        eps = float(norm.variance_epsilon)  # type: ignore[arg-type]
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
        w = self.weight + self._scale(2) * self.noise["w"]  # (P, d)
        rows = x.to(dtype).reshape(p, -1, x.shape[-1]) * w[:, None, :]
        return rows.reshape(h.shape)


class PopulationModel:
    """A model whose forward pass evaluates a population of ES members at once.

    Args:
        model: A causal LM (modified in place: its matrices' modules are swapped, parameters kept).
        rank: r for EGGROLL's low-rank perturbations; None for full rank.

    Attributes:
        model: The model (use it as usual; with a population set, every batch is P*B rows).
        unperturbed: Names of parameters no member perturbs.
        tied: ``{k: j}``: swapped module k's weight is module j's (j < k), so it shares j's noise.

    A swapped module keeps the original as ``inner``, so the model's state-dict names gain
    ``.inner`` (``model.norm.inner.weight``): save and load weights through the original names
    (:meth:`perturbation` uses them) or before wrapping.
    """

    def __init__(self, model: nn.Module, rank: int | None) -> None:
        if rank is not None and rank < 1:
            raise ValueError(f"rank={rank} must be >= 1 (or None for full rank)")
        self.model = model
        self.rank = rank
        self._pop = _Population()
        self.members: list[Member] = []
        self.modules: list[tuple[str, _PopModule]] = []
        self._swap(model, "")
        owner: dict[int, int] = {}
        self.tied: dict[int, int] = {}
        for k, (_, mod) in enumerate(self.modules):
            j = owner.setdefault(id(mod.weight), k)
            if j != k:
                self.tied[k] = j
        covered = {id(p) for _, m in self.modules for p in m.inner.parameters()}
        self.unperturbed = [n for n, p in model.named_parameters() if id(p) not in covered]

    def _swap(self, parent: nn.Module, prefix: str) -> None:
        for name, child in list(parent.named_children()):
            full = f"{prefix}{name}"
            swapped: _PopModule | None = None
            if isinstance(child, nn.Linear):
                swapped = PopLinear(child, self._pop)
            elif isinstance(child, nn.Embedding):
                swapped = PopEmbedding(child, self._pop)
            elif _is_rms_norm(child):
                swapped = PopRMSNorm(child, self._pop)
            if swapped is None:
                self._swap(child, f"{full}.")
            else:
                setattr(parent, name, swapped)
                self.modules.append((full, swapped))

    @property
    def size(self) -> int:
        """Members in the current population (0: none; the plain model)."""
        return self._pop.size

    def set_population(self, seed: int, generation: int, members: Sequence[Member], sigma: float) -> None:
        """Regenerate every member's perturbation from (seed, generation, member index).

        A member's draws come from one torch generator seeded by
        ``derive_seed(seed, LM_NOISE, generation, index)``, in module order: for a matrix, A then
        B (low rank) or E (full rank), then its bias; for a norm, its weight. Members sharing an
        index (antithetic pairs) share the draw.
        """
        if not members:
            raise ValueError("a population needs at least one member")
        draws: dict[int, list[dict[str, torch.Tensor]]] = {}
        own = [k for k in range(len(self.modules)) if k not in self.tied]
        for idx in sorted({m.index for m in members}):
            gen = torch.Generator().manual_seed(derive_seed(seed, LM_NOISE, generation, idx))
            draws[idx] = [self._draw(self.modules[k][1], gen) for k in own]
        for n, k in enumerate(own):
            mod = self.modules[k][1]
            keys = draws[members[0].index][n]
            mod.noise = {key: torch.stack([draws[m.index][n][key] for m in members]) for key in keys}
        for k, j in self.tied.items():
            self.modules[k][1].noise = self.modules[j][1].noise  # one perturbation of the one weight
        self._pop.scale = torch.tensor([m.sign * sigma for m in members], dtype=torch.float32)
        self._pop.size = len(members)
        for _, mod in self.modules:
            if "A" in mod.noise and isinstance(mod, PopLinear):  # A_i s/sqrt(r), as (P, r, out)
                a = mod.noise["A"] * (self._pop.scale / math.sqrt(mod.noise["A"].shape[-1]))[:, None, None]
                mod.noise["At"] = a.transpose(1, 2).contiguous()
        self.members = list(members)

    def _draw(self, mod: _PopModule, gen: torch.Generator) -> dict[str, torch.Tensor]:
        def normal(*shape: int) -> torch.Tensor:
            return torch.randn(*shape, generator=gen, dtype=torch.float32)

        w = mod.weight
        if isinstance(mod, PopRMSNorm):
            return {"w": normal(w.shape[0])}
        out: dict[str, torch.Tensor] = {}
        if self.rank is None:
            out["W"] = normal(*w.shape)
        else:
            out["A"] = normal(w.shape[0], self.rank)
            out["B"] = normal(w.shape[1], self.rank)
        bias = mod.bias
        if bias is not None:
            out["b"] = normal(bias.shape[0])
        return out

    def clear(self) -> None:
        """Drop the population: the model is the plain model again."""
        for _, mod in self.modules:
            mod.noise = {}
        self._pop.size = 0
        self._pop.scale = torch.zeros(0)

    def perturbation(self, i: int) -> dict[str, torch.Tensor]:
        """Member i's ``s * E_i`` as dense tensors, by parameter name (for checks and drift)."""
        s = float(self._pop.scale[i])
        out: dict[str, torch.Tensor] = {}
        for k, (name, mod) in enumerate(self.modules):
            if k in self.tied:
                continue
            n = mod.noise
            if "A" in n:
                r = n["A"].shape[-1]
                out[f"{name}.weight"] = s * (n["A"][i] @ n["B"][i].T) / math.sqrt(r)
            elif "W" in n:
                out[f"{name}.weight"] = s * n["W"][i]
            elif "w" in n:
                out[f"{name}.weight"] = s * n["w"][i]
            if "b" in n:
                out[f"{name}.bias"] = s * n["b"][i]
        return out

    @torch.no_grad()
    def update(self, fitness: torch.Tensor, lr: float) -> dict[str, float]:
        """Step the shared parameters by Eq. (2) from the members' fitness (shape (P,)), then drop
        the population. Returns the update's global Frobenius norm and the fitness spread."""
        p = self._pop.size
        if fitness.shape != (p,):
            raise ValueError(f"fitness of shape {tuple(fitness.shape)} for a population of {p}")
        f = fitness.to(torch.float64)
        std = float(f.std(unbiased=False))
        z = ((f - f.mean()) / std if std > 0 else torch.zeros_like(f)).to(torch.float32)
        coef = z * torch.sign(self._pop.scale) * (lr / p)  # (P,)
        sq = 0.0
        for k, (_, mod) in enumerate(self.modules):
            if k in self.tied:
                continue
            n = mod.noise
            weight = mod.weight
            if "A" in n:
                r = n["A"].shape[-1]
                a = (n["A"] * coef[:, None, None]).permute(1, 0, 2).reshape(weight.shape[0], -1)  # (out, P*r)
                b = n["B"].permute(1, 0, 2).reshape(weight.shape[1], -1)  # (in, P*r)
                delta = a @ b.T / math.sqrt(r)
            else:
                delta = torch.einsum("p,p...->...", coef, n["W"] if "W" in n else n["w"])
            weight.add_(delta)
            sq += float(delta.pow(2).sum())
            if "b" in n and mod.bias is not None:
                db = coef @ n["b"]
                mod.bias.add_(db)
                sq += float(db.pow(2).sum())
        self.clear()
        return {"update_norm": math.sqrt(sq), "fitness_std": std}
