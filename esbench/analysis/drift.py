"""Parameter drift as numbers: how far a parameter vector moved from a snapshot, and its columns.

Pure functions of arrays, shared by the run that logs drift at every evaluation point
(:mod:`esbench.training.drift`) and the retention analysis that reads snapshots back
(:mod:`esbench.analysis.retention`). Δ = θ - θ_b in float64: global L2 ``||Δ||_2``, relative
``||Δ||_2 / ||θ_b||_2`` and update sparsity ``mean(|Δ| <= τ)`` at :data:`SPARSITY_THRESHOLDS`
(Abdi, Gupta et al. 2026, "Evolutionary Strategies lead to Catastrophic Forgetting in LLMs",
arXiv:2601.20861).

Every drift number the retention analysis takes from a run's stage-boundary snapshots is a
function of one pair of snapshot rows: :func:`pairwise_drift` computes them all, over the whole
vector and per layer, and :class:`SnapshotDrift` answers from that table. A run writes the table
beside its snapshots (:data:`~esbench.tracking.schema.SNAPSHOT_DRIFT_FILE`, a few kilobytes), so
a report whose ``data/`` cannot ship a language model's 12 MB of snapshots still re-derives its
per-layer drift, to the last bit, from what it ships.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from esbench.utils.io import atomic_write_text
from esbench.utils.layout import ParamLayout, check_layout

#: |Δ| thresholds of update sparsity (Abdi, Gupta et al. 2026).
SPARSITY_THRESHOLDS: tuple[float, ...] = (1e-6, 1e-4)
#: The metrics columns of parameter drift from the last stage-boundary snapshot.
DRIFT_COLUMNS: tuple[str, ...] = ("drift_l2", "drift_rel", "drift_sparsity_1e-6", "drift_sparsity_1e-4")
#: The metrics column of policy drift on an ended stage's states.
KL_COLUMN = "policy_kl"


def _delta(current: np.ndarray, snapshot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    cur = np.asarray(current, dtype=np.float64).ravel()
    ref = np.asarray(snapshot, dtype=np.float64).ravel()
    if cur.shape != ref.shape:
        raise ValueError(f"parameter vectors differ in size: {cur.size} vs {ref.size}")
    return cur - ref, ref


def update_sparsity(delta: ArrayLike, tau: float) -> float:
    """Fraction of parameters whose change is at most ``tau`` in magnitude: ``mean(|Δ| <= τ)``."""
    d = np.abs(np.asarray(delta, dtype=np.float64))
    return float(np.mean(d <= tau)) if d.size else float("nan")


def _drift_numbers(delta: np.ndarray, ref: np.ndarray, thresholds: Sequence[float]) -> dict[str, float]:
    l2 = float(np.linalg.norm(delta))
    ref_norm = float(np.linalg.norm(ref))
    out = {"l2": l2, "rel": l2 / ref_norm if ref_norm > 0 else float("nan")}
    for tau in thresholds:
        out[f"sparsity@{tau:g}"] = update_sparsity(delta, tau)
    return out


def param_drift(
    current: np.ndarray, snapshot: np.ndarray, thresholds: Sequence[float] = SPARSITY_THRESHOLDS
) -> dict[str, float]:
    """How far a flat parameter vector moved from a snapshot.

    Args:
        current: θ, shape (n_params,) (float32 as stored; computed in float64).
        snapshot: θ_k, shape (n_params,).
        thresholds: τ values of the update sparsity.

    Returns:
        ``{"l2": ||Δ||_2, "rel": ||Δ||_2 / ||θ_k||_2 (NaN when ||θ_k|| = 0),
        "sparsity@<τ>": mean(|Δ| <= τ) for each τ}`` with Δ = θ - θ_k.
    """
    delta, ref = _delta(current, snapshot)
    return _drift_numbers(delta, ref, thresholds)


def layer_drift(
    current: np.ndarray,
    snapshot: np.ndarray,
    layout: ParamLayout,
    thresholds: Sequence[float] = SPARSITY_THRESHOLDS,
) -> pd.DataFrame:
    """:func:`param_drift` per block of ``layout``.

    Returns:
        One row per block: ``layer`` (block index), ``shape``, ``size``, ``l2``, ``rel``,
        ``sparsity@<τ>``.

    Raises:
        ValueError: ``layout`` does not tile the vector.
    """
    delta, ref = _delta(current, snapshot)
    check_layout(layout, delta.size)
    rows = []
    for n, block in enumerate(layout):
        cut = slice(block.start, block.stop)
        numbers = _drift_numbers(delta[cut], ref[cut], thresholds)
        rows.append({"layer": n, "shape": "x".join(map(str, block.shape)), "size": block.size, **numbers})
    return pd.DataFrame(rows)


# --- every pair of snapshot rows ---------------------------------------------------------------

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
        whose norm is ``ref_l2``, so blocks can be pooled exactly: :func:`pool_blocks`).

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
                for row in layer_drift(snaps[b], snaps[a], layout, thresholds).to_dict("records"):
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


def pool_blocks(rows: pd.DataFrame, group: Sequence[str]) -> pd.DataFrame:
    """Pool per-block drift rows into groups (a transformer layer's tensors into the layer), exactly.

    Args:
        rows: :func:`pairwise_drift` rows of one pair (``size``, ``ref_l2``, ``l2``, ``sparsity@<τ>``).
        group: The group of each row, in order.

    Returns:
        One row per group, in order of first appearance: ``group``, ``size`` (summed), ``ref_l2``
        and ``l2`` (the norm over the group: the root of the summed squares), ``rel`` (``l2 /
        ref_l2``, NaN at 0) and ``sparsity@<τ>`` (weighted by size).
    """
    frame = rows.assign(group=list(group), _l2sq=rows["l2"] ** 2, _refsq=rows["ref_l2"] ** 2)
    sparsity = [c for c in rows.columns if c.startswith("sparsity@")]
    for c in sparsity:
        frame[c] = frame[c] * frame["size"]
    pooled = frame.groupby("group", sort=False)[["size", "_l2sq", "_refsq", *sparsity]].sum()
    out = pd.DataFrame({"group": pooled.index, "size": pooled["size"].to_numpy()})
    out["ref_l2"] = np.sqrt(pooled["_refsq"].to_numpy())
    out["l2"] = np.sqrt(pooled["_l2sq"].to_numpy())
    out["rel"] = np.where(out["ref_l2"] > 0, out["l2"] / out["ref_l2"].where(out["ref_l2"] > 0, 1.0), np.nan)
    for c in sparsity:
        out[c] = pooled[c].to_numpy() / pooled["size"].to_numpy()
    return out


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
    "DRIFT_COLUMNS",
    "KL_COLUMN",
    "SPARSITY_THRESHOLDS",
    "WHOLE_VECTOR",
    "SnapshotDrift",
    "layer_drift",
    "load_snapshot_drift",
    "pair_drift_columns",
    "pairwise_drift",
    "param_drift",
    "pool_blocks",
    "update_sparsity",
    "write_snapshot_drift",
]
