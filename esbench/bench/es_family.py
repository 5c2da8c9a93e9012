"""``esbench bench es_family``: every registered ES variant's throughput and master update cost.

Two measurements per variant, both printed as tables:

* **Throughput**: steady-state steps/s on HalfCheetah-v5 with 2 Dask workers (the same loop as
  ``esbench bench``: :func:`esbench.bench.mujoco.es_throughput`), as a fraction of the limit = the
  raw simulator rate (constant action, one process, measured next to it) x 2. Interleaved repeats,
  medians reported: the variants share the runtime, so they differ only by what their members and
  updates cost. Beside them, the host-robust view of :mod:`esbench.bench.steady`: the fastest
  steady generation against the fastest raw sample, and the share of the workers' time in rollouts.
* **Master update time against parameter count**: the wall-clock of one ``tell`` (the update every
  replica applies once per generation) for a population of 40 on an MLP-shaped layout of about 10k,
  100k and 1M parameters, median of a few repeats, in this process.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from omegaconf import OmegaConf

from esbench.bench.mujoco import es_throughput, overall_rate, raw_env_samples
from esbench.config.registry import algorithms, get_algorithm
from esbench.policies.mlp import MLPPolicy
from esbench.strategies import make_strategy

#: (label, obs_dim, hidden sizes, act_dim) of the MLPs timed for the master update.
UPDATE_SIZES: tuple[tuple[str, int, list[int], int], ...] = (
    ("~6k (64x64, the paper's)", 17, [64, 64], 6),
    ("~100k (256x256)", 17, [256, 256], 6),
    ("~1M (1000x1000)", 17, [1000, 1000], 6),
)


def update_time(key: str, obs: int, hidden: list[int], act: int, repeats: int = 3) -> dict[str, Any]:
    """Median seconds of one ``tell`` of ``key`` on an MLP of the given shape (population 40)."""
    policy = MLPPolicy(obs, act, hidden)
    cfg = OmegaConf.structured(get_algorithm(key).schema)
    cfg.noise_table_size = max(int(cfg.noise_table_size), 4 * policy.num_params)
    cfg.population_size = 40
    strategy = make_strategy(cfg, policy.num_params, 0, policy.param_layout())
    state = strategy.init(policy.init_params(np.random.default_rng(0)))
    times = []
    for g in range(repeats + 1):
        pop = strategy.ask(state)
        fitness = np.random.default_rng(g).normal(size=(len(pop), len(pop.signs)))
        t0 = time.perf_counter()
        state, _ = strategy.tell(state, pop, fitness)
        if g:  # the first tell pays one-off costs (page faults on the noise table, caches)
            times.append(time.perf_counter() - t0)
    return {"algo": key, "params": policy.num_params, "update_s": float(np.median(times))}


def bench_es_family(generations: int = 8, repeats: int = 3, raw_seconds: float = 3.0) -> dict[str, Any]:
    """Throughput of every ES variant with 2 workers, and master update times (see module doc)."""
    env_id = "HalfCheetah-v5"
    keys = sorted(algorithms("es"))
    trials: dict[str, list[float]] = {k: [] for k in keys}
    busy: dict[str, list[float]] = {k: [] for k in keys}
    fastest: dict[str, float] = dict.fromkeys(keys, 0.0)
    raws, raw_samples = [], []
    for _ in range(repeats):
        for key in keys:  # interleaved: VM drift spreads over every variant alike
            before = raw_env_samples(env_id, raw_seconds)  # the raw rate just before and after the run
            res = es_throughput(2, generations, env_id, extra=[f"algo={key}"])
            after = raw_env_samples(env_id, raw_seconds)
            raw_samples += [*before, *after]
            raw = (overall_rate(before) + overall_rate(after)) / 2
            raws.append(raw)
            trials[key].append(res["steady_steps_per_s"] / (2 * raw))
            busy[key].append(res["busy_fraction"])
            fastest[key] = max([fastest[key], *res["generation_steps_per_s"]])
    throughput = [
        {
            "algo": k,
            "fraction_of_limit": float(np.median(v)),
            "trials": [round(x, 3) for x in v],
            # The host-robust view (esbench.bench.steady): the fastest steady generation against
            # the fastest raw sample x 2, and the share of the workers' time spent in rollouts.
            "fastest_fraction_of_limit": fastest[k] / (2 * max(raw_samples)),
            "busy_fraction": float(np.median(busy[k])),
        }
        for k, v in trials.items()
    ]
    updates = [update_time(k, o, h, a) | {"size": label} for k in keys for label, o, h, a in UPDATE_SIZES]
    return {
        "env": env_id,
        "workers": 2,
        "raw_steps_per_s_median": float(np.median(raws)),
        "throughput": throughput,
        "update": updates,
    }


def format_es_family(result: dict[str, Any]) -> str:
    """Markdown tables of :func:`bench_es_family`."""
    raw = result["raw_steps_per_s_median"]
    lines = [
        f"ES family on {result['env']}, {result['workers']} workers (raw rate {raw:,.0f} steps/s per "
        "process; limit = raw x 2)",
        "",
        "| variant | fraction of the limit (median) | trials | fastest generation / fastest raw | "
        "workers busy (median) |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['algo']} | {r['fraction_of_limit']:.2f} | {r['trials']} | "
        f"{r.get('fastest_fraction_of_limit', math.nan):.2f} | {r.get('busy_fraction', math.nan):.2f} |"
        for r in result["throughput"]
    ]
    sizes = sorted({(u["params"], u["size"]) for u in result["update"]})
    lines += ["", "Master update (one `tell`, population 40), seconds:", ""]
    lines.append("| variant | " + " | ".join(f"{s} ({p:,} params)" for p, s in sizes) + " |")
    lines.append("|---|" + "---|" * len(sizes))
    for key in sorted({u["algo"] for u in result["update"]}):
        cells = {u["params"]: u["update_s"] for u in result["update"] if u["algo"] == key}
        lines.append(f"| {key} | " + " | ".join(f"{cells[p]:.4f}" for p, _ in sizes) + " |")
    return "\n".join(lines)
