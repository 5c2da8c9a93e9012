"""Write synthetic runs in the results-store layout for the report tests (no training).

Each run gets the files of :mod:`esbench.tracking.schema`: ``config.yaml`` (the config keys the
report reads), ``metrics.csv`` (exactly ``METRIC_COLUMNS``), ``env.json`` and, when complete,
``summary.json``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from omegaconf import OmegaConf

from esbench.analysis.claims.plan import plan_of_recipe
from esbench.tracking.schema import (
    CONFIG_FILE,
    ENV_FILE,
    METRIC_COLUMNS,
    METRICS_FILE,
    PLAN_FILE,
    SNAPSHOTS_FILE,
    SUMMARY_FILE,
    empty_row,
)
from esbench.training.ruler import write_snapshots
from esbench.utils.layout import ParamLayout

DEFAULT_ENV_INFO: dict[str, Any] = {
    "packages": {"numpy": "2.0.0", "gymnasium": "1.0.0"},
    "git_commit": "0123456789abcdef0123456789abcdef01234567",
    "git_dirty": False,
    "cpu_count": 2,
    "host": "testhost",
    "platform": "Linux-x86_64",
    "python": "3.11.0",
}


def _record_plan(run_dir: Path, experiment: str) -> None:
    """The plan record ``esbench reproduce`` writes: the run made under its recipe's current claims
    (the empty plan for an experiment that is no recipe), so its report decides."""
    (run_dir / PLAN_FILE).write_text(json.dumps(plan_of_recipe(experiment).record()))


def write_run(
    root: str | Path,
    experiment: str,
    algo: str,
    env_id: str,
    seed: int,
    timesteps: Sequence[float],
    eval_returns: Sequence[float],
    *,
    env_name: str | None = None,
    env_kind: str = "mujoco",
    frame_skip: int = 4,
    workers: int = 1,
    scale: str = "smoke",
    wall_clock_s: Sequence[float] | None = None,
    complete: bool = True,
    env_info: dict[str, Any] | None = None,
    stopped_at_return: bool = False,
    population: int | None = None,
) -> Path:
    """Write one synthetic run under ``root/experiment/<run_id>/``.

    Args:
        root: Results store root.
        experiment: Experiment name.
        algo: ``algo.name``.
        env_id: ``env.id``.
        seed: Run seed.
        timesteps: Cumulative timesteps at each evaluation, shape (n,).
        eval_returns: Evaluation return at each evaluation, shape (n,).
        env_name: ``env.name`` (default: env_id lower-cased without version).
        env_kind: ``env.kind``.
        frame_skip: ``env.frame_skip`` (Atari).
        workers: ``cluster.n_workers`` and the metric/summary ``workers``.
        scale: ``budget.scale``.
        wall_clock_s: Seconds at each evaluation (default: timesteps / 1000 / workers).
        complete: Write ``summary.json``.
        env_info: ``env.json`` content (default :data:`DEFAULT_ENV_INFO`).
        stopped_at_return: The run ended at its target score (``budget.stop_at_return``, set to
            its last evaluation return): marked so in the config and the summary.
        population: ``algo.population_size`` (None: not set); part of the run id when set.

    Returns:
        The run directory.
    """
    ts = np.asarray(timesteps, dtype=float)
    ys = np.asarray(eval_returns, dtype=float)
    wc = np.asarray(wall_clock_s, dtype=float) if wall_clock_s is not None else ts / 1000.0 / workers + 0.5
    name = env_name or env_id.split("/")[-1].split("-")[0].lower()
    run_id = f"{algo}-{name}-fs{frame_skip}-w{workers}-s{seed}" + (f"-p{population}" if population else "")
    run_dir = Path(root) / experiment / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    cfg = {
        "algo": {"name": algo, **({"population_size": population} if population else {})},
        "env": {"id": env_id, "name": name, "kind": env_kind, "frame_skip": frame_skip, "game": None},
        "budget": {
            "scale": scale,
            "timesteps": int(ts[-1]),
            "stop_at_return": float(ys[-1]) if stopped_at_return else None,
        },
        "cluster": {"n_workers": workers},
        "seed": seed,
        "experiment": experiment,
        "run_id": run_id,
    }
    OmegaConf.save(OmegaConf.create(cfg), run_dir / CONFIG_FILE)
    fs = frame_skip if env_kind == "atari" else 1
    rows = []
    for i, (t, y, w) in enumerate(zip(ts, ys, wc, strict=True)):
        row = empty_row()
        row.update(
            generation=i,
            timesteps=t,
            frames=t * fs,
            episodes=i + 1,
            wall_clock_s=w,
            cpu_s=w * workers,
            train_return_mean=y,
            train_return_max=y,
            eval_return_mean=y,
            eval_return_std=0.0,
            eval_timesteps=(i + 1) * 100,
            steps_per_s=t / w if w > 0 else np.nan,
            workers=workers,
            train_task=env_id,
            eval_task=env_id,
            nonfinite_members=0,
        )
        rows.append(row)
        if i + 1 < len(ts):  # a training-only step between evaluations (eval columns NaN)
            mid = empty_row()
            mid.update(generation=i + 0.5, timesteps=(t + ts[i + 1]) / 2, workers=workers)
            rows.append(mid)
    pd.DataFrame(rows, columns=list(METRIC_COLUMNS)).to_csv(run_dir / METRICS_FILE, index=False)
    (run_dir / ENV_FILE).write_text(json.dumps(env_info or DEFAULT_ENV_INFO, indent=2))
    if complete:
        summary = {
            "status": "complete",
            "run_id": run_id,
            "experiment": experiment,
            "algo": algo,
            "env_id": env_id,
            "seed": seed,
            "scale": scale,
            "final_eval_return": float(ys[-1]),
            "best_eval_return": float(ys.max()),
            "total_timesteps": int(ts[-1]),
            "total_frames": int(ts[-1] * fs),
            "total_episodes": len(ts),
            "wall_clock_s": float(wc[-1]),
            "cpu_s": float(wc[-1] * workers),
            "steps_per_s": float(ts[-1] / wc[-1]),
            "workers": workers,
            "params_sha256": "0" * 64,
            "stop_at_return": float(ys[-1]) if stopped_at_return else None,
            "stopped_at_return": stopped_at_return,
        }
        (run_dir / SUMMARY_FILE).write_text(json.dumps(summary, indent=2))
        _record_plan(run_dir, experiment)
    return run_dir


def write_sequence_run(
    root: str | Path,
    experiment: str,
    algo: str,
    sequence: str,
    seed: int,
    stages: Sequence[str],
    points: Sequence[tuple[float, str, dict[str, float]]],
    *,
    only_stage: int | None = None,
    stage_timesteps: Sequence[int] | None = None,
    env_id: str = "HalfCheetah-v5",
    snapshots: np.ndarray | None = None,
    layout: ParamLayout | None = None,
    scale: str = "smoke",
    workers: int = 1,
    complete: bool = True,
    env_info: dict[str, Any] | None = None,
) -> Path:
    """Write one synthetic sequence run (or single-stage reference run) under ``root/experiment/``.

    Follows the data model of :mod:`esbench.analysis.retention`: ``config.yaml`` carries
    ``sequence.name``, ``sequence.stages`` (name, timesteps, env) and ``sequence.only_stage``;
    ``metrics.csv`` holds one row per (evaluation point, evaluated stage), ``train_task`` the
    stage trained and ``eval_task`` the stage evaluated (stage names), with a training-only row
    (eval columns empty) between evaluation points; ``snapshots.npz`` holds the stage-boundary
    parameters (``params`` of shape (K + 1, n_params), ``boundaries``, ``stages``, the layout).

    Args:
        root: Results store root.
        experiment: Experiment name.
        algo: ``algo.name``.
        sequence: ``sequence.name``.
        seed: Run seed.
        stages: Stage names in training order (all of the sequence's, also for a reference run).
        points: Evaluation points in order: (cumulative timesteps, stage trained, {stage evaluated:
            eval return}).
        only_stage: ``sequence.only_stage`` (a reference run), None for the sequence run.
        stage_timesteps: Each stage's budget (default: 100 each).
        env_id: ``env.id`` (stage 0's env).
        snapshots: Shape (K + 1, n_params), written to ``snapshots.npz`` by
            :func:`esbench.training.ruler.write_snapshots`; None: no file.
        layout: The vector's layer blocks, stored with the snapshots.
        scale: ``budget.scale``.
        workers: ``cluster.n_workers``.
        complete: Write ``summary.json``.
        env_info: ``env.json`` content (default :data:`DEFAULT_ENV_INFO`).

    Returns:
        The run directory.
    """
    budgets = list(stage_timesteps or [100] * len(stages))
    name = env_id.split("/")[-1].split("-")[0].lower()
    tag = "seq" if only_stage is None else f"only{only_stage}"
    run_id = f"{algo}-{sequence}-{tag}-w{workers}-s{seed}"
    run_dir = Path(root) / experiment / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    cfg = {
        "algo": {"name": algo},
        "env": {"id": env_id, "name": name, "kind": "mujoco", "frame_skip": 4, "game": None},
        "budget": {"scale": scale, "timesteps": int(sum(budgets))},
        "cluster": {"n_workers": workers},
        "eval": {"episodes": 3},
        "sequence": {
            "name": sequence,
            "stages": [
                {"name": s, "timesteps": int(b), "env": {}} for s, b in zip(stages, budgets, strict=True)
            ],
            "reset_optimizer": True,
            "reset_obs_norm": True,
            "stage_timesteps": None,
            "only_stage": only_stage,
        },
        "seed": seed,
        "experiment": experiment,
        "run_id": run_id,
    }
    OmegaConf.save(OmegaConf.create(cfg), run_dir / CONFIG_FILE)
    rows = []
    for n, (t, trained, evals) in enumerate(points):
        for stage, value in evals.items():
            row = empty_row()
            row.update(
                generation=n,
                timesteps=t,
                frames=t,
                episodes=n + 1,
                wall_clock_s=t / 1000.0 + 0.5,
                cpu_s=t / 1000.0 + 0.5,
                eval_return_mean=value,
                eval_return_std=0.0,
                eval_timesteps=(n + 1) * 100,
                workers=workers,
                train_task=trained,
                eval_task=stage,
                nonfinite_members=0,
            )
            rows.append(row)
        if n + 1 < len(points):
            mid = empty_row()
            mid.update(
                generation=n + 0.5,
                timesteps=(t + points[n + 1][0]) / 2,
                workers=workers,
                train_task=points[n + 1][1],
            )
            rows.append(mid)
    pd.DataFrame(rows, columns=list(METRIC_COLUMNS)).to_csv(run_dir / METRICS_FILE, index=False)
    (run_dir / ENV_FILE).write_text(json.dumps(env_info or DEFAULT_ENV_INFO, indent=2))
    if snapshots is not None:  # the real writer, so the report reads what a run writes
        ends = [max((t for t, trained, _ in points if trained == s), default=0.0) for s in stages]
        write_snapshots(
            run_dir / SNAPSHOTS_FILE, list(snapshots), list(stages), [int(t) for t in ends], layout=layout
        )
    if complete:
        last = points[-1]
        summary = {
            "status": "complete",
            "run_id": run_id,
            "experiment": experiment,
            "algo": algo,
            "env_id": env_id,
            "seed": seed,
            "scale": scale,
            "final_eval_return": float(next(iter(last[2].values()))),
            "best_eval_return": float(max(v for _, _, e in points for v in e.values())),
            "total_timesteps": int(last[0]),
            "total_frames": int(last[0]),
            "total_episodes": len(points),
            "wall_clock_s": last[0] / 1000.0 + 0.5,
            "cpu_s": last[0] / 1000.0 + 0.5,
            "steps_per_s": last[0] / (last[0] / 1000.0 + 0.5),
            "workers": workers,
            "params_sha256": "0" * 64,
        }
        (run_dir / SUMMARY_FILE).write_text(json.dumps(summary, indent=2))
        _record_plan(run_dir, experiment)
    return run_dir
