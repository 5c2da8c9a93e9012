"""Parameter drift in the analysis' terms: per-layer drift as a frame, and blocks pooled into groups.

The numbers are :mod:`esbench.measures.drift`'s (shared with the run that logs them); the table of
drift between a run's snapshots is the run file :mod:`esbench.tracking.snapshot_drift`. This module
adds what only the retention analysis needs: :func:`layer_drift` as a ``DataFrame`` and
:func:`pool_blocks` (a transformer layer's tensors into the layer, exactly).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from esbench.measures.drift import SPARSITY_THRESHOLDS, block_drift
from esbench.utils.layout import ParamLayout


def layer_drift(
    current: np.ndarray,
    snapshot: np.ndarray,
    layout: ParamLayout,
    thresholds: Sequence[float] = SPARSITY_THRESHOLDS,
) -> pd.DataFrame:
    """:func:`~esbench.measures.drift.param_drift` per block of ``layout``.

    Returns:
        One row per block: ``layer`` (block index), ``shape``, ``size``, ``l2``, ``rel``,
        ``sparsity@<τ>``.

    Raises:
        ValueError: ``layout`` does not tile the vector.
    """
    return pd.DataFrame(block_drift(current, snapshot, layout, thresholds))


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


__all__ = ["layer_drift", "pool_blocks"]
