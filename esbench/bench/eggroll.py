"""EGGROLL against full-rank perturbations as the policy grows: one generation's time, one process.

Issue #13 item 4 asks how EGGROLL's low-rank perturbations (Sarkar et al. 2025, arXiv:2511.16652;
:mod:`esbench.strategies.eggroll`) pay off against full-rank ones as the MLP widens from thousands
to a million parameters. This measures, in one process and with no simulator (observations are
random), what one generation of ``members`` perturbed policies costs on each side:

* **load**: making the members' policies. Dense (OpenAI-ES's members): ``member_params`` (the mean
  plus sigma eps_i, O(params) each) copied into a :class:`BatchedMLP` slot. Low rank (EGGROLL's):
  the base weights once into a :class:`LowRankBatchedMLP`, then per member its factors
  (O(r (in + out)) per layer).
* **forward**: ``steps`` lockstep forward passes of all members over (members, obs_dim)
  observations. Dense: every slot multiplies its own weight matrices. Low rank: the shared product
  ``W x`` slot by slot (bit-reproducible rows, what rollouts use) plus ``(s/sqrt(r)) A (B^T x)``.
  For reference, ``low-rank, 1 GEMM``: the same with ``W x`` as one GEMM over the batch, faster but
  its rows' rounding depends on the batch (why rollouts do not use it).
* **update**: the master's ``tell`` for the members (random fitness): OpenAI-ES's sum of full-rank
  draws against EGGROLL's sum of outer products.

Times are the best of ``repeats``; pin BLAS to one thread (``OPENBLAS_NUM_THREADS=1``), as Dask
workers run, for per-core numbers. Run ``esbench bench eggroll`` or
``python -m esbench.bench.eggroll`` (``--help``).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from omegaconf import OmegaConf

from esbench.config.registry import get_algorithm
from esbench.policies.lowrank import LowRank, LowRankBatchedMLP
from esbench.policies.mlp import BatchedMLP, MLPPolicy
from esbench.strategies import Strategy, make_strategy
from esbench.strategies.eggroll import Eggroll

#: The widths measured by default: about 6k, 72k and 1.07M parameters with 17 inputs, 6 outputs.
DEFAULT_HIDDEN: tuple[tuple[int, ...], ...] = ((64, 64), (256, 256), (1024, 1024))


@dataclass(frozen=True)
class EggrollBenchRow:
    """One policy size's times, in seconds, for one generation of ``members``."""

    hidden: tuple[int, ...]
    params: int
    members: int
    steps: int
    rank: int
    repeats: int
    dense_load_s: float
    dense_forward_s: float
    lowrank_load_s: float
    lowrank_forward_s: float
    gemm_forward_s: float  # reference only: rows not bit-reproducible across batch compositions
    openai_es_update_s: float
    eggroll_update_s: float

    @property
    def dense_total_s(self) -> float:
        """OpenAI-ES's generation: load + forward + update."""
        return self.dense_load_s + self.dense_forward_s + self.openai_es_update_s

    @property
    def eggroll_total_s(self) -> float:
        """EGGROLL's generation: load + forward + update."""
        return self.lowrank_load_s + self.lowrank_forward_s + self.eggroll_update_s


