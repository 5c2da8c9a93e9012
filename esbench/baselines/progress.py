"""A baseline run's counters: what the metrics callback carries across rows and checkpoints.

Its own module so that both the callback (which updates it) and the checkpoint (which saves it
inside every snapshot) can import it without importing each other.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from esbench.tracking.drift import StageStates


@dataclass
class Progress:
    """Counters carried across rows and checkpoints (pickled in every snapshot)."""

    timesteps: int = 0
    frames: int = 0
    episodes: int = 0
    eval_timesteps: int = 0
    rows: int = 0  # rows emitted so far (the next row's index in metrics.csv)
    cpu_s: float = 0.0
    wall_clock_s: float = 0.0
    next_eval_at: int = 0
    next_checkpoint_at: int = 0  # in evaluation points
    last_eval_timesteps: int = -1
    last_eval: tuple[float, float] = (math.nan, math.nan)
    best_eval: float = -math.inf
    finished: bool = False
    returns: list[float] = field(default_factory=list)  # finished training episodes since the last row
    episode_raw: list[float] = field(default_factory=list)  # Atari: running unclipped return per env
    # The evaluation points so far (= the next point's ``generation``), stop-at-target, resumes, and
    # the sequence (esbench.tracking.ruler): the stage trained (index into the plan), the timesteps
    # at which it started, each ended stage's T_k and wall-clock, the policy vector at the start
    # of every stage begun so far, every stage's last evaluation.
    points: int = 0
    stopped_at_return: bool = False
    resumed_from: list[int] = field(default_factory=list)  # timesteps at which the run resumed
    stage: int = 0
    stage_start: int = 0
    boundaries: list[int] = field(default_factory=list)
    boundary_wall_clock_s: list[float] = field(default_factory=list)
    snapshots: list[np.ndarray] = field(default_factory=list)
    last_eval_by_stage: dict[str, float] = field(default_factory=dict)
    # The states each ended stage's final policy visited there, for the policy KL (esbench.tracking.drift)
    stage_states: list[StageStates] = field(default_factory=list)
