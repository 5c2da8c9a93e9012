"""The scaling projection: time to a score against cores, from measured costs only.

Salimans et al. (2017, Sec. 4.3, Fig. 1) report linear speedup: 3D Humanoid reaches 6000 in a
median 657 minutes on 18 cores and 10 minutes on 1,440. esbench measures what it can on its own
machine (``esbench bench projection``; :mod:`esbench.bench.projection`) and projects the rest with
this model of one generation on W workers, one core each, one task per worker::

    T_gen(W) = t_master(E) + a + W * (s + b(E) / beta) + P / min(W, cores)
    P        = steps per generation * c_env

Assumptions, beside the formula they enter:

* ``t_master(E)``: the master's own work per generation (ask, sync message and digest, merging
  results, the update), linear in episodes per generation E: fitted to measured points.
* ``a + W * (s + b(E) / beta)``: W tasks pass one after another through the master (submitting,
  gathering) and the scheduler (one event loop), which work at once, so the busier of the two sets
  the pace: ``s`` per task and the task's payload ``b(E)`` (O(E) bytes: the sync message's
  ``algo.sync_history`` generation records, measured from real runs) at ``beta`` bytes/s, fitted
  to the CPU time both processes spend on rounds of 2..512 tasks carrying 1- and 4-record payloads
  on a real ``dask scheduler`` process; ``a``, a round's fixed wall-clock, fitted to the rounds'
  wall-clock. Assumed to hold at thousands of workers (no queueing collapse, a network faster than
  the scheduler: ``beta`` is measured on loopback).
* ``P / min(W, cores)``: rollouts divide evenly over the workers (no straggler beyond the measured
  per-step cost ``c_env``); more workers than cores add no speed (oversubscription).
* Results (a few hundred bytes per task) and evaluations are left out.
* Work to the score: time to score = G * T_gen(W), with G generations. For runs measured here G is
  read from the runs themselves; for the paper's Humanoid, where nothing can be measured here, G is
  calibrated from the paper's 18-core point (E = 10,000 episodes per generation, the paper's batch,
  and an assumed mean episode length, 500 steps: Humanoid episodes last up to 1,000 steps, and a
  walker at 6000 survives them all), and the 1,440-core point is then a prediction.

The serial part (master + scheduler) grows with W while the parallel part shrinks as 1/W; the
model states the W at which they are equal (efficiency 1/2) and the W past which more workers make
a generation slower (``sqrt(P / slope)``), for esbench's runtime and two design changes:

* **A sync message of 1 record instead of 4: implemented and measured.** ``algo.sync_history=1``
  (:class:`esbench.config.schema.ESConfig`; 4 by default) sends each task only the last
  generation's record; a worker further behind gets a snapshot, so the numbers are the same. Its
  payloads come from real runs, its per-task scheduler cost from real rounds, and its cost on a
  real 2-worker run (snapshots sent) from ``esbench bench projection``.
* **One task per 18-core machine that fans out to its cores (a tree of sub-masters: W / 18
  tasks): projected, not implemented.** Its per-task costs are the measured ones; the sub-master's
  own fan-out (18 local tasks) is assumed free.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

#: Where ``esbench bench projection`` writes its measurements (read by ``esbench report scaling``).
CALIBRATION_FILE = Path("results/bench/bench-projection.json")

#: The paper's Fig. 1 points: (cores, minutes to a score of 6000 on 3D Humanoid, median of 7 runs).
PAPER_POINTS: tuple[tuple[int, float], ...] = ((18, 657.0), (1440, 10.0))
PAPER_EPISODES_PER_GENERATION = 10_000  # "at least 10,000 episodes and 100,000 timesteps"
ASSUMED_HUMANOID_EPISODE_LENGTH = 500.0
CORES_PER_MACHINE = 18  # the paper's 1,440 cores were 80 machines


def _linear_fit(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """Least-squares (intercept, slope) of y against x."""
    slope, intercept = np.polyfit(np.asarray(x, float), np.asarray(y, float), 1)
    return float(intercept), float(slope)


@dataclass(frozen=True)
class Calibration:
    """The model's constants, each fitted to measured points (see the module doc).

    Attributes:
        cores: Cores of the machine the measurements come from.
        step_s: Seconds per ES timestep on one core, by environment id.
        master: (intercept s, slope s per episode) of the master's time per generation.
        bytes_history4: (intercept, slope per episode) of a task's payload with 4 records.
        bytes_history1: The same with 1 record (``algo.sync_history=1``).
        round_s: Fixed seconds of a round of tasks (``a``).
        task_s: Seconds per task at zero payload (``s``).
        scheduler_bytes_per_s: Payload bytes the scheduler moves per second (``beta``).
        payload_source: ``"real runs"`` (``metrics.csv`` of real runs) or ``"built messages"``
            (older calibrations, without real runs).
        task_costs: Measured serial seconds per task by payload: (episodes, records, bytes, s).
        sync_history_runs: What each sync history did in a real 2-worker run (snapshots sent,
            bytes and seconds per generation, ``params_sha256``), as measured.
    """

    cores: int
    step_s: dict[str, float]
    master: tuple[float, float]
    bytes_history4: tuple[float, float]
    bytes_history1: tuple[float, float]
    round_s: float
    task_s: float
    scheduler_bytes_per_s: float
    payload_source: str = "built messages"
    task_costs: tuple[tuple[int, int, int, float], ...] = ()
    sync_history_runs: tuple[dict[str, Any], ...] = ()

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Calibration:
        """Fit the constants to the raw measurements of :func:`esbench.bench.projection.bench_projection`."""
        master = _linear_fit([m["episodes"] for m in d["master"]], [m["seconds"] for m in d["master"]])
        sizes = d.get("payloads") or d["messages"]  # real runs when measured
        by_history = {
            h: _linear_fit(
                [m["episodes"] for m in sizes if m["history"] == h],
                [m["task_bytes"] for m in sizes if m["history"] == h],
            )
            for h in (4, 1)
        }
        per_payload = []  # (episodes, records, payload bytes, round's fixed wall-clock, s per task)
        for size in sorted({r["task_bytes"] for r in d["scheduler"]}):
            rows = [r for r in d["scheduler"] if r["task_bytes"] == size]
            k = [r["tasks"] for r in rows]
            a, _ = _linear_fit(k, [r["seconds"] for r in rows])
            # master and scheduler work on a round's tasks at once (a pipeline): the busier one sets
            # the pace. Workers' own per-task work is not serial on a cluster (one task each).
            _, s = _linear_fit(k, [max(r["master_cpu_s"], r["scheduler_cpu_s"]) for r in rows])
            per_payload.append((int(rows[0]["episodes"]), int(rows[0].get("history", 4)), size, a, s))
        s0, inv_beta = _linear_fit([p[2] for p in per_payload], [p[4] for p in per_payload])
        return cls(
            cores=int(d.get("cores") or 1),
            step_s={r["env_id"]: float(r["step_s"]) for r in d["rollout"]},
            master=(max(master[0], 0.0), max(master[1], 0.0)),
            bytes_history4=by_history[4],
            bytes_history1=by_history[1],
            round_s=max(float(np.median([p[3] for p in per_payload])), 0.0),
            task_s=max(s0, 1e-7),
            scheduler_bytes_per_s=1.0 / inv_beta if inv_beta > 0 else math.inf,
            payload_source="real runs" if d.get("payloads") else "built messages",
            task_costs=tuple((e, h, int(b), float(s)) for e, h, b, _, s in per_payload),
            sync_history_runs=tuple(d.get("sync_history_cost", ())),
        )

    @classmethod
    def load(cls, path: str | Path = CALIBRATION_FILE) -> Calibration | None:
        """The calibration in ``path`` (an ``esbench bench projection`` JSON), or None if absent."""
        p = Path(path)
        if not p.is_file():
            return None
        data = json.loads(p.read_text())
        return cls.from_dict(data.get("projection", data))


@dataclass(frozen=True)
class Scenario:
    """One workload: episodes and timesteps per generation, the env's per-step cost, tasks.

    Attributes:
        episodes: Episodes per generation (E).
        steps: Timesteps per generation.
        env_id: Whose per-step cost to use.
        history: Generation records per sync message (``algo.sync_history``: 4 by default, or 1).
        workers_per_task: 1: one task per worker (esbench); 18: one task per 18-core machine (a
            tree of sub-masters: projected, not implemented).
        cores: Cores available (None: one per worker, a cluster); W beyond them adds no speed.
    """

    episodes: int
    steps: float
    env_id: str
    history: int = 4
    workers_per_task: int = 1
    cores: int | None = None


def generation_time(cal: Calibration, sc: Scenario, workers: float) -> dict[str, float]:
    """The model's seconds per generation on ``workers`` workers, term by term."""
    w = float(workers)
    b0, b1 = cal.bytes_history4 if sc.history == 4 else cal.bytes_history1
    payload = b0 + b1 * sc.episodes
    tasks = max(w / sc.workers_per_task, 1.0)
    per_task = cal.task_s + payload / cal.scheduler_bytes_per_s
    master = cal.master[0] + cal.master[1] * sc.episodes
    scheduler = cal.round_s + tasks * per_task
    parallel = sc.steps * cal.step_s[sc.env_id] / min(w, float(sc.cores or w))
    return {
        "master": master,
        "scheduler": scheduler,
        "rollouts": parallel,
        "total": master + scheduler + parallel,
    }


