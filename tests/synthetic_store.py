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

from esbench.tracking.schema import (
    CONFIG_FILE,
    ENV_FILE,
    METRIC_COLUMNS,
    METRICS_FILE,
    SUMMARY_FILE,
    empty_row,
)

DEFAULT_ENV_INFO: dict[str, Any] = {
    "packages": {"numpy": "2.0.0", "gymnasium": "1.0.0"},
    "git_commit": "0123456789abcdef0123456789abcdef01234567",
    "git_dirty": False,
    "cpu_count": 2,
    "host": "testhost",
    "platform": "Linux-x86_64",
    "python": "3.11.0",
}


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

    Returns:
        The run directory.
    """
    ts = np.asarray(timesteps, dtype=float)
    ys = np.asarray(eval_returns, dtype=float)
    wc = np.asarray(wall_clock_s, dtype=float) if wall_clock_s is not None else ts / 1000.0 / workers + 0.5
    name = env_name or env_id.split("/")[-1].split("-")[0].lower()
    run_id = f"{algo}-{name}-fs{frame_skip}-w{workers}-s{seed}"
    run_dir = Path(root) / experiment / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    cfg = {
        "algo": {"name": algo},
        "env": {"id": env_id, "name": name, "kind": env_kind, "frame_skip": frame_skip, "game": None},
        "budget": {"scale": scale, "timesteps": int(ts[-1])},
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
        }
        (run_dir / SUMMARY_FILE).write_text(json.dumps(summary, indent=2))
    return run_dir
