"""The ES training loop on the master: ask, evaluate on Dask, tell, log, checkpoint.

A run is a pure function of its config (DESIGN.md promise 1): the master's state after generation
g depends only on (config, g), whatever the number of workers or the order tasks finish in, and a
run resumed from its checkpoint continues exactly as if never stopped (wall-clock aside).
"""

from __future__ import annotations

import logging
import math
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from omegaconf import DictConfig

from esbench.config.schema import stop_at_return
from esbench.policies.obs_norm import ObsStats
from esbench.runtime.cluster import dask_client, worker_count
from esbench.runtime.evaluator import MemberEvaluator, split_members
from esbench.runtime.replica import GenerationRecord, SyncMessage, TrainerState, advance, state_digest
from esbench.runtime.worker import ChunkResult, RunContext, RunSpec
from esbench.strategies.base import ESState, Population
from esbench.strategies.optimizers import OptState
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
    stopped_at_return: bool = False  # ended at the first evaluation >= budget.stop_at_return
    resumed_from: list[int] = field(default_factory=list)  # generations this run resumed at


@dataclass
class Checkpoint:
    """Everything needed to resume: the trainer state, the counters, the rows logged so far."""

    state: TrainerState
    progress: Progress
    rows: list[dict[str, Any]]
    digest: str


#: The dataclasses an ES checkpoint may hold: the whitelist its data-only state file is written and
#: read with (:mod:`esbench.utils.statefile`); a checkpoint naming any other type is refused.
CHECKPOINT_TYPES: tuple[type, ...] = (
    Checkpoint, Progress, TrainerState, ESState, OptState, ObsStats, GenerationRecord, Population
)  # fmt: skip


def train_es(cfg: DictConfig, store: RunStore, logger: MetricsLogger, run_key: str) -> dict[str, Any]:
    """Train OpenAI-ES (or any registered strategy) as ``cfg`` says; returns the summary dict."""
    spec = RunSpec.from_config(cfg, run_key)
    master = RunContext(spec)  # the master's own env/policy/strategy (for init and tell)
    strategy = master.strategy
    budget_steps = int(cfg.budget.timesteps)
    max_gens = cfg.budget.generations
    interval = int(cfg.eval.interval_timesteps)

    if cfg.resume and store.has_checkpoint:
        ckpt = store.load_checkpoint(CHECKPOINT_TYPES)
        if not isinstance(ckpt, Checkpoint) or not isinstance(ckpt.state, TrainerState):
            raise store.checkpoint_error("not an ES checkpoint")
        if state_digest(ckpt.state) != ckpt.digest:
            raise store.checkpoint_error("its state does not match its digest")
        state, prog = ckpt.state, ckpt.progress
        logger.rows = list(ckpt.rows)
        prog.resumed_from = [*prog.resumed_from, state.generation]
        log.info("resuming %s from generation %d", store.run_id, state.generation)
    else:
        state, prog = master.initial_state(), Progress(next_eval_at=interval)

    with dask_client(cfg.cluster, quiet=not cfg.tracker.console) as client:
        workers = worker_count(client)
        evaluate = MemberEvaluator(client, spec)
        n_tasks_per = int(cfg.algo.tasks_per_worker)
        t0 = time.perf_counter()
        wall0 = prog.wall_clock_s
        target = stop_at_return(cfg)
        if not logger.rows:  # timestep 0: the untrained policy, so every curve starts at its init
            _evaluate_into(prog, evaluate, state, cfg, workers, interval)
            prog.stopped_at_return = target is not None and prog.last_eval[0] >= target
            prog.wall_clock_s = wall0 + (time.perf_counter() - t0)
            logger.record_many(
                {
                    "generation": 0,
                    "timesteps": 0,
                    "frames": 0,
                    "episodes": 0,
                    "wall_clock_s": prog.wall_clock_s,
                    "cpu_s": prog.cpu_s,
                    "eval_return_mean": prog.last_eval[0],
                    "eval_return_std": prog.last_eval[1],
                    "eval_timesteps": prog.eval_timesteps,
                    "steps_per_s": 0.0,
                    "workers": workers,
                    "train_task": str(cfg.env.id),
                    "eval_task": str(cfg.env.id),
                    "nonfinite_members": 0,
                    **evaluate.wire.take().row(),
                    "param_norm": float(np.linalg.norm(state.es.params)),
                }
            )
            logger.dump()
        done = prog.stopped_at_return or _finished(prog, state, budget_steps, max_gens)
        while not done:
            g = state.generation
            workers = worker_count(client)  # read every generation: workers may come and go
            population = strategy.ask(state.es)
            msg = SyncMessage(g, state_digest(state), tuple(prog.records))
            chunks = split_members(len(population.offsets), max(workers, 1) * n_tasks_per)
            results = evaluate(msg, chunks, "train", state)
            record, stats = merge_results(population, results, float(cfg.algo.reward_shift))
            state, tell_metrics = advance(strategy, state, record)
            prog.records = [*prog.records, record][-SYNC_HISTORY:]
            prog.timesteps += stats["timesteps"]
            prog.frames += stats["frames"]
            prog.episodes += stats["episodes"]
            prog.cpu_s += stats["cpu_s"]
            done = _finished(prog, state, budget_steps, max_gens)
            evaluated = False
            if done or prog.timesteps >= prog.next_eval_at:
                _evaluate_into(prog, evaluate, state, cfg, workers, interval)
                evaluated = True
                if target is not None and prog.last_eval[0] >= target:
                    prog.stopped_at_return = done = True
            prog.wall_clock_s = wall0 + (time.perf_counter() - t0)
            if stats["nonfinite"]:
                log.warning(
                    "generation %d: %d population members returned NaN/inf and were excluded",
                    g,
                    stats["nonfinite"],
                )
            logger.record_many(
                {
                    "generation": state.generation,  # generations completed
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
                    **evaluate.wire.take().row(),  # this generation's tasks, evaluation included
                }
            )
            logger.dump()
            if done or state.generation % int(cfg.checkpoint_every) == 0:
                ckpt = Checkpoint(state, prog, list(logger.rows), state_digest(state))
                store.save_checkpoint(ckpt, CHECKPOINT_TYPES)

    return {
        "final_eval_return": prog.last_eval[0],
        "best_eval_return": prog.best_eval,
        "total_timesteps": prog.timesteps,
        "total_frames": prog.frames,
        "total_episodes": prog.episodes,
        "wall_clock_s": prog.wall_clock_s,
        "cpu_s": prog.cpu_s,
        "steps_per_s": prog.timesteps / max(prog.wall_clock_s, 1e-9),
        "workers": typical_workers(logger.rows, workers),
        "params_sha256": sha256_array(state.es.params),
        "generations": state.generation,
        "stop_at_return": target,
        "stopped_at_return": prog.stopped_at_return,
        "resumed_from": prog.resumed_from,
    }


