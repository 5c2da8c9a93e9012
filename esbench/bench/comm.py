"""``esbench bench comm``: bytes on the wire per generation against the parameter count.

DESIGN.md promise 2: ES sends seeds and scalars, not parameters. This benchmark runs OpenAI-ES with
the same population (40 members = 20 antithetic pairs), the same number of tasks (one per worker,
2 workers) and the same short episodes on policies from ~6k to ~1M parameters, and reads the
bytes the runtime counted (``metrics.csv``: ``bytes_to_workers``, ``bytes_from_workers``,
``snapshots_sent``; :mod:`esbench.runtime.wire`):

* the paper's 64x64 MLP on HalfCheetah-v5 (5,702 parameters),
* the Atari CNN of Mnih et al. 2016 on Pong (677,990 parameters with Pong's 6 actions),
* a 1000x1000 MLP on HalfCheetah-v5 (1,025,006 parameters),
* CMA-ES with a full covariance matrix on a 32-unit MLP (N < 1,000): its C, B and D live on every
  worker, which replays pycma's ``tell``; none of it is sent.
* EGGROLL (rank 1) on the 64x64 and the 1000x1000 MLP: members are per-layer low-rank factors drawn
  from the noise table by offset, so its messages are the same O(population) numbers.

Steady state is generations 6 onwards (the sync message then holds its full history of 4
records) without an evaluation. Episodes are capped at 200 steps: the byte counts do not depend on
episode length, and the bench stays short. Beside the measured bytes, the table shows what one
snapshot of the state weighs (what a new or lagging worker receives once) and what sending the
parameters to every task each generation would cost.
"""

from __future__ import annotations

import tempfile
from typing import Any

import pandas as pd

#: (label, overrides) of the cases; population, tasks and episode cap are shared (COMMON).
CASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("OpenAI-ES, MLP 64x64, HalfCheetah-v5", ("env=halfcheetah",)),
    ("OpenAI-ES, Atari CNN, Pong", ("env=atari", "env.game=Pong")),
    ("OpenAI-ES, MLP 1000x1000, HalfCheetah-v5", ("env=halfcheetah", "policy.hidden_sizes=[1000,1000]")),
    (
        "CMA-ES (full C), MLP 32, HalfCheetah-v5",
        ("algo=cma_es", "env=halfcheetah", "policy.hidden_sizes=[32]"),
    ),
    ("EGGROLL (r=1), MLP 64x64, HalfCheetah-v5", ("algo=eggroll", "env=halfcheetah")),
    (
        "EGGROLL (r=1), MLP 1000x1000, HalfCheetah-v5",
        ("algo=eggroll", "env=halfcheetah", "policy.hidden_sizes=[1000,1000]"),
    ),
)

COMMON: tuple[str, ...] = (
    "algo.population_size=40",
    "algo.tasks_per_worker=1",
    "env.max_episode_steps=200",
    "cluster.n_workers=2",
    "tracker=none",
    "tracker.console=false",
    "budget.timesteps=1000000000",
    "eval.interval_timesteps=1000000000",
    "eval.episodes=1",
)

#: First generation counted as steady: the sync message carries its full history from here on.
STEADY_FROM = 6


def steady_rows(metrics: pd.DataFrame) -> pd.DataFrame:
    """Generations >= :data:`STEADY_FROM` without an evaluation (those also carry eval tasks)."""
    return metrics[(metrics["generation"] >= STEADY_FROM) & metrics["eval_return_mean"].isna()]


def measure_case(label: str, overrides: tuple[str, ...], generations: int = 9) -> dict[str, Any]:
    """Run one case for ``generations`` and summarize what crossed the wire."""
    from esbench.config.compose import compose_run_config
    from esbench.runner import run
    from esbench.runtime.replica import TrainerState
    from esbench.runtime.wire import payload_bytes
    from esbench.runtime.worker import RunContext, RunSpec

    with tempfile.TemporaryDirectory() as tmp:
        cfg = compose_run_config(
            [*overrides, *COMMON, f"budget.generations={generations}", f"results_dir={tmp}"]
        )
        outcome = run(cfg)
        metrics = pd.read_csv(outcome.run_dir / "metrics.csv")
    ctx = RunContext(RunSpec.from_config(cfg, "comm-bench"))
    state: TrainerState = ctx.initial_state()
    params = int(ctx.policy.num_params)
    ctx.close()
    steady = steady_rows(metrics)
    tasks = int(cfg.cluster.n_workers) * int(cfg.algo.tasks_per_worker)
    to_w = float(steady["bytes_to_workers"].mean())
    return {
        "case": label,
        "params": params,
        "population": int(cfg.algo.population_size),
        "tasks_per_generation": tasks,
        "steady_generations": len(steady),
        "bytes_to_workers": to_w,
        "bytes_from_workers": float(steady["bytes_from_workers"].mean()),
        "bytes_per_task_to_worker": to_w / tasks,
        "snapshots_sent": int(metrics["snapshots_sent"].sum()),
        "snapshot_bytes": payload_bytes(state),
        "params_every_task_bytes": 4 * params * tasks,
    }


def bench_comm(generations: int = 9) -> dict[str, Any]:
    """Every case of :data:`CASES`; the spread of steady bytes across the OpenAI-ES cases."""
    rows = [measure_case(label, overrides, generations) for label, overrides in CASES]
    es = [r for r in rows if r["case"].startswith("OpenAI-ES")]
    spread = {
        key: (max(r[key] for r in es) - min(r[key] for r in es)) / min(r[key] for r in es)
        for key in ("bytes_to_workers", "bytes_from_workers")
    }
    return {
        "rows": rows,
        "relative_spread_openai_es": spread,
        "within_10_percent": max(spread.values()) <= 0.10,
    }


def format_comm(result: dict[str, Any]) -> str:
    """The Markdown table of :func:`bench_comm`."""
    lines = [
        "| case | parameters | bytes to workers / generation | bytes from workers / generation | "
        "per task | snapshots sent | one snapshot | parameters to every task |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        cells = [
            r["case"],
            f"{r['params']:,}",
            f"{r['bytes_to_workers']:,.0f}",
            f"{r['bytes_from_workers']:,.0f}",
            f"{r['bytes_per_task_to_worker']:,.0f}",
            str(r["snapshots_sent"]),
            _mb(r["snapshot_bytes"]),
            _mb(r["params_every_task_bytes"]),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    spread = result["relative_spread_openai_es"]
    lines.append("")
    lines.append(
        f"Population 40, 2 tasks per generation, generations {STEADY_FROM}+ without evaluation (means). "
        f"Spread across OpenAI-ES cases (max-min)/min: to workers {100 * spread['bytes_to_workers']:.1f}%, "
        f"from workers {100 * spread['bytes_from_workers']:.1f}% "
        f"({'within' if result['within_10_percent'] else 'NOT within'} 10%)."
    )
    return "\n".join(lines)


def _mb(n: float) -> str:
    return f"{n / 1e6:,.2f} MB" if n >= 1e5 else f"{n / 1e3:,.1f} kB"
