"""Retention and forgetting over a task sequence (issue #14): pure metrics, no training.

What is measured, and why: an ES run trained on stage 1 then stage 2 may reach the new stage's
return while losing the old one (Abdi, Gupta et al. 2026, "Evolutionary Strategies lead to
Catastrophic Forgetting in LLMs", arXiv:2601.20861). The curve metrics follow Continual World
(Wołczyk et al. 2021, "Continual World: A Robotic Benchmark For Continual Reinforcement Learning",
NeurIPS, arXiv:2105.10919; the definitions as implemented in its results code,
``awarelab/continual_world``, ``continualworld/results_processing/tables.py``); the parameter and
policy metrics follow Abdi, Gupta et al. and the follow-ups listed in the reference notes (weight
drift, update sparsity, KL drift on prior-task inputs).

Data model (what the sequence training loop writes; the functions here read nothing else)
-----------------------------------------------------------------------------------------
A run of a task sequence has stages ``0..K-1`` trained one after another, stage k for its own
timestep budget, starting from stage k-1's final parameters.

* ``metrics.csv`` (:data:`esbench.tracking.schema.METRIC_COLUMNS`) holds, at every evaluation
  point, **one row per evaluated stage**: ``timesteps`` (cumulative over the whole sequence),
  ``train_task`` (the name of the stage being trained), ``eval_task`` (the name of the stage
  evaluated on this row) and ``eval_return_mean``. Every stage is evaluated at every evaluation
  point, including the points of the stages before it. The loop writes an evaluation point at
  ``timesteps == 0`` (the untrained policy, ``train_task`` = stage 0) and one at the end of every
  stage. Rows without an evaluation (``eval_return_mean`` NaN) and rows whose ``eval_task`` is not a
  stage are ignored. An evaluation *point* is one ``(timesteps, train_task)`` pair, so a loop that
  evaluates again at the start of stage k+1 (say, after resetting observation normalization) gives
  a second point at the same timesteps, belonging to stage k+1.
* Stage boundaries: ``T_k``, the timesteps at which stage k ends. Derived from the rows (the last
  point trained on stage k; a stage with no training rows -- a zero budget -- ends where the stage
  before it ended), or passed in, in which case points are assigned to stages by timesteps
  (``T_{k-1} < t <= T_k``; stage 0 from 0).
* Parameter snapshots: an array ``(K + 1, n_params)`` of flat float32 vectors; row k is the vector
  at the start of stage k (= the end of stage k-1), row K the current (final) one. A
  :data:`~esbench.utils.layout.ParamLayout` (tuple of :class:`~esbench.utils.layout.Block`) splits
  the vector into layers. In a run directory they are ``snapshots.npz`` (:func:`load_snapshots`).
* Single-stage reference runs (``sequence.only_stage = k``: stage k trained from scratch on its
  own budget), one per stage, for the normalization and forward transfer.

Metrics
-------
Normalized score of stage i at time t (the curves everything else reads)::

    p_i(t) = (R_i(t) - R_i^random) / (R_i^ref - R_i^random)

with R_i^random the untrained policy's return on stage i (the sequence run's evaluation at
timestep 0) and R_i^ref the single-stage reference run's final return (the score of the model it
ended with: one model's score, never a mean over several points), so 0 is "untrained" and 1 "as good
as training on stage i alone". Both are inputs
(:func:`normalized_scores`); :func:`normalization_from_runs` derives them. Continual World uses
success rates, already in [0, 1]; returns need this normalization to be comparable across stages.

"At the end of stage j", every value is the mean over the last ``k`` evaluation points of stage j
itself (points trained on stage j; fewer when the stage has fewer, never a point of an earlier
stage and never the untrained policy at timestep 0 while stage 0 has a later point), as Continual
World's results code averages the last 5 logged evaluations of the active
task (``tail(5)``; :data:`LAST_K`). That gives the score matrix
``E[i, j] = p_i(end of stage j)`` (:func:`score_matrix`), the continual-learning "accuracy
matrix", from which:

* final score ``p_i(T) = E[i, K-1]``; average performance ``P = mean_i p_i(T)``;
* forgetting ``F_i = p_i(end of stage i) - p_i(T) = E[i, i] - E[i, K-1]`` (the last stage's is 0;
  average forgetting is the mean over all K stages, as Continual World averages every task);
* backward transfer (Lopez-Paz & Ranzato 2017, "Gradient Episodic Memory for Continual
  Learning", NeurIPS) ``BWT_i = E[i, K-1] - E[i, i] = -F_i`` for i < K-1, averaged over those
  K-1 stages; and their forward transfer, here ``zero_shot_transfer``
  ``ZST_i = E[i, i-1] - p_i(0)``: stage i's score before it is trained, above the untrained
  policy's;
* forgetting of stage i caused by stage j > i: ``M[i, j] = E[i, j-1] - E[i, j]`` (the drop over
  stage j's span); ``sum_{j>i} M[i, j] = F_i`` exactly;
* the drop of stage i during stage j > i and its recovery (:func:`drop_matrices`, one definition
  for every report: :func:`esbench.analysis.retention_measures.drop_and_recovery`): against the
  model stage j started from, the drop to the mean over the first third of stage j's budget, the
  drop to the mean over its last third, and the recovery between them (the forgetting that
  recovers before the end, which ``F_i`` misses: the "stability gap" of De Lange et al. 2023,
  "Continual evaluation for lifelong learning: Identifying the stability gap", ICLR);
* forward transfer (Continual World): ``FT_i = (AUC_i - AUC_i^b) / (1 - AUC_i^b)`` with
  ``AUC_i = 1/Δ ∫ p_i(t) dt`` over stage i's span in the sequence (from its start, the parameters
  stage i-1 left) and ``AUC_i^b`` the same for the reference run (from its timestep 0). Integrals
  are trapezoids over the evaluation timesteps divided by the span covered; Continual World's code
  takes the plain mean of equally spaced evaluations, which differs only in how the end points
  weigh. FT is 1 when the sequence starts at the reference's final score and stays there, 0 when
  its curve equals the reference's, negative when it learns slower.

Parameter drift (:func:`param_drift`, :func:`layer_drift`) of a vector θ from a snapshot θ_k,
``Δ = θ - θ_k`` (computed in float64): global L2 ``||Δ||_2`` (the Frobenius norm over all weight
matrices), relative ``||Δ||_2 / ||θ_k||_2``, the same per layer, and update sparsity
``mean(|Δ| <= τ)`` at ``τ = 1e-6`` and ``1e-4`` (:data:`SPARSITY_THRESHOLDS`, the thresholds of
Abdi, Gupta et al.). :func:`run_retention` reports, per stage k, the stage's own *update*
(end of stage k minus its start: the quantity Abdi, Gupta et al. compare between ES and GRPO) and
the *drift* since stage k ended (final minus end of stage k: what could have caused ``F_k``).

Policy drift: the KL divergence ``KL(π_k || π)`` between the policy π_k that ended stage k and
the current one π, averaged over states π_k visited on stage k. The trainers compute it at every
evaluation point (the ``policy_kl`` column of ``metrics.csv``, on the row evaluating stage k; see
:mod:`esbench.training.drift`), with the formulas of :mod:`esbench.measures.distribution`,
re-exported here: :func:`kl_deterministic_gaussian` for deterministic continuous ES policies (a
Gaussian of std σ around each action, σ = the ES action noise, 0.01 by default),
:func:`kl_categorical` for discrete policies (softmax of logits), :func:`kl_diag_gaussian` for
stochastic SB3 Gaussian policies (means and log-stds). :func:`run_retention`'s ``kl`` is the last
point's value per stage, ``KL(π_k || π_final)``.

Across seeds (:func:`retention_table`): seeds are the replication unit; every metric gets its mean
over seeds and a Student-t 95% CI from :func:`esbench.analysis.metrics.intervals.mean_ci` (one
seeded Generator), per (algo, sequence, stage).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from esbench.analysis.drift import layer_drift as layer_drift  # re-exported
from esbench.analysis.metrics.intervals import mean_ci
from esbench.analysis.retention_measures import DROP_WINDOWS, DropWindows, drop_and_recovery, stage_fractions
from esbench.analysis.stats import IncompleteResultsError
from esbench.analysis.tables import fmt_num, write_table
from esbench.config.registry import label_of
from esbench.measures.distribution import (  # re-exported: the KL formulas
    ACTION_STD as ACTION_STD,
)
from esbench.measures.distribution import (
    kl_categorical as kl_categorical,
)
from esbench.measures.distribution import (
    kl_deterministic_gaussian as kl_deterministic_gaussian,
)
from esbench.measures.distribution import (
    kl_diag_gaussian as kl_diag_gaussian,
)
from esbench.measures.drift import SPARSITY_THRESHOLDS
from esbench.measures.drift import param_drift as param_drift  # re-exported
from esbench.measures.drift import update_sparsity as update_sparsity  # re-exported
from esbench.tracking.snapshot_drift import SnapshotDrift
from esbench.utils.layout import Block, ParamLayout, check_layout

#: Evaluations averaged for a value "at the end" (Continual World's results code: ``tail(5)``).
LAST_K = 5
#: ``stage_index`` / ``during`` / ``layer`` value of a row that is not about one stage / span / layer.
NONE = -1
#: Columns of :func:`run_retention`'s table.
RUN_COLUMNS: tuple[str, ...] = ("stage_index", "stage", "during", "layer", "metric", "value")
#: Grouping columns of :func:`retention_table` (besides the seed).
GROUP_COLUMNS: tuple[str, ...] = ("algo", "sequence", "stage_index", "stage", "during", "layer", "metric")


# --- curves ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SequenceCurves:
    """One sequence run's evaluations as arrays.

    Attributes:
        stages: Stage names in training order, length K (names may repeat, e.g. CW20 = CW10 twice).
        timesteps: Evaluation points' cumulative timesteps, shape (n_points,), non-decreasing.
        train_stage: Index of the stage trained at each point, shape (n_points,), non-decreasing.
        returns: ``eval_return_mean`` of stage i at point n, shape (K, n_points).
        boundaries: ``T_k``, the timesteps at which stage k ends, shape (K,).
    """

    stages: tuple[str, ...]
    timesteps: np.ndarray
    train_stage: np.ndarray
    returns: np.ndarray
    boundaries: np.ndarray


def _align_blocks(labels: Sequence[str], stages: tuple[str, ...]) -> np.ndarray:
    """Stage index of each row from its ``train_task`` label (rows in timestep order).

    Consecutive rows with one label form a block; blocks are matched to the stages in order, and a
    stage whose name is not the next block's is a stage with no training rows (zero budget).
    Adjacent stages with the same name cannot be told apart this way: pass boundaries instead.
    """
    out = np.empty(len(labels), dtype=int)
    k = 0
    start = 0
    while start < len(labels):
        stop = start
        while stop < len(labels) and labels[stop] == labels[start]:
            stop += 1
        while k < len(stages) and stages[k] != labels[start]:
            k += 1
        if k == len(stages):
            raise ValueError(
                f"train_task {labels[start]!r} at row {start} does not follow the stage order {list(stages)}"
            )
        out[start:stop] = k
        k += 1
        start = stop
    return out


def sequence_curves(
    metrics: pd.DataFrame, stages: Sequence[str], boundaries: Sequence[float] | None = None
) -> SequenceCurves:
    """Arrays of one sequence run's evaluations (see the module docstring's data model).

    Args:
        metrics: The run's ``metrics.csv`` (columns ``timesteps``, ``eval_task``,
            ``eval_return_mean``, and ``train_task`` unless ``boundaries`` is given).
        stages: Stage names in training order (from the run's ``sequence.stages``); a stage with
            no training rows still needs its name here.
        boundaries: ``T_k`` per stage, shape (K,), non-decreasing. When given, points are assigned
            to stages by timesteps (``T_{k-1} < t <= T_k``, stage 0 from 0) instead of by their
            ``train_task`` labels.

    Returns:
        The :class:`SequenceCurves`.

    Raises:
        ValueError: A stage is not evaluated at every point, or evaluated twice at one point; a
            ``train_task`` breaks the stage order; a point lies past the last boundary.
    """
    names = tuple(str(s) for s in stages)
    if not names:
        raise ValueError("a sequence has at least one stage")
    rows = metrics[np.isfinite(metrics["eval_return_mean"].to_numpy(float))]
    rows = rows[rows["eval_task"].fillna("").astype(str).isin(set(names))]
    rows = rows.sort_values("timesteps", kind="stable").reset_index(drop=True)
    t_rows = rows["timesteps"].to_numpy(float)
    if boundaries is None:
        labels = rows["train_task"].fillna("").astype(str) if "train_task" in rows else None
        if labels is None or (labels == "").any():
            raise ValueError("rows without a train_task: pass the stage boundaries")
        stage_of_row = _align_blocks(list(labels), names)
    else:
        bounds = np.asarray(boundaries, dtype=float)
        if bounds.shape != (len(names),) or np.any(np.diff(bounds) < 0):
            raise ValueError(f"boundaries must be {len(names)} non-decreasing timesteps, got {bounds}")
        if len(t_rows) and t_rows.max() > bounds[-1]:
            raise ValueError(f"evaluation at timesteps {t_rows.max()} after the last boundary {bounds[-1]}")
        stage_of_row = np.searchsorted(bounds, t_rows, side="left")
    keys = list(zip(t_rows.tolist(), stage_of_row.tolist(), strict=True))
    points = sorted(set(keys), key=lambda p: (p[1], p[0]))
    index = {p: n for n, p in enumerate(points)}
    returns = np.full((len(names), len(points)), np.nan)
    for key, task, value in zip(keys, rows["eval_task"].astype(str), rows["eval_return_mean"], strict=True):
        for i, name in enumerate(names):
            if name == task:
                if np.isfinite(returns[i, index[key]]):
                    raise ValueError(f"stage {i} ({name}) evaluated twice at timesteps {key[0]}")
                returns[i, index[key]] = float(value)
    if np.isnan(returns).any():
        i, n = np.argwhere(np.isnan(returns))[0]
        raise ValueError(f"stage {i} ({names[i]}) not evaluated at timesteps {points[n][0]}")
    timesteps = np.array([p[0] for p in points], dtype=float)
    train_stage = np.array([p[1] for p in points], dtype=int)
    if np.any(np.diff(timesteps) < 0):
        raise ValueError("stages' evaluation timesteps overlap: timesteps must grow over the sequence")
    if boundaries is None:
        bounds = np.zeros(len(names))
        for k in range(len(names)):
            own = timesteps[train_stage == k]
            bounds[k] = own.max() if len(own) else (bounds[k - 1] if k else 0.0)
    return SequenceCurves(names, timesteps, train_stage, returns, np.asarray(bounds, dtype=float))


def reference_curve(metrics: pd.DataFrame, stage: str) -> tuple[np.ndarray, np.ndarray]:
    """A single-stage reference run's curve on ``stage``.

    Args:
        metrics: The reference run's ``metrics.csv``.
        stage: The stage's name; rows evaluating another stage are dropped (rows with an empty
            ``eval_task`` count as this stage's).

    Returns:
        (timesteps, returns), each of shape (n_points,), sorted by timesteps.
    """
    rows = metrics[np.isfinite(metrics["eval_return_mean"].to_numpy(float))]
    if "eval_task" in rows:
        task = rows["eval_task"].fillna("").astype(str)
        rows = rows[(task == stage) | (task == "")]
    rows = rows.sort_values("timesteps", kind="stable")
    return rows["timesteps"].to_numpy(float), rows["eval_return_mean"].to_numpy(float)


# --- normalization -----------------------------------------------------------------------------


def normalized_scores(returns: ArrayLike, r_random: ArrayLike, r_ref: ArrayLike) -> np.ndarray:
    """``p_i(t) = (R_i(t) - R_i^random) / (R_i^ref - R_i^random)``.

    Args:
        returns: Raw returns, shape (K, n_points) (or (n_points,) with scalar references).
        r_random: Untrained policy's return per stage, shape (K,).
        r_ref: Reference return per stage, shape (K,).

    Returns:
        Normalized scores, the shape of ``returns``.

    Raises:
        ValueError: Some stage has ``r_ref == r_random`` (no scale).
    """
    rand = np.asarray(r_random, dtype=float)
    ref = np.asarray(r_ref, dtype=float)
    if np.any(ref == rand):
        raise ValueError(f"reference return equals the random return (no scale): {ref} vs {rand}")
    values = np.asarray(returns, dtype=float)
    if values.ndim == 2:
        return (values - rand[:, None]) / (ref - rand)[:, None]
    return (values - rand) / (ref - rand)


def normalization_from_runs(
    curves: SequenceCurves,
    references: Sequence[tuple[np.ndarray, np.ndarray]],
    random_from: Literal["sequence", "reference"] = "sequence",
) -> tuple[np.ndarray, np.ndarray]:
    """R^random and R^ref per stage from a sequence run and its single-stage reference runs.

    Args:
        curves: The sequence run.
        references: One (timesteps, returns) per stage (:func:`reference_curve`), length K; R^ref
            is its last evaluation, the model the reference run ended with.
        random_from: Take R_i^random from the sequence run's evaluation of stage i at timestep 0
            (default), or from reference run i's evaluation at timestep 0.

    Returns:
        (r_random, r_ref), each of shape (K,).

    Raises:
        ValueError: No evaluation at timestep 0 where R^random is read, or an empty reference.
    """
    k_stages = len(curves.stages)
    if len(references) != k_stages:
        raise ValueError(f"{len(references)} reference curves for {k_stages} stages")
    r_ref = np.zeros(k_stages)
    r_random = np.zeros(k_stages)
    for i, (t, r) in enumerate(references):
        if not len(r):
            raise ValueError(f"reference run of stage {i} ({curves.stages[i]}) has no evaluation")
        r_ref[i] = float(np.asarray(r, float)[-1])
        if random_from == "reference":
            if np.asarray(t, float)[0] != 0:
                raise ValueError(f"reference run of stage {i} has no evaluation at timestep 0")
            r_random[i] = float(r[0])
    if random_from == "sequence":
        if not len(curves.timesteps) or curves.timesteps[0] != 0:
            raise ValueError("the sequence run has no evaluation at timestep 0 (the untrained policy)")
        r_random = curves.returns[:, 0].astype(float)
    return r_random, r_ref


# --- curve metrics -----------------------------------------------------------------------------


def score_matrix(p: ArrayLike, train_stage: ArrayLike, last_k: int = LAST_K) -> np.ndarray:
    """``E[i, j] = p_i(end of stage j)``: mean of p_i over the last ``last_k`` points of stage j.

    Only the points trained on stage j itself are averaged (Continual World's ``tail(5)`` of the
    active task's own log): a stage with fewer than ``last_k`` points averages the points it has,
    never points of an earlier stage, and never point 0 (the untrained policy, before any
    training) while stage 0 has a later point: an end-of-stage score is a trained model's. A stage
    with no point (a zero budget) changed nothing, so
    its column repeats the stage before it.

    Args:
        p: Normalized scores, shape (K, n_points).
        train_stage: Stage trained at each point, shape (n_points,), non-decreasing.
        last_k: Points averaged (fewer where the stage has fewer).

    Returns:
        Shape (K, K); column j NaN when no point is trained on a stage <= j.
    """
    scores = np.asarray(p, dtype=float)
    stage = np.asarray(train_stage)
    k_stages = scores.shape[0]
    out = np.full((k_stages, k_stages), np.nan)
    for j in range(k_stages):
        own = np.flatnonzero(stage == j)
        if j == 0 and len(own) > 1:
            own = own[own > 0]
        if len(own):
            out[:, j] = scores[:, own[-last_k:]].mean(axis=1)
        elif j:
            out[:, j] = out[:, j - 1]
    return out


def final_scores(p: ArrayLike, train_stage: ArrayLike, last_k: int = LAST_K) -> np.ndarray:
    """``p_i(T)``, each stage's score at the end of the sequence, shape (K,)."""
    return score_matrix(p, train_stage, last_k)[:, -1]


def average_performance(p: ArrayLike, train_stage: ArrayLike, last_k: int = LAST_K) -> float:
    """``P = (1/K) sum_i p_i(T)`` (Continual World's average performance at the end)."""
    return float(np.mean(final_scores(p, train_stage, last_k)))


def forgetting(p: ArrayLike, train_stage: ArrayLike, last_k: int = LAST_K) -> np.ndarray:
    """``F_i = p_i(end of stage i) - p_i(T)``, shape (K,) (Continual World); the last stage's is 0."""
    e = score_matrix(p, train_stage, last_k)
    return np.diag(e) - e[:, -1]


def backward_transfer(p: ArrayLike, train_stage: ArrayLike, last_k: int = LAST_K) -> np.ndarray:
    """``BWT_i = p_i(T) - p_i(end of stage i) = E[i, K-1] - E[i, i]``, shape (K,); NaN for the last stage.

    Lopez-Paz & Ranzato (2017, "Gradient Episodic Memory for Continual Learning", NeurIPS, Sec. 3)
    average it over the first K-1 tasks (:func:`average_backward_transfer`): positive when later
    stages improved earlier ones, negative when they made the policy forget (then ``-F_i``).
    """
    e = score_matrix(p, train_stage, last_k)
    out = e[:, -1] - np.diag(e)
    out[-1] = np.nan
    return out


def average_backward_transfer(p: ArrayLike, train_stage: ArrayLike, last_k: int = LAST_K) -> float:
    """``BWT = 1/(K-1) sum_{i<K-1} (E[i, K-1] - E[i, i])`` (Lopez-Paz & Ranzato 2017); NaN for K=1."""
    values = backward_transfer(p, train_stage, last_k)[:-1]
    return float(np.mean(values)) if len(values) else float("nan")


def zero_shot_transfer(p: ArrayLike, train_stage: ArrayLike, last_k: int = LAST_K) -> np.ndarray:
    """``E[i, i-1] - p_i(0)``, shape (K,) (NaN for stage 0): stage i's score before it is trained,
    above the untrained policy's (Lopez-Paz & Ranzato's forward transfer, ``R_{i-1,i} - b_i``; the
    untrained policy is the sequence run's evaluation at its first point).
    """
    scores = np.asarray(p, dtype=float)
    e = score_matrix(scores, train_stage, last_k)
    out = np.full(scores.shape[0], np.nan)
    for i in range(1, scores.shape[0]):
        out[i] = e[i, i - 1] - scores[i, 0]
    return out


def forgetting_matrix(p: ArrayLike, train_stage: ArrayLike, last_k: int = LAST_K) -> np.ndarray:
    """``M[i, j] = p_i(end of stage j-1) - p_i(end of stage j)`` for j > i: stage i's forgetting
    over stage j's span. Shape (K, K), NaN for j <= i; each row sums to ``F_i``.
    """
    e = score_matrix(p, train_stage, last_k)
    k_stages = e.shape[0]
    out = np.full((k_stages, k_stages), np.nan)
    for i in range(k_stages):
        for j in range(i + 1, k_stages):
            out[i, j] = e[i, j - 1] - e[i, j]
    return out


def drop_matrices(
    p: ArrayLike,
    train_stage: ArrayLike,
    timesteps: ArrayLike,
    boundaries: ArrayLike,
    windows: DropWindows = DROP_WINDOWS,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Early drop, late drop and recovery of each stage i during each later stage j > i
    (:func:`esbench.analysis.retention_measures.drop_and_recovery`: windows fixed as fractions of
    stage j's budget ``T_j - T_{j-1}``, the mean over each window's points, against the model
    stage j started from, the last point before stage j's own).

    Args:
        p: Normalized scores, shape (K, n_points).
        train_stage: Stage trained at each point, shape (n_points,), non-decreasing.
        timesteps: The points' cumulative timesteps, shape (n_points,).
        boundaries: ``T_k`` per stage, shape (K,).
        windows: The early and late windows.

    Returns:
        (early, late, recovery), each of shape (K, K); NaN for j <= i, for stages j without
        evaluation points and where a window holds no point.
    """
    scores = np.asarray(p, dtype=float)
    stage = np.asarray(train_stage)
    t = np.asarray(timesteps, dtype=float)
    bounds = np.asarray(boundaries, dtype=float)
    k_stages = scores.shape[0]
    early, late, recovery = (np.full((k_stages, k_stages), np.nan) for _ in range(3))
    for j in range(1, k_stages):
        own, before = np.flatnonzero(stage == j), np.flatnonzero(stage < j)
        if not len(own) or not len(before):
            continue
        fraction = stage_fractions(t[own], bounds[j - 1], bounds[j])
        for i in range(j):
            early[i, j], late[i, j], recovery[i, j] = drop_and_recovery(
                fraction, scores[i, own], scores[i, before[-1]], windows
            )
    return early, late, recovery


def normalized_auc(timesteps: ArrayLike, p: ArrayLike) -> float:
    """``1/Δ ∫ p(t) dt`` over the points' span (trapezoids); the value itself for one point.

    Args:
        timesteps: Shape (n,), non-decreasing.
        p: Normalized scores, shape (n,).
    """
    t = np.asarray(timesteps, dtype=float)
    y = np.asarray(p, dtype=float)
    if not len(y):
        return float("nan")
    width = t[-1] - t[0]
    if width <= 0:
        return float(np.mean(y))
    return float(np.sum((y[1:] + y[:-1]) * np.diff(t)) / 2.0 / width)


def stage_span(curves: SequenceCurves, i: int) -> np.ndarray:
    """Indices of the points spanning stage i: its own points, preceded by the last point before
    them when that one is earlier (the parameters stage i starts from). Empty for a stage with
    no evaluation point."""
    own = np.flatnonzero(curves.train_stage == i)
    if len(own) and own[0] > 0 and curves.timesteps[own[0] - 1] < curves.timesteps[own[0]]:
        own = np.concatenate([[own[0] - 1], own])
    return own


def forward_transfer(auc: float, auc_ref: float) -> float:
    """``FT = (AUC - AUC^b) / (1 - AUC^b)`` (Continual World); NaN when ``AUC^b == 1``."""
    if auc_ref == 1.0:
        return float("nan")
    return float((auc - auc_ref) / (1.0 - auc_ref))


def forward_transfers(
    curves: SequenceCurves,
    p: np.ndarray,
    references: Sequence[tuple[np.ndarray, np.ndarray] | None],
    r_random: np.ndarray,
    r_ref: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per stage: the sequence's AUC, the reference's AUC and the forward transfer.

    Args:
        curves: The sequence run.
        p: Its normalized scores, shape (K, n_points).
        references: One raw (timesteps, returns) per stage, or None where there is no reference.
        r_random: R^random per stage, shape (K,), to normalize the references.
        r_ref: R^ref per stage, shape (K,).

    Returns:
        (auc, auc_ref, ft), each of shape (K,); NaN for a stage with no evaluation point or no
        reference.
    """
    k_stages = len(curves.stages)
    auc = np.full(k_stages, np.nan)
    auc_b = np.full(k_stages, np.nan)
    ft = np.full(k_stages, np.nan)
    for i in range(k_stages):
        span = stage_span(curves, i)
        if len(span):
            auc[i] = normalized_auc(curves.timesteps[span], np.asarray(p)[i, span])
        ref = references[i] if i < len(references) else None
        if ref is not None and len(ref[1]):
            t_ref, r = ref
            pr = normalized_scores(np.asarray(r, float), np.asarray(r_random)[i], np.asarray(r_ref)[i])
            auc_b[i] = normalized_auc(np.asarray(t_ref, float), pr)
        if np.isfinite(auc[i]) and np.isfinite(auc_b[i]):
            ft[i] = forward_transfer(auc[i], auc_b[i])
    return auc, auc_b, ft


# --- parameter drift ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Snapshots:
    """A run's stage-boundary parameter snapshots (``snapshots.npz``, :mod:`esbench.tracking.schema`).

    Attributes:
        params: Shape (n_rows, n_params): row k the flat vector at the start of stage k; a complete
            run has K + 1 rows, the last the final parameters.
        boundaries: ``T_k`` of the stages ended when the file was written, shape (n_ended,).
        stages: Stage names (empty when the file does not list them).
        layout: The vector's layer blocks, or None when the file has none.
        names: The blocks' names (a language model's parameter names), or empty.
    """

    params: np.ndarray
    boundaries: np.ndarray
    stages: tuple[str, ...]
    layout: ParamLayout | None
    names: tuple[str, ...] = ()


def load_snapshots(path: str | Path) -> Snapshots:
    """Read ``snapshots.npz`` (written by :func:`esbench.training.ruler.write_snapshots`) with
    ``allow_pickle=False``: arrays only, no code runs.

    Arrays read: ``params`` (required, 2-D), ``boundaries``, ``stages``, ``layout_starts`` and
    ``layout_shapes`` (JSON list of shapes), each optional.

    Raises:
        ValueError: Not a readable npz, or no 2-D ``params`` array, or a layout that does not tile
            the vector.
    """
    import json

    try:
        with np.load(Path(path), allow_pickle=False) as archive:
            arrays = {k: archive[k] for k in archive.files}
    except Exception as e:  # a cut or foreign file: zip, pickle-refusal and OS errors alike
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ValueError(f"{Path(path).name} unreadable ({reason})") from None
    params = arrays.get("params")
    if params is None or params.ndim != 2:
        raise ValueError(f"{Path(path).name} has no 2-D array 'params'")
    layout: ParamLayout | None = None
    if "layout_starts" in arrays and "layout_shapes" in arrays:
        shapes = json.loads(str(arrays["layout_shapes"]))
        starts = [int(v) for v in arrays["layout_starts"]]
        layout = tuple(
            Block(start, tuple(int(d) for d in shape)) for start, shape in zip(starts, shapes, strict=True)
        )
        check_layout(layout, params.shape[1])
    return Snapshots(
        params=params,
        boundaries=np.asarray(arrays.get("boundaries", np.empty(0)), dtype=float),
        stages=tuple(str(v) for v in arrays.get("stages", np.empty(0, dtype=str))),
        layout=layout,
        names=tuple(str(v) for v in arrays.get("layout_names", np.empty(0, dtype=str))) if layout else (),
    )


# --- policy drift ------------------------------------------------------------------------------


# The KL formulas live with the action distributions (esbench.measures.distribution), shared
# with the trainers that compute the ``policy_kl`` metrics column; re-exported here.


# --- one run, then seeds -----------------------------------------------------------------------


def run_retention(
    curves: SequenceCurves,
    r_random: np.ndarray,
    r_ref: np.ndarray,
    references: Sequence[tuple[np.ndarray, np.ndarray] | None] | None = None,
    drift: SnapshotDrift | None = None,
    kl: Sequence[float] | None = None,
    last_k: int = LAST_K,
    thresholds: Sequence[float] = SPARSITY_THRESHOLDS,
) -> pd.DataFrame:
    """Every retention metric of one sequence run, as a tidy table.

    Args:
        curves: The run (:func:`sequence_curves`).
        r_random: R^random per stage, shape (K,).
        r_ref: R^ref per stage, shape (K,).
        references: Raw (timesteps, returns) of the reference run per stage (None entries
            allowed), for the forward transfer; None: no forward transfer.
        drift: The drift between the run's K + 1 stage-boundary snapshots (row k the parameters
            at the start of stage k, row K the final ones; :class:`SnapshotDrift`, per layer when
            it has a layout); None: no drift.
        kl: Per stage k, the mean over stage-k states of ``KL(π_k || π_final)`` (computed by the
            caller with the ``kl_*`` functions); None: no KL.
        last_k: Evaluations averaged "at the end".
        thresholds: τ of the update sparsity.

    Returns:
        Columns :data:`RUN_COLUMNS`. ``stage_index``/``stage`` is the stage the value is about
        (``-1``/``"all"`` for the sequence averages), ``during`` the later stage for
        ``forgetting_during``, ``early_drop``, ``late_drop`` and ``recovery`` (:func:`drop_matrices`;
        else -1), ``layer`` the block for per-layer
        drift (else -1). Metrics: ``end_of_stage_score``, ``final_score``, ``forgetting``,
        ``forgetting_during``, ``early_drop``, ``late_drop``, ``recovery``, ``max_early_drop``,
        ``auc``, ``auc_ref``,
        ``forward_transfer``, ``backward_transfer``, ``zero_shot_transfer``,
        ``end_of_stage_return`` and ``final_return`` (raw returns, beside the normalized scores),
        ``update_<l2|rel|sparsity@τ>`` (stage k's own update),
        ``drift_<...>`` (final minus end of stage k), ``kl``, ``average_performance``,
        ``average_forgetting``, ``average_forward_transfer``, ``average_backward_transfer``.
        Undefined values (a later stage with no evaluation point, a stage with no reference) have
        no row.
    """
    k_stages = len(curves.stages)
    p = normalized_scores(curves.returns, r_random, r_ref)
    e = score_matrix(p, curves.train_stage, last_k)
    forget = np.diag(e) - e[:, -1]
    m = forgetting_matrix(p, curves.train_stage, last_k)
    early, late, recovery = drop_matrices(p, curves.train_stage, curves.timesteps, curves.boundaries)
    rows: list[tuple[int, str, int, int, str, float]] = []

    def add(i: int, metric: str, value: float, during: int = NONE, layer: int = NONE) -> None:
        if np.isfinite(value):
            stage = curves.stages[i] if i >= 0 else "all"
            rows.append((i, stage, during, layer, metric, float(value)))

    bwt = backward_transfer(p, curves.train_stage, last_k)
    zst = zero_shot_transfer(p, curves.train_stage, last_k)
    raw = score_matrix(curves.returns, curves.train_stage, last_k)
    for i in range(k_stages):
        add(i, "end_of_stage_return", raw[i, i])
        add(i, "final_return", raw[i, -1])
        add(i, "backward_transfer", bwt[i])
        add(i, "zero_shot_transfer", zst[i])
        add(i, "end_of_stage_score", e[i, i])
        add(i, "final_score", e[i, -1])
        add(i, "forgetting", forget[i])
        for j in range(i + 1, k_stages):
            add(i, "forgetting_during", m[i, j], during=j)
            add(i, "early_drop", early[i, j], during=j)
            add(i, "late_drop", late[i, j], during=j)
            add(i, "recovery", recovery[i, j], during=j)
        later = early[i, i + 1 :]
        if np.isfinite(later).any():
            add(i, "max_early_drop", float(np.nanmax(later)))
    if references is not None:
        auc, auc_b, ft = forward_transfers(curves, p, references, r_random, r_ref)
        for i in range(k_stages):
            add(i, "auc", auc[i])
            add(i, "auc_ref", auc_b[i])
            add(i, "forward_transfer", ft[i])
        if np.isfinite(ft).any():
            add(NONE, "average_forward_transfer", float(np.nanmean(ft)))
    if drift is not None:
        if drift.n_rows != k_stages + 1:
            raise ValueError(f"drift is about {drift.n_rows} snapshot rows, expected {k_stages + 1} (K + 1)")
        for i in range(k_stages):
            pairs = {"update": (i, i + 1), "drift": (i + 1, k_stages)}
            for kind, (a, b) in pairs.items():
                for name, value in drift.whole(a, b).items():
                    add(i, f"{kind}_{name}", value)
                for _, row in drift.layers(a, b).iterrows():
                    for name in ("l2", "rel", *(f"sparsity@{t:g}" for t in thresholds)):
                        add(i, f"{kind}_{name}", row[name], layer=int(row["layer"]))
    if kl is not None:
        for i, value in enumerate(kl):
            add(i, "kl", float(value))
    if k_stages > 1:
        add(NONE, "average_backward_transfer", float(np.mean(bwt[:-1])))
    add(NONE, "average_performance", float(np.mean(e[:, -1])))
    add(NONE, "average_forgetting", float(np.mean(forget)))
    return pd.DataFrame(rows, columns=list(RUN_COLUMNS))


def retention_table(
    per_run: pd.DataFrame,
    rng: np.random.Generator,
    confidence: float = 0.95,
    allow_partial: bool = False,
) -> pd.DataFrame:
    """Mean over seeds and Student-t CI of every metric per (algo, sequence, stage).

    Args:
        per_run: :func:`run_retention` tables of several runs, concatenated, each with columns
            ``algo``, ``sequence`` and ``seed`` added.
        rng: The one seeded Generator every bootstrap draws from (groups in sorted order).
        confidence: Confidence level.
        allow_partial: Accept conditions (algo, sequence) with different seed counts.

    Returns:
        One row per :data:`GROUP_COLUMNS` key: those columns, ``n_seeds`` (seeds with a value),
        ``mean``, ``low``, ``high`` (NaN with fewer than 2 seeds).

    Raises:
        IncompleteResultsError: Conditions differ in seed count, and not ``allow_partial``.
        ValueError: One seed gives two values for one key.
    """
    missing = [c for c in (*GROUP_COLUMNS, "seed", "value") if c not in per_run]
    if missing:
        raise ValueError(f"per-run table lacks columns {missing}")
    key = [*GROUP_COLUMNS, "seed"]
    twice = per_run.duplicated(key, keep=False)
    if twice.any():
        first = per_run[twice].iloc[0]
        raise ValueError(f"one seed, two values: {dict(first[key])}")
    seeds = per_run.groupby(["algo", "sequence"])["seed"].nunique()
    if not allow_partial and seeds.nunique() > 1:
        lines = "\n".join(f"  {a}/{s}: {n} seed(s)" for (a, s), n in seeds.items())
        raise IncompleteResultsError(f"seed counts differ between conditions:\n{lines}\npass allow_partial")
    rows = []
    for values_key, group in per_run.groupby(list(GROUP_COLUMNS), sort=True):
        values = group.sort_values("seed")["value"].to_numpy(float)
        values = values[np.isfinite(values)]
        mean, low, high = mean_ci(values, rng, confidence) if len(values) else (np.nan, np.nan, np.nan)
        rows.append(
            {
                **dict(zip(GROUP_COLUMNS, values_key, strict=True)),
                "n_seeds": len(values),
                "mean": float(mean),
                "low": float(low),
                "high": float(high),
            }
        )
    return pd.DataFrame(rows, columns=[*GROUP_COLUMNS, "n_seeds", "mean", "low", "high"])


#: Metrics of the display table, in column order, with their headers.
DISPLAY_METRICS: Mapping[str, str] = {
    "final_score": "Final score",
    "forgetting": "Forgetting",
    "max_early_drop": "Max early drop",
    "forward_transfer": "Forward transfer",
    "backward_transfer": "Backward transfer",
    "drift_l2": "Drift L2",
    "drift_rel": "Relative drift",
    "update_sparsity@1e-06": "Update sparsity (1e-6)",
    "average_performance": "Average performance",
    "average_forgetting": "Average forgetting",
    "average_forward_transfer": "Average forward transfer",
    "average_backward_transfer": "Average backward transfer",
}


def write_retention_table(table: pd.DataFrame, out_dir: Path, last_k: int = LAST_K) -> dict[str, Path]:
    """CSV (all of :func:`retention_table`) and Markdown / LaTeX (headline metrics) of it.

    The display has one row per (algo, sequence, stage), the sequence averages ("all") after the
    stages, and one column per metric of :data:`DISPLAY_METRICS` present (global values: no
    per-span or per-layer entries), each ``mean [low, high]``.

    Args:
        table: Output of :func:`retention_table`.
        out_dir: Directory of the files.
        last_k: The evaluations averaged "at the end" when the table was made (for the notes).

    Returns:
        {"csv": path, "md": path, "tex": path} of ``out_dir/retention.*``.
    """
    head = table[(table["during"] == NONE) & (table["layer"] == NONE) & table["metric"].isin(DISPLAY_METRICS)]
    shown = [m for m in DISPLAY_METRICS if m in set(head["metric"])]

    def cell(r: pd.Series) -> str:
        if np.isfinite(r["low"]):
            return f"{fmt_num(r['mean'])} [{fmt_num(r['low'])}, {fmt_num(r['high'])}]"
        return fmt_num(r["mean"])

    rows = []
    order = head.assign(_last=head["stage_index"] == NONE)
    for (algo, seq, _, idx, stage), group in order.groupby(
        ["algo", "sequence", "_last", "stage_index", "stage"], sort=True
    ):
        cells = {r["metric"]: cell(r) for _, r in group.iterrows()}
        name = "all" if idx == NONE else f"{idx}: {stage}"
        row = {"Algorithm": label_of(str(algo)), "Sequence": str(seq), "Stage": name}
        row.update({DISPLAY_METRICS[m]: cells.get(m, "—") for m in shown})
        rows.append(row)
    display = pd.DataFrame(
        rows, columns=["Algorithm", "Sequence", "Stage", *(DISPLAY_METRICS[m] for m in shown)]
    )
    notes = (
        "Scores normalized per stage: 0 = the untrained policy, 1 = the single-stage reference's final "
        f"return; values at an end are means of the last {last_k} evaluations. Forgetting: end-of-stage "
        "score minus final score; early drop: the fall from the score a later stage started from to its "
        "mean over that stage's first third (the largest over later stages; the CSV adds the drop over the "
        "last third and the recovery between them); forward transfer: "
        "Continual World's normalized area against the reference "
        "(Wołczyk et al. 2021). Drift: L2 distance of the final parameters from the end of the stage. "
        "Behaviour on one scale for every algorithm (RMS mean-action change, RMS parameter change, KL "
        "only between stochastic policies) is in the behavioural distance table; the CSV's kl scores "
        "ES's deterministic actions as Gaussians of std 0.01 and is not comparable across families. "
        "Mean over seeds with Student-t 95% CIs."
    )
    return write_table(
        table,
        display,
        Path(out_dir) / "retention",
        caption="Retention over the task sequence: forgetting, forward transfer and drift per stage",
        label="tab:retention",
        notes=notes,
    )
