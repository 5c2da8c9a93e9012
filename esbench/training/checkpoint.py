"""The checkpoint envelope and the resume checks, written once for every learner.

A checkpoint is one data-only state file (:mod:`esbench.utils.statefile`: no code in it runs when
it is read) holding a :class:`Checkpoint`: the learner's state as data, a digest of that state,
and how many rows of ``metrics.csv`` were written when it was taken. The rows stay in the file (a
checkpoint's size does not grow with the run); a resumed run cuts the file back to ``n_rows`` and
continues exactly as if never stopped (DESIGN.md promise 1, wall-clock aside).

What the state is belongs to the learner (ES: its trainer state and counters; SB3: the bytes of
an exact snapshot of model, environments and random streams). What the loop checks on resume is
the same for all of them and is written here: the file parses with the learner's whitelist of
types, holds an envelope around the learner's kind of state, the state matches its digest, and the
learner's own check of the state passes. Any failure stops the run with one line naming the file
(:meth:`~esbench.tracking.store.RunStore.checkpoint_error`), before any work starts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from esbench.tracking.logger import MetricsLogger
from esbench.tracking.store import RunStore

__all__ = ["Checkpoint", "StateKind", "resume_state", "save_checkpoint"]


@dataclass
class Checkpoint:
    """Everything needed to resume a run.

    Attributes:
        state: The learner's state, as data (dataclasses of arrays, scalars, strings, bytes).
        digest: The learner's digest of ``state`` (checked on resume).
        n_rows: Rows of ``metrics.csv`` written when the checkpoint was taken.
    """

    state: Any
    digest: str
    n_rows: int


@dataclass(frozen=True)
class StateKind:
    """What a learner's checkpoint state is, for the resume checks.

    Attributes:
        name: Named in the refusal when the checkpoint holds another kind ("an ES", "a baseline").
        state_type: The state's type.
        types: Every dataclass type the state may contain (the state file's whitelist).
        digest: The digest of a state (what :class:`Checkpoint` stores).
        word: What the state is called in a refusal ("state", "snapshot").
        check: The learner's own check of a loaded state: raises ``ValueError`` with the reason.
    """

    name: str
    state_type: type
    types: tuple[type, ...]
    digest: Callable[[Any], str]
    word: str = "state"
    check: Callable[[Any], None] | None = None

    @property
    def file_types(self) -> tuple[type, ...]:
        """The whitelist of the state file: the envelope and the state's types."""
        return (Checkpoint, *self.types)


def save_checkpoint(store: RunStore, kind: StateKind, state: Any, n_rows: int) -> None:
    """Replace the run's checkpoint atomically with ``state`` in its envelope."""
    store.save_checkpoint(Checkpoint(state, kind.digest(state), int(n_rows)), kind.file_types)


def resume_state(store: RunStore, logger: MetricsLogger, kind: StateKind) -> Any | None:
    """The state to resume from, or None for a fresh start (no checkpoint in ``store``).

    Checks the checkpoint (see the module docstring), then cuts ``metrics.csv`` back to its row
    count and reads those rows into ``logger`` (:meth:`MetricsLogger.resume`).

    Raises:
        RunFileError: the checkpoint cannot be resumed from (one line naming it and the reason).
    """
    if not store.has_checkpoint:
        return None
    ckpt = store.load_checkpoint(kind.file_types)
    if not isinstance(ckpt, Checkpoint) or not isinstance(ckpt.state, kind.state_type):
        raise store.checkpoint_error(f"not {kind.name} checkpoint")
    try:
        matches = kind.digest(ckpt.state) == ckpt.digest
    except (AttributeError, TypeError, ValueError):  # a state of the right type holding wrong parts
        matches = False
    if not matches:
        raise store.checkpoint_error(f"its {kind.word} does not match its digest")
    if kind.check is not None:
        try:
            kind.check(ckpt.state)
        except ValueError as e:
            raise store.checkpoint_error(f"its {kind.word}: {e}") from None
    logger.resume(ckpt.n_rows)
    return ckpt.state
