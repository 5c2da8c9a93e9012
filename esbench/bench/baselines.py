"""Training throughput of the RL baselines on one core (a benchmark, not a test).

``bench_baselines()`` trains TRPO, A2C and PPO (esbench's configs: zoo hyperparameters, 64x64 tanh
MLP, ``make_env``) for a short budget in this process with one torch thread and reports environment
steps per second of ``model.learn`` (no evaluation, no Dask). DESIGN.md quotes ~1.1k (TRPO),
~0.85k (PPO), ~0.77k (A2C) steps/s on HalfCheetah-v5 with one thread.
"""

from __future__ import annotations

import time
from typing import Any

import torch

from esbench.baselines.configs import resolve_hparams
from esbench.baselines.sb3 import build_model, make_training_env
from esbench.config.compose import compose_run_config
from esbench.envs.factory import resolved_env_id

ENV_GROUPS = {
    "HalfCheetah-v5": "halfcheetah",
    "Hopper-v5": "hopper",
    "InvertedPendulum-v5": "inverted_pendulum",
}


def bench_baselines(
    env_id: str = "HalfCheetah-v5",
    timesteps: int = 10_000,
    algos: tuple[str, ...] = ("trpo", "a2c", "ppo"),
    env_overrides: list[str] | None = None,
) -> list[dict[str, Any]]:
    """One row per algorithm: ``algo, env_id, timesteps, wall_s, cpu_s, steps_per_s, torch_threads``.

    Args:
        env_id: Gymnasium id (its conf/env group where esbench has one, for its wrappers).
        timesteps: Training budget of each measurement.
        algos: Algorithms to measure.
        env_overrides: Config overrides naming the environment instead of ``env_id`` (e.g.
            ``["env=atari", "env.game=Pong"]``).
    """
    group = ENV_GROUPS.get(env_id)
    env_args = env_overrides or [f"env={group}" if group else f"env.id={env_id}"]
    torch.set_num_threads(1)
    rows = []
    for algo in algos:
        cfg = compose_run_config([f"algo={algo}", *env_args, "tracker=none"])
        hp = resolve_hparams(cfg)
        venv = make_training_env(cfg, hp)
        model = build_model(cfg, hp, venv)
        t0, c0 = time.perf_counter(), time.process_time()
        model.learn(total_timesteps=timesteps)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        venv.close()
        rows.append(
            {
                "algo": algo,
                "env_id": resolved_env_id(cfg.env),
                "timesteps": int(model.num_timesteps),
                "wall_s": wall,
                "cpu_s": cpu,
                "steps_per_s": model.num_timesteps / wall,
                "torch_threads": 1,
            }
        )
    return rows
