"""``esbench bench projection``: the measured costs the scaling projection is calibrated from.

:mod:`esbench.analysis.projection` models an ES generation's wall-clock on W workers as the master's
own time, the scheduler's time to hand out W tasks, and the rollouts spread over W cores. Every
cost in it is measured here, on this machine, and written to ``results/bench/bench-projection.json``
(which ``esbench report scaling`` reads):

* **Per-timestep rollout cost by environment**: one ES generation (population 40, generation 0,
  the batched lockstep rollout a worker runs) in this process, for Hopper-v5, HalfCheetah-v5 and
  Humanoid-v5: seconds per timestep on one core, and the episodes' mean length.
* **Master time per generation against population**: ``ask``, the sync message and its digest,
  merging the results and ``advance`` (the update every replica applies), on the 64x64 MLP for
  Humanoid-v5 (the paper's scaling task), for 40 to 10,000 episodes per generation.
* **Message sizes**: the serialized task payload for those populations with ``algo.sync_history``
  4 (the default) and 1 generation records, built here as a cross-check, and **measured from real
  runs** (:func:`real_payloads`): Humanoid-v5 on 2 ``dask worker`` processes at 40 and 1,000
  episodes per generation with each setting, ``bytes_to_workers`` per task read from their
  ``metrics.csv`` in steady state. The projection's payloads are fitted to the real runs.
* **Scheduler latency per task**: rounds of k tasks (k = 2 to 512) carrying those payloads (both
  sync histories) to a real ``dask scheduler`` with 2 ``dask worker`` processes over TCP
  (``cluster=processes``), each task doing nothing: the round's time against k gives the per-task
  cost, and its growth with the payload the scheduler's bytes per second.
* **What a shorter sync history costs here** (:func:`sync_history_cost`): a 2-worker HalfCheetah-v5
  run of 20 generations with each setting, on one pair of ``dask worker`` processes: the snapshots
  sent (a worker that missed more generations than the message carries gets one), bytes and seconds
  per generation, and whether both end with the same ``params_sha256`` (they must).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from typing import Any

import numpy as np
import pandas as pd

#: Episodes per generation measured for the master and the messages (the paper's Humanoid runs
#: used at least 10,000 episodes per generation).
POPULATIONS: tuple[int, ...] = (40, 400, 2_000, 10_000)
#: Environments whose per-timestep rollout cost is measured.
ENVS: tuple[tuple[str, str], ...] = (
    ("hopper", "Hopper-v5"),
    ("halfcheetah", "HalfCheetah-v5"),
    ("humanoid", "Humanoid-v5"),
)
#: Tasks per round in the scheduler measurement, and the payloads (episodes) they carry.
TASK_COUNTS: tuple[int, ...] = (2, 8, 32, 128, 512)
SCHEDULER_POPULATIONS: tuple[int, ...] = (40, 2_000, 10_000)
#: The sync histories measured: the runtime's default (4 records) and the design change (1).
HISTORIES: tuple[int, ...] = (4, 1)
#: Real runs whose task payloads are measured: (episodes per generation, tasks per worker). A
#: payload is linear in the episodes (the records' offsets and returns); 1,000 rather than 10,000
#: keeps the runs short (a 1-step Humanoid episode costs about 1 ms on a worker, its reset included).
#: 5 tasks per worker keep each task's member list short (50 pairs), as on a large cluster.
PAYLOAD_RUNS: tuple[tuple[int, int], ...] = ((40, 1), (1_000, 5))
#: Generations of the real runs: the sync message holds its full history from generation 6 on
#: (:data:`esbench.bench.comm.STEADY_FROM`), and the last generation carries an evaluation.
PAYLOAD_GENERATIONS = 8
#: Generations of the HalfCheetah-v5 runs of :func:`sync_history_cost`.
COST_GENERATIONS = 20


def _noop(spec: Any, msg: Any, members: list[int], mode: str) -> int:
    """A task with an ES task's arguments that does nothing: what remains is Dask's cost."""
    return len(members)


def _config(env: str, population: int = 40) -> Any:
    from esbench.config.compose import compose_run_config

    return compose_run_config([f"env={env}", f"algo.population_size={population}", "tracker=none"])


def rollout_cost(env: str, env_id: str, repeats: int = 2) -> dict[str, Any]:
    """Seconds per ES timestep on one core (one generation-0 population in this process)."""
    from esbench.runtime.replica import SyncMessage, state_digest
    from esbench.runtime.worker import RunSpec, evaluate_chunk, get_context

    cfg = _config(env)
    spec = RunSpec.from_config(cfg, f"projection-{env}")
    state = get_context(spec).initial_state()
    msg = SyncMessage(0, state_digest(state), ())
    members = list(range(int(cfg.algo.population_size) // 2))
    best, lengths = np.inf, 0.0
    for _ in range(repeats + 1):  # the first builds the context and warms caches
        t0 = time.perf_counter()
        result = evaluate_chunk(spec, msg, members, "train")
        seconds = time.perf_counter() - t0
        steps = float(result.lengths.sum())
        best, lengths = min(best, seconds / steps), float(result.lengths.mean())
    return {"env_id": env_id, "step_s": float(best), "mean_episode_length_gen0": lengths}


def _message(population: int, history: int, obs_dim: int, state: Any) -> Any:
    """A sync message with ``history`` records of ``population`` episodes (antithetic pairs)."""
    from esbench.runtime.replica import GenerationRecord, SyncMessage, state_digest
    from esbench.strategies.base import Population

    pairs = population // 2
    rng = np.random.default_rng(0)
    records = tuple(
        GenerationRecord(
            Population(g, rng.integers(0, 10**7, pairs, dtype=np.int64), antithetic=True),
            rng.normal(size=(pairs, 2)),
            rng.normal(size=obs_dim),
            rng.random(obs_dim),
            1000.0,
        )
        for g in range(history)
    )
    return SyncMessage(history, state_digest(state), records)


def master_and_messages(populations: tuple[int, ...] = POPULATIONS, repeats: int = 3) -> dict[str, Any]:
    """Master seconds per generation and task payload bytes against episodes per generation."""
    from esbench.runtime.replica import SyncMessage, advance, state_digest
    from esbench.runtime.wire import payload_bytes
    from esbench.runtime.worker import ChunkResult, RunContext, RunSpec, evaluate_chunk
    from esbench.training.es import merge_results

    master, messages = [], []
    for n in populations:
        cfg = _config("humanoid", n)
        ctx = RunContext(RunSpec.from_config(cfg, f"projection-master-{n}"))
        state = ctx.initial_state()
        obs_dim = int(ctx.policy.obs_dim)  # type: ignore[attr-defined]
        times = []
        for g in range(repeats + 1):  # the first touches the noise table's pages: not timed
            t0 = time.perf_counter()
            pop = ctx.strategy.ask(state.es)
            SyncMessage(state.generation, state_digest(state), ())
            pairs = len(pop.offsets)
            rng = np.random.default_rng(g)
            members = np.arange(pairs)
            obs = {0: (rng.normal(size=obs_dim), rng.random(obs_dim), 10.0)}
            result = ChunkResult(members, rng.normal(size=(pairs, 2)), np.full((pairs, 2), 500.0),
                                 np.full((pairs, 2), 500.0), obs=obs)  # fmt: skip
            record, _ = merge_results(pop, [result])
            state, _ = advance(ctx.strategy, state, record)
            if g:
                times.append(time.perf_counter() - t0)
        master.append(
            {"episodes": n, "params": int(ctx.policy.num_params), "seconds": float(np.median(times))}
        )
        spec = ctx.spec
        for history in HISTORIES:
            msg = _message(n, history, obs_dim, state)
            task = payload_bytes((evaluate_chunk, spec, msg, [0], "train"))
            messages.append({"episodes": n, "history": history, "task_bytes": task})
        ctx.close()
    return {"master": master, "messages": messages}


def scheduler_latency(repeats: int = 3, workers: int = 2) -> list[dict[str, Any]]:
    """Rounds of k no-op tasks carrying ES payloads, on a real scheduler and worker processes.

    Per round: its wall-clock, this process's CPU (the master submitting and gathering) and the
    scheduler process's CPU (handling the tasks). The two CPU times are the serial, per-task work
    that grows with the number of workers; the wall-clock on 2 workers also holds the workers' own
    per-task work (k / 2 tasks each), which on a cluster of one task per worker runs in parallel.
    """
    import psutil
    from distributed import Client

    from esbench.runtime.processes import spawned_cluster
    from esbench.runtime.wire import payload_bytes
    from esbench.runtime.worker import RunContext, RunSpec

    cfg = _config("humanoid")
    spec = RunSpec.from_config(cfg, "projection-scheduler")
    ctx = RunContext(spec)
    state = ctx.initial_state()
    obs_dim = int(ctx.policy.obs_dim)  # type: ignore[attr-defined]
    ctx.close()
    rows = []
    config = {"distributed.admin.tick.interval": "1s", "distributed.worker.profile.enabled": False}
    with spawned_cluster(workers, 1, config) as address, Client(address) as client:
        client.wait_for_workers(workers, timeout=60)
        scheduler = psutil.Process(int(client.run_on_scheduler(os.getpid)))
        for n, history in [(n, h) for n in SCHEDULER_POPULATIONS for h in HISTORIES]:
            if n == SCHEDULER_POPULATIONS[0] and history != HISTORIES[0]:
                continue  # at 40 episodes the records are a few hundred bytes: one payload suffices
            msg = _message(n, history, obs_dim, state)
            size = payload_bytes((_noop, spec, msg, [0], "train"))
            for k in TASK_COUNTS:
                wall, master_cpu, scheduler_cpu = [], [], []
                for r in range(repeats + 1):
                    s0, c0 = scheduler.cpu_times(), time.process_time()
                    t0 = time.perf_counter()
                    futures = [client.submit(_noop, spec, msg, [i], "train", pure=False) for i in range(k)]
                    client.gather(futures)
                    t1 = time.perf_counter()
                    del futures
                    c1, s1 = time.process_time(), scheduler.cpu_times()
                    if r:  # the first round warms caches and connections
                        wall.append(t1 - t0)
                        master_cpu.append(c1 - c0)
                        scheduler_cpu.append((s1.user + s1.system) - (s0.user + s0.system))
                rows.append(
                    {
                        "episodes": n,
                        "history": history,
                        "task_bytes": size,
                        "tasks": k,
                        "seconds": float(np.median(wall)),
                        "master_cpu_s": float(np.median(master_cpu)),
                        "scheduler_cpu_s": float(np.median(scheduler_cpu)),
                    }
                )
    return rows


def _real_run(address: str, root: str, overrides: list[str]) -> tuple[pd.DataFrame, dict[str, Any]]:
    """One ES run on the cluster at ``address``, in this process: (its metrics.csv, its summary)."""
    from esbench.config.compose import compose_run_config
    from esbench.runner import run

    cfg = compose_run_config(
        [*overrides, "cluster=address", f"cluster.address={address}", "tracker=none",
         "tracker.console=false", f"results_dir={root}"]
    )  # fmt: skip
    run_dir = run(cfg).run_dir
    return pd.read_csv(run_dir / "metrics.csv"), json.loads((run_dir / "summary.json").read_text())


def real_payloads(generations: int = PAYLOAD_GENERATIONS, workers: int = 2) -> list[dict[str, Any]]:
    """Task payload bytes from real runs, for each of :data:`PAYLOAD_RUNS` and :data:`HISTORIES`.

    Humanoid-v5 (the paper's scaling task, 64x64 MLP), episodes capped at 1 step (the bytes do not
    depend on episode length), on ``workers`` ``dask worker`` processes. Every episode feeds the
    observation statistics (``obs_norm_fraction=1``), so every record carries its observation sums,
    as at 10,000 episodes (1%: 100 episodes a generation) and unlike 1% of 40 (now and then). A
    task's payload is a steady generation's ``bytes_to_workers`` (the runtime's own count,
    :mod:`esbench.runtime.wire`) over its tasks, from generations whose message holds the full
    history, without an evaluation or a resync.
    """
    from esbench.bench.comm import steady_rows
    from esbench.runtime.processes import spawned_cluster

    rows = []
    with tempfile.TemporaryDirectory() as tmp, spawned_cluster(workers, 1) as address:
        for episodes, per_worker in PAYLOAD_RUNS:
            for history in HISTORIES:
                metrics, _ = _real_run(
                    address, f"{tmp}/{episodes}-{history}",
                    ["env=humanoid", f"algo.population_size={episodes}", f"algo.sync_history={history}",
                     f"algo.tasks_per_worker={per_worker}", "algo.obs_norm_fraction=1.0",
                     "env.max_episode_steps=1", f"budget.generations={generations}",
                     "budget.timesteps=1000000000", "eval.interval_timesteps=1000000000", "eval.episodes=1"],
                )  # fmt: skip
                steady = steady_rows(metrics)
                steady = steady[steady["snapshots_sent"] == 0]
                members = episodes // 2  # antithetic pairs: split_members' n
                tasks = np.minimum(members, steady["workers"].to_numpy() * per_worker)
                rows.append(
                    {
                        "episodes": episodes,
                        "history": history,
                        "tasks_per_generation": float(np.mean(tasks)),
                        "steady_generations": len(steady),
                        "task_bytes": float(np.mean(steady["bytes_to_workers"].to_numpy() / tasks)),
                        "snapshots_sent": int(metrics["snapshots_sent"].sum()),
                    }
                )
    return rows


def sync_history_cost(generations: int = COST_GENERATIONS, workers: int = 2) -> list[dict[str, Any]]:
    """A HalfCheetah-v5 run (its defaults: population 40, evaluations every 50,000 timesteps) of
    ``generations`` on ``workers`` ``dask worker`` processes, with each of :data:`HISTORIES`.

    A worker that missed more generations than the message carries (it got no task: Dask put both
    on the other worker) is sent a snapshot; the rows count them, with the bytes and the median
    wall-clock per generation (generation 0's start-up left out) and the final ``params_sha256``.
    Both runs share the worker processes, one after the other.
    """
    from esbench.runtime.processes import spawned_cluster

    rows = []
    with tempfile.TemporaryDirectory() as tmp, spawned_cluster(workers, 1) as address:
        for history in HISTORIES:
            metrics, summary = _real_run(
                address, f"{tmp}/{history}",
                ["env=halfcheetah", f"algo.sync_history={history}", f"budget.generations={generations}",
                 "budget.timesteps=1000000000"],
            )  # fmt: skip
            per_generation = metrics.groupby("generation").agg(
                wall=("wall_clock_s", "max"), to_workers=("bytes_to_workers", "sum")
            )
            trained = per_generation.loc[per_generation.index > 0]
            rows.append(
                {
                    "history": history,
                    "generations": int(metrics["generation"].max()),
                    "snapshots_sent": int(metrics["snapshots_sent"].sum()),
                    "generations_with_snapshot": int((metrics["snapshots_sent"] > 0).sum()),
                    "bytes_to_workers_per_generation": float(trained["to_workers"].mean()),
                    "seconds_per_generation": float(np.median(np.diff(per_generation["wall"].to_numpy()))),
                    "wall_clock_s": float(metrics["wall_clock_s"].iloc[-1]),
                    "params_sha256": str(summary["params_sha256"]),
                }
            )
    return rows


def bench_projection() -> dict[str, Any]:
    """Everything :mod:`esbench.analysis.projection` is calibrated from (see the module doc), and
    what a sync history of 1 record costs on this machine."""
    return {
        "cores": os.cpu_count(),
        "rollout": [rollout_cost(env, env_id) for env, env_id in ENVS],
        **master_and_messages(),
        "payloads": real_payloads(),
        "scheduler": scheduler_latency(),
        "sync_history_cost": sync_history_cost(),
    }


def format_projection(result: dict[str, Any]) -> str:
    """Markdown: the measured costs, then the projection's bottleneck summary."""
    from esbench.analysis.projection import Calibration, bottleneck_markdown

    lines = [
        "Rollout cost, one core (ES generation 0, population 40):",
        "",
        "| env | µs / timestep | mean episode length |",
        "|---|---|---|",
    ]
    for r in result["rollout"]:
        lines.append(f"| {r['env_id']} | {1e6 * r['step_s']:.0f} | {r['mean_episode_length_gen0']:.0f} |")
    lines += [
        "",
        "Master per generation (Humanoid-v5, 64x64 MLP) and task payloads:",
        "",
        "| episodes / generation | master s | task bytes (4 records) | task bytes (1 record) |",
        "|---|---|---|---|",
    ]
    sizes = {(m["episodes"], m["history"]): m["task_bytes"] for m in result["messages"]}
    for m in result["master"]:
        n = m["episodes"]
        lines.append(f"| {n:,} | {m['seconds']:.4f} | {sizes[(n, 4)]:,} | {sizes[(n, 1)]:,} |")
    if result.get("payloads"):
        lines += [
            "",
            "Task payloads measured from real runs (Humanoid-v5, 2 `dask worker` processes, "
            "`bytes_to_workers` per task in steady state):",
            "",
            "| episodes / generation | `algo.sync_history` | tasks / generation | bytes per task | "
            "snapshots sent |",
            "|---|---|---|---|---|",
        ]
        for r in result["payloads"]:
            lines.append(
                f"| {r['episodes']:,} | {r['history']} | {r['tasks_per_generation']:.0f} | "
                f"{r['task_bytes']:,.0f} | {r['snapshots_sent']} |"
            )
    lines += [
        "",
        "Scheduler: rounds of k no-op tasks on 2 `dask worker` processes; wall / master CPU / "
        "scheduler CPU, ms:",
        "",
    ]
    ks = sorted({r["tasks"] for r in result["scheduler"]})
    lines.append("| payload / task | " + " | ".join(f"k={k}" for k in ks) + " |")
    lines.append("|---|" + "---|" * len(ks))
    for size in sorted({r["task_bytes"] for r in result["scheduler"]}):
        cells = {r["tasks"]: r for r in result["scheduler"] if r["task_bytes"] == size}
        parts = [
            f"{1e3 * cells[k]['seconds']:.0f} / {1e3 * cells[k]['master_cpu_s']:.0f} / "
            f"{1e3 * cells[k]['scheduler_cpu_s']:.0f}"
            for k in ks
        ]
        lines.append(f"| {size:,} B | " + " | ".join(parts) + " |")
    lines += ["", bottleneck_markdown(Calibration.from_dict(result))]
    return "\n".join(lines)
