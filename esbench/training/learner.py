"""What a learner supplies to the training loop: one small protocol, whatever the algorithm.

The loop (:mod:`esbench.training.loop` walking a :class:`~esbench.training.sequence_loop.SequenceLoop`)
owns the order of things: the evaluation point at timestep 0, the stages one after another, the
evaluation points inside a stage and at its end, the stage boundaries and their parameter
snapshots, the checkpoint at every boundary and at the end, resume (:mod:`esbench.training.checkpoint`),
stop at a target, the summary. A learner says only how to do its part:

* :class:`Evaluable`: what an evaluation point asks of the current parameters: evaluate them on
  stage j, their action distributions on given states, the states they visit on the stage being
  trained (for the policy KL of :mod:`esbench.training.drift`), the parameter vector itself;
* :class:`Confirms`: the same evaluation on seeds the loop names (a confirmation before a stop
  at a target, :class:`~esbench.training.ruler.Confirmation`); a learner without it cannot stop at
  a target;
* :class:`EvaluatesStochastic`: the same evaluation with the policy acting stochastically (beside
  the deterministic one, ``eval.also_stochastic``);
* :class:`Learner`: that, plus the point at timestep 0 with its own statistics on the rows, the
  training steps of one stage (asking the loop when a point is due and when the stage is done),
  what its state becomes when a stage begins, and a checkpoint of its state as data.

The ES learner (:mod:`esbench.training.es`, a generation on Dask) and the SB3 learner
(:mod:`esbench.training.sb3`, SB3's ``learn`` with a callback) implement it; a new learner
implements the same methods and reuses the loop, the ruler and the checkpoint checks unchanged.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from esbench.measures.distribution import ActionDist
from esbench.tracking.stage_states import StageStates
from esbench.training.ruler import Stage, StageEval

__all__ = ["Confirms", "Evaluable", "EvaluatesStochastic", "Learner"]


class Evaluable(Protocol):
    """What an evaluation point asks of a learner's current parameters."""

    def evaluate_stage(self, j: int) -> StageEval:
        """The current policy on stage ``j``'s environment and the run's fixed evaluation seeds."""
        ...

    def record_states(self) -> StageStates:
        """The states the current policy visits on the stage it trains (its first evaluation
        seeds; :func:`esbench.training.drift.record_stage_states`)."""
        ...

    def distribution(self, states: np.ndarray) -> ActionDist:
        """The current policy's action distributions on raw observations."""
        ...

    def params(self) -> np.ndarray:
        """The current parameter vector (what drift and the snapshots measure)."""
        ...


@runtime_checkable
class Confirms(Protocol):
    """A learner whose runs may stop at a target: it evaluates on seeds the loop names
    (:class:`~esbench.training.ruler.Confirmation`), with the same policy and protocol as its
    regular evaluation."""

    def confirm_stage(self, j: int, first: int, episodes: int) -> StageEval:
        """The current policy on stage ``j``, on the evaluation seeds ``eval.seed + first + k``
        for ``k < episodes``."""
        ...


@runtime_checkable
class EvaluatesStochastic(Protocol):
    """A learner that can also evaluate its policy acting stochastically (``eval.also_stochastic``):
    RL samples its policy; ES adds the training's Gaussian action noise."""

    def evaluate_stochastic(self, j: int) -> StageEval:
        """The current policy on stage ``j`` and the run's fixed evaluation seeds, acting
        stochastically."""
        ...


class Learner(Evaluable, Protocol):
    """A learner the training loop drives (:func:`esbench.training.loop.walk_stages`)."""

    def first_point(self) -> None:
        """Take the evaluation point at timestep 0 (:meth:`SequenceLoop.evaluation_point`) and log
        its rows with the learner's own columns."""
        ...

    def train_stage(self) -> None:
        """Train the current stage until its budget is spent or the target is reached.

        After each of its training steps the learner asks the loop whether the stage is done
        (:meth:`SequenceLoop.stage_done`) and whether a point is due (:meth:`SequenceLoop.point_due`),
        takes the point when it is, and logs its rows; the stage's last point is taken here too.
        Checkpoints between boundaries are the learner's to time (a step is its unit).
        """
        ...

    def on_stage_end(self) -> None:
        """The stage just ended (its boundary and snapshot recorded): write what the driver keeps
        of it (the stage-boundary snapshots), if this process writes results files."""
        ...

    def on_stage_begin(self, stage: Stage) -> None:
        """A new stage begins: the learner's state for it, from the state the last one ended with
        (the one place a learner is told a stage began)."""
        ...

    def checkpoint(self) -> None:
        """Write a checkpoint of the learner's state, as data, now."""
        ...
