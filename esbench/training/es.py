"""The ES learner on the master: ask, evaluate on Dask, tell, log, checkpoint.

A run is a pure function of its config (DESIGN.md promise 1): the master's state after generation
g depends only on (config, g), whatever the number of workers or the order tasks finish in, and a
run resumed from its checkpoint continues exactly as if never stopped (wall-clock aside).

A run trains the stages of its sequence one after another (issue #14; one stage without a
sequence): the stage plan, evaluation schedule, rows, snapshots and summary are the ones every
algorithm uses (:mod:`esbench.training.ruler`), driven by :func:`esbench.training.loop.run_learner`
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
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from omegaconf import DictConfig

from esbench.measures.distribution import ActionDist
from esbench.policies.obs_norm import ObsStats
from esbench.runtime.cluster import dask_client, worker_count
from esbench.runtime.evaluator import MemberEvaluator, split_members
from esbench.runtime.replica import GenerationRecord, SyncMessage, TrainerState, advance, state_digest
from esbench.runtime.worker import ChunkResult, RunContext, RunSpec
from esbench.strategies.base import ESState, Population, begin_stage_anchor
from esbench.strategies.optimizers import OptState, init_opt_state
from esbench.tracking.logger import MetricsLogger
from esbench.tracking.schema import OBS_NORM_FILE, SNAPSHOTS_FILE, STAGE_STATES_FILE
from esbench.tracking.stage_states import StageStates, write_stage_states
from esbench.tracking.store import RunStore
from esbench.training.checkpoint import StateKind, resume_state, save_checkpoint
from esbench.training.drift import action_bounds, record_stage_states, write_probes
from esbench.training.init_policy import BasePolicy, ObsNorm, load_base, record_obs_norm, write_obs_norms
from esbench.training.learner import AfterStep, Seeds, StepStats
from esbench.training.loop import logged_rows, run_learner
from esbench.training.ruler import Stage, StageEval, StagePlan, stage_plan, write_snapshots
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

    The loop and its driver (:func:`~esbench.training.loop.run_learner`: evaluation points,
    boundaries, snapshots, checkpoints, resume, the summary) are :mod:`esbench.training`'s, as for
    every learner; what is ES's own is :class:`ESLearner`: the generation, the evaluation on the
    workers, and what a new stage starts from (:meth:`ESLearner.begin_stage`). The generation
    counter runs on over the whole sequence, so every random stream stays distinct.
    """
    plan = stage_plan(cfg)
    spec = RunSpec.from_config(cfg, run_key, tuple(s.env for s in plan.stages))
    master = RunContext(spec)  # the master's own env/policy/strategy (for init and tell)
    resumed = resume_state(store, logger, ES_STATE) if cfg.resume else None
    base = load_base(cfg) if resumed is None else None
    if resumed is not None:
        state, prog = resumed.trainer, resumed.progress
    else:
        state, prog = (master.initial_state() if base is None else start_from(master, base)), Progress()
    if resumed is not None:
        log.info("resuming %s from generation %d (stage %d)", store.run_id, state.generation, prog.stage)

    with dask_client(cfg.cluster, quiet=not cfg.tracker.console) as client:
        summary, learner = run_learner(
            cfg,
            prog,
            lambda loop: ESLearner(
                cfg, store, logger, loop, master, client, MemberEvaluator(client, spec), state
            ),
            resumed_at=state.generation if resumed is not None else None,
            emit=logged_rows(logger),
            on_boundary=ESLearner.write_boundary,
            base=base,
        )
    workers = typical_workers(logger.rows, learner.workers)
    return {**summary, "workers": workers, "generations": learner.state.generation}


