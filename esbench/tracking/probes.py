"""The probe sets a run records and its policies' action distributions on them (the run's
:data:`~esbench.tracking.schema.PROBES_FILE`).

The data model only: written by the trainers while a run trains (:mod:`esbench.training.drift`),
read by the retention analysis (:mod:`esbench.analysis.retention_behaviour`, which measures
behavioural distance on them). It needs numpy alone, so a run does not import the analysis stack
(pandas, scipy) to write its probes.
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
class Probes:
    """The probe sets of a run and its policies' distributions on them.

    Attributes:
        stages: Names of the stages whose probe sets were recorded (the stages begun, in order).
        start: Per probe set k, the distributions of the policy stage k started from.
        ends: ``ends[j][k]``: the distributions of the policy that ended stage j on probe set k
            (k <= j; one list per ended stage).
        stochastic: The policies sample their actions (SB3 actor-critic), so the KL is defined.
        low: The action bounds (a Box action space), else None.
        high: Likewise.
        n_states: States per probe set.
    """

    stages: tuple[str, ...]
    start: tuple[ActionDist, ...]
    ends: tuple[tuple[ActionDist, ...], ...]
    stochastic: bool
    low: np.ndarray | None
    high: np.ndarray | None
    n_states: tuple[int, ...]


def _put(arrays: dict[str, np.ndarray], key: str, dist: ActionDist) -> None:
    arrays[f"{key}_kind"] = np.asarray(dist.kind, dtype=str)
    arrays[f"{key}_loc"] = np.asarray(dist.loc)
    if dist.log_std is not None:
        arrays[f"{key}_log_std"] = np.asarray(dist.log_std)


def _get(a: dict[str, np.ndarray], key: str) -> ActionDist:
    return ActionDist(str(a[f"{key}_kind"]), a[f"{key}_loc"], a.get(f"{key}_log_std"))


def write_probes(path: Path, probes: Probes) -> None:
    """Write :data:`~esbench.tracking.schema.PROBES_FILE` atomically (arrays only; nothing written
    without a probe set). Entries: ``stages``, ``n_states``, ``stochastic``, ``low``/``high``
    (when bounded), ``start_<k>_*`` and ``end_<j>_<k>_*`` (``kind``, ``loc``, ``log_std``)."""
    if not probes.stages:
        return
    arrays: dict[str, np.ndarray] = {
        "stages": np.asarray(probes.stages, dtype=str),
        "n_states": np.asarray(probes.n_states, dtype=np.int64),
        "stochastic": np.asarray(bool(probes.stochastic)),
        "n_ends": np.asarray(len(probes.ends), dtype=np.int64),
    }
    if probes.low is not None and probes.high is not None:
        arrays["low"] = np.asarray(probes.low, dtype=np.float64)
        arrays["high"] = np.asarray(probes.high, dtype=np.float64)
    for k, dist in enumerate(probes.start):
        _put(arrays, f"start_{k}", dist)
    for j, row in enumerate(probes.ends):
        for k, dist in enumerate(row):
            _put(arrays, f"end_{j}_{k}", dist)
    buf = io.BytesIO()
    np.savez(buf, **arrays)  # type: ignore[arg-type]
    atomic_write_bytes(Path(path), buf.getvalue())


def load_probes(path: str | Path) -> Probes:
    """Read :func:`write_probes`' file with ``allow_pickle=False``.

    Raises:
        ValueError: Not a readable probes file (the message names the file).
    """
    try:
        with np.load(Path(path), allow_pickle=False) as archive:
            a = {k: archive[k] for k in archive.files}
        stages = tuple(str(s) for s in a["stages"])
        start = tuple(_get(a, f"start_{k}") for k in range(len(stages)))
        ends = tuple(
            tuple(_get(a, f"end_{j}_{k}") for k in range(min(j + 1, len(stages))))
            for j in range(int(a["n_ends"]))
        )
        return Probes(
            stages=stages,
            start=start,
            ends=ends,
            stochastic=bool(a["stochastic"]),
            low=a.get("low"),
            high=a.get("high"),
            n_states=tuple(int(n) for n in a["n_states"]),
        )
    except (OSError, KeyError, ValueError) as e:
        raise ValueError(f"{path}: not a readable probes file ({e})") from None


def probes_of(
    stages: Sequence[str],
    start: Sequence[ActionDist],
    ends: Sequence[Sequence[ActionDist]],
    n_states: Sequence[int],
    stochastic: bool,
    bounds: tuple[np.ndarray, np.ndarray] | None,
) -> Probes:
    """A :class:`Probes` from a run's lists (what the trainers hold), ``bounds`` the Box bounds."""
    return Probes(
        stages=tuple(stages),
        start=tuple(start),
        ends=tuple(tuple(r) for r in ends),
        stochastic=bool(stochastic),
        low=None if bounds is None else np.asarray(bounds[0], dtype=np.float64),
        high=None if bounds is None else np.asarray(bounds[1], dtype=np.float64),
        n_states=tuple(int(n) for n in n_states),
    )


__all__ = ["Probes", "load_probes", "probes_of", "write_probes"]
