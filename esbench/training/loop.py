"""The walk through the stages of a run, and the one driver every learner is run by.

For every run (one stage without a sequence), with ``loop`` the run's
:class:`~esbench.training.sequence_loop.SequenceLoop` and ``learner`` a
:class:`~esbench.training.learner.Learner`:

1. the stage's training (:meth:`Learner.train`): the learner hands every step to
   :meth:`SequenceLoop.after_step`, starting with the step with no counts, where the loop takes
   the point at timestep 0 (the untrained policy), unless the run resumed past it; the loop takes
   the points the schedule asks for and one at the stage's end, and answers False once the stage
   is done or the target reached;
2. the boundary (:meth:`SequenceLoop.end_stage`: ``T_k``, its wall-clock, the snapshot of the
   parameters), written out (``on_boundary``, where the driver writes results files);
3. either the end of the run (after the last stage, or once the target is reached) and a final
   checkpoint, or the next stage (:meth:`Learner.begin_stage`) and a checkpoint at its start,
   so a run killed in stage k resumes inside stage k.

A sequence also records each stage's behavioural probe set when the stage begins (before its
first point or checkpoint) and, before each boundary, the ending policy's distributions on every
probe set so far (:meth:`SequenceLoop.record_probe`, :meth:`SequenceLoop.end_probes`).

A run resumed from a checkpoint enters the walk where the checkpoint left it (a finished run does
not enter it at all). :func:`run_learner` is the driver around the walk, the same for every
learner: the loop from the config, a fresh or a resumed progress, the walk, the summary.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
from omegaconf import DictConfig

from esbench.config.schema import stop_at_return
from esbench.tracking.logger import MetricsLogger
from esbench.training.init_policy import BasePolicy, enter_at_base, start_stage
from esbench.training.learner import Learner, StepStats
from esbench.training.ruler import Confirmation, stage_plan
from esbench.training.sequence_loop import CpuClock, PointResult, RowSink, SequenceLoop, SequenceProgress

__all__ = ["logged_rows", "run_learner", "walk_stages"]

L = TypeVar("L", bound=Learner)


def walk_stages(loop: SequenceLoop, learner: Learner, on_boundary: Callable[[], None] | None = None) -> None:
    """Train ``learner`` through the stages of ``loop``'s plan (see the module docstring)."""

    def after_step(stats: StepStats) -> bool:
        return loop.after_step(learner, stats)

    while not loop.p.finished:
        if loop.needs_first_point:
            loop.record_probe(learner)  # stage 0's probe set, by the untrained policy
        if loop.running:
            learner.train(after_step)
        loop.end_probes(learner)
        boundary = loop.end_stage(learner.params())
        if on_boundary is not None:
            on_boundary()
        if not boundary:
            learner.checkpoint()
            return
        learner.begin_stage(loop.stage)
        loop.record_probe(learner)
        learner.checkpoint()


def run_learner(
    cfg: DictConfig,
    progress: SequenceProgress,
    build: Callable[[SequenceLoop], L],
    *,
    resumed_at: int | None,
    emit: RowSink,
    cpu: CpuClock = "counted",
    checkpoints: bool = True,
    target: bool = True,
    probes: bool = True,
    on_boundary: Callable[[L], None] | None = None,
    base: BasePolicy | None = None,
) -> tuple[dict[str, Any], L]:
    """Run a learner as ``cfg`` says: the loop, the walk through the stages, the summary.

    Args:
        cfg: The run config (its stage plan, ``eval``, ``budget``, ``checkpoint_every``).
        progress: The run's counters: fresh (its ``snapshots`` empty: the learner's parameters are
            the first snapshot; or the initial ones a learner records), or from a checkpoint.
        build: Makes the learner on the loop.
        resumed_at: Where the checkpoint ``progress`` comes from was taken (recorded in the
            summary's ``resumed_from``), None for a fresh start.
        emit: Receives every step's rows (:data:`~esbench.training.sequence_loop.RowSink`).
        cpu: How ``cpu_s`` is counted.
        checkpoints: The loop checkpoints every ``checkpoint_every`` steps inside a stage; False
            when the learner's library times them (SB3, TRL).
        target: The learner honours ``budget.stop_at_return`` (and its confirmation).
        probes: Record a sequence's behavioural probes.
        on_boundary: Writes the results files of a boundary (snapshots, stage states), called at
            every boundary and once more after the walk (a resumed run that was over writes them
            again); None where another process writes them.
        base: The policy a fresh run starts from (``init.from_run``; the learner was built on it):
            the run enters its plan at :func:`~esbench.training.init_policy.start_stage`, the
            stages before it ended at timestep 0 with the base's parameters, states and probes.

    Returns:
        (the trainer's part of the summary, the learner).
    """
    plan = stage_plan(cfg)
    interval = int(cfg.eval.interval_timesteps)
    if resumed_at is not None:
        progress.resumed_from = [*progress.resumed_from, int(resumed_at)]
    else:
        progress.next_eval_at = interval
    if base is not None and resumed_at is None:
        enter_at_base(progress, base, start_stage(cfg, base, plan), plan.names)
    loop = SequenceLoop(
        plan,
        progress,
        interval,
        stop_at_return(cfg) if target else None,
        Confirmation.from_config(cfg) if target else None,
        bool(cfg.eval.also_stochastic),
        probes=probes,
        emit=emit,
        cpu=cpu,
        checkpoint_every=int(cfg.checkpoint_every) if checkpoints else None,
    )
    learner = build(loop)
    if not progress.snapshots:  # the stages before the first trained one start from it too
        progress.snapshots = [np.array(learner.params(), copy=True)] * (progress.stage + 1)
        progress.probe_ends = [[learner.distribution(r.states) for r in progress.probes[: j + 1]]
                               for j in range(min(progress.stage, len(progress.probes)))]  # fmt: skip
    write = (lambda: on_boundary(learner)) if on_boundary is not None else None
    walk_stages(loop, learner, write)
    if write is not None:
        write()
    generation = 0  # not part of the summary
    out = loop.summary(loop.counters(generation), learner.params())
    if progress.base:
        out["init"] = dict(progress.base)
    return out, learner


def logged_rows(logger: MetricsLogger) -> RowSink:
    """The row sink of a learner in the process that writes the results: each row through the
    metrics logger (the store, W&B, the console)."""

    def emit(rows: list[dict[str, Any]], point: PointResult | None) -> None:
        del point
        for row in rows:
            logger.record_many(row)
            logger.dump()

    return emit
