"""Run one config end to end: results store, trackers, the algorithm's trainer, the summary.

This is the body every entry point shares (``esbench run``, each Hydra multirun job, each job the
Dask launcher starts). It is safe to fail: the W&B run is always finished and a failed run leaves
its checkpoint for the next attempt. A complete run with the same id is skipped, so re-running a
sweep recomputes nothing.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from esbench.config.registry import get_algorithm
from esbench.config.schema import stop_at_return
from esbench.envs import resolved_env_id
from esbench.tracking.console import ConsoleProgress
from esbench.tracking.logger import MetricsLogger, Writer
from esbench.tracking.store import RunStore
from esbench.tracking.wandb_writer import WandbWriter
from esbench.training import init_policy as _init_policy  # noqa: F401 - registers its config check
from esbench.training.ruler import recorded_pretraining, stage_plan

log = logging.getLogger(__name__)

Trainer = Callable[[DictConfig, RunStore, MetricsLogger, str], dict[str, Any]]

# Keys that change where or how fast a run executes, never its numbers: left out of the run id
# (dotted for nested keys). How ES splits a generation into tasks and batches, and how many
# generation records its sync messages carry, are among them: the determinism tests hold the
# numbers equal across workers, lockstep batch sizes and sync histories.
NON_SEMANTIC_KEYS = (
    "cluster",
    "tracker",
    "results_dir",
    "run_id",
    "resume",
    "experiment",
    "checkpoint_every",
    "torch_threads",
    "algo.tasks_per_worker",
    "algo.rollout_batch",
    "algo.sync_history",
)


def load_components() -> None:
    """Import what registers into the bottom layer: every ES strategy and RL baseline (the
    algorithm registry), and the environments (their config checks and resolvers). Every entry
    point calls this before composing a config (idempotent and cheap after the first call)."""
    import esbench.baselines.registry
    import esbench.envs
    import esbench.policies
    import esbench.strategies  # noqa: F401 - imports every variant module


def trainer_for(algo: str, env_kind: str | None = None) -> Trainer:
    """The training function of ``algo``: its registry entry's ``trainer`` when it names one, else
    on ``env.kind=lm`` the language-model ES learner, else its family's (the ES learner on Dask,
    or an SB3 baseline task); each walks the loop of :mod:`esbench.training`."""
    load_components()
    spec = get_algorithm(algo)
    if spec.trainer is not None:
        import importlib

        module, _, attr = spec.trainer.partition(":")
        trainer: Trainer = getattr(importlib.import_module(module), attr)
        return trainer
    if env_kind == "lm":
        from esbench.training.lm import train_lm

        return train_lm
    if spec.family == "es":
        from esbench.training.es import train_es

        return train_es
    from esbench.training.sb3 import train_baseline

    return train_baseline


def config_hash(cfg: DictConfig) -> str:
    """sha256 of the config's semantic part (what determines the numbers)."""
    data = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(data, dict)
    if data.get("lm", 0) is None:  # the LM block, unset off env=lm: hashes as before it existed
        del data["lm"]
    budget = data.get("budget")
    if isinstance(budget, dict) and stop_at_return(cfg) is None:
        budget.pop("confirm_episodes", None)  # inert without a target: hashes as before it existed
    init = data.get("init")
    if isinstance(init, dict) and init.get("from_run") is None and init.get("params") is None:
        del data["init"]  # no given starting policy: hashes as before it existed
    env = data.get("env")
    if isinstance(env, dict) and env.get("eval_max_episode_frames", 0) is None:
        del env["eval_max_episode_frames"]  # unset: hashes as before it existed
    evaluation = data.get("eval")
    if isinstance(evaluation, dict) and not evaluation.get("also_stochastic", False):
        evaluation.pop("also_stochastic", None)  # off: hashes as before it existed
    for key in NON_SEMANTIC_KEYS:
        *parents, leaf = key.split(".")
        node: Any = data
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(leaf, None)
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


