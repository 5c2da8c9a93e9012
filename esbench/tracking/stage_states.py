"""The states a policy visited on a stage and its action distributions on them: a run file.

When a stage ends (and a later one follows), the policy that ended it records a
:class:`StageStates` (:func:`esbench.training.drift.record_stage_states`); the run keeps them in
its checkpoints and writes them as :data:`~esbench.tracking.schema.STAGE_STATES_FILE` (and a
sequence's probe states as :data:`~esbench.tracking.schema.PROBE_STATES_FILE`), data only, so a
re-analysis can replay any policy on them.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from esbench.measures.distribution import ActionDist
from esbench.utils.io import atomic_write_bytes


@dataclass(frozen=True)
class StageStates:
    """States the policy that ended a stage visited there, and its action distributions on them.

    Attributes:
        stage: The stage's name.
        states: Raw observations (as the evaluation env returns them, before any normalization),
            shape (n, *obs_shape).
        reference: The stage-end policy's distributions on ``states`` (its own normalization).
        steps: Environment steps played to record them.
    """

    stage: str
    states: np.ndarray
    reference: ActionDist
    steps: int


def write_stage_states(path: Path, records: Sequence[StageStates]) -> None:
    """Write ``stage_states.npz`` atomically (data only; nothing written when ``records`` is empty).

    Arrays, for the i-th recorded stage: ``states_<i>``, ``loc_<i>``, ``log_std_<i>`` (Gaussian
    only), and ``stages`` (names), ``kinds`` (distribution kinds), ``steps``.
    """
    if not records:
        return
    arrays: dict[str, np.ndarray] = {
        "stages": np.asarray([r.stage for r in records], dtype=str),
        "kinds": np.asarray([r.reference.kind for r in records], dtype=str),
        "steps": np.asarray([r.steps for r in records], dtype=np.int64),
    }
    for i, r in enumerate(records):
        arrays[f"states_{i}"] = r.states
        arrays[f"loc_{i}"] = r.reference.loc
        if r.reference.log_std is not None:
            arrays[f"log_std_{i}"] = r.reference.log_std
    buf = io.BytesIO()
    np.savez(buf, **arrays)  # type: ignore[arg-type]
    atomic_write_bytes(path, buf.getvalue())


def load_stage_states(path: str | Path) -> list[StageStates]:
    """Read ``stage_states.npz`` (:func:`write_stage_states`) with ``allow_pickle=False``."""
    with np.load(Path(path), allow_pickle=False) as archive:
        a = {k: archive[k] for k in archive.files}
    out = []
    for i, (stage, kind, steps) in enumerate(zip(a["stages"], a["kinds"], a["steps"], strict=True)):
        ref = ActionDist(str(kind), a[f"loc_{i}"], a.get(f"log_std_{i}"))
        out.append(StageStates(str(stage), a[f"states_{i}"], ref, int(steps)))
    return out


__all__ = ["StageStates", "load_stage_states", "write_stage_states"]
