"""A baseline run's counters: what the metrics callback carries across rows and checkpoints.

Its own module so that both the callback (which updates it) and the checkpoint (which saves it
inside every snapshot) can import it without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from esbench.training.sequence_loop import SequenceProgress


@dataclass
class Progress(SequenceProgress):
    """A baseline run's counters (:class:`~esbench.training.sequence_loop.SequenceProgress`) and
    what its metrics callback adds (saved in every snapshot)."""

    rows: int = 0  # rows emitted so far (the next row's index in metrics.csv)
    next_checkpoint_at: int = 0  # in evaluation points
    returns: list[float] = field(default_factory=list)  # finished training episodes since the last row
    episode_raw: list[float] = field(default_factory=list)  # Atari: running unclipped return per env
