"""The ES learner on the master: ask, evaluate on Dask, tell, log, checkpoint.

A run is a pure function of its config (DESIGN.md promise 1): the master's state after generation
g depends only on (config, g), whatever the number of workers or the order tasks finish in, and a
run resumed from its checkpoint continues exactly as if never stopped (wall-clock aside).

A run trains the stages of its sequence one after another (issue #14; one stage without a
sequence): the stage plan, evaluation schedule, rows, snapshots and summary are the ones every
algorithm uses (:mod:`esbench.training.ruler`), walked by :func:`esbench.training.loop.walk_stages`
with checkpoints and resume as :mod:`esbench.training.checkpoint` says; what is ES's own
(:class:`ESLearner`) is a generation on stage k's
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
from esbench.measures.distribution import ActionDist
from esbench.policies.obs_norm import ObsStats
from esbench.runtime.cluster import dask_client, worker_count
from esbench.runtime.evaluator import MemberEvaluator, split_members
from esbench.runtime.replica import GenerationRecord, SyncMessage, TrainerState, advance, state_digest
from esbench.runtime.worker import ChunkResult, RunContext, RunSpec
from esbench.strategies.base import ESState, Population, begin_stage_anchor
from esbench.strategies.optimizers import OptState, init_opt_state
from esbench.tracking.logger import MetricsLogger
from esbench.tracking.schema import SNAPSHOTS_FILE, STAGE_STATES_FILE
from esbench.tracking.stage_states import StageStates, write_stage_states
from esbench.tracking.store import RunStore
from esbench.training.checkpoint import StateKind, resume_state, save_checkpoint
from esbench.training.drift import action_bounds, record_stage_states, write_probes
from esbench.training.loop import walk_stages
from esbench.training.ruler import (
    Confirmation,
    Counters,
    Stage,
    StageEval,
    StagePlan,
    stage_plan,
    write_snapshots,
)
from esbench.training.sequence_loop import SequenceLoop, SequenceProgress

log = logging.getLogger(__name__)


@dataclass
class Progress(SequenceProgress):
    """An ES run's counters (:class:`~esbench.training.sequence_loop.SequenceProgress`) and the
    generation records its sync messages carry (``algo.sync_history`` of them)."""

    records: list[GenerationRecord] = field(default_factory=list)


@dataclass
class ESLearnerState:
    """An ES run's checkpoint state (in the envelope of :mod:`esbench.training.checkpoint`): the
    trainer state and the counters. Its digest is the trainer state's (:func:`state_digest`)."""

    trainer: TrainerState
    progress: Progress


def _check_state(state: ESLearnerState) -> None:
    """A loaded ES state holds a trainer state (the envelope's check of the kind is the outer one)."""
    if not isinstance(state.trainer, TrainerState) or not isinstance(state.progress, Progress):
        raise ValueError("not an ES trainer state")


#: An ES checkpoint's state for the resume checks; its types are the whitelist its data-only state
#: file is written and read with (:mod:`esbench.utils.statefile`): a checkpoint naming any other
#: type is refused.
ES_STATE = StateKind(
    name="an ES",
    state_type=ESLearnerState,
    types=(
        ESLearnerState, Progress, TrainerState, ESState, OptState, ObsStats, GenerationRecord, Population,
        StageStates, ActionDist,
    ),
    digest=lambda s: state_digest(s.trainer),
    check=_check_state,
)  # fmt: skip
#: The whitelist of an ES checkpoint file (the envelope and :data:`ES_STATE`'s types).
CHECKPOINT_TYPES: tuple[type, ...] = ES_STATE.file_types


def train_es(cfg: DictConfig, store: RunStore, logger: MetricsLogger, run_key: str) -> dict[str, Any]:
    """Train OpenAI-ES (or any registered strategy) as ``cfg`` says, stage after stage of its
    sequence (one stage without one); returns the summary dict.

    The walk through the stages (evaluation points, boundaries, snapshots, checkpoints, resume,
    the summary) is :mod:`esbench.training`'s, as for the RL baselines; what is ES's own is
    :class:`ESLearner`: the generation, the evaluation on the workers, and what a new stage starts
    from (:meth:`ESLearner.on_stage_begin`). The generation counter runs on over the whole
    sequence, so every random stream stays distinct.
    """
    plan = stage_plan(cfg)
    spec = RunSpec.from_config(cfg, run_key, tuple(s.env for s in plan.stages))
    master = RunContext(spec)  # the master's own env/policy/strategy (for init and tell)
    interval = int(cfg.eval.interval_timesteps)

    resumed = resume_state(store, logger, ES_STATE) if cfg.resume else None
    if resumed is not None:
        state, prog = resumed.trainer, resumed.progress
        prog.resumed_from = [*prog.resumed_from, state.generation]
        log.info("resuming %s from generation %d (stage %d)", store.run_id, state.generation, prog.stage)
    else:
        state, prog = master.initial_state(), Progress(next_eval_at=interval)
        prog.snapshots = [state.es.params.copy()]
    loop = SequenceLoop(
        plan,
        prog,
        interval,
        stop_at_return(cfg),
        Confirmation.from_config(cfg),
        bool(cfg.eval.also_stochastic),
        probes=True,
    )

    with dask_client(cfg.cluster, quiet=not cfg.tracker.console) as client:
        learner = ESLearner(cfg, store, logger, loop, master, client, MemberEvaluator(client, spec), state)
        walk_stages(loop, learner)
        learner.on_stage_end()  # a resumed run that was over writes its snapshots again

    final = replace(learner.counters(), workers=typical_workers(logger.rows, learner.workers))
    return {**loop.summary(final, learner.state.es.params), "generations": learner.state.generation}