class ESLearner:
    """The ES :class:`~esbench.training.learner.Learner`: generations evaluated on Dask workers.

    The state's deterministic policy is evaluated on the workers, and played on the master for the
    states drift records (so those numbers do not depend on the workers).

    Args:
        cfg: The run config.
        store: The run's results store (snapshots, stage states, checkpoints).
        logger: The run's metrics logger (its rows, counted in a checkpoint).
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
        self.send = evaluate
        self.state = state
        self.workers = worker_count(client)
        self.n_tasks_per = int(cfg.algo.tasks_per_worker)
        self.max_gens = cfg.budget.generations if not self.plan.is_sequence else None
        self.layout = master.policy.param_layout()
        # Generation records each sync message carries (algo.sync_history): a worker further behind
        # is sent a snapshot instead. Trimmed here too, for a run resumed with a shorter history.
        self.history = int(cfg.algo.sync_history)
        self.prog.records = self.prog.records[-self.history :]

    # --- a step -----------------------------------------------------------------------------------
    def train(self, after_step: AfterStep) -> None:
        """Generations until the stage is done (its budget, ``budget.generations`` without a
        sequence, or the target reached at a point)."""
        untrained = StepStats(
            columns=self._untrained_columns, generation=self.state.generation, workers=self.workers, row=False
        )
        if after_step(untrained):
            while after_step(self.step()):
                pass

    def _untrained_columns(self) -> dict[str, Any]:
        return {
            "steps_per_s": 0.0,
            "nonfinite_members": 0,
            **self.send.wire.take().row(),
            "param_norm": float(np.linalg.norm(self.state.es.params)),
        }

    def step(self) -> StepStats:
        """One generation: ask, evaluate on the workers, tell."""
        prog, cfg = self.prog, self.cfg
        g = self.state.generation
        self.workers = worker_count(self.client)  # read every generation: workers may come and go
        population = self.master.strategy.ask(self.state.es)
        msg = SyncMessage(g, state_digest(self.state), tuple(prog.records))
        chunks = split_members(len(population.offsets), max(self.workers, 1) * self.n_tasks_per)
        results = self.send(msg, chunks, "train", self.state, prog.stage)
        record, stats = merge_results(population, results, float(cfg.algo.reward_shift))
        self.state, tell_metrics = advance(self.master.strategy, self.state, record)
        prog.records = [*prog.records, record][-self.history :]
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
        }
        own_budget = self.max_gens is not None and self.state.generation >= int(self.max_gens)
        return StepStats(
            stats["timesteps"], stats["frames"], stats["episodes"], stats["cpu_s"],
            columns=lambda: {**train, **self.send.wire.take().row()},  # the generation's tasks, its point's
            generation=self.state.generation, workers=self.workers, ends_stage=True if own_budget else None,
        )  # fmt: skip

    def write_boundary(self) -> None:
        """Write the stage-boundary snapshots, the recorded stage states and the observation
        normalization each ended stage's policy acted with (the master writes)."""
        p = self.prog
        obs = self.state.obs  # the ended stage's: the next one has not begun
        clip = float(self.cfg.policy.obs_clip)
        norm = None if obs is None else ObsNorm(obs.mean, _raw_var(obs), obs.count, clip, obs.floor)
        record_obs_norm(p, self.plan.names, norm)
        write_obs_norms(self.store.path(OBS_NORM_FILE), p.obs_norms)
        write_snapshots(
            self.store.path(SNAPSHOTS_FILE), p.snapshots, self.plan.names, p.boundaries, self.layout
        )
        write_stage_states(self.store.path(STAGE_STATES_FILE), p.stage_states)
        bounds = action_bounds(self.master.eval_env.action_space)
        write_probes(self.store.dir, p.probes, p.probe_ends, stochastic=False, bounds=bounds)

    def begin_stage(self, stage: Stage) -> None:
        """Stage ``stage`` starts from the last one's parameters (:func:`begin_stage`: the
        optimizer state and observation statistics reset or kept as ``sequence.reset_*`` say).
        The boundary is no generation the workers could replay, so each gets a snapshot next."""
        self.state = begin_stage(self.state, self.plan)
        self.prog.records = []

    def checkpoint(self) -> None:
        """The trainer state and the counters, with the count of rows written."""
        save_checkpoint(self.store, ES_STATE, ESLearnerState(self.state, self.prog), len(self.logger.rows))

    # --- an evaluation point ----------------------------------------------------------------------
    def evaluate(self, j: int, seeds: Seeds) -> StageEval:
        """Stage ``j`` on the evaluation seeds ``eval.seed + first + k`` on the workers; their CPU
        time is the run's. Stochastic: Gaussian action noise of ``algo.action_noise_std``
        (:func:`evaluate_chunk`'s ``eval_stochastic``)."""
        first = int(seeds.first)
        episodes = int(self.cfg.eval.episodes if seeds.episodes is None else seeds.episodes)
        members = list(range(first, first + episodes))
        mode = "eval_stochastic" if seeds.stochastic else "eval"
        (mean, std), steps, cpu = _evaluate(self.send, self.state, self.prog, members, self.workers, j, mode)
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


def _raw_var(obs: ObsStats) -> np.ndarray:
    """The statistics' variance before their floor."""
    return np.asarray(obs.sumsq / obs.count - np.square(obs.mean), np.float64)


def start_from(master: RunContext, base: BasePolicy) -> TrainerState:
    """Generation 0 from a given policy (``init.from_run``): the strategy initialized at the base's
    MLP parameters (every ES variant's ``init``), the observation statistics its normalization's
    (:meth:`ObsNorm.std` equal to the base's std), or the prior without one."""
    obs = None
    if base.obs is not None:
        n, count = base.obs, float(base.obs.count)
        var = n.var + n.eps  # the std's floor is the base's: max(var + eps, floor) as it normalized
        obs = ObsStats(n.mean * count, (var + np.square(n.mean)) * count, count, max(n.floor, n.eps))
    elif master.policy.uses_obs_norm:
        obs = ObsStats.zeros(int(master.policy.obs_dim))  # type: ignore[attr-defined]
    return TrainerState(es=master.strategy.init(np.array(base.actor, np.float32)), obs=obs)


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
