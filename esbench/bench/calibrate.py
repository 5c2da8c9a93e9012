"""``esbench bench calibrate``: measure, on this machine, the rates cost estimates are priced from.

Each rate the estimator of :mod:`esbench.recipes` needs (the keys of
:data:`esbench.recipes.STEP_RATES`) is measured with the benchmark functions of this package, short
and once, then written to the calibration file (:mod:`esbench.utils.calibration`):

* ``mujoco_raw``: raw simulator steps/s of every environment option the estimator prices
  (:func:`~esbench.bench.mujoco.raw_env_rate`, one process, constant action).
* ``es_steps_per_s``: ES's steady steps/s per worker with the policy in the loop, on a fresh
  LocalCluster of one worker (:func:`~esbench.bench.mujoco.es_throughput`), on HalfCheetah,
  InvertedPendulum and CartPole (the smoke recipes' environments: short episodes, so per-episode
  costs weigh); ``es_episode_steps``: the mean length of those runs' episodes (a short run's:
  what an evaluation episode of a smoke or early run lasts);
  ``es_policy_s``: the policy's cost per step (ES's seconds per step minus the raw simulator's on
  HalfCheetah), which prices the environments not measured; ``es_fraction``: ES over raw on
  HalfCheetah (for reading only).
* ``parallel_efficiency``: two raw simulators at once against twice one
  (:func:`parallel_efficiency`): what two busy processes get of two cores.
* ``rl_steps_per_s``: TRPO, PPO and A2C training steps/s on HalfCheetah, one torch thread
  (:func:`~esbench.bench.baselines.bench_baselines`, a few thousand steps each).
* ``atari_frame_s``, ``atari_cnn_s``: the emulator's seconds per frame
  (:func:`~esbench.bench.atari.raw_ale_rate`), the ES CNN's seconds per agent step
  (:func:`~esbench.bench.atari.rollout_profile`), A2C's CNN seconds per step (its training rate on
  Pong less the frames).
* ``lm``: a language-model job's costs at the smoke model, measured by real runs of each learner
  (:func:`lm_costs`).
* ``job_overhead_s``, ``sweep_overhead_s``, ``recipe_overhead_s``: a real tiny sweep (an ES and
  a TRPO job) through ``esbench run -m`` in a child process, and its report: start-up of the
  process and the cluster, per job (the launcher's job time less the run's own), and the report.
"""

from __future__ import annotations

import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from esbench.bench.mujoco import concurrent_raw_rate, es_throughput, raw_env_rate
from esbench.utils.machine import cpu_model

#: Gymnasium ids of the environment options priced by name (conf/env/<option>.yaml).
ENV_IDS: dict[str, str] = {
    "halfcheetah": "HalfCheetah-v5",
    "hopper": "Hopper-v5",
    "walker2d": "Walker2d-v5",
    "swimmer": "Swimmer-v5",
    "inverted_pendulum": "InvertedPendulum-v5",
    "inverted_double_pendulum": "InvertedDoublePendulum-v5",
    "ant": "Ant-v5",
    "humanoid": "Humanoid-v5",
    "cartpole": "CartPole-v1",
}
_VERSIONED = ("esbench", "mujoco", "gymnasium", "ale-py", "torch", "stable-baselines3", "transformers", "trl")


def machine_facts() -> dict[str, Any]:
    """CPU model, core count, platform and Python of this machine."""
    return {
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
    }


def versions() -> dict[str, str | None]:
    """Installed versions of esbench and the packages its rates depend on."""
    from esbench.tracking.store import installed_versions

    return installed_versions(_VERSIONED)


def mujoco_rates(seconds: float = 1.0) -> dict[str, float]:
    """Raw steps/s of each environment option in :data:`ENV_IDS` (one process, constant action)."""
    return {option: raw_env_rate(env_id, seconds) for option, env_id in ENV_IDS.items()}


#: Environments whose ES rate is measured (the others are priced from their raw rate), and the
#: population of each measurement: HalfCheetah's episodes are always 1,000 steps, so 8 members keep
#: a generation to a few seconds.
ES_MEASURED: dict[str, int] = {"halfcheetah": 8, "inverted_pendulum": 40, "cartpole": 40}