class ESLearner:
    """The ES :class:`~esbench.training.learner.Learner`: generations evaluated on Dask workers.

    The state's deterministic policy is evaluated on the workers, and played on the master for the
    states drift records (so those numbers do not depend on the workers).

    Args:
        cfg: The run config.
        store: The run's results store (snapshots, stage states, checkpoints).
        logger: The run's metrics logger (rows).
        loop: The run's sequence loop; its progress is a :class:`Progress`.
        master: The master's own env, policy and strategy (for ``tell`` and drift).
        client: The Dask client.
        evaluate: Sends a generation's (or an evaluation's) tasks to the workers.
        state: The trainer state to start from (fresh or resumed).
    """

    def __init__(
        self,
        cfg: DictConfig,
        store: RunStore,
        logger: MetricsLogger,
        loop: SequenceLoop,
        master: RunContext,
        client: Any,
        evaluate: MemberEvaluator,
        state: TrainerState,
    ) -> None:
        assert isinstance(loop.p, Progress)
        self.cfg = cfg
        self.store = store
        self.logger = logger
        self.loop = loop
        self.plan = loop.plan
        self.prog: Progress = loop.p
        self.master = master
        self.client = client
        self.evaluate = evaluate
        self.state = state
        self.workers = worker_count(client)
        self.n_tasks_per = int(cfg.algo.tasks_per_worker)
        self.max_gens = cfg.budget.generations if not self.plan.is_sequence else None
        self.layout = master.policy.param_layout()
        # Generation records each sync message carries (algo.sync_history): a worker further behind
        # is sent a snapshot instead. Trimmed here too, for a run resumed with a shorter history.
        self.history = int(cfg.algo.sync_history)
        self.prog.records = self.prog.records[-self.history :]
        self._t0 = time.perf_counter()
        self._wall0 = self.prog.wall_clock_s

    def counters(self) -> Counters:
        """The ruler's counters now."""
        p = self.prog
        return Counters(
            self.state.generation, p.timesteps, p.frames, p.episodes, p.wall_clock_s, p.cpu_s,
            p.eval_timesteps, self.workers,
        )  # fmt: skip

    def _clock(self) -> None:
        self.prog.wall_clock_s = self._wall0 + (time.perf_counter() - self._t0)

    def _log(self, rows: list[dict[str, Any]]) -> None:
        for row in rows:
            self.logger.record_many(row)
            self.logger.dump()

    # --- the walk ---------------------------------------------------------------------------------
    def first_point(self) -> None:
        """The point at timestep 0: the untrained policy, so every curve starts at its init."""
        first = self.loop.evaluation_point(self)
        self._clock()
        extras = {
            "steps_per_s": 0.0,
            "nonfinite_members": 0,
            **self.evaluate.wire.take().row(),
            "param_norm": float(np.linalg.norm(self.state.es.params)),
        }
        self._log(self.loop.rows(self.counters(), first, extras))

    def train_stage(self) -> None:
        """Generations until the stage is done (its budget, ``budget.generations`` without a
        sequence, or the target reached at a point)."""
        while not self._generation():
            pass

    def _generation(self) -> bool:
        """One generation: ask, evaluate on the workers, tell, a point when due, its rows, a
        checkpoint every ``checkpoint_every`` generations; True when it ended the stage."""
        loop, prog, cfg = self.loop, self.prog, self.cfg
        g = self.state.generation
        self.workers = worker_count(self.client)  # read every generation: workers may come and go
        population = self.master.strategy.ask(self.state.es)
        msg = SyncMessage(g, state_digest(self.state), tuple(prog.records))
        chunks = split_members(len(population.offsets), max(self.workers, 1) * self.n_tasks_per)
        results = self.evaluate(msg, chunks, "train", self.state, prog.stage)
        record, stats = merge_results(population, results, float(cfg.algo.reward_shift))
        self.state, tell_metrics = advance(self.master.strategy, self.state, record)
        prog.records = [*prog.records, record][-self.history :]
        prog.timesteps += stats["timesteps"]
        prog.frames += stats["frames"]
        prog.episodes += stats["episodes"]
        prog.cpu_s += stats["cpu_s"]
        stage_done = loop.stage_done() or (
            self.max_gens is not None and self.state.generation >= int(self.max_gens)
        )
        point = None
        if loop.point_due(stage_done):
            point = loop.evaluation_point(self, stage_end=stage_done)
            stage_done = stage_done or prog.stopped_at_return
        self._clock()
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
            **self.evaluate.wire.take().row(),  # this generation's tasks, evaluation included
        }
        self._log(loop.rows(self.counters(), point, train))
        if not stage_done and self.state.generation % int(cfg.checkpoint_every) == 0:
            self.checkpoint()  # a stage's end is checkpointed by the walk, after its boundary
        return stage_done

    def on_stage_end(self) -> None:
        """Write the stage-boundary snapshots and the recorded stage states (the master writes)."""
        p = self.prog
        write_snapshots(
            self.store.path(SNAPSHOTS_FILE), p.snapshots, self.plan.names, p.boundaries, self.layout
        )
        write_stage_states(self.store.path(STAGE_STATES_FILE), p.stage_states)
        bounds = action_bounds(self.master.eval_env.action_space)
        write_probes(self.store.dir, p.probes, p.probe_ends, stochastic=False, bounds=bounds)

    def on_stage_begin(self, stage: Stage) -> None:
        """Stage ``stage`` starts from the last one's parameters (:func:`begin_stage`: the
        optimizer state and observation statistics reset or kept as ``sequence.reset_*`` say).
        The boundary is no generation the workers could replay, so each gets a snapshot next."""
        self.state = begin_stage(self.state, self.plan)
        self.prog.records = []

    def checkpoint(self) -> None:
        """The trainer state and the counters, with the count of rows written."""
        save_checkpoint(self.store, ES_STATE, ESLearnerState(self.state, self.prog), len(self.logger.rows))

    # --- an evaluation point ----------------------------------------------------------------------
    def evaluate_stage(self, j: int) -> StageEval:
        """Stage ``j``'s fixed evaluation seeds on the workers; their CPU time is the run's."""
        return self.confirm_stage(j, 0, int(self.cfg.eval.episodes))

    def confirm_stage(self, j: int, first: int, episodes: int, mode: str = "eval") -> StageEval:
        """Stage ``j`` on the evaluation seeds ``eval.seed + first + k`` (``k < episodes``) on the
        workers (the regular evaluation: ``first`` 0); their CPU time is the run's. ``mode``
        ``eval_stochastic`` adds the training's action noise (:func:`evaluate_chunk`)."""
        members = list(range(int(first), int(first) + int(episodes)))
        (mean, std), steps, cpu = _evaluate(
            self.evaluate, self.state, self.prog, members, self.workers, j, mode
        )
        self.prog.cpu_s += cpu
        return StageEval(self.plan.stages[j].name, mean, std, steps)

    def evaluate_stochastic(self, j: int) -> StageEval:
        """Stage ``j``'s fixed evaluation seeds with Gaussian action noise of
        ``algo.action_noise_std`` (``eval.also_stochastic``)."""
        return self.confirm_stage(j, 0, int(self.cfg.eval.episodes), mode="eval_stochastic")

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
    return TrainerState(es=begin_stage_anchor(es), obs=obs)  # AWD: anchor at the stage's start


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
    episodes: list[int],
    workers: int,
    stage: int = 0,
    mode: str = "eval",
) -> tuple[tuple[float, float], int, float]:
    """The deterministic policy on stage ``stage``'s environment, episode ``k`` of ``episodes``
    reset with the evaluation seed ``eval.seed + k``: ((mean, std), steps, cpu seconds). The
    episodes are split in contiguous chunks, one per worker, and gathered in order, so the numbers
    do not depend on the number of workers."""
    msg = SyncMessage(state.generation, state_digest(state), tuple(prog.records))
    chunks = [[episodes[i] for i in c] for c in split_members(len(episodes), max(workers, 1))]
    results = evaluate(msg, chunks, mode, state, stage)
    returns = np.concatenate([r.returns[:, 0] for r in results])
    steps = int(sum(r.lengths.sum() for r in results))
    return (float(returns.mean()), float(returns.std())), steps, float(sum(r.cpu_s for r in results))