def bottleneck(cal: Calibration, sc: Scenario) -> dict[str, float]:
    """Where the serial part (master + scheduler) catches up with the rollouts.

    Returns:
        ``half_efficiency_workers``: W where serial = parallel time per generation (efficiency 1/2);
        ``fastest_workers``: W past which a generation gets slower (``sqrt(P / slope)``);
        ``master_s`` and ``scheduler_s`` at the half-efficiency point (which one dominates).
    """
    b0, b1 = cal.bytes_history4 if sc.history == 4 else cal.bytes_history1
    slope = (cal.task_s + (b0 + b1 * sc.episodes) / cal.scheduler_bytes_per_s) / sc.workers_per_task
    fixed = cal.master[0] + cal.master[1] * sc.episodes + cal.round_s
    p = sc.steps * cal.step_s[sc.env_id]
    half = (-fixed + math.sqrt(fixed**2 + 4 * slope * p)) / (2 * slope)  # slope W^2 + fixed W - P = 0
    terms = generation_time(cal, sc, half)
    return {
        "half_efficiency_workers": half,
        "fastest_workers": math.sqrt(p / slope),
        "master_s": terms["master"],
        "scheduler_s": terms["scheduler"],
        "slope_s_per_worker": slope,
    }


def paper_scenario(cal: Calibration, history: int = 4, workers_per_task: int = 1) -> Scenario:
    """The paper's Humanoid generation (:data:`PAPER_EPISODES_PER_GENERATION` episodes of the
    assumed mean length) on a cluster (one core per worker)."""
    e = PAPER_EPISODES_PER_GENERATION
    return Scenario(e, e * ASSUMED_HUMANOID_EPISODE_LENGTH, "Humanoid-v5", history, workers_per_task)


