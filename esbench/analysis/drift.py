"""Parameter drift as numbers: how far a parameter vector moved from a snapshot, and its columns.

Pure functions of arrays, shared by the run that logs drift at every evaluation point
(:mod:`esbench.training.drift`) and the retention analysis that reads snapshots back
(:mod:`esbench.analysis.retention`). Δ = θ - θ_b in float64: global L2 ``||Δ||_2``, relative
``||Δ||_2 / ||θ_b||_2`` and update sparsity ``mean(|Δ| <= τ)`` at :data:`SPARSITY_THRESHOLDS`
(Abdi, Gupta et al. 2026, "Evolutionary Strategies lead to Catastrophic Forgetting in LLMs",
arXiv:2601.20861).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

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


__all__ = ["DRIFT_COLUMNS", "KL_COLUMN", "SPARSITY_THRESHOLDS", "param_drift", "update_sparsity"]