def es_rates(raw: dict[str, float], generations: int = 6) -> dict[str, Any]:
    """ES's steady steps/s per worker (one worker) and mean training episode length on each
    environment of :data:`ES_MEASURED`, the policy's seconds per step on HalfCheetah, and ES's
    fraction of raw there."""
    measured, lengths = {}, {}
    for option, population in ES_MEASURED.items():
        res = es_throughput(
            1,
            generations,
            ENV_IDS[option],
            [f"env={option}", "algo.noise_table_size=1000000", f"algo.population_size={population}"],
        )
        measured[option] = res["steady_steps_per_s"]
        lengths[option] = res["timesteps"] / (res["generations"] * population)
    es_hc, raw_hc = measured["halfcheetah"], raw["halfcheetah"]
    return {
        "es_steps_per_s": measured,
        "es_episode_steps": lengths,
        "es_policy_s": max(1.0 / es_hc - 1.0 / raw_hc, 1e-7),
        "es_fraction": es_hc / raw_hc,
    }


def parallel_efficiency(repeats: int = 2, seconds: float = 2.0) -> float:
    """Two raw HalfCheetah simulators at once against twice one, each measured the same way (fresh
    spawned processes) and one right after the other, ``repeats`` times in turn: the median ratio
    (a shared machine's speed drifts between minutes, so the two are never far apart in time)."""
    ratios = []
    for _ in range(repeats):
        one = concurrent_raw_rate(1, ENV_IDS["halfcheetah"], seconds)
        two = concurrent_raw_rate(2, ENV_IDS["halfcheetah"], seconds)
        ratios.append(two / (2 * one))
    return min(float(statistics.median(ratios)), 1.0)


def rl_rates(timesteps: int = 2048) -> dict[str, float]:
    """TRPO, PPO and A2C training steps/s on HalfCheetah with one torch thread."""
    from esbench.bench.baselines import bench_baselines

    rows = bench_baselines("HalfCheetah-v5", timesteps, ("trpo", "ppo", "a2c"))
    return {r["algo"]: float(r["steps_per_s"]) for r in rows}


def atari_rates(frame_skip: int = 4) -> dict[str, Any]:
    """Seconds per emulator frame, and the ES and A2C CNNs' seconds per agent step, on Pong."""
    from esbench.bench.atari import raw_ale_rate, rollout_profile
    from esbench.bench.baselines import bench_baselines

    raw = raw_ale_rate("Pong", frame_skip, seconds=2.0)
    frame_s = 1.0 / raw["frames_per_s"]
    profile = rollout_profile("Pong", frame_skip, episodes=2, max_episode_steps=200)
    es_cnn = 1.0 / profile["agent_steps_per_s"] - frame_skip * frame_s
    (a2c,) = bench_baselines(
        timesteps=1000,
        algos=("a2c",),
        env_overrides=["env=atari", "env.game=Pong", f"env.frame_skip={frame_skip}"],
    )
    rl_cnn = 1.0 / a2c["steps_per_s"] - frame_skip * frame_s
    return {"atari_frame_s": frame_s, "atari_cnn_s": {"es": max(es_cnn, 1e-6), "rl": max(rl_cnn, 1e-6)}}


def _lm_job(
    algo: str, stage_timesteps: int, interval: int, tmp: str, tag: str = ""
) -> tuple[float, int, int]:
    """(wall seconds, training completions of the stage, evaluation points) of one real LM job at
    the smoke model (``budget=smoke``; the pretrained prior is cached by the first run)."""
    import pandas as pd

    from esbench.config.compose import compose_run_config
    from esbench.runner import run

    cfg = compose_run_config(
        [
            "sequence=lm_addition_to_countdown",
            f"algo={algo}",
            "budget=smoke",
            f"budget.timesteps={stage_timesteps}",
            f"budget.stage_timesteps={stage_timesteps}",
            f"eval.interval_timesteps={interval}",
            "eval.episodes=1",
            "tracker=none",
            "tracker.console=false",
            f"results_dir={tmp}",
            f"run_id=calibrate-{algo}-{stage_timesteps}-{interval}{tag}",
        ]
    )
    t0 = time.perf_counter()
    outcome = run(cfg)
    wall = time.perf_counter() - t0
    points = int(pd.read_csv(outcome.run_dir / "metrics.csv")["timesteps"].nunique())
    return wall, stage_timesteps, points


