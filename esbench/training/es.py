"""The ES training loop on the master: ask, evaluate on Dask, tell, log, checkpoint.

A run is a pure function of its config (DESIGN.md promise 1): the master's state after generation
g depends only on (config, g), whatever the number of workers or the order tasks finish in, and a
run resumed from its checkpoint continues exactly as if never stopped (wall-clock aside).

A run trains the stages of its sequence one after another (issue #14; one stage without a
sequence): the stage plan, evaluation schedule, rows, snapshots and summary are the ones every
algorithm uses (:mod:`esbench.training.ruler`); what is ES's own is a generation on stage k's
environment and an evaluation of the current state on stage j's (``evaluate_chunk``'s ``stage``).
A stage boundary is no generation: workers cannot replay it, so each gets one snapshot after it.
Drift (:mod:`esbench.training.drift`) is the master's own work: at the end of a stage with a later
one it replays the stage's first evaluation seeds with the stage's final policy to record the
states it visits (so the numbers do not depend on the workers), and at every point it computes the
current policy's action distributions on them (:meth:`Policy.action_distribution`).
"""

from __future__ import annotations

import logging
import math
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from omegaconf import DictConfig

from esbench.config.schema import stop_at_return
from esbench.policies.distribution import ActionDist
from esbench.policies.obs_norm import ObsStats
from esbench.runtime.cluster import dask_client, worker_count
from esbench.runtime.evaluator import MemberEvaluator, split_members
from esbench.runtime.replica import GenerationRecord, SyncMessage, TrainerState, advance, state_digest
from esbench.runtime.worker import ChunkResult, RunContext, RunSpec
from esbench.strategies.base import ESState, Population
from esbench.strategies.optimizers import OptState, init_opt_state
from esbench.tracking.logger import MetricsLogger
from esbench.tracking.schema import SNAPSHOTS_FILE, STAGE_STATES_FILE
from esbench.tracking.store import RunStore
from esbench.training.drift import StageStates, record_stage_states, write_stage_states
from esbench.training.ruler import Counters, StageEval, StagePlan, stage_plan, write_snapshots
from esbench.training.sequence_loop import SequenceLoop, SequenceProgress

log = logging.getLogger(__name__)


@dataclass
class Progress(SequenceProgress):
    """An ES run's counters (:class:`~esbench.training.sequence_loop.SequenceProgress`) and the
    generation records its sync messages carry (``algo.sync_history`` of them)."""

    records: list[GenerationRecord] = field(default_factory=list)


@dataclass
class Checkpoint:
    """Everything needed to resume: the trainer state, the counters, and how many rows of
    ``metrics.csv`` were written when it was taken (the rows stay in the file: a checkpoint's size
    does not grow with the run, and a resumed run cuts the file back to ``n_rows``)."""

    state: TrainerState
    progress: Progress
    n_rows: int
    digest: str


#: The dataclasses an ES checkpoint may hold: the whitelist its data-only state file is written and
#: read with (:mod:`esbench.utils.statefile`); a checkpoint naming any other type is refused.
CHECKPOINT_TYPES: tuple[type, ...] = (
    Checkpoint, Progress, TrainerState, ESState, OptState, ObsStats, GenerationRecord, Population,
    StageStates, ActionDist,
)  # fmt: skip