def typical_workers(rows: list[dict[str, Any]], default: int) -> int:
    """The worker count most generations ran with (ties: the larger), ``default`` with no rows.

    The worker count is read every generation, so it changes when workers join or die; the
    summary names a run by the count it mostly had (a scaling condition), the rows keep each.
    """
    counts = Counter(int(r["workers"]) for r in rows if r.get("workers") is not None)
    return max(counts, key=lambda w: (counts[w], w)) if counts else default


def _finished(prog: Progress, state: TrainerState, budget_steps: int, max_gens: Any) -> bool:
    """Budget reached: timesteps, or generations when set."""
    return prog.timesteps >= budget_steps or (max_gens is not None and state.generation >= int(max_gens))


def merge_results(
    population: Any, results: list[ChunkResult], reward_shift: float = 0.0
) -> tuple[GenerationRecord, dict[str, Any]]:
    """Assemble chunk results in member order into a record and the generation's statistics.

    The record's fitness is ``return - reward_shift * length`` (what the strategy learns from);
    the statistics report the plain returns.
    """
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
    learned = fitness - reward_shift * lengths if reward_shift else fitness
    record = GenerationRecord(population=population, fitness=learned)
    if obs:
        order = sorted(obs)  # member order: the same sum whatever the chunking
        total = np.sum([obs[i][0] for i in order], axis=0)
        sumsq = np.sum([obs[i][1] for i in order], axis=0)
        count = float(sum(obs[i][2] for i in order))
        record = GenerationRecord(population, learned, total, sumsq, count)
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


def _evaluate_into(
    prog: Progress,
    evaluate: MemberEvaluator,
    state: TrainerState,
    cfg: DictConfig,
    workers: int,
    interval: int,
) -> None:
    """Evaluate ``state`` and update the counters: last and best evaluation, evaluation steps and
    CPU, the next evaluation point (the first interval multiple past the current timesteps)."""
    prog.last_eval, eval_steps, eval_cpu = _evaluate(evaluate, state, prog, cfg, workers)
    prog.eval_timesteps += eval_steps
    prog.cpu_s += eval_cpu
    prog.best_eval = max(prog.best_eval, prog.last_eval[0])
    while prog.next_eval_at <= prog.timesteps:
        prog.next_eval_at += interval


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
