"""The ES training loop on the master: ask, evaluate on Dask, tell, log, checkpoint.

A run is a pure function of its config (DESIGN.md promise 1): the master's state after generation
g depends only on (config, g), whatever the number of workers or the order tasks finish in, and a
run resumed from its checkpoint continues exactly as if never stopped (wall-clock aside).
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from omegaconf import DictConfig

from esbench.runtime.cluster import dask_client, worker_count
from esbench.runtime.evaluator import MemberEvaluator, split_members
from esbench.runtime.replica import GenerationRecord, SyncMessage, TrainerState, advance, state_digest
from esbench.runtime.worker import ChunkResult, RunContext, RunSpec
from esbench.tracking.logger import MetricsLogger
from esbench.tracking.store import RunStore
from esbench.utils.seeding import sha256_array

log = logging.getLogger(__name__)

SYNC_HISTORY = 4  # generation records sent with each task, for workers a little behind


@dataclass
class Progress:
    """Counters carried across generations and checkpoints."""

    timesteps: int = 0
    frames: int = 0
    episodes: int = 0
    eval_timesteps: int = 0
    cpu_s: float = 0.0
    wall_clock_s: float = 0.0
    next_eval_at: int = 0
    last_eval: tuple[float, float] = (math.nan, math.nan)
    best_eval: float = -math.inf
    records: list[GenerationRecord] = field(default_factory=list)


@dataclass
class Checkpoint:
    """Everything needed to resume: the trainer state, the counters, the rows logged so far."""

    state: TrainerState
    progress: Progress
    rows: list[dict[str, Any]]
    digest: str


def train_es(cfg: DictConfig, store: RunStore, logger: MetricsLogger, run_key: str) -> dict[str, Any]:
    """Train OpenAI-ES (or any registered strategy) as ``cfg`` says; returns the summary dict."""
    spec = RunSpec.from_config(cfg, run_key)
    master = RunContext(spec)  # the master's own env/policy/strategy (for init and tell)
    strategy = master.strategy
    budget_steps = int(cfg.budget.timesteps)
    max_gens = cfg.budget.generations
    interval = int(cfg.eval.interval_timesteps)

    if cfg.resume and store.has_checkpoint:
        ckpt: Checkpoint = store.load_checkpoint()
        if state_digest(ckpt.state) != ckpt.digest:
            raise RuntimeError(f"checkpoint in {store.dir} is corrupt (digest mismatch)")
        state, prog = ckpt.state, ckpt.progress
        logger.rows = list(ckpt.rows)
        log.info("resuming %s from generation %d", store.run_id, state.generation)
    else:
        state, prog = master.initial_state(), Progress(next_eval_at=interval)

    with dask_client(cfg.cluster, quiet=not cfg.tracker.console) as client:
        workers = worker_count(client)
        evaluate = MemberEvaluator(client, spec)
        n_tasks_per = int(cfg.algo.tasks_per_worker)
        t0 = time.perf_counter()
        wall0 = prog.wall_clock_s
        done = _finished(prog, state, budget_steps, max_gens)
        while not done:
            g = state.generation
            population = strategy.ask(state.es)
            msg = SyncMessage(g, state_digest(state), tuple(prog.records))
            chunks = split_members(len(population.offsets), max(workers, 1) * n_tasks_per)
            results = evaluate(msg, chunks, "train", state)
            record, stats = merge_results(population, results)
            state, tell_metrics = advance(strategy, state, record)
            prog.records = [*prog.records, record][-SYNC_HISTORY:]
            prog.timesteps += stats["timesteps"]
            prog.frames += stats["frames"]
            prog.episodes += stats["episodes"]
            prog.cpu_s += stats["cpu_s"]
            done = _finished(prog, state, budget_steps, max_gens)
            evaluated = False
            if done or prog.timesteps >= prog.next_eval_at:
                prog.last_eval, eval_steps, eval_cpu = _evaluate(evaluate, state, prog, cfg, workers)
                prog.eval_timesteps += eval_steps
                prog.cpu_s += eval_cpu
                prog.best_eval = max(prog.best_eval, prog.last_eval[0])
                while prog.next_eval_at <= prog.timesteps:
                    prog.next_eval_at += interval
                evaluated = True
            prog.wall_clock_s = wall0 + (time.perf_counter() - t0)
            if stats["nonfinite"]:
                log.warning(
                    "generation %d: %d population members returned NaN/inf and were excluded",
                    g,
                    stats["nonfinite"],
                )
            logger.record_many(
                {
                    "generation": g,
                    "timesteps": prog.timesteps,
                    "frames": prog.frames,
                    "episodes": prog.episodes,
                    "wall_clock_s": prog.wall_clock_s,
                    "cpu_s": prog.cpu_s,
                    "train_return_mean": stats["return_mean"],
                    "train_return_max": stats["return_max"],
                    "eval_return_mean": prog.last_eval[0] if evaluated else math.nan,
                    "eval_return_std": prog.last_eval[1] if evaluated else math.nan,
                    "eval_timesteps": prog.eval_timesteps,
                    "steps_per_s": prog.timesteps / max(prog.wall_clock_s, 1e-9),
                    "workers": workers,
                    "train_task": str(cfg.env.id),
                    "eval_task": str(cfg.env.id),
                    "nonfinite_members": tell_metrics["nonfinite_members"],
                    "grad_norm": tell_metrics.get("grad_norm", math.nan),
                    "param_norm": tell_metrics["param_norm"],
                    "es/update_ratio": tell_metrics.get("update_ratio", math.nan),
                }
            )
            logger.dump()
            if done or state.generation % int(cfg.checkpoint_every) == 0:
                store.save_checkpoint(Checkpoint(state, prog, list(logger.rows), state_digest(state)))

    return {
        "final_eval_return": prog.last_eval[0],
        "best_eval_return": prog.best_eval,
        "total_timesteps": prog.timesteps,
        "total_frames": prog.frames,
        "total_episodes": prog.episodes,
        "wall_clock_s": prog.wall_clock_s,
        "cpu_s": prog.cpu_s,
        "steps_per_s": prog.timesteps / max(prog.wall_clock_s, 1e-9),
        "workers": workers,
        "params_sha256": sha256_array(state.es.params),
        "generations": state.generation,
    }


def _finished(prog: Progress, state: TrainerState, budget_steps: int, max_gens: Any) -> bool:
    """Budget reached: timesteps, or generations when set."""
    return prog.timesteps >= budget_steps or (max_gens is not None and state.generation >= int(max_gens))


def merge_results(population: Any, results: list[ChunkResult]) -> tuple[GenerationRecord, dict[str, Any]]:
    """Assemble chunk results in member order into a record and the generation's statistics."""
    n, k = len(population.offsets), len(population.signs)
    fitness = np.full((n, k), np.nan)
    lengths = np.zeros((n, k))
    frames = np.zeros((n, k))
    obs: dict[int, tuple[np.ndarray, np.ndarray, float]] = {}
    for r in results:
        fitness[r.members] = r.returns
        lengths[r.members] = r.lengths
        frames[r.members] = r.frames
        obs.update(r.obs)
    finite = fitness[np.isfinite(fitness)]
    record = GenerationRecord(population=population, fitness=fitness)
    if obs:
        order = sorted(obs)  # member order: the same sum whatever the chunking
        total = np.sum([obs[i][0] for i in order], axis=0)
        sumsq = np.sum([obs[i][1] for i in order], axis=0)
        count = float(sum(obs[i][2] for i in order))
        record = GenerationRecord(population, fitness, total, sumsq, count)
    stats = {
        "timesteps": int(lengths.sum()),
        "frames": int(frames.sum()),
        "episodes": n * k,
        "cpu_s": float(sum(r.cpu_s for r in results)),
        "return_mean": float(finite.mean()) if finite.size else math.nan,
        "return_max": float(finite.max()) if finite.size else math.nan,
        "nonfinite": int((~np.isfinite(fitness)).sum()),
    }
    return record, stats


def _evaluate(
    evaluate: MemberEvaluator, state: TrainerState, prog: Progress, cfg: DictConfig, workers: int
) -> tuple[tuple[float, float], int, float]:
    """The deterministic policy on the fixed evaluation seeds: ((mean, std), steps, cpu seconds)."""
    msg = SyncMessage(state.generation, state_digest(state), tuple(prog.records))
    chunks = split_members(int(cfg.eval.episodes), max(workers, 1))
    results = evaluate(msg, chunks, "eval", state)
    returns = np.concatenate([r.returns[:, 0] for r in results])
    steps = int(sum(r.lengths.sum() for r in results))
    return (float(returns.mean()), float(returns.std())), steps, float(sum(r.cpu_s for r in results))
