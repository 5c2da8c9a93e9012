"""Fitness shaping: turn raw returns into weights that are invariant to their scale.

Salimans et al. 2017, Sec. 2.2 ("fitness shaping", after Wierstra et al. 2014): the paper's
reference code replaces returns by their centered ranks over all 2n returns of a generation,
scaled to [-0.5, 0.5].
"""

from __future__ import annotations

import numpy as np


def centered_ranks(x: np.ndarray) -> np.ndarray:
    """Ranks of ``x`` over all its entries, scaled to [-0.5, 0.5]; same shape as ``x``, float32.

    Ties are broken by position (stable sort), as the reference implementation does.
    """
    flat = x.ravel()
    ranks = np.empty(flat.size, dtype=np.float32)
    ranks[np.argsort(flat, kind="stable")] = np.arange(flat.size, dtype=np.float32)
    if flat.size > 1:
        ranks /= flat.size - 1
    ranks -= 0.5
    return ranks.reshape(x.shape)


def z_scores(x: np.ndarray) -> np.ndarray:
    """(x - mean) / std over all entries (std floored at 1e-8); same shape, float32."""
    x = x.astype(np.float64)
    return ((x - x.mean()) / max(float(x.std()), 1e-8)).astype(np.float32)


def shape_fitness(x: np.ndarray, method: str) -> np.ndarray:
    """Apply the named shaping (``centered_rank`` | ``z_score`` | ``raw``)."""
    if method == "centered_rank":
        return centered_ranks(x)
    if method == "z_score":
        return z_scores(x)
    if method == "raw":
        return x.astype(np.float32)
    raise ValueError(f"fitness_shaping={method!r}; allowed: centered_rank, z_score, raw")
