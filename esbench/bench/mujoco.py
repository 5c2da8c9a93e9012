"""ES on MuJoCo against the raw simulator: throughput and memory, printed and saved as JSON.

Run through ``esbench bench`` (:mod:`esbench.bench.command`).
ES throughput is compared with the limit it can approach: the raw simulator rate (the same
environment from ``make_env``, stepped with a constant action, no policy, one process) times the
number of workers. Steady-state throughput excludes the timestep-0 evaluation, the first generation
(worker warm-up) and the last (final evaluation) (:func:`esbench.bench.steady.steady_window`);
``steps_per_s`` of the run summary (whole loop) is reported beside it. Beside the medians, a
host-robust view (:mod:`esbench.bench.steady`): the fastest steady generation against the fastest
10,000-step raw sample, and the share of the workers' wall-clock spent in rollouts.
A breakdown (:mod:`esbench.bench.rollout`) places ES between the two: the simulator replaying
ES's own actions (a moving body costs MuJoCo more than a still one), the ES rollout in one
process (policy, action noise, lockstep loop), and two raw simulators at once (what two cores of
this machine deliver together).
Memory: with the paper's noise table (250M float32, ~1 GB) every worker maps the machine's one
copy, so its proportional set size (PSS) holds table/workers of it, not a whole table.
"""

from __future__ import annotations

import os
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from esbench.bench.steady import busy_fraction, generation_rates, steady_rate

OUT_DIR = Path("results/bench")


def raw_env_samples(env_id: str = "HalfCheetah-v5", seconds: float = 5.0, chunk: int = 10_000) -> list[float]:
    """Environment steps/s with a constant action in this process (no policy), one rate per
    ``chunk`` steps, for at least ``seconds`` (at least one chunk)."""
    from esbench.config.compose import compose_run_config
    from esbench.envs import make_env
    from esbench.runner import load_components

    load_components()  # also in a spawned process (concurrent_raw_rate), which starts with nothing
    cfg = compose_run_config([f"env.id={env_id}"])
    env = make_env(cfg.env)
    # A constant action: zeros for a Box space, action 0 for a Discrete one (CartPole).
    discrete = not env.action_space.shape
    action = 0 if discrete else np.zeros(tuple(env.action_space.shape or ()), np.float32)
    env.reset(seed=0)
    rates: list[float] = []
    t0 = time.perf_counter()
    while not rates or time.perf_counter() - t0 < seconds:
        start = time.perf_counter()
        for _ in range(chunk):
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                env.reset()
        rates.append(chunk / (time.perf_counter() - start))
    return rates


def raw_env_rate(env_id: str = "HalfCheetah-v5", seconds: float = 5.0) -> float:
    """Environment steps/s with a constant action in this process (no policy), over ``seconds``."""
    samples = raw_env_samples(env_id, seconds, chunk=1000)
    return overall_rate(samples)


def overall_rate(samples: list[float]) -> float:
    """The overall rate of equal-sized samples (total steps / total time)."""
    return len(samples) / sum(1.0 / r for r in samples)


def es_throughput(
    workers: int, generations: int, env_id: str = "HalfCheetah-v5", extra: list[str] | None = None
) -> dict:
    """Run ES for ``generations`` on a fresh LocalCluster of ``workers``; its measured throughput."""
    from esbench.config.compose import compose_run_config
    from esbench.runner import run

    with tempfile.TemporaryDirectory() as tmp:
        cfg = compose_run_config(
            [
                f"env.id={env_id}",
                "tracker=none",
                "tracker.console=false",
                f"cluster.n_workers={workers}",
                f"budget.generations={generations}",
                "budget.timesteps=1000000000",
                "eval.interval_timesteps=1000000000",
                "eval.episodes=1",
                f"results_dir={tmp}",
                *(extra or []),
            ]
        )
        outcome = run(cfg)
        metrics = pd.read_csv(outcome.run_dir / "metrics.csv")
    return {
        "workers": workers,
        "generations": generations,
        "timesteps": int(outcome.summary["total_timesteps"]),
        "steady_steps_per_s": steady_rate(metrics),
        "generation_steps_per_s": generation_rates(metrics),
        "busy_fraction": busy_fraction(metrics, workers),
        "run_steps_per_s": float(outcome.summary["steps_per_s"]),
        "wall_clock_s": float(outcome.summary["wall_clock_s"]),
    }