def default_run_id(cfg: DictConfig) -> str:
    """``<algo>-<env>-s<seed>-<hash8>``: readable, and stable for the same config."""
    env = re.sub(r"[^A-Za-z0-9]+", "-", resolved_env_id(cfg.env)).strip("-").lower()
    return f"{cfg.algo.name}-{env}-s{cfg.seed}-{config_hash(cfg)[:8]}"


@dataclass
class RunOutcome:
    """What a run call did."""

    run_dir: Path
    status: str  # "complete" | "skipped"
    summary: dict[str, Any]


def run(cfg: DictConfig) -> RunOutcome:
    """Execute (or resume, or skip) the run ``cfg`` describes, holding its run directory's lock
    throughout: a second process on the same run raises
    :class:`~esbench.tracking.store.RunLockedError` before it touches anything but the lock file."""
    store = run_store(cfg)
    with store.lock():
        return _run_locked(cfg, store, store.run_id)


def run_store(cfg: DictConfig) -> RunStore:
    """The run directory of ``cfg``: ``<results_dir>/<experiment>/<run id>``."""
    return RunStore(cfg.results_dir, cfg.experiment, cfg.run_id or default_run_id(cfg))


def _run_locked(cfg: DictConfig, store: RunStore, run_id: str) -> RunOutcome:
    """The body of :func:`run`, with the run directory locked."""
    if store.is_complete and cfg.resume:
        print(f"esbench: run {run_id} is already complete: {store.dir}", flush=True)
        return RunOutcome(store.dir, "skipped", store.read_summary())
    if not cfg.resume:
        store.clear()
    trainer = trainer_for(str(cfg.algo.name), str(cfg.env.kind))
    store.write_config(cfg)
    store.write_env_record(workers=0)
    env_id = resolved_env_id(cfg.env)
    writers: list[Writer] = []
    console = None
    if cfg.tracker.console:
        plan = stage_plan(cfg)
        label = env_id if not plan.is_sequence else f"{env_id} sequence={plan.sequence}"
        total = plan.total_timesteps + recorded_pretraining(cfg, plan)
        console = ConsoleProgress(total, f"{cfg.algo.name} {label} s{cfg.seed}")
        writers.append(console)
    wandb_writer = None
    if cfg.tracker.wandb and cfg.tracker.mode != "disabled":
        tags = [env_id, str(cfg.budget.scale), f"seed{cfg.seed}", *cfg.tracker.tags]
        if cfg.env.kind == "atari":
            tags.append(f"frameskip{cfg.env.frame_skip}")
        wandb_writer = WandbWriter(
            mode=cfg.tracker.mode,
            project=cfg.tracker.project,
            entity=cfg.tracker.entity,
            run_dir=store.dir,
            run_id=run_id,
            group=cfg.experiment,
            job_type=cfg.algo.name,
            tags=tags,
            config=OmegaConf.to_container(cfg, resolve=True),  # type: ignore[arg-type]
            init_timeout_s=float(cfg.tracker.init_timeout_s),
            finish_timeout_s=float(cfg.tracker.finish_timeout_s),
            http_timeout_s=float(cfg.tracker.http_timeout_s),
            artifacts=bool(cfg.tracker.artifacts),
        )
        writers.append(wandb_writer)
    logger = MetricsLogger(store, writers)
    run_key = f"{run_id}:{config_hash(cfg)[:16]}"
    exit_code = 1
    try:
        summary = trainer(cfg, store, logger, run_key)
        summary.update(
            status="complete",
            run_id=run_id,
            experiment=cfg.experiment,
            algo=cfg.algo.name,
            env_id=env_id,
            seed=int(cfg.seed),
            scale=cfg.budget.scale,
        )
        store.write_env_record(workers=int(summary.get("workers", 0)))
        store.write_summary(summary)
        exit_code = 0
    finally:
        if console is not None:
            console.close()
        if wandb_writer is not None:
            wandb_writer.finish(summary if exit_code == 0 else None, exit_code=exit_code)
    print(
        f"esbench: run complete: {store.dir}  final eval return {summary['final_eval_return']:.2f}, "
        f"{summary['total_timesteps']:,} timesteps in {summary['wall_clock_s']:.1f} s",
        flush=True,
    )
    return RunOutcome(store.dir, "complete", summary)
