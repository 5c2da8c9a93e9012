"""The ES training loop on the master: ask, evaluate on Dask, tell, log, checkpoint.

A run is a pure function of its config (DESIGN.md promise 1): the master's state after generation
g depends only on (config, g), whatever the number of workers or the order tasks finish in, and a
run resumed from its checkpoint continues exactly as if never stopped (wall-clock aside).

A run trains the stages of its sequence one after another (issue #14; one stage without a
sequence): the stage plan, evaluation schedule, rows, snapshots and summary are the ones every
algorithm uses (:mod:`esbench.tracking.ruler`); what is ES's own is a generation on stage k's
environment and an evaluation of the current state on stage j's (``evaluate_chunk``'s ``stage``).
A stage boundary is no generation: workers cannot replay it, so each gets one snapshot after it.
Drift (:mod:`esbench.tracking.drift`) is the master's own work: at the end of a stage with a later
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
from esbench.tracking.drift import DistributionFn, StageStates, record_stage_states, write_stage_states
from esbench.tracking.logger import MetricsLogger
from esbench.tracking.ruler import (
    Counters,
    StageEval,
    StagePlan,
    drift_at_point,
    eval_due,
    next_eval_at,
    point_rows,
    stage_end_states,
    stage_plan,
    step_row,
    summary,
    target_reached,
    write_snapshots,
)
from esbench.tracking.schema import SNAPSHOTS_FILE, STAGE_STATES_FILE
from esbench.tracking.store import RunStore

log = logging.getLogger(__name__)


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
    last_eval: tuple[float, float] = (math.nan, math.nan)  # the stage being trained, last point
    best_eval: float = -math.inf
    records: list[GenerationRecord] = field(default_factory=list)
    stopped_at_return: bool = False  # ended at the first evaluation >= budget.stop_at_return
    resumed_from: list[int] = field(default_factory=list)  # generations this run resumed at
    # The sequence (esbench.tracking.ruler): the stage being trained (index into the plan), the
    # timesteps at which it started, each ended stage's T_k and wall-clock, the parameters at the
    # start of every stage begun so far, the last evaluation of every stage, and whether the run
    # is over (a resumed run that is over only writes its summary).
    stage: int = 0
    stage_start: int = 0
    boundaries: list[int] = field(default_factory=list)
    boundary_wall_clock_s: list[float] = field(default_factory=list)
    snapshots: list[np.ndarray] = field(default_factory=list)
    last_eval_by_stage: dict[str, float] = field(default_factory=dict)
    # The states each ended stage's final policy visited there, for the policy KL (esbench.tracking.drift)
    stage_states: list[StageStates] = field(default_factory=list)
    points: int = 0  # evaluation points so far
    finished: bool = False


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

    Stage k starts from stage k-1's final parameters, with the optimizer state and the observation
    statistics reset or kept as ``sequence.reset_*`` say (:func:`begin_stage`); the generation
    counter runs on over the whole sequence, so every random stream stays distinct. Evaluation
    points, rows and the summary come from :mod:`esbench.tracking.ruler`, as for the RL baselines.
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

    target = stop_at_return(cfg)
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

        def distribution(at: TrainerState) -> DistributionFn:
            """The action distributions of the policy of ``at`` (its own observation statistics)."""

            def of(states: np.ndarray) -> ActionDist:
                _load_policy(master, at)
                return master.policy.action_distribution(states)

            return of

        def record_states() -> StageStates:
            """The states the current policy visits on the stage it trains (its evaluation seeds),
            played on the master: a function of the state alone, whatever the workers."""
            master.select_stage(prog.stage)
            _load_policy(master, state)
            return record_stage_states(
                plan.stages[prog.stage].name, master.eval_env, master.policy.act, distribution(state),
                int(cfg.eval.seed), int(cfg.eval.episodes),
            )  # fmt: skip

        def evaluation_point(stage_end: bool = False) -> tuple[list[StageEval], dict[str, Any]]:
            """Every stage of the plan evaluated at the current state, and the drift columns
            (``point_rows``' ``shared`` and ``per_stage``); the counters updated. At the end of a
            stage with a later one, that stage's states are recorded first (its KL is then 0)."""
            if stage_end:
                before = len(prog.stage_states)
                prog.stage_states = stage_end_states(plan, prog.stage, record_states, prog.stage_states)
                prog.eval_timesteps += sum(r.steps for r in prog.stage_states[before:])
            shared, per_stage = drift_at_point(
                state.es.params, prog.snapshots[prog.stage], prog.stage_states, distribution(state)
            )
            evals = []
            for j, stage in enumerate(plan.stages):
                (mean, std), steps, cpu = _evaluate(evaluate, state, prog, cfg, workers, j)
                prog.eval_timesteps += steps
                prog.cpu_s += cpu
                prog.last_eval_by_stage[stage.name] = mean
                evals.append(StageEval(stage.name, mean, std, steps))
            own = evals[prog.stage]
            prog.last_eval = (own.mean, own.std)
            prog.best_eval = max(prog.best_eval, own.mean)
            prog.next_eval_at = next_eval_at(prog.timesteps, interval)
            prog.points += 1
            return evals, {"shared": shared, "per_stage": per_stage}

        if not logger.rows:  # timestep 0: the untrained policy, so every curve starts at its init
            first, drift0 = evaluation_point()
            prog.stopped_at_return = target_reached(target, prog.last_eval[0])
            prog.wall_clock_s = wall0 + (time.perf_counter() - t0)
            extras = {
                "steps_per_s": 0.0,
                "nonfinite_members": 0,
                **evaluate.wire.take().row(),
                "param_norm": float(np.linalg.norm(state.es.params)),
            }
            for row in point_rows(counters(), plan.stages[0].name, first, extras, **drift0):
                logger.record_many(row)
                logger.dump()
            if prog.stopped_at_return:
                prog.boundaries.append(0)
                prog.boundary_wall_clock_s.append(prog.wall_clock_s)
                prog.finished = True
        while not (prog.finished or prog.stopped_at_return):
            stage = plan.stages[prog.stage]
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
            stage_done = stage.done(prog.timesteps, prog.stage_start) or (
                max_gens is not None and state.generation >= int(max_gens)
            )
            evals: list[StageEval] | None = None
            drift: dict[str, Any] = {}
            if eval_due(prog.timesteps, prog.next_eval_at, stage_done):
                evals, drift = evaluation_point(stage_end=stage_done)
                if target_reached(target, prog.last_eval[0]):
                    prog.stopped_at_return = stage_done = True
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
            rows = (
                point_rows(counters(), stage.name, evals, train, **drift)
                if evals is not None
                else [step_row(counters(), stage.name, train)]
            )
            for row in rows:
                logger.record_many(row)
                logger.dump()
            boundary = False
            if stage_done:
                prog.boundaries.append(prog.timesteps)
                prog.boundary_wall_clock_s.append(prog.wall_clock_s)
                if prog.stage + 1 < len(plan.stages) and not prog.stopped_at_return:
                    state = begin_stage(state, plan)
                    prog.stage += 1
                    prog.stage_start = prog.timesteps
                    prog.records = []  # the boundary is no generation: workers get a snapshot
                    prog.snapshots = [*prog.snapshots, state.es.params.copy()]
                    boundary = True
                else:
                    prog.finished = True
                    prog.snapshots = [*prog.snapshots, state.es.params.copy()]
                write_snapshots(snapshots_path, prog.snapshots, plan.names, prog.boundaries, layout)
                write_stage_states(states_path, prog.stage_states)
            if prog.finished or boundary or state.generation % int(cfg.checkpoint_every) == 0:
                ckpt = Checkpoint(state, prog, len(logger.rows), state_digest(state))
                store.save_checkpoint(ckpt, CHECKPOINT_TYPES)
        if len(prog.snapshots) == len(plan.stages):  # stopped at timestep 0: the final row
            prog.snapshots = [*prog.snapshots, state.es.params.copy()]
        write_snapshots(snapshots_path, prog.snapshots, plan.names, prog.boundaries, layout)

    return {
        **summary(
            plan=plan,
            final_eval=prog.last_eval[0],
            best_eval=prog.best_eval,
            counters=replace(counters(), workers=typical_workers(logger.rows, workers)),
            params=state.es.params,
            target=target,
            stopped_at_return=prog.stopped_at_return,
            resumed_from=prog.resumed_from,
            boundaries=prog.boundaries,
            stage_wall_clock_s=prog.boundary_wall_clock_s,
            final_eval_by_stage=prog.last_eval_by_stage,
        ),
        "generations": state.generation,
    }


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