def paper_projection(
    cal: Calibration, cores: Sequence[float], history: int = 4, workers_per_task: int = 1
) -> dict:
    """Minutes to 6000 on Humanoid against cores, G calibrated from the paper's 18-core point."""
    sc = paper_scenario(cal, history, workers_per_task)
    w_ref, minutes_ref = PAPER_POINTS[0]
    generations = minutes_ref * 60 / generation_time(cal, sc, w_ref)["total"]
    return {
        "generations": generations,
        "minutes": [generations * generation_time(cal, sc, w)["total"] / 60 for w in cores],
        "predicted_1440_minutes": generations * generation_time(cal, sc, PAPER_POINTS[1][0])["total"] / 60,
    }


#: The designs the projection compares: (label, sync records, workers per task, status).
DESIGNS: tuple[tuple[str, int, int, str], ...] = (
    ("esbench: one task per worker, `algo.sync_history=4` (default)", 4, 1, "runs today"),
    ("esbench: one task per worker, `algo.sync_history=1`", 1, 1, "implemented, measured"),
    ("one task per 18-core machine (a tree of sub-masters), 4 records", 4, CORES_PER_MACHINE, "projected"),
    ("one task per 18-core machine, `algo.sync_history=1`", 1, CORES_PER_MACHINE, "projected"),
)


