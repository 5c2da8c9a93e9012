"""Training: the one loop every learner runs through (see docs/training.md).

The loop owns evaluation points, stage boundaries, checkpoints, resume, stop-at-target and the
summary (``ruler``, ``sequence_loop``, ``loop``, ``checkpoint``, ``drift``); a learner implements
the small protocol of ``learner``: the ES learner on Dask (``es``) and the SB3 learner (``sb3`` with
its callback and exact snapshots). Nothing is imported here, so importing one learner does not
import the others' dependencies (torch for SB3, Dask for ES).
"""
