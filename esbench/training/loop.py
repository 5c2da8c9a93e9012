"""The walk through the stages of a run, written once for every learner.

For every run (one stage without a sequence), with ``loop`` the run's
:class:`~esbench.training.sequence_loop.SequenceLoop` and ``learner`` a
:class:`~esbench.training.learner.Learner`:

1. a point at timestep 0 (the untrained policy), unless the run resumed past it;
2. the stage's training steps, with the points the schedule asks for and one at the stage's end
   (:meth:`Learner.train_stage`), unless the run stopped at its target;
3. the boundary (:meth:`SequenceLoop.end_stage`: ``T_k``, its wall-clock, the snapshot of the
   parameters), written out (:meth:`Learner.on_stage_end`);
4. either the end of the run (after the last stage, or once the target is reached) and a final
   checkpoint, or the next stage (:meth:`Learner.on_stage_begin`) and a checkpoint at its start,
   so a run killed in stage k resumes inside stage k.

A sequence also records each stage's behavioural probe set when the stage begins (before its
first point or checkpoint) and, before each boundary, the ending policy's distributions on every
probe set so far (:meth:`SequenceLoop.record_probe`, :meth:`SequenceLoop.end_probes`).

A run resumed from a checkpoint enters the walk where the checkpoint left it (a finished run does
not enter it at all).
"""

from __future__ import annotations

from esbench.training.learner import Learner
from esbench.training.sequence_loop import SequenceLoop

__all__ = ["walk_stages"]


def walk_stages(loop: SequenceLoop, learner: Learner) -> None:
    """Train ``learner`` through the stages of ``loop``'s plan (see the module docstring)."""
    while not loop.p.finished:
        if loop.needs_first_point:
            loop.record_probe(learner)  # stage 0's probe set, by the untrained policy
            learner.first_point()
        if loop.running:
            learner.train_stage()
        loop.end_probes(learner)
        boundary = loop.end_stage(learner.params())
        learner.on_stage_end()
        if not boundary:
            learner.checkpoint()
            return
        learner.on_stage_begin(loop.stage)
        loop.record_probe(learner)
        learner.checkpoint()