def _payload(cal: Calibration, history: int, episodes: float) -> float:
    """A task's payload in bytes with ``history`` records at ``episodes`` per generation."""
    b0, b1 = cal.bytes_history4 if history == 4 else cal.bytes_history1
    return b0 + b1 * episodes


def bottleneck_markdown(cal: Calibration) -> str:
    """The projection's verdict for the paper's Humanoid workload, as Markdown: the designs'
    bottlenecks, the measured per-task costs behind them, and what ``algo.sync_history=1`` did in a
    real run here (when measured)."""
    lines = [
        f"Projection for the paper's Humanoid workload ({PAPER_EPISODES_PER_GENERATION:,} episodes of "
        f"{ASSUMED_HUMANOID_EPISODE_LENGTH:.0f} steps per generation, one core per worker; per-step cost "
        f"{1e6 * cal.step_s['Humanoid-v5']:.0f} µs, master {cal.master[1] * 1e6:.2f} µs per episode + "
        f"{cal.master[0] * 1e3:.1f} ms, scheduler {cal.round_s * 1e3:.1f} ms per round + "
        f"{cal.task_s * 1e3:.2f} ms per task + payload at {cal.scheduler_bytes_per_s / 1e6:,.0f} MB/s; "
        f"payloads from {cal.payload_source}):",
        "",
        "| design | status | task payload | efficiency 1/2 at W = | fastest at W = | "
        "minutes at 1,440 cores |",
        "|---|---|---|---|---|---|",
    ]
    for label, history, per_task, status in DESIGNS:
        sc = paper_scenario(cal, history, per_task)
        b = bottleneck(cal, sc)
        minutes = paper_projection(cal, [PAPER_POINTS[1][0]], history, per_task)["predicted_1440_minutes"]
        lines.append(
            f"| {label} | {status} | {_payload(cal, history, sc.episodes) / 1e3:,.0f} kB | "
            f"{b['half_efficiency_workers']:,.0f} | {b['fastest_workers']:,.0f} | {minutes:.1f} |"
        )
    today = bottleneck(cal, paper_scenario(cal))
    who = "the scheduler" if today["scheduler_s"] > today["master_s"] else "the master"
    lines += [
        "",
        f"Paper: 657 min on 18 cores (calibrates the work), 10 min on 1,440. At the half-efficiency point "
        f"{who} takes most of the serial time ({today['scheduler_s']:.2f} s scheduler vs "
        f"{today['master_s']:.2f} s master per generation). `algo.sync_history=1` is implemented "
        "(its payloads, per-task costs and snapshots measured); the tree of sub-masters is projected "
        "from the measured per-task costs and not implemented.",
    ]
    biggest = max((e for e, _, _, _ in cal.task_costs), default=None)
    measured = sorted((c for c in cal.task_costs if c[0] == biggest), key=lambda c: -c[1])
    if measured:
        cells = ", ".join(f"{h} record{'s' if h > 1 else ''} {b / 1e3:,.0f} kB: {1e3 * t:.2f} ms"
                          for _, h, b, t in measured)  # fmt: skip
        lines += ["", f"Measured serial cost per task at {biggest:,} episodes per generation: {cells}."]
    if cal.sync_history_runs:
        lines += [
            "",
            "What the sync history costs on this machine (HalfCheetah-v5, 2 `dask worker` processes, "
            "`esbench bench projection`):",
            "",
            "| `algo.sync_history` | generations | snapshots sent | kB to workers / generation | "
            "s / generation (median) | same `params_sha256` |",
            "|---|---|---|---|---|---|",
        ]
        shas = {r["params_sha256"] for r in cal.sync_history_runs}
        for r in cal.sync_history_runs:
            lines.append(
                f"| {r['history']} | {r['generations']} | {r['snapshots_sent']} | "
                f"{r['bytes_to_workers_per_generation'] / 1e3:,.1f} | {r['seconds_per_generation']:.3f} | "
                f"{'yes' if len(shas) == 1 else 'NO'} |"
            )
    return "\n".join(lines)


