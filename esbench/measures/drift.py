"""Parameter drift as numbers: how far a parameter vector moved from a snapshot.

Pure functions of arrays (numpy only), shared by the run that logs drift at every evaluation point
(:mod:`esbench.training.drift`), the table of drift between snapshots a run writes
(:mod:`esbench.tracking.snapshot_drift`) and the retention analysis (:mod:`esbench.analysis.retention`).
Δ = θ - θ_b in float64: global L2 ``||Δ||_2``, relative ``||Δ||_2 / ||θ_b||_2`` and update
sparsity ``mean(|Δ| <= τ)`` at :data:`SPARSITY_THRESHOLDS` (Abdi, Gupta et al. 2026, "Evolutionary
Strategies lead to Catastrophic Forgetting in LLMs", arXiv:2601.20861).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from esbench.utils.layout import ParamLayout, check_layout

#: |Δ| thresholds of update sparsity (Abdi, Gupta et al. 2026).
SPARSITY_THRESHOLDS: tuple[float, ...] = (1e-6, 1e-4)


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


def block_drift(
    current: np.ndarray,
    snapshot: np.ndarray,
    layout: ParamLayout,
    thresholds: Sequence[float] = SPARSITY_THRESHOLDS,
) -> list[dict[str, float | int | str]]:
    """:func:`param_drift` per block of ``layout``.

    Returns:
        One record per block, in order: ``layer`` (block index), ``shape`` (e.g. ``"4x3"``),
        ``size``, ``l2``, ``rel``, ``sparsity@<τ>``.

    Raises:
        ValueError: ``layout`` does not tile the vector.
    """
    delta, ref = _delta(current, snapshot)
    check_layout(layout, delta.size)
    rows: list[dict[str, float | int | str]] = []
    for n, block in enumerate(layout):
        cut = slice(block.start, block.stop)
        numbers = _drift_numbers(delta[cut], ref[cut], thresholds)
        rows.append({"layer": n, "shape": "x".join(map(str, block.shape)), "size": block.size, **numbers})
    return rows


__all__ = ["SPARSITY_THRESHOLDS", "block_drift", "param_drift", "update_sparsity"]
