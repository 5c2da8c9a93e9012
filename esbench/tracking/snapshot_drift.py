"""The drift between every pair of a run's stage-boundary snapshots: the run file and its table.

Every drift number the retention analysis takes from a run's stage-boundary snapshots is a
function of one pair of snapshot rows: :func:`pairwise_drift` computes them all, over the whole
vector and per layer (the numbers of :mod:`esbench.measures.drift`), and :class:`SnapshotDrift`
answers from that table. A run writes the table beside its snapshots
(:data:`~esbench.tracking.schema.SNAPSHOT_DRIFT_FILE`, a few kilobytes, :func:`write_snapshot_drift`),
so a report whose ``data/`` cannot ship a language model's 12 MB of snapshots still re-derives its
per-layer drift, to the last bit, from what it ships (:func:`load_snapshot_drift`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from esbench.measures.drift import SPARSITY_THRESHOLDS, block_drift, param_drift
from esbench.utils.io import atomic_write_text
from esbench.utils.layout import ParamLayout, check_layout

#: The ``layer`` of a :func:`pairwise_drift` row about the whole vector.
WHOLE_VECTOR = -1


def pair_drift_columns(thresholds: Sequence[float] = SPARSITY_THRESHOLDS) -> tuple[str, ...]:
    """The columns of :func:`pairwise_drift` (and of the file a run writes)."""
    pair = ("from_row", "to_row", "layer", "name", "shape", "size", "ref_l2")
    return (*pair, "l2", "rel", *(f"sparsity@{t:g}" for t in thresholds))


def pairwise_drift(
    params: np.ndarray,
    layout: ParamLayout | None = None,
    names: Sequence[str] = (),
    thresholds: Sequence[float] = SPARSITY_THRESHOLDS,
) -> pd.DataFrame:
    """:func:`param_drift` of every snapshot row from itself and every earlier one, whole and per
    layer (the pair of a row with itself is the zero drift a last stage has after it).

    Args:
        params: Shape (n_rows, n_params): the stage-boundary snapshots (row k the parameters at
            the start of stage k, the last row the final ones).
        layout: Blocks of the vector for per-layer rows; None: whole-vector rows only.
        names: The blocks' names (``name``; "" without), one per block.
        thresholds: τ of the update sparsity.

    Returns:
        Columns :func:`pair_drift_columns`: per pair ``from_row`` <= ``to_row``, one row with
        ``layer`` :data:`WHOLE_VECTOR` (``shape`` the vector's length) and, with a layout, one
        per block (Δ = params[to_row] - params[from_row]; ``rel`` relative to params[from_row],
        whose norm is ``ref_l2``, so blocks can be pooled exactly:
        :func:`esbench.analysis.drift.pool_blocks`).

    Raises:
        ValueError: ``params`` is not 2-D, ``layout`` does not tile its rows, or ``names`` is
            not one per block.
    """
    snaps = np.asarray(params)
    if snaps.ndim != 2:
        raise ValueError(f"snapshots must be 2-D (rows, n_params), got shape {snaps.shape}")
    n = snaps.shape[1]
    if layout is not None:
        check_layout(layout, n)
        if names and len(names) != len(layout):
            raise ValueError(f"{len(names)} block names for {len(layout)} layout blocks")
    rows: list[dict[str, object]] = []
    for a in range(snaps.shape[0]):
        ref = snaps[a].astype(np.float64)  # the norms ``rel`` divides by, once per from-row
        ref_whole = float(np.linalg.norm(ref))
        ref_blocks = [float(np.linalg.norm(ref[blk.start : blk.stop])) for blk in layout or ()]
        for b in range(a, snaps.shape[0]):
            pair = {"from_row": a, "to_row": b}
            whole = param_drift(snaps[b], snaps[a], thresholds)
            rows.append(
                {**pair, "layer": WHOLE_VECTOR, "name": "", "shape": str(n), "size": n, "ref_l2": ref_whole}
                | whole
            )
            if layout is not None:
                for row in block_drift(snaps[b], snaps[a], layout, thresholds):
                    k = int(row["layer"])
                    rows.append({**pair, **row, "name": names[k] if names else "", "ref_l2": ref_blocks[k]})
    return pd.DataFrame(rows, columns=list(pair_drift_columns(thresholds)))


@dataclass(frozen=True)
class SnapshotDrift:
    """The drift between every pair of a run's stage-boundary snapshot rows (:func:`pairwise_drift`).

    Attributes:
        table: The :func:`pairwise_drift` rows.
        n_rows: How many snapshot rows the table is about (K + 1 for a complete K-stage run).
    """

    table: pd.DataFrame
    n_rows: int

    @classmethod
    def of(
        cls, params: np.ndarray, layout: ParamLayout | None = None, names: Sequence[str] = ()
    ) -> SnapshotDrift:
        """The drift of the snapshot rows ``params`` (shape (n_rows, n_params)), per block of
        ``layout`` (named ``names``) too."""
        snaps = np.asarray(params)
        return cls(pairwise_drift(snaps, layout, names), int(snaps.shape[0]) if snaps.ndim == 2 else 0)

    def _rows(self, from_row: int, to_row: int) -> pd.DataFrame:
        t = self.table
        rows = t[(t["from_row"] == from_row) & (t["to_row"] == to_row)]
        if rows.empty:
            raise KeyError(f"no drift from snapshot row {from_row} to row {to_row} (rows: {self.n_rows})")
        return rows

    def _measures(self) -> list[str]:
        return [c for c in self.table.columns if c == "l2" or c == "rel" or c.startswith("sparsity@")]

    def _whole_row(self, from_row: int, to_row: int) -> pd.Series:
        rows = self._rows(from_row, to_row)
        return rows[rows["layer"] == WHOLE_VECTOR].iloc[0]

    def whole(self, from_row: int, to_row: int) -> dict[str, float]:
        """:func:`param_drift` of row ``to_row`` from row ``from_row``: ``l2``, ``rel``, ``sparsity@<τ>``."""
        row = self._whole_row(from_row, to_row)
        return {m: float(row[m]) for m in self._measures()}

    def layers(self, from_row: int, to_row: int) -> pd.DataFrame:
        """The per-layer rows of the pair (empty without a layout): ``layer``, ``shape``, ``size``
        and the measures."""
        rows = self._rows(from_row, to_row)
        return rows[rows["layer"] != WHOLE_VECTOR].drop(columns=["from_row", "to_row"]).reset_index(drop=True)

    def rms(self, from_row: int, to_row: int) -> float:
        """``||Δ||_2 / sqrt(n_params)``: the RMS change per parameter, NaN for an empty vector or
        a pair past the rows there are."""
        if max(from_row, to_row) >= self.n_rows:
            return math.nan
        row = self._whole_row(from_row, to_row)
        return float(row["l2"]) / math.sqrt(int(row["size"])) if int(row["size"]) else math.nan


def write_snapshot_drift(path: str | Path, drift: SnapshotDrift) -> None:
    """Write ``drift`` atomically as CSV (floats written so they read back to the same bits)."""
    text = drift.table.assign(n_rows=drift.n_rows).to_csv(index=False, float_format="%.17g")
    atomic_write_text(Path(path), text)


def load_snapshot_drift(path: str | Path) -> SnapshotDrift:
    """Read what :func:`write_snapshot_drift` wrote.

    Raises:
        ValueError: the file is unreadable or lacks a column of :func:`pair_drift_columns`.
    """
    try:
        frame = pd.read_csv(Path(path), dtype={"shape": str, "name": str}, float_precision="round_trip")
    except Exception as e:  # a cut or foreign file: parser and OS errors alike
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ValueError(f"{Path(path).name} unreadable ({reason})") from None
    missing = [c for c in (*pair_drift_columns(()), "n_rows") if c not in frame.columns]
    if missing:
        raise ValueError(f"{Path(path).name} lacks columns {missing}")
    n_rows = int(frame["n_rows"].iloc[0]) if len(frame) else 0
    return SnapshotDrift(frame.drop(columns=["n_rows"]).assign(name=frame["name"].fillna("")), n_rows)


__all__ = [
    "WHOLE_VECTOR",
    "SnapshotDrift",
    "load_snapshot_drift",
    "pair_drift_columns",
    "pairwise_drift",
    "write_snapshot_drift",
]