def local_prediction(
    cal: Calibration, env_id: str, generations: float, steps_per_generation: float, workers: Sequence[float]
) -> list[float]:
    """Seconds to a score on this machine (``cal.cores`` cores, population 40) for each W, from the
    generations a measured run needed: nothing is fitted to the times being predicted."""
    sc = Scenario(40, steps_per_generation, env_id, cores=cal.cores)
    return [generations * generation_time(cal, sc, w)["total"] for w in workers]


def local_table(cal: Calibration, scaling: pd.DataFrame, curves: pd.DataFrame) -> pd.DataFrame:
    """Measured against predicted time to threshold for the runs of this machine.

    The generations a run needed to reach the threshold, and its timesteps per generation, are read
    from its curve (identical at every worker count: a run is a pure function of its config); the
    model then predicts the seconds at each worker count from the calibration alone.

    Args:
        cal: The calibration.
        scaling: :func:`esbench.analysis.scaling.scaling_table`.
        curves: The curve table (``generation``, ``timesteps``, ``eval_return_mean``, ``run_id``).

    Returns:
        Columns algo, env_id, cluster, workers, measured_s, predicted_s, generations,
        steps_per_generation; environments without a measured per-step cost are left out.
    """
    rows = []
    for (algo, env_id, cluster), g in scaling.groupby(["algo", "env_id", "cluster"], sort=True):
        if env_id not in cal.step_s or not len(g):
            continue
        thr = float(g["threshold"].iloc[0])
        cur = curves[(curves["algo"] == algo) & (curves["env_id"] == env_id)]
        gens, per_gen = [], []
        for _, rc in cur.groupby("run_id"):
            hit = rc[rc["eval_return_mean"] >= thr - 1e-9 * max(1.0, abs(thr))].sort_values("generation")
            if len(hit) and hit["generation"].iloc[0] > 0:
                gens.append(float(hit["generation"].iloc[0]))
                per_gen.append(float(hit["timesteps"].iloc[0]) / float(hit["generation"].iloc[0]))
        if not gens:
            continue
        n_gen, steps = float(np.median(gens)), float(np.median(per_gen))
        workers = g["workers"].to_numpy(float)
        predicted = local_prediction(cal, str(env_id), n_gen, steps, list(workers))
        for w, measured, pred in zip(workers, g["time_to_threshold_s"], predicted, strict=True):
            rows.append(
                {
                    "algo": algo,
                    "env_id": env_id,
                    "cluster": cluster,
                    "workers": int(w),
                    "measured_s": float(measured),
                    "predicted_s": float(pred),
                    "generations": n_gen,
                    "steps_per_generation": steps,
                }
            )
    return pd.DataFrame(rows)