def train_es(cfg: DictConfig, store: RunStore, logger: MetricsLogger, run_key: str) -> dict[str, Any]:
    """Train OpenAI-ES (or any registered strategy) as ``cfg`` says, stage after stage of its
    sequence (one stage without one); returns the summary dict.

    The walk through the stages (evaluation points, boundaries, snapshots, the summary) is
    :class:`~esbench.training.sequence_loop.SequenceLoop`'s, as for the RL baselines; what is ES's
    own is the generation, the evaluation on the workers (:class:`_ESLearner`) and
    :func:`begin_stage`: stage k starts from stage k-1's final parameters, with the optimizer
    state and the observation statistics reset or kept as ``sequence.reset_*`` say. The
    generation counter runs on over the whole sequence, so every random stream stays distinct.
    """
    plan = stage_plan(cfg)
    spec = RunSpec.from_config(cfg, run_key, tuple(s.env for s in plan.stages))
    master = RunContext(spec)  # the master's own env/policy/strategy (for init and tell)
    strategy = master.strategy
    max_gens = cfg.budget.generations if not plan.is_sequence else None
    interval = int(cfg.eval.interval_timesteps)
    snapshots_path = store.path(SNAPSHOTS_FILE)
    states_path = store.path(STAGE_STATES_FILE)
    layout = master.policy.param_layout()

    if cfg.resume and store.has_checkpoint:
        ckpt = store.load_checkpoint(CHECKPOINT_TYPES)
        if not isinstance(ckpt, Checkpoint) or not isinstance(ckpt.state, TrainerState):
            raise store.checkpoint_error("not an ES checkpoint")
        if state_digest(ckpt.state) != ckpt.digest:
            raise store.checkpoint_error("its state does not match its digest")
        state, prog = ckpt.state, ckpt.progress
        logger.resume(ckpt.n_rows)
        prog.resumed_from = [*prog.resumed_from, state.generation]
        log.info("resuming %s from generation %d (stage %d)", store.run_id, state.generation, prog.stage)
    else:
        state, prog = master.initial_state(), Progress(next_eval_at=interval)
        prog.snapshots = [state.es.params.copy()]
    loop = SequenceLoop(plan, prog, interval, stop_at_return(cfg))

    with dask_client(cfg.cluster, quiet=not cfg.tracker.console) as client:
        workers = worker_count(client)
        evaluate = MemberEvaluator(client, spec)
        n_tasks_per = int(cfg.algo.tasks_per_worker)
        # Generation records each sync message carries (algo.sync_history): a worker further behind
        # is sent a snapshot instead. Trimmed here too, for a run resumed with a shorter history.
        history = int(cfg.algo.sync_history)
        prog.records = prog.records[-history:]
        t0 = time.perf_counter()
        wall0 = prog.wall_clock_s

        def counters() -> Counters:
            return Counters(
                state.generation, prog.timesteps, prog.frames, prog.episodes, prog.wall_clock_s,
                prog.cpu_s, prog.eval_timesteps, workers,
            )  # fmt: skip

        def learner() -> _ESLearner:
            return _ESLearner(master, evaluate, state, prog, plan, cfg, workers)

        if loop.needs_first_point:  # timestep 0: the untrained policy, so every curve starts at its init
            first = loop.evaluation_point(learner())
            prog.wall_clock_s = wall0 + (time.perf_counter() - t0)
            extras = {
                "steps_per_s": 0.0,
                "nonfinite_members": 0,
                **evaluate.wire.take().row(),
                "param_norm": float(np.linalg.norm(state.es.params)),
            }
            for row in loop.rows(counters(), first, extras):
                logger.record_many(row)
                logger.dump()
            if prog.stopped_at_return:
                loop.end_stage(state.es.params)
        while loop.running:
            g = state.generation
            workers = worker_count(client)  # read every generation: workers may come and go
            population = strategy.ask(state.es)
            msg = SyncMessage(g, state_digest(state), tuple(prog.records))
            chunks = split_members(len(population.offsets), max(workers, 1) * n_tasks_per)
            results = evaluate(msg, chunks, "train", state, prog.stage)
            record, stats = merge_results(population, results, float(cfg.algo.reward_shift))
            state, tell_metrics = advance(strategy, state, record)
            prog.records = [*prog.records, record][-history:]
            prog.timesteps += stats["timesteps"]
            prog.frames += stats["frames"]
            prog.episodes += stats["episodes"]
            prog.cpu_s += stats["cpu_s"]
            stage_done = loop.stage_done() or (max_gens is not None and state.generation >= int(max_gens))
            point = None
            if loop.point_due(stage_done):
                point = loop.evaluation_point(learner(), stage_end=stage_done)
                stage_done = stage_done or prog.stopped_at_return
            prog.wall_clock_s = wall0 + (time.perf_counter() - t0)
            if stats["nonfinite"]:
                log.warning(
                    "generation %d: %d population members returned NaN/inf and were excluded",
                    g,
                    stats["nonfinite"],
                )
            train = {
                "train_return_mean": stats["return_mean"],
                "train_return_max": stats["return_max"],
                "nonfinite_members": tell_metrics["nonfinite_members"],
                "grad_norm": tell_metrics.get("grad_norm", math.nan),
                "param_norm": tell_metrics["param_norm"],
                "es/update_ratio": tell_metrics.get("update_ratio", math.nan),
                **evaluate.wire.take().row(),  # this generation's tasks, evaluation included
            }
            for row in loop.rows(counters(), point, train):
                logger.record_many(row)
                logger.dump()
            boundary = False
            if stage_done:
                boundary = loop.end_stage(state.es.params)
                if boundary:
                    state = begin_stage(state, plan)
                    prog.records = []  # the boundary is no generation: workers get a snapshot
                write_snapshots(snapshots_path, prog.snapshots, plan.names, prog.boundaries, layout)
                write_stage_states(states_path, prog.stage_states)
            if prog.finished or boundary or state.generation % int(cfg.checkpoint_every) == 0:
                ckpt = Checkpoint(state, prog, len(logger.rows), state_digest(state))
                store.save_checkpoint(ckpt, CHECKPOINT_TYPES)
        write_snapshots(snapshots_path, prog.snapshots, plan.names, prog.boundaries, layout)

    final = replace(counters(), workers=typical_workers(logger.rows, workers))
    return {**loop.summary(final, state.es.params), "generations": state.generation}