def lm_costs() -> dict[str, Any]:
    """A language-model job's costs at the smoke model (``budget=smoke``), from real runs through
    :func:`esbench.runner.run`, each a whole job as a recipe runs it (model, tasks, stages, points).

    Each learner runs with a short and a long training budget (EGGROLL, OpenAI-ES: one and five
    generations of 512 completions; GRPO: 64 and 512 completions, 2 and 16 steps) and the same
    evaluation points (a shared machine's noise is seconds: the longer run must outweigh it);
    the difference is the cost of the extra completions alone (``completion_s``, per learner) and
    the short run less its completions is the fixed cost of a job with ``points`` evaluation points
    (``job_s``). One more EGGROLL run with four times the points prices a point (``eval_point_s``).
    Two first runs (EGGROLL, GRPO) pretrain (or find) the cached prior and pay first-use costs
    (imports of transformers and TRL): what they cost beyond a later run is ``first_use_s``.
    """
    never = 10**9
    budgets = {"eggroll": (512, 2560), "openai_es": (512, 2560), "grpo": (64, 512)}
    out: dict[str, Any] = {"completion_s": {}, "job_s": {}}
    warm: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for algo in ("eggroll", "grpo"):  # the cached prior, and first-use costs, outside the timing
            warm[algo] = _lm_job(algo, 64, never, tmp, tag="-warm-up")[0]
        points = {}
        for algo, (small, big) in budgets.items():
            w1, n1, points[algo] = _lm_job(algo, small, never, tmp)
            w2, n2, _ = _lm_job(algo, big, never, tmp)
            per = max((w2 - w1) / (n2 - n1), 1e-6)
            out["completion_s"][algo] = per
            out["job_s"][algo] = max(w1 - per * n1, 1e-3)
        w4, _, p4 = _lm_job("eggroll", 512, 128, tmp)
        extra = max(p4 - points["eggroll"], 1)
        base = out["job_s"]["eggroll"] + 512 * out["completion_s"]["eggroll"]
        out["eval_point_s"] = max((w4 - base) / extra, 1e-3)
        out["points"] = float(points["eggroll"])
    # What the first job of a kind costs beyond a later one (imports of transformers, TRL), paid
    # once per `esbench reproduce` (its language-model jobs run one after another in one process).
    out["first_use_s"] = {
        kind: max(warm[algo] - out["job_s"][algo] - 64 * out["completion_s"][algo], 1e-3)
        for kind, algo in (("es", "eggroll"), ("grpo", "grpo"))
    }
    return out


def _tiny_sweep_args(results_dir: str, algo: str, seeds: str) -> list[str]:
    """The overrides of a tiny sweep: ``algo`` on InvertedPendulum, 2,000 steps, one job per seed."""
    return [
        "hydra/launcher=dask",
        f"algo={algo}",
        "env=inverted_pendulum",
        "budget.timesteps=2000",
        "eval.interval_timesteps=2000",
        "eval.episodes=1",
        "tracker=none",
        "experiment=calibrate",
        f"seed={seeds}",
        f"results_dir={results_dir}",
        *(["algo.noise_table_size=1000000"] if algo == "openai_es" else []),
    ]


def _tiny_sweep(results_dir: str, cwd: str, algo: str, seeds: str) -> tuple[float, dict[str, float]]:
    """Run ``esbench run -m`` of ``algo`` on InvertedPendulum (2,000 steps, one job per seed) in a
    child process; (its wall-clock, the launcher's seconds of each job by run directory name)."""
    args = _tiny_sweep_args(results_dir, algo, seeds)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "esbench.cli", "run", "-m", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=600,
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"calibration sweep failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    jobs = [float(s) for s in re.findall(r"job complete \(([\d.]+) s\)", proc.stdout)]
    if len(jobs) != len(seeds.split(",")):
        raise RuntimeError(f"calibration sweep of {algo}: expected {seeds.count(',') + 1} jobs, saw {jobs}")
    return wall, {f"{algo}-{i}": s for i, s in enumerate(jobs)}


