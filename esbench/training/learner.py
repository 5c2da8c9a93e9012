"""What a learner supplies to the training loop: one protocol of seven methods, whatever the algorithm.

The loop (:func:`esbench.training.loop.walk_stages` over a
:class:`~esbench.training.sequence_loop.SequenceLoop`) owns the order of things and everything
that follows a training step: the counters, the evaluation points (at timestep 0, on the schedule,
at a stage's end), a confirmation and the stop at a target, the rows of ``metrics.csv``, the clock,
the checkpoints between boundaries, the stage boundaries and their snapshots, resume, the summary.
A learner says only how to take a step and what an evaluation point asks of its parameters
(:class:`Learner`).

A step is the learner's own unit (an ES generation, an SB3 environment step, a GRPO step): the
learner hands each one to the loop as a :class:`StepStats` (``after_step``), the way SB3's
``BaseCallback.on_step`` is handed every environment step and answers whether to go on. A learner
that owns its loop (ES) calls ``after_step`` after each step; one whose library owns it calls it
from that library's callback (SB3's ``on_step``, TRL's ``on_log``): the same code path for all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from esbench.measures.distribution import ActionDist
from esbench.tracking.stage_states import StageStates
from esbench.training.ruler import Stage, StageEval

__all__ = ["AfterStep", "Learner", "Seeds", "StepStats"]


@dataclass(frozen=True)
class StepStats:
    """What one training step did, handed to the loop (``after_step``).

    The step with no counts, ``StepStats()`` and the learner's columns, is how a learner starts
    :meth:`Learner.train`: the loop takes the point at timestep 0 there (or a stage's closing point
    when its budget is already spent), and nothing otherwise.

    Attributes:
        timesteps, frames, episodes: What the step adds to the run's training counters.
        cpu_s: CPU seconds the step spent elsewhere (ES: on the workers), added to ``cpu_s``.
        columns: The learner's own columns of the step's row (``train_return_mean``, ``grad_norm``,
            ``param_norm``, ``es/...``), or a function giving them, called once when the row is
            written (after the step's point, if any).
        generation: The learner's count of steps after this one (a row's ``generation``); None: the
            index of the point (a learner whose rows are its points).
        workers: Workers the step ran on (a row's ``workers``).
        row: The step has a row of its own even without a point (SB3 logs its points only).
        ends_stage: None: the stage's budget decides whether this step ends it; True: the
            learner's own budget is spent (ES's ``budget.generations``); False: the step cannot end
            the stage (an update follows it: SB3's environment steps inside a rollout, whose stage
            ends after ``learn``), so no point is taken once the budget is spent.
    """

    timesteps: int = 0
    frames: int = 0
    episodes: int = 0
    cpu_s: float = 0.0
    columns: Mapping[str, Any] | Callable[[], Mapping[str, Any]] = field(default_factory=dict)
    generation: int | None = None
    workers: int = 1
    row: bool = True
    ends_stage: bool | None = None

    def row_columns(self) -> dict[str, Any]:
        """:attr:`columns`, read (called when it is a function)."""
        return dict(self.columns() if callable(self.columns) else self.columns)


#: The loop's answer to a step: True to go on training the stage, False when it ended (its budget
#: spent, or the target reached).
AfterStep = Callable[[StepStats], bool]


@dataclass(frozen=True)
class Seeds:
    """Which evaluation an evaluation point asks for (:meth:`Learner.evaluate`).

    Attributes:
        first: Episode ``k`` is reset with the evaluation seed ``eval.seed + first + k``: 0 for the
            regular evaluation, fresh seeds for a confirmation
            (:class:`~esbench.training.ruler.Confirmation`).
        episodes: Episodes to play; None: ``eval.episodes``.
        stochastic: The policy acts stochastically (``eval.also_stochastic``: RL samples its
            policy; ES adds the training's Gaussian action noise).
    """

    first: int = 0
    episodes: int | None = None
    stochastic: bool = False

    @property
    def regular(self) -> bool:
        """The run's regular evaluation (fixed seeds, deterministic policy)."""
        return self == Seeds()


class Learner(Protocol):
    """A learner the training loop drives: a step, and what an evaluation point asks.

    A learner that cannot take an evaluation :meth:`evaluate` is asked for (a confirmation before a
    stop at a target, a stochastic evaluation) raises ``NotImplementedError``; the loop refuses the
    run with one line naming what it needs.
    """

    def train(self, after_step: AfterStep) -> None:
        """Train the current stage: hand ``after_step`` the step with no counts first, then every
        step, until it returns False."""
        ...

    def evaluate(self, j: int, seeds: Seeds) -> StageEval:
        """The current policy on stage ``j``'s environment and the evaluation ``seeds`` name."""
        ...

    def record_states(self) -> StageStates:
        """The states the current policy visits on the stage it trains (its first evaluation
        seeds; :func:`esbench.training.drift.record_stage_states`), for the policy KL."""
        ...

    def distribution(self, states: np.ndarray) -> ActionDist:
        """The current policy's action distributions on raw observations."""
        ...

    def params(self) -> np.ndarray:
        """The current parameter vector (what drift, snapshots and the summary measure)."""
        ...

    def begin_stage(self, stage: Stage) -> None:
        """A new stage begins: the learner's state for it, from the state the last one ended with
        (the one place a learner is told a stage began)."""
        ...

    def checkpoint(self) -> None:
        """Write a checkpoint of the learner's state, as data, now."""
        ...