def process_memory() -> dict[str, float]:
    """This process's memory in MB: peak RSS, and RSS/PSS/shared split from smaps_rollup."""
    out = {"peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    try:
        for line in Path("/proc/self/smaps_rollup").read_text().splitlines():
            key, _, rest = line.partition(":")
            if key in ("Rss", "Pss", "Shared_Clean", "Private_Clean", "Private_Dirty"):
                out[key.lower() + "_mb"] = int(rest.split()[0]) / 1024
    except OSError:
        pass
    return out


def touch_table_memory(seed: int, size: int) -> dict[str, float]:
    """Read every page of the noise table in this process, then measure: the worst case, as when
    a huge population's perturbations cover the whole table."""
    from esbench.strategies.noise import noise_table

    float(np.asarray(noise_table(seed, size)[::1024]).sum())  # one float per 4 KB page
    return process_memory()


def noise_table_memory(workers: int = 2, table_size: int = 250_000_000) -> dict[str, Any]:
    """Per-worker memory after an ES generation that used the paper-size noise table."""
    from distributed import Client, LocalCluster

    from esbench.config.compose import compose_run_config
    from esbench.runner import run
    from esbench.strategies.noise import noise_table

    t0 = time.perf_counter()
    noise_table(123, table_size)  # generate (or find) the machine's one copy
    generation_s = time.perf_counter() - t0
    with (
        LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
        tempfile.TemporaryDirectory() as tmp,
    ):
        cfg = compose_run_config(
            [
                "tracker=none",
                "tracker.console=false",
                "cluster=address",
                f"cluster.address={cluster.scheduler_address}",
                f"algo.noise_table_size={table_size}",
                "budget.generations=2",
                "eval.episodes=1",
                f"results_dir={tmp}",
            ]
        )
        run(cfg)
        per_worker = list(client.run(process_memory).values())
        touched = list(client.run(touch_table_memory, 123, table_size).values())
    return {
        "table_floats": table_size,
        "table_mb": table_size * 4 / 2**20,
        "table_generation_s": generation_s,
        "workers": per_worker,
        "workers_after_touching_whole_table": touched,
        "master": process_memory(),
    }


def concurrent_raw_rate(processes: int, env_id: str = "HalfCheetah-v5", seconds: float = 3.0) -> float:
    """Total raw steps/s of ``processes`` processes stepping at once: what the cores deliver
    together (shared caches, the hypervisor's share), a stricter limit than one process x N."""
    import multiprocessing as mp

    with mp.get_context("spawn").Pool(processes) as pool:
        return float(sum(pool.starmap(raw_env_rate, [(env_id, seconds)] * processes)))


def bench_mujoco(generations: int = 10, repeats: int = 5, raw_seconds: float = 3.0) -> dict[str, Any]:
    """ES throughput on HalfCheetah-v5 with 1 and 2 workers against the raw limit, and memory.

    Shared machines drift (CPU steal, turbo, neighbours' memory traffic: the raw rate moved by 15%
    between minutes here), so every ES run is compared with the raw rate measured just before and
    just after it, the worker counts alternate which runs first, and the medians over ``repeats``
    are reported with each trial's fraction.
    """
    from esbench.bench.rollout import rollout_breakdown
    from esbench.config.compose import compose_run_config

    env_id = "HalfCheetah-v5"
    trials: list[dict[str, Any]] = []
    raw_samples: list[float] = []  # every 10,000-step raw sample, for the fastest-sample view
    for trial in range(repeats):
        # Each ES run is bracketed by raw measurements (the host's speed drifts within a minute),
        # and the order of the worker counts alternates between trials, so neither count always
        # runs first.
        es: dict[int, dict[str, Any]] = {}
        raw_by_workers: dict[int, float] = {}
        for w in (1, 2) if trial % 2 == 0 else (2, 1):
            before = raw_env_samples(env_id, raw_seconds)
            es[w] = es_throughput(w, generations, env_id)
            after = raw_env_samples(env_id, raw_seconds)
            raw_samples.extend([*before, *after])
            raw_by_workers[w] = (overall_rate(before) + overall_rate(after)) / 2
        rollout = rollout_breakdown(compose_run_config([f"env.id={env_id}"]), repeats=1)
        trials.append(
            {
                "raw": float(np.mean(list(raw_by_workers.values()))),
                "raw_by_workers": raw_by_workers,
                "raw_2_processes": concurrent_raw_rate(2, env_id, raw_seconds),
                "es": es,
                "rollout": rollout,
            }
        )
    med = lambda xs: float(np.median(xs))  # noqa: E731
    raw = med([t["raw"] for t in trials])
    raw2 = med([t["raw_2_processes"] for t in trials])
    stages = {  # each as a fraction of the raw rate measured in the same trial, then the median
        key: med([t["rollout"][key] / t["raw"] for t in trials])
        for key in ("policy_actions_steps_per_s", "es_rollout_steps_per_s")
    }
    rows = []
    for w in (1, 2):
        r = dict(trials[0]["es"][w])
        for key in ("steady_steps_per_s", "run_steps_per_s", "wall_clock_s"):
            r[key] = med([t["es"][w][key] for t in trials])
        r["steady_steps_per_s_trials"] = [t["es"][w]["steady_steps_per_s"] for t in trials]
        r["limit_steps_per_s"] = raw * w
        r["fraction_of_limit"] = med(
            [t["es"][w]["steady_steps_per_s"] / (t["raw_by_workers"][w] * w) for t in trials]
        )
        r["fraction_of_limit_trials"] = [
            t["es"][w]["steady_steps_per_s"] / (t["raw_by_workers"][w] * w) for t in trials
        ]
        # The host-robust view: the fastest steady generation against the fastest raw sample, and
        # the share of the workers' time spent in rollouts (esbench.bench.steady).
        fastest = max(x for t in trials for x in t["es"][w]["generation_steps_per_s"])
        r["fastest_generation_steps_per_s"] = fastest
        r["fastest_raw_steps_per_s"] = max(raw_samples)
        r["fastest_fraction_of_limit"] = fastest / (max(raw_samples) * w)
        r["busy_fraction"] = med([t["es"][w]["busy_fraction"] for t in trials])
        r["busy_fraction_trials"] = [t["es"][w]["busy_fraction"] for t in trials]
        together = [t["raw"] if w == 1 else t["raw_2_processes"] for t in trials]
        r["fraction_of_concurrent_raw"] = med(
            [t["es"][w]["steady_steps_per_s"] / lim for t, lim in zip(trials, together, strict=True)]
        )
        rows.append(r)
    return {
        "env": env_id,
        "repeats": repeats,
        "raw_steps_per_s_one_process": raw,
        "raw_steps_per_s_two_processes": raw2,
        "es": rows,
        "rollout_breakdown": {
            "generation": trials[0]["rollout"]["generation"],
            "policy_actions_fraction_of_raw": stages["policy_actions_steps_per_s"],
            "es_rollout_fraction_of_raw": stages["es_rollout_steps_per_s"],
            "two_processes_fraction_of_2x_raw": med([t["raw_2_processes"] / (2 * t["raw"]) for t in trials]),
        },
        "speedup_2_over_1": med(
            [t["es"][2]["steady_steps_per_s"] / t["es"][1]["steady_steps_per_s"] for t in trials]
        ),
        "memory": noise_table_memory(),
    }


def _machine() -> dict[str, Any]:
    return {"cpu_count": os.cpu_count(), "platform": platform.platform(), "python": sys.version.split()[0]}


def _print_mujoco(res: dict[str, Any]) -> None:
    raw = res["raw_steps_per_s_one_process"]
    print(
        f"\nES on {res['env']} (medians of {res['repeats']} interleaved repeats): raw simulator "
        f"{raw:,.0f} steps/s in one process, {res['raw_steps_per_s_two_processes']:,.0f} in two at once"
    )
    print(
        "| workers | ES steps/s (steady) | limit (raw x workers) | fraction | "
        "fraction of concurrent raw | whole-run steps/s | trials (fraction) |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in res["es"]:
        trials = ", ".join(
            f"{x:,.0f} ({f:.2f})"
            for x, f in zip(
                r["steady_steps_per_s_trials"], r.get("fraction_of_limit_trials", []), strict=False
            )
        )
        print(
            f"| {r['workers']} | {r['steady_steps_per_s']:,.0f} | {r['limit_steps_per_s']:,.0f} | "
            f"{r['fraction_of_limit']:.2f} | {r['fraction_of_concurrent_raw']:.2f} | "
            f"{r['run_steps_per_s']:,.0f} | {trials} |"
        )
    print(f"speedup 2 workers / 1 worker: {res['speedup_2_over_1']:.2f}x")
    print(
        "\nhost-robust view: the fastest steady generation against the fastest 10,000-step raw "
        "sample (noise only slows work down: timeit's convention), and the share of the workers' "
        "wall-clock spent in rollouts (host slowdowns stretch both alike)"
    )
    print(
        "| workers | fastest generation steps/s | fastest raw x workers | fraction | "
        "busy (median) | busy (trials) |"
    )
    print("|---|---|---|---|---|---|")
    for r in res["es"]:
        if "fastest_fraction_of_limit" not in r:
            continue
        busy = ", ".join(f"{b:.2f}" for b in r["busy_fraction_trials"])
        print(
            f"| {r['workers']} | {r['fastest_generation_steps_per_s']:,.0f} | "
            f"{r['fastest_raw_steps_per_s'] * r['workers']:,.0f} | {r['fastest_fraction_of_limit']:.2f} | "
            f"{r['busy_fraction']:.2f} | {busy} |"
        )
    _print_breakdown(res)
    m = res["memory"]
    print(
        f"\nnoise table {m['table_floats']:,} float32 = {m['table_mb']:,.0f} MB "
        f"(generated or found in {m['table_generation_s']:.1f} s)"
    )
    print("| process | peak RSS MB | RSS MB | PSS MB | shared clean MB | private MB |")
    print("|---|---|---|---|---|---|")
    procs = [
        *((f"worker {i}", w) for i, w in enumerate(m["workers"])),
        *(
            (f"worker {i}, whole table read", w)
            for i, w in enumerate(m["workers_after_touching_whole_table"])
        ),
        ("master", m["master"]),
    ]
    for name, mem in procs:
        private = mem.get("private_clean_mb", 0) + mem.get("private_dirty_mb", 0)
        cells = [
            mem["peak_rss_mb"],
            mem.get("rss_mb", 0),
            mem.get("pss_mb", 0),
            mem.get("shared_clean_mb", 0),
        ]
        print(f"| {name} | " + " | ".join(f"{c:,.0f}" for c in cells) + f" | {private:,.0f} |")


def _print_breakdown(res: dict[str, Any]) -> None:
    """From the limit to ES: each stage's steps/s per process as a fraction of the raw rate."""
    b, es = res["rollout_breakdown"], {r["workers"]: r for r in res["es"]}
    rows = [
        ("raw simulator, constant action (the limit's unit)", 1.0),
        (
            f"simulator replaying ES's actions (generation {b['generation']}), no policy",
            b["policy_actions_fraction_of_raw"],
        ),
        ("ES rollout in one process: MLP, obs norm, action noise, lockstep", b["es_rollout_fraction_of_raw"]),
        ("ES, 1 Dask worker (steady)", es[1]["fraction_of_limit"]),
        ("raw simulator, 2 processes at once, per process", b["two_processes_fraction_of_2x_raw"]),
        ("ES, 2 Dask workers (steady), per worker", es[2]["fraction_of_limit"]),
    ]
    print("\nwhere the time goes (steps/s per process, fraction of the raw rate, medians):")
    print("| stage | fraction of raw |\n|---|---|")
    for name, frac in rows:
        print(f"| {name} | {frac:.2f} |")


def _es_one_core_row(mujoco: dict[str, Any] | None) -> dict[str, Any]:
    """ES with one worker on HalfCheetah-v5, shaped like a baseline row (reused from ``mujoco``)."""
    es = mujoco["es"][0] if mujoco else es_throughput(1, 12)
    return {
        "algo": "openai_es (1 worker)",
        "env_id": "HalfCheetah-v5",
        "timesteps": es["timesteps"],
        "wall_s": es["wall_clock_s"],
        "steps_per_s": es["steady_steps_per_s"],
        "torch_threads": 1,
    }


def markdown_rows(rows: list[dict[str, Any]]) -> str:
    """A Markdown table of dict rows (numbers with thousands separators)."""
    if not rows:
        return "(no rows)"
    cols = list(rows[0])
    fmt = lambda v: f"{v:,.2f}" if isinstance(v, float) else str(v)  # noqa: E731
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(fmt(r.get(c, "")) for c in cols) + " |" for r in rows]
    return "\n".join(lines)
