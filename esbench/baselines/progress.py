"""A baseline run's counters: what the metrics callback carries across rows and checkpoints.

Its own module so that both the callback (which updates it) and the checkpoint (which saves it
inside every snapshot) can import it without importing each other.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass
class Progress:
    """Counters carried across rows and checkpoints (pickled in every snapshot)."""

    timesteps: int = 0
    frames: int = 0
    episodes: int = 0
    eval_timesteps: int = 0
    rows: int = 0  # rows emitted so far (= the next row's ``generation``)
    cpu_s: float = 0.0
    wall_clock_s: float = 0.0
    next_eval_at: int = 0
    next_checkpoint_at: int = 0  # in rows
    last_eval_timesteps: int = -1
    last_eval: tuple[float, float] = (math.nan, math.nan)
    best_eval: float = -math.inf
    finished: bool = False
    returns: list[float] = field(default_factory=list)  # finished training episodes since the last row
    episode_raw: list[float] = field(default_factory=list)  # Atari: running unclipped return per env