def overheads() -> dict[str, Any]:
    """Fixed costs of real tiny sweeps through ``esbench run -m`` in a child process (two ES jobs on
    InvertedPendulum, then one TRPO job, 2,000 steps each), then their report in this one.

    ``job_overhead_s``: per family, the launcher's time of a job less the run's own
    ``wall_clock_s`` (start-up on the worker, the run directory, the checkpoint), the mean over the
    jobs; ``sweep_overhead_s``: a sweep's wall-clock less its longest job (interpreter and imports,
    Hydra, validation, the cluster's start and stop), the mean of the two sweeps;
    ``recipe_overhead_s``: the report (read, tables, figures) plus one interpreter start-up, as
    ``esbench reproduce`` adds once per recipe; ``validate_s``: composing and checking one job's
    config (:func:`esbench.sweep.validate_sweep` of four jobs, in this process).
    """
    from esbench.analysis.report import build_report

    with tempfile.TemporaryDirectory() as tmp:
        runs = str(Path(tmp) / "runs")
        sweeps = {
            algo: _tiny_sweep(runs, tmp, algo, seeds) for algo, seeds in (("openai_es", "0,1"), ("trpo", "0"))
        }
        run_s: dict[str, list[float]] = {"openai_es": [], "trpo": []}
        for summary in Path(runs).glob("calibrate/*/summary.json"):
            algo = summary.parent.name.split("-", 1)[0]
            run_s[algo].append(float(json.loads(summary.read_text())["wall_clock_s"]))
        job_overhead = {}
        for algo, family in (("openai_es", "es"), ("trpo", "rl")):
            jobs = list(sweeps[algo][1].values())
            job_overhead[family] = max((sum(jobs) - sum(run_s[algo])) / len(jobs), 0.01)
        sweep_s = [wall - max(jobs.values()) for wall, jobs in sweeps.values()]
        from esbench.sweep import validate_sweep

        t0 = time.perf_counter()
        checked = validate_sweep(_tiny_sweep_args(runs, "openai_es", "0,1,2,3")[1:])
        validate_s = (time.perf_counter() - t0) / len(checked or [0])
        t1 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import esbench.cli"], check=True, timeout=300)
        build_report(str(Path(runs) / "calibrate"), out_dir=str(Path(tmp) / "reports"), allow_partial=True)
        report_s = time.perf_counter() - t1
    return {
        "job_overhead_s": job_overhead,
        "sweep_overhead_s": max(sum(sweep_s) / len(sweep_s), 0.01),
        "recipe_overhead_s": max(report_s, 0.01),
        "validate_s": max(validate_s, 1e-3),
    }


def calibrate(lm: bool = True) -> dict[str, Any]:
    """Measure every rate (see the module docstring); returns the calibration file's content."""
    from esbench.runner import load_components

    load_components()
    t0 = time.perf_counter()
    timings: dict[str, float] = {}

    def timed(name: str, fn: Any, *args: Any) -> Any:
        start = time.perf_counter()
        print(f"esbench: calibrate: {name} ...", flush=True)
        value = fn(*args)
        timings[name] = time.perf_counter() - start
        return value

    # First: the measurement most sensitive to other processes, so none of this process's own
    # (a Dask cluster still closing) runs beside it. Other people's jobs do: on a shared machine it
    # measures what they leave free then (one busy core halves it).
    efficiency = timed("two processes at once", parallel_efficiency)
    raw = timed("raw MuJoCo rates", mujoco_rates)
    rates: dict[str, Any] = {"mujoco_raw": raw, "parallel_efficiency": efficiency}
    rates.update(timed("ES with the policy in the loop", es_rates, raw))
    rates["rl_steps_per_s"] = timed("SB3 baselines on MuJoCo", rl_rates)
    rates.update(timed("Atari emulator and CNNs", atari_rates))
    if lm:
        rates["lm"] = timed("language-model learners", lm_costs)
    rates.update(timed("job, sweep and report start-up", overheads))
    return {
        "schema": 1,
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "seconds": time.perf_counter() - t0,
        "timings_s": timings,
        "machine": machine_facts(),
        "versions": versions(),
        "rates": rates,
    }


def format_calibration(data: dict[str, Any]) -> str:
    """The calibration as Markdown: machine, then each rate against the built-in one."""
    from esbench.recipes import STEP_RATES

    m = data["machine"]
    lines = [
        f"Calibration of {data['date']}: {m['cpu_model']}, {m['cpu_count']} cores, Python {m['python']}; "
        f"measured in {data['seconds']:.0f} s",
        "",
        "| rate | measured | built-in |",
        "|---|---|---|",
    ]
    for key, value in _flat(data["rates"]):
        builtin = _lookup(STEP_RATES, key)
        lines.append(f"| {key} | {_num(value)} | {_num(builtin) if builtin is not None else '-'} |")
    return "\n".join(lines)


def _flat(node: dict[str, Any], prefix: str = "") -> list[tuple[str, float]]:
    out: list[tuple[str, float]] = []
    for k, v in node.items():
        key = f"{prefix}{k}"
        out += _flat(v, key + ".") if isinstance(v, dict) else [(key, float(v))]
    return out


def _lookup(node: Any, dotted: str) -> float | None:
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return float(node) if isinstance(node, int | float) else None


def _num(x: float) -> str:
    if x == 0 or not math.isfinite(x):
        return str(x)
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"
