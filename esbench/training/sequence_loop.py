"""The sequence loop, written once for every learner: what follows a step, points, boundaries, the summary.

The loop that walks a run through the stages of its sequence exists once, so ES, RL and the
language-model learners cannot drift apart in what they measure. :mod:`esbench.training.ruler`
holds the pieces (the stage plan, the schedule, the rows, drift, the summary); this module holds
the order they are used in and the counters they update, :class:`SequenceProgress`; the walk from
stage to stage is :func:`esbench.training.loop.walk_stages`. A learner
(:class:`~esbench.training.learner.Learner`) keeps only what is its own: its step, handed to
:meth:`SequenceLoop.after_step` as a :class:`~esbench.training.learner.StepStats`; what an
evaluation point asks of its parameters; its checkpoint; what its state becomes when a stage begins.

:meth:`SequenceLoop.after_step` is the one code path after every step of every learner: add the
step's counters, decide whether the step ends the stage and whether a point is due, take it
(:meth:`SequenceLoop.evaluation_point`), bring the clock up to now, write the step's rows, and
checkpoint every ``checkpoint_every`` steps; it answers whether to go on.

The order, for every run (one stage without a sequence):

1. a point at timestep 0 (the untrained policy; :attr:`SequenceLoop.needs_first_point`);
2. training steps, with a point whenever the schedule says so;
3. a point at the end of every stage (:meth:`SequenceLoop.evaluation_point` with ``stage_end``:
   the stage's visited states are recorded first when a later stage follows, for the policy KL);
4. :meth:`SequenceLoop.end_stage`: the boundary ``T_k``, its wall-clock and the parameter snapshot
   the next stage starts from; the next stage, or the end of the run (after the last stage, or
   at the first point of the trained stage at or above ``budget.stop_at_return`` that a
   confirmation on fresh evaluation seeds also reaches: :class:`~esbench.training.ruler.Confirmation`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from esbench.measures.distribution import ActionDist
from esbench.tracking.stage_states import StageStates
from esbench.training.learner import Learner, Seeds, StepStats
from esbench.training.ruler import (
    Confirmation,
    Counters,
    Stage,
    StageEval,
    StagePlan,
    confirm_columns,
    drift_at_point,
    eval_due,
    next_eval_at,
    point_rows,
    stage_end_states,
    step_row,
    summary,
    target_reached,
)

__all__ = ["Clock", "PointResult", "RowSink", "SequenceLoop", "SequenceProgress"]


@dataclass
class SequenceProgress:
    """The counters and sequence state every run carries across steps and checkpoints.

    Each family's own progress (ES generation records, RL row indices and episode returns)
    subclasses this; a checkpoint holds the subclass (:mod:`esbench.utils.statefile` writes every
    field, inherited ones too).

    Attributes:
        timesteps, frames, episodes: Training counters, cumulative over the sequence.
        eval_timesteps: Environment steps spent evaluating (and recording stage states).
        cpu_s, wall_clock_s: Cumulative, over resumes too.
        next_eval_at: The timestep of the next scheduled point (:func:`~esbench.training.ruler.next_eval_at`).
        last_eval: (mean, std) of the trained stage at the last point.
        best_eval: The best of those means.
        points: Evaluation points so far.
        stopped_at_return: Ended at the first point at or above ``budget.stop_at_return`` whose
            confirmation reached it too.
        confirmations: Confirmations taken so far (each on its own fresh seeds:
            :meth:`~esbench.training.ruler.Confirmation.first`).
        resumed_from: Where the run resumed (ES: generations; RL: timesteps).
        stage: The stage being trained (an index into the plan).
        stage_start: The timesteps at which it started.
        boundaries: ``T_k`` of every ended stage.
        boundary_wall_clock_s: The wall-clock at which each ended.
        snapshots: The parameters at the start of every stage begun so far (and the final ones
            once the run is over).
        last_eval_by_stage: Every stage's last evaluation mean.
        stage_states: The states each ended stage's final policy visited there (policy KL).
        probes: A sequence's behavioural probe set per stage begun: the states the stage-start
            policy visited there and its distributions on them (:meth:`SequenceLoop.record_probe`).
        probe_ends: ``probe_ends[j][k]``: the distributions of the policy that ended stage j on
            probe set k (:meth:`SequenceLoop.end_probes`).
        obs_norms: The observation normalization at the end of every stage ended so far, by
            stage name (:class:`~esbench.training.init_policy.ObsNorm` as data), what a run started
            from this one at that boundary normalizes with (``obs_norm.npz``).
        base: What the run records of the policy it started from (``init.from_run``: the
            summary's ``init``), empty for a run from its own initialization.
        finished: The run is over (a resumed run that is over only writes its summary).
    """

    timesteps: int = 0
    frames: int = 0
    episodes: int = 0
    eval_timesteps: int = 0
    cpu_s: float = 0.0
    wall_clock_s: float = 0.0
    next_eval_at: int = 0
    last_eval: tuple[float, float] = (math.nan, math.nan)
    best_eval: float = -math.inf
    points: int = 0
    stopped_at_return: bool = False
    confirmations: int = 0
    resumed_from: list[int] = field(default_factory=list)
    stage: int = 0
    stage_start: int = 0
    boundaries: list[int] = field(default_factory=list)
    boundary_wall_clock_s: list[float] = field(default_factory=list)
    snapshots: list[np.ndarray] = field(default_factory=list)
    last_eval_by_stage: dict[str, float] = field(default_factory=dict)
    stage_states: list[StageStates] = field(default_factory=list)
    probes: list[StageStates] = field(default_factory=list)
    probe_ends: list[list[ActionDist]] = field(default_factory=list)
    obs_norms: dict[str, dict[str, Any]] = field(default_factory=dict)
    base: dict[str, Any] = field(default_factory=dict)
    finished: bool = False


@dataclass(frozen=True)
class PointResult:
    """An evaluation point: its index (0 at timestep 0), the parameters evaluated (read once, from
    :meth:`~esbench.training.learner.Learner.params`), every stage's evaluation, the drift
    columns for ``point_rows`` (with the confirmation's columns on the trained stage's), and the
    confirmation taken when the trained stage reached the target (None otherwise)."""

    index: int
    params: np.ndarray
    evals: list[StageEval]
    shared: dict[str, float]
    per_stage: dict[str, dict[str, float]]
    confirm: StageEval | None = None


#: Receives the rows of a step (one per evaluated stage at a point, one without) and the step's point.
RowSink = Callable[[list[dict[str, Any]], "PointResult | None"], None]

#: How a run's ``cpu_s`` is counted: ``counted``, the learner adds what it measures (ES: its
#: workers' CPU time, through :attr:`StepStats.cpu_s` and its evaluations); ``process``, this
#: process's CPU time (SB3 in its own process); ``wall``, the wall-clock (one process doing the work).
CpuClock = Literal["counted", "process", "wall"]


class Clock:
    """The run's ``wall_clock_s`` (and, as :data:`CpuClock` says, ``cpu_s``), cumulative over
    resumes: started from the progress's values when the loop is made."""

    def __init__(self, progress: SequenceProgress, cpu: CpuClock = "counted") -> None:
        self.p, self.cpu = progress, cpu
        self._t0, self._cpu0 = time.perf_counter(), time.process_time()
        self._wall_base, self._cpu_base = progress.wall_clock_s, progress.cpu_s

    def tick(self) -> None:
        """Bring the clock up to now."""
        self.p.wall_clock_s = self._wall_base + (time.perf_counter() - self._t0)
        if self.cpu == "process":
            self.p.cpu_s = self._cpu_base + (time.process_time() - self._cpu0)
        elif self.cpu == "wall":
            self.p.cpu_s = self.p.wall_clock_s


class SequenceLoop:
    """Walks one run through its stage plan, updating ``progress`` (see the module docstring).

    Args:
        plan: The run's stages (:func:`~esbench.training.ruler.stage_plan`).
        progress: Fresh (with ``snapshots`` holding the initial parameters) or from a checkpoint.
        interval: ``eval.interval_timesteps``.
        target: ``budget.stop_at_return`` (None: train every stage's whole budget).
        confirm: How a point that reaches ``target`` is confirmed before the run stops
            (:meth:`Confirmation.from_config`); required with a target, which seeds are fresh
            depending on the regular evaluation's episodes.
        also_stochastic: ``eval.also_stochastic``: at every point, also evaluate the stage trained
            with the policy acting stochastically (``eval_stochastic_return_mean``/``_std``).
        probes: Record behavioural probes in a sequence (:meth:`record_probe`); off for learners
            whose distributions are too large to keep per stage (a language model's vocabulary).
        emit: Receives the rows of every step (:data:`RowSink`); None: rows are not kept.
        cpu: How ``cpu_s`` is counted (:data:`CpuClock`).
        checkpoint_every: Checkpoint after every this many steps (by :attr:`StepStats.generation`)
            that do not end the stage; None: the learner's library times its checkpoints inside a
            stage (SB3 at a rollout's start, TRL at a point), as it alone can.
    """

    def __init__(
        self,
        plan: StagePlan,
        progress: SequenceProgress,
        interval: int,
        target: float | None,
        confirm: Confirmation | None = None,
        also_stochastic: bool = False,
        probes: bool = False,
        *,
        emit: RowSink | None = None,
        cpu: CpuClock = "counted",
        checkpoint_every: int | None = None,
    ) -> None:
        self.plan = plan
        self.p = progress
        self.interval = int(interval)
        self.emit = emit
        self.clock = Clock(progress, cpu)
        self.checkpoint_every = checkpoint_every
        self.workers = 1  # of the last step (a row's ``workers``)
        if target is not None and confirm is None:
            raise ValueError("a target (budget.stop_at_return) needs its Confirmation (from_config)")
        self.target = target
        self.probes = bool(probes) and len(plan.stages) > 1
        self.confirm = confirm or Confirmation()
        self.also_stochastic = bool(also_stochastic)

    @property
    def stage(self) -> Stage:
        """The stage being trained."""
        return self.plan.stages[self.p.stage]

    @property
    def needs_first_point(self) -> bool:
        """No point taken yet: the run starts with one at timestep 0."""
        return self.p.points == 0

    @property
    def running(self) -> bool:
        """Training steps remain (the run is not over and did not reach its target)."""
        return not (self.p.finished or self.p.stopped_at_return)

    def stage_done(self) -> bool:
        """Whether the trained stage's budget is spent (:meth:`Stage.done`)."""
        return self.stage.done(self.p.timesteps, self.p.stage_start)

    def point_due(self, stage_done: bool) -> bool:
        """Whether the training step just finished ends with an evaluation point."""
        return eval_due(self.p.timesteps, self.p.next_eval_at, stage_done)

    def after_step(self, learner: Learner, stats: StepStats) -> bool:
        """Everything that follows a training step of ``learner``; True to go on training the stage.

        Adds the step's counters; the step ends the stage when its budget is spent (or the learner
        says so: :attr:`StepStats.ends_stage`); takes a point when none was taken yet, when the
        schedule says so, or at the stage's end (a step that cannot end the stage takes no point
        once the budget is spent); brings the clock up to now; writes the step's rows (at a point,
        or :attr:`StepStats.row`); checkpoints every ``checkpoint_every`` steps that go on. The
        stage ends at its end, or when the trained stage reached the target. After the run
        stopped at its target a step does nothing.
        """
        p = self.p
        if not self.running:
            return False
        p.timesteps += int(stats.timesteps)
        p.frames += int(stats.frames)
        p.episodes += int(stats.episodes)
        p.cpu_s += float(stats.cpu_s)
        self.workers = int(stats.workers)
        done = self.stage_done() or stats.ends_stage is True
        if self.needs_first_point:
            due, end = True, done and stats.ends_stage is not False
        elif stats.ends_stage is False:
            due, end = not done and self.point_due(stage_done=False), False
        else:
            due, end = self.point_due(done), done
        point = self.evaluation_point(learner, stage_end=end) if due else None
        self.clock.tick()
        if point is not None or stats.row:
            generation = point.index if stats.generation is None and point is not None else stats.generation
            counters = self.counters(int(generation or 0))
            rows = self.rows(counters, point, stats.row_columns())
            if self.emit is not None:
                self.emit(rows, point)
        go_on = not (end or p.stopped_at_return)
        every = self.checkpoint_every
        if (
            go_on
            and every
            and stats.timesteps
            and stats.generation is not None
            and stats.generation % every == 0
        ):
            learner.checkpoint()  # a stage's end is checkpointed by the walk, after its boundary
        return go_on

    def counters(self, generation: int) -> Counters:
        """The ruler's counters now, for a row of step ``generation`` (or the summary)."""
        p = self.p
        return Counters(
            generation, p.timesteps, p.frames, p.episodes, p.wall_clock_s, p.cpu_s, p.eval_timesteps,
            self.workers,
        )  # fmt: skip

    def evaluation_point(self, learner: Learner, stage_end: bool = False) -> PointResult:
        """Evaluate every stage of the plan with the current parameters and update the counters.

        At a stage's end with a later stage to come, that stage's states are recorded first (its
        policy KL is then 0). When the trained stage reaches the target, the same parameters are
        confirmed on fresh seeds (:meth:`confirmation`); the run is marked stopped only when the
        confirmation reaches the target too.
        """
        p = self.p
        if stage_end:
            before = len(p.stage_states)
            p.stage_states = stage_end_states(self.plan, p.stage, learner.record_states, p.stage_states)
            p.eval_timesteps += sum(r.steps for r in p.stage_states[before:])
        params = learner.params()
        shared, per_stage = drift_at_point(params, p.snapshots[p.stage], p.stage_states, learner.distribution)
        evals = [learner.evaluate(j, Seeds()) for j in range(len(self.plan.stages))]
        for e in evals:
            p.eval_timesteps += e.steps
            p.last_eval_by_stage[e.stage] = e.mean
        own = evals[p.stage]
        p.last_eval = (own.mean, own.std)
        p.best_eval = max(p.best_eval, own.mean)
        p.next_eval_at = next_eval_at(p.timesteps, self.interval)
        if self.also_stochastic:
            own_cols = per_stage.get(own.stage, {})
            per_stage = {**per_stage, own.stage: {**own_cols, **self.stochastic(learner)}}
        confirm = None
        if not p.stopped_at_return and target_reached(self.target, own.mean):
            confirm = self.confirmation(learner)
            p.stopped_at_return = target_reached(self.target, confirm.mean)
            own_cols = per_stage.get(own.stage, {})
            per_stage = {**per_stage, own.stage: {**own_cols, **confirm_columns(confirm, self.target)}}
        p.points += 1
        return PointResult(p.points - 1, params, evals, shared, per_stage, confirm)

    def stochastic(self, learner: Learner) -> dict[str, float]:
        """The stage trained with the policy acting stochastically (``eval.also_stochastic``), as
        the columns of its row; its steps count as evaluation."""
        try:
            ev = learner.evaluate(self.p.stage, Seeds(stochastic=True))
        except NotImplementedError:
            raise TypeError(
                f"{type(learner).__name__} cannot evaluate stochastically: "
                "eval.also_stochastic=true needs a learner that can"
            ) from None
        self.p.eval_timesteps += ev.steps
        return {"eval_stochastic_return_mean": ev.mean, "eval_stochastic_return_std": ev.std}

    def confirmation(self, learner: Learner) -> StageEval:
        """Evaluate the trained stage on the next confirmation's fresh seeds
        (:class:`~esbench.training.ruler.Confirmation`), counting its steps as evaluation."""
        p = self.p
        first = self.confirm.first(p.confirmations)
        try:
            ev = learner.evaluate(p.stage, Seeds(first, self.confirm.episodes))
        except NotImplementedError:
            raise TypeError(
                f"{type(learner).__name__} cannot confirm a target: "
                "budget.stop_at_return needs a learner that evaluates on given seeds"
            ) from None
        p.confirmations += 1
        p.eval_timesteps += ev.steps
        return ev

    def record_probe(self, learner: Learner) -> None:
        """Record the trained stage's behavioural probe set with the policy it starts from (a
        sequence only; once per stage, so a resumed run keeps the one it has).

        The states are those :meth:`~esbench.training.learner.Learner.record_states` visits
        (the stage's first evaluation seeds, played deterministically); their steps count as
        evaluation steps. Nothing unless the loop was made with ``probes``.
        """
        p = self.p
        if not self.probes or len(p.probes) != p.stage:  # recorded, or a run from before probes
            return
        probe = learner.record_states()
        p.probes = [*p.probes, probe]
        p.eval_timesteps += probe.steps

    def end_probes(self, learner: Learner) -> None:
        """The distributions of the policy that ends the trained stage on every probe set so far
        (once per stage; nothing without a probe set for every stage so far, e.g. a run resumed
        from a checkpoint written before probes existed)."""
        p = self.p
        if len(p.probes) != p.stage + 1 or len(p.probe_ends) != p.stage:
            return
        p.probe_ends = [*p.probe_ends, [learner.distribution(r.states) for r in p.probes]]

    def rows(
        self, counters: Counters, point: PointResult | None, train: dict[str, Any]
    ) -> list[dict[str, Any]]:
        """The rows of a step: one per evaluated stage at a point, one without
        (:func:`~esbench.training.ruler.point_rows`, :func:`~esbench.training.ruler.step_row`)."""
        if point is None:
            return [step_row(counters, self.stage.name, train)]
        # A run that entered its plan at a later stage (init.from_run) starts with the point that
        # ends its base's stage: its rows name that stage as trained, as the base's own rows do.
        entered = point.index == 0 and self.p.stage > 0
        trained = self.plan.stages[self.p.stage - 1].name if entered else self.stage.name
        return point_rows(counters, trained, point.evals, train, point.shared, point.per_stage)

    def end_stage(self, params: np.ndarray) -> bool:
        """Close the trained stage at the current counters; True when a next stage begins.

        Records the boundary ``T_k`` and its wall-clock, and snapshots ``params``: the parameters
        the next stage starts from, or the final ones. The run is over after the last stage or
        once it reached its target.
        """
        p = self.p
        p.boundaries.append(p.timesteps)
        p.boundary_wall_clock_s.append(p.wall_clock_s)
        p.snapshots = [*p.snapshots, np.array(params, copy=True)]
        if p.stopped_at_return or p.stage + 1 >= len(self.plan.stages):
            p.finished = True
            return False
        p.stage += 1
        p.stage_start = p.timesteps
        return True

    def summary(self, counters: Counters, params: np.ndarray) -> dict[str, Any]:
        """The trainer's part of ``summary.json`` (:func:`~esbench.training.ruler.summary`)."""
        p = self.p
        return summary(
            plan=self.plan,
            final_eval=p.last_eval[0],
            best_eval=p.best_eval,
            counters=counters,
            params=params,
            target=self.target,
            stopped_at_return=p.stopped_at_return,
            resumed_from=p.resumed_from,
            boundaries=p.boundaries,
            stage_wall_clock_s=p.boundary_wall_clock_s,
            final_eval_by_stage=p.last_eval_by_stage,
        )