@dataclass
class _ESLearner:
    """The ES side of an evaluation point (:class:`~esbench.training.sequence_loop.Learner`):
    the state's deterministic policy evaluated on the workers, and played on the master for the
    states drift records (so those numbers do not depend on the workers)."""

    master: RunContext
    evaluate: MemberEvaluator
    state: TrainerState
    prog: Progress
    plan: StagePlan
    cfg: DictConfig
    workers: int

    def evaluate_stage(self, j: int) -> StageEval:
        """Stage ``j``'s fixed evaluation seeds on the workers; their CPU time is the run's."""
        (mean, std), steps, cpu = _evaluate(self.evaluate, self.state, self.prog, self.cfg, self.workers, j)
        self.prog.cpu_s += cpu
        return StageEval(self.plan.stages[j].name, mean, std, steps)

    def distribution(self, states: np.ndarray) -> ActionDist:
        """The action distributions of the state's policy (its own observation statistics)."""
        _load_policy(self.master, self.state)
        return self.master.policy.action_distribution(states)

    def record_states(self) -> StageStates:
        """The states the state's policy visits on the stage it trains (its evaluation seeds)."""
        self.master.select_stage(self.prog.stage)
        _load_policy(self.master, self.state)
        return record_stage_states(
            self.plan.stages[self.prog.stage].name, self.master.eval_env, self.master.policy.act,
            self.distribution, int(self.cfg.eval.seed), int(self.cfg.eval.episodes),
        )  # fmt: skip

    def params(self) -> np.ndarray:
        """The state's parameters."""
        return self.state.es.params


def _load_policy(ctx: RunContext, state: TrainerState) -> None:
    """Set ``ctx.policy`` to ``state``'s parameters and observation statistics (as a worker does)."""
    ctx.policy.set_params(state.es.params)
    if state.obs is not None:
        ctx.policy.set_obs_stats(state.obs.mean, state.obs.std)


def begin_stage(state: TrainerState, plan: StagePlan) -> TrainerState:
    """The state stage k+1 starts from: stage k's parameters, generation counter and strategy
    arrays (``aux``: a search distribution's per-parameter sigma or covariance, part of where the
    search stands rather than of the optimizer), with the optimizer's moments reset when
    ``sequence.reset_optimizer`` and the observation statistics back to their prior when
    ``sequence.reset_obs_norm`` (both by default, as Continual World resets between tasks)."""
    es, obs = state.es, state.obs
    if plan.reset_optimizer:
        es = replace(es, opt=init_opt_state(int(es.params.shape[0])))
    if plan.reset_obs_norm and obs is not None:
        obs = ObsStats.zeros(int(obs.total.shape[0]))
    return TrainerState(es=es, obs=obs)


def typical_workers(rows: list[dict[str, Any]], default: int) -> int:
    """The worker count most generations ran with (ties: the larger), ``default`` with no rows.

    The worker count is read every generation, so it changes when workers join or die; the
    summary names a run by the count it mostly had (a scaling condition), the rows keep each.
    """
    counts = Counter(int(r["workers"]) for r in rows if r.get("workers") is not None)
    return max(counts, key=lambda w: (counts[w], w)) if counts else default


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


def _evaluate(
    evaluate: MemberEvaluator,
    state: TrainerState,
    prog: Progress,
    cfg: DictConfig,
    workers: int,
    stage: int = 0,
) -> tuple[tuple[float, float], int, float]:
    """The deterministic policy on the fixed evaluation seeds of stage ``stage``'s environment:
    ((mean, std), steps, cpu seconds)."""
    msg = SyncMessage(state.generation, state_digest(state), tuple(prog.records))
    chunks = split_members(int(cfg.eval.episodes), max(workers, 1))
    results = evaluate(msg, chunks, "eval", state, stage)
    returns = np.concatenate([r.returns[:, 0] for r in results])
    steps = int(sum(r.lengths.sum() for r in results))
    return (float(returns.mean()), float(returns.std())), steps, float(sum(r.cpu_s for r in results))
