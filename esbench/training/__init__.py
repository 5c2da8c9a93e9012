"""Training: the one loop every learner runs through (see docs/training.md).

A learner takes a step; the loop does everything that follows it (counters, evaluation points,
stop at a target, rows, checkpoints), the stage boundaries, resume and the summary (``ruler``,
``sequence_loop``, ``loop``, ``checkpoint``, ``drift``). A learner implements the seven methods of
``learner``: the ES learner on Dask (``es``), the SB3 learner (``sb3`` with its callback and exact
snapshots) and the language-model learners (``lm``, ``lm_grpo``). Nothing is imported here, so
importing one learner does not import the others' dependencies (torch for SB3, Dask for ES).
"""