def _best(fn: Callable[[], object], repeats: int) -> float:
    """The shortest of ``repeats`` timed calls of ``fn``, in seconds."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def _strategy(name: str, policy: MLPPolicy, members: int, rank: int, table: int) -> Strategy:
    cfg = OmegaConf.structured(get_algorithm(name).schema)
    cfg.population_size = 2 * members
    cfg.noise_table_size = table
    if name == "eggroll":
        cfg.rank = rank
    return make_strategy(cfg, policy.num_params, seed=0, layout=policy.param_layout())


def _act_one_gemm(low: LowRankBatchedMLP, obs: np.ndarray) -> np.ndarray:
    """:meth:`LowRankBatchedMLP.act` with the shared product as one GEMM over the batch (the raw
    outputs, shape (batch, out)); a reference for what reproducible rows cost."""
    t = low.t
    x = np.clip((obs - t._mean) * t._inv_std, -t.obs_clip, t.obs_clip).astype(np.float32)
    last = len(low.W) - 1
    for k in range(len(low.W)):
        u = np.matmul(low.Bt[k], x[:, :, None])  # (batch, r, 1)
        h = x @ low.W[k].T  # (batch, out): one GEMM
        h += np.matmul(low.A[k], u)[:, :, 0]
        h += low.b[k][:, :, 0]
        if k < last:
            t._act_fn(h, out=h)
        x = h
    return x


def bench_eggroll(
    hidden_sizes: Sequence[tuple[int, ...]] = DEFAULT_HIDDEN,
    members: int = 32,
    steps: int = 200,
    rank: int = 1,
    obs_dim: int = 17,
    act_dim: int = 6,
    repeats: int = 3,
    seed: int = 0,
) -> list[EggrollBenchRow]:
    """Time one generation of dense (OpenAI-ES) and low-rank (EGGROLL) members per MLP size.

    Args:
        hidden_sizes: the MLPs' hidden layers, one entry per size measured.
        members: perturbed policies per generation (each evaluated once here; antithetic runs
            would play each twice).
        steps: lockstep forward passes timed per generation.
        rank: EGGROLL's r.
        obs_dim: observation size (17: HalfCheetah's).
        act_dim: continuous action size (6: HalfCheetah's).
        repeats: each time is the best of this many.
        seed: for the initial weights, the observations and the fitness.

    Returns:
        One row per entry of ``hidden_sizes``.
    """
    rng = np.random.default_rng(seed)
    return [_bench_one(tuple(h), members, steps, rank, obs_dim, act_dim, repeats, rng) for h in hidden_sizes]


def _bench_one(
    hidden: tuple[int, ...],
    members: int,
    steps: int,
    rank: int,
    obs_dim: int,
    act_dim: int,
    repeats: int,
    rng: np.random.Generator,
) -> EggrollBenchRow:
    """One row of :func:`bench_eggroll`."""
    policy = MLPPolicy(obs_dim, act_dim, hidden)
    table = max(1_000_000, 2 * policy.num_params)
    oes = _strategy("openai_es", policy, members, rank, table)
    egg = _strategy("eggroll", policy, members, rank, table)
    assert isinstance(egg, Eggroll) and egg.low_rank
    params = policy.init_params(rng)
    s_oes, s_egg = oes.init(params), egg.init(params)
    p_oes, p_egg = oes.ask(s_oes), egg.ask(s_egg)
    obs = rng.normal(size=(steps, members, obs_dim)).astype(np.float32)
    fitness = rng.normal(size=(members, 2))
    dense = BatchedMLP(policy, members)
    low = LowRankBatchedMLP(policy, members, rank)

    def load_dense() -> None:
        for i in range(members):
            dense.set_slot(i, oes.member_params(s_oes, p_oes, i, 1))

    def load_low() -> None:
        low.set_base(s_egg.params)
        for i in range(members):
            low.set_slot(i, LowRank(egg.member_factors(s_egg, p_egg, i), egg.sigma))

    def forward(act: Callable[[np.ndarray], object]) -> Callable[[], None]:
        def run() -> None:
            for o in obs:
                act(o)

        return run

    load_dense()
    load_low()
    return EggrollBenchRow(
        hidden=hidden,
        params=policy.num_params,
        members=members,
        steps=steps,
        rank=rank,
        repeats=repeats,
        dense_load_s=_best(load_dense, repeats),
        dense_forward_s=_best(forward(dense.act), repeats),
        lowrank_load_s=_best(load_low, repeats),
        lowrank_forward_s=_best(forward(low.act), repeats),
        gemm_forward_s=_best(forward(lambda o: _act_one_gemm(low, o)), repeats),
        openai_es_update_s=_best(lambda: oes.tell(s_oes, p_oes, fitness), repeats),
        eggroll_update_s=_best(lambda: egg.tell(s_egg, p_egg, fitness), repeats),
    )


def format_table(rows: Sequence[EggrollBenchRow]) -> str:
    """A Markdown table of ``rows`` (milliseconds per generation; speed-ups dense / low-rank)."""
    if not rows:
        return "(no rows)"
    r0 = rows[0]
    threads = os.environ.get("OPENBLAS_NUM_THREADS", "unset")
    head = (
        f"One generation: {r0.members} members, {r0.steps} forward steps, EGGROLL rank {r0.rank}; "
        f"ms, best of {r0.repeats}; OPENBLAS_NUM_THREADS={threads}\n\n"
        "| hidden | params | load dense | load low-rank | fwd dense | fwd low-rank | fwd low-rank 1 GEMM* "
        "| fwd speed-up | update OpenAI-ES | update EGGROLL | generation dense | generation EGGROLL "
        "| speed-up |\n" + "|---" * 13 + "|\n"
    )
    lines = []
    for r in rows:
        ms = [
            r.dense_load_s,
            r.lowrank_load_s,
            r.dense_forward_s,
            r.lowrank_forward_s,
            r.gemm_forward_s,
        ]
        cells = [f"{1e3 * v:.1f}" for v in ms]
        cells.append(f"{r.dense_forward_s / r.lowrank_forward_s:.1f}x")
        cells += [f"{1e3 * r.openai_es_update_s:.1f}", f"{1e3 * r.eggroll_update_s:.1f}"]
        cells += [f"{1e3 * r.dense_total_s:.1f}", f"{1e3 * r.eggroll_total_s:.1f}"]
        cells.append(f"{r.dense_total_s / r.eggroll_total_s:.1f}x")
        lines.append(f"| {'x'.join(map(str, r.hidden))} | {r.params:,} | " + " | ".join(cells) + " |")
    foot = "\n\n* reference only: one GEMM's rows depend on the batch they share, so rollouts do not use it."
    return head + "\n".join(lines) + foot


def main(argv: Sequence[str] | None = None) -> None:
    """``esbench bench eggroll`` or ``python -m esbench.bench.eggroll``: measure and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--members", type=int, default=32)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--rank", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--hidden",
        nargs="+",
        default=[",".join(map(str, h)) for h in DEFAULT_HIDDEN],
        help="hidden layer sizes per MLP, comma-separated (default: 64,64 256,256 1024,1024)",
    )
    args = ap.parse_args(argv)
    hidden = [tuple(int(v) for v in h.split(",") if v) for h in args.hidden]
    rows = bench_eggroll(hidden, args.members, args.steps, args.rank, repeats=args.repeats)
    print(format_table(rows))


if __name__ == "__main__":
    main()