def plot_projection(cal: Calibration, local: pd.DataFrame, stem: str | Path) -> list[Path]:
    """Two panels: the paper's Humanoid (model against the paper's 18- and 1,440-core points, with
    ``algo.sync_history=1`` and the projected sub-master design beside it), and this machine
    (measured against predicted)."""
    from esbench.analysis.figures import _style, figure_legend, new_figure, panel_text, savefig

    fig, (left, right) = new_figure(2, ncols=2, panel_size=(4.2, 3.2))
    with _style():
        cores = np.unique(np.geomspace(1, 20_000, 80).round())
        for (label, history, per_task), style in zip(
            (
                ("esbench, sync_history=4", 4, 1),
                ("esbench, sync_history=1", 1, 1),
                ("one task per 18-core machine (projected)", 4, CORES_PER_MACHINE),
            ),
            ("-", "-.", "--"),
            strict=True,
        ):
            minutes = paper_projection(cal, list(cores), history, per_task)["minutes"]
            left.plot(cores, minutes, linestyle=style, color="#0072B2", label=f"model: {label}")
        left.plot(
            [c for c, _ in PAPER_POINTS], [m for _, m in PAPER_POINTS], "kx", markersize=8, label="paper"
        )
        half = bottleneck(cal, paper_scenario(cal))["half_efficiency_workers"]
        left.axvline(half, color="#D55E00", linestyle=":", label=f"efficiency 1/2 ({half:,.0f} workers)")
        left.set_xscale("log")
        left.set_yscale("log")
        panel_text(left, "Paper scale: projection", "Cores (one worker each)", "Minutes to 6000 (Humanoid)")
        colors = {"local": "#009E73", "processes": "#CC79A7"}
        for cluster, g in local.groupby("cluster", sort=True) if len(local) else []:
            g = g.sort_values("workers")
            c = colors.get(str(cluster), "#000000")
            right.plot(g["workers"], g["measured_s"], "o", color=c, label=f"measured ({cluster})")
            right.plot(g["workers"], g["predicted_s"], "-", color=c, alpha=0.6, label=f"model ({cluster})")
        right.axvline(cal.cores, color="#999999", linestyle=":", label=f"{cal.cores} cores")
        right.set_xscale("log", base=2)
        panel_text(right, "This machine: measured and predicted", "Workers", "Seconds to threshold")
        figure_legend(fig, [left, right], ncols=3)
    return savefig(fig, stem)


def projection_markdown(cal: Calibration, local: pd.DataFrame) -> str:
    """The report's projection text: the bottleneck table, then measured against predicted."""
    lines = ["### Projection\n", bottleneck_markdown(cal), ""]
    if len(local):
        lines += [
            "Measured on this machine against the model (generations to the threshold read from the "
            "runs; every cost from `esbench bench projection`):",
            "",
            "| algorithm | environment | cluster | workers | measured s | predicted s |",
            "|---|---|---|---|---|---|",
        ]
        for r in local.itertuples():
            cells = [str(r.algo), str(r.env_id), str(r.cluster), str(r.workers)]
            lines.append("| " + " | ".join(cells) + f" | {r.measured_s:.1f} | {r.predicted_s:.1f} |")
    lines += ["", "Assumptions (esbench/analysis/projection.py): " + ASSUMPTIONS]
    return "\n".join(lines) + "\n"


#: The model's assumptions in one paragraph, printed beside its numbers.
ASSUMPTIONS = (
    "one core per worker and one task per worker each generation (the sub-master design: one per 18 workers, "
    "its fan-out assumed free); the master's time linear in episodes "
    "per generation; master and scheduler handle tasks one after another at their measured CPU cost per "
    "task and bytes per second (loopback), with no queueing collapse at thousands of workers; rollouts "
    "divide evenly (no stragglers), and workers beyond the cores add nothing; results and evaluations "
    "left out. Paper scale: 10,000 episodes per generation (the paper's batch) of a mean 500 steps "
    "(assumed), generations calibrated from the paper's 18-core point; the 1,440-core point is predicted."
)
