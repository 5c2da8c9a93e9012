"""Forgetting at matched gain: does ES lose more of the earlier stages than RL *for the same gain*
on the new stage? And the other side's tests: does the drop recover, does a larger population
forget less, does Anchored Weight Decay keep more?

Why matched gain: on a sequence whose stages compete, any gain on the new stage is a loss on the
old one, so an algorithm that learns the new stage further also "forgets" more; an unconditional
forgetting number cannot tell the two apart (Abdi, Gupta et al. 2026, arXiv:2601.20861, compare ES
and GRPO at matched new-task reward). Here each run's path through training is read as points
(gain, retention), and algorithms are compared where every one of them has been.

Definitions (normalized scores ``p_i(t)`` on the one scale of
:func:`esbench.analysis.retention_report.common_scale`; a later stage j >= 1 of a run):

* the stage's span: its own evaluation points, preceded by the last point before them (the
  parameters stage j started from; :func:`~esbench.analysis.retention.stage_span`);
* gain ``x(t) = p_j(t) - p_j(t_start)``, the normalized gain on the current stage since it began;
* retention ``y(t) = mean_{i<j} p_i(t) - mean_{i<j} p_i(t_start)``, the change of the normalized
  score on the earlier stages since the stage began (0: nothing lost; -0.3: 30% of the reference's
  progress lost). The change, not the level: algorithms that learned the earlier stages to
  different levels would otherwise differ at matched gain by what they learned, not by what they
  lost;
* a condition's mean path: ``x_bar(tau)`` and ``y_bar(tau)``, the means over its seeds with
  ``tau`` the training progress since the stage began (timesteps; each run linear between its
  points, over the progress every run of the condition covers; :func:`mean_path`);
* the matched gain ``g*`` of a (sequence, stage): the largest gain every compared *condition*
  reaches, ``min over conditions of max_tau x_bar(tau)`` (per pair of conditions in the claims; in
  the per-condition table, over the conditions whose mean path reaches ``min_gain``, so one
  condition that never gains does not pin ``g*`` at 0). A condition's gain is its mean over seeds,
  not its weakest seed's: a minimum over runs falls with every seed added, so more seeds would
  decide less;
* a condition's retention at ``g*``: each run's ``y`` at ``tau*``, the progress where the
  condition's mean gain first reaches ``g*`` (linear between the two points around the crossing),
  so every seed is read at the same point of training and contributes one value.

The claim "ES forgets more than RL" is decided, per (sequence, stage) and per pair (an ES
condition, an RL condition), by ``d = y_ES(g*) - y_RL(g*)``, the difference of the conditions' mean
retention at ``g*`` over seeds, with a Welch t interval (:func:`welch_diff_ci`; independent
groups, unequal variances): supported when the interval lies below 0, contradicted when above,
undecided when it holds 0, or when ``g*`` is below ``min_gain`` (no gain to match: the claim is
about matched gain; the report's :data:`MIN_MATCHED_GAIN` on the normalized scale, where a smaller
``g*`` reads retention at the stage's first points).
Per condition, the mean and interval of its retention come from
:func:`esbench.analysis.stats.mean_ci`.

Transient against permanent (Schweighofer et al. 2026, arXiv:2605.30148, report that ES's drop is
mostly drift that recovers): for an earlier stage i during stage j, the drop to the lowest point
``E[i, j-1] - min_t p_i(t)`` against the drop at the stage's end ``E[i, j-1] - E[i, j]`` (``E`` the
end-of-stage scores of :func:`~esbench.analysis.retention.score_matrix`); their difference
``E[i, j] - min_t p_i(t)`` is the recovery. A drop is called transient when the recovery's interval
lies above 0 and the end drop's holds 0, permanent when the end drop's lies above 0 and the
recovery's holds 0, partly transient when both lie above 0.

Population size and Anchored Weight Decay: the same difference at ``g*`` between conditions of one
algorithm (``@pop<N>`` conditions: larger minus smaller population; ``+awd`` minus plain), the
claims "forgetting shrinks with population size" and "AWD keeps retention at matched gain".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from esbench.analysis.conditions import AWD_SUFFIX, POP_SEP, base_algo
from esbench.analysis.metrics.intervals import mean_ci, welch_ci
from esbench.analysis.metrics.planning import seeds_to_decide
from esbench.analysis.retention import LAST_K, score_matrix

#: The smallest matched gain the retention report compares at, on the normalized scale (5% of the
#: way from the untrained policies to the best reference run): below it, retention is read at the
#: stage's first points, before any learning a comparison could be about.
MIN_MATCHED_GAIN = 0.05
#: Verdicts of a claim decided by an interval.
SUPPORTED, CONTRADICTED, UNDECIDED = "supported", "contradicted", "undecided"
#: Columns of :func:`matched_gain_table`.
MATCHED_COLUMNS: tuple[str, ...] = (
    "sequence",
    "stage_index",
    "stage",
    "algo",
    "n_seeds",
    "max_gain",
    "matched_gain",
    "retention_at_matched_gain",
    "low",
    "high",
)
#: Columns of :func:`matched_gain_claims`.
CLAIM_COLUMNS: tuple[str, ...] = (
    "sequence",
    "stage_index",
    "stage",
    "claim",
    "a",
    "b",
    "matched_gain",
    "retention_a",
    "retention_b",
    "difference",
    "low",
    "high",
    "n_a",
    "n_b",
    "verdict",
    "seeds_to_decide",
)


@dataclass(frozen=True)
class GainPath:
    """One run's path through a later stage j: gain and retention at each point of its span."""

    algo: str
    sequence: str
    seed: int
    stage_index: int
    stage: str
    gain: np.ndarray
    retention: np.ndarray
    progress: np.ndarray
    """Training progress since the stage began at each point (timesteps, or evaluation points),
    starting at 0 and strictly increasing."""


def mean_path(paths: Sequence[GainPath]) -> tuple[np.ndarray, np.ndarray]:
    """A condition's mean gain over its runs against training progress.

    Each run is linear between its points; the grid is every run's progress up to the progress
    every run covers (the shortest run's end), so no run is extrapolated.

    Returns:
        (grid, mean gain on it), both ascending in progress.
    """
    end = min(float(p.progress[-1]) for p in paths)
    grid = np.unique(np.concatenate([p.progress[p.progress <= end] for p in paths]))
    gains = np.array([np.interp(grid, p.progress, p.gain) for p in paths])
    return grid, gains.mean(axis=0)


def crossing(grid: np.ndarray, values: np.ndarray, g: float) -> float:
    """The first ``grid`` position where ``values`` reach ``g``, linear between the two points
    around the crossing; ``grid[0]`` when the first value does; NaN when none does."""
    reached = np.flatnonzero(values >= g)
    if not len(reached):
        return float("nan")
    n = int(reached[0])
    if n == 0:
        return float(grid[0])
    x0, x1, t0, t1 = values[n - 1], values[n], grid[n - 1], grid[n]
    return float(t0 + (g - x0) / (x1 - x0) * (t1 - t0))


def retention_at_matched_gain(
    paths: Sequence[GainPath], path: tuple[np.ndarray, np.ndarray], g: float
) -> np.ndarray:
    """Each run's retention at the progress where its condition's mean gain first reaches ``g``
    (:func:`crossing` on ``path``, the condition's :func:`mean_path`); all NaN when the mean gain
    never does (or ``g`` is NaN)."""
    tau = crossing(*path, g) if np.isfinite(g) else float("nan")
    if not np.isfinite(tau):
        return np.full(len(paths), np.nan)
    return np.array([np.interp(tau, p.progress, p.retention) for p in paths])


def welch_diff_ci(
    a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, confidence: float = 0.95
) -> tuple[float, float, float]:
    """``mean(a) - mean(b)`` over the finite values, with Welch's t interval
    (:func:`esbench.analysis.stats.welch_ci`: two independent groups, unequal variances,
    Welch-Satterthwaite degrees of freedom).

    Returns:
        (difference, low, high); all NaN when a group has no finite value, NaN bounds when a group
        has fewer than 2.
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    x, y = x[np.isfinite(x)], y[np.isfinite(y)]
    if not len(x) or not len(y):
        return float("nan"), float("nan"), float("nan")
    return welch_ci(x, y, confidence)


def verdict(low: float, high: float, below_supports: bool = True) -> str:
    """The claim's verdict from an interval of a difference: supported when the interval lies on
    the claim's side of 0 (below it when ``below_supports``), contradicted on the other side,
    undecided when it holds 0 or is undefined."""
    if not (np.isfinite(low) and np.isfinite(high)):
        return UNDECIDED
    if high < 0:
        return SUPPORTED if below_supports else CONTRADICTED
    if low > 0:
        return CONTRADICTED if below_supports else SUPPORTED
    return UNDECIDED


def gain_paths(curves: pd.DataFrame) -> list[GainPath]:
    """Every run's (gain, retention) path through each of its later stages.

    Args:
        curves: :attr:`esbench.analysis.retention_report.RetentionData.curves` (normalized ``p``
            per run, stage and point).

    Returns:
        One :class:`GainPath` per (run, later stage with at least one point).
    """
    out: list[GainPath] = []
    if curves.empty:
        return out
    for (algo, sequence, seed, _), run in curves.groupby(["algo", "sequence", "seed", "run_id"], sort=True):
        wide = run.pivot_table(index=["timesteps", "train_stage"], columns="stage_index", values="p")
        wide = wide.sort_index(level=[1, 0])
        names = run.drop_duplicates("stage_index").set_index("stage_index")["stage"]
        stage = wide.index.get_level_values("train_stage").to_numpy(int)
        timesteps = wide.index.get_level_values("timesteps").to_numpy(float)
        p = wide.to_numpy(float).T  # (K, n_points)
        for j in range(1, p.shape[0]):
            own = np.flatnonzero(stage == j)
            if not len(own):
                continue
            span = np.concatenate([[own[0] - 1], own]) if own[0] > 0 else own
            gain = p[j, span] - p[j, span[0]]
            earlier = p[:j, span].mean(axis=0)
            retention = earlier - earlier[0]
            progress = timesteps[span] - timesteps[span[0]]
            path = GainPath(str(algo), str(sequence), int(seed), j, str(names[j]), gain, retention, progress)
            out.append(path)
    return out


def matched_gain_table(
    paths: Sequence[GainPath], rng: np.random.Generator, min_gain: float | None = None
) -> pd.DataFrame:
    """Per (sequence, later stage, condition): the matched gain ``g*`` and the retention there,
    mean over seeds with :func:`~esbench.analysis.stats.mean_ci`.

    Args:
        paths: :func:`gain_paths`.
        rng: For the intervals.
        min_gain: ``g*`` is the largest gain every condition's mean path reaches (None), or every
            condition's whose mean path reaches ``min_gain`` (the others: no retention value,
            ``n_seeds`` 0, their ``max_gain`` says why).

    Returns:
        Columns :data:`MATCHED_COLUMNS` (``max_gain``: the largest gain of the condition's mean
        path, :func:`mean_path`).
    """
    rows = []
    for (sequence, j), group in _by_stage(paths).items():
        by_algo = _by_condition(group)
        means = {a: mean_path(mine) for a, mine in by_algo.items()}
        top = {a: float(np.max(gain)) for a, (_, gain) in means.items()}
        matched = {a for a, g in top.items() if min_gain is None or g >= min_gain}
        g_star = min((top[a] for a in matched), default=float("nan"))
        for algo, mine in by_algo.items():
            at = g_star if algo in matched else float("nan")
            values = retention_at_matched_gain(mine, means[algo], at)
            values = values[np.isfinite(values)]
            mean, low, high = _mean_ci(values, rng)
            rows.append(
                {
                    "sequence": sequence,
                    "stage_index": j,
                    "stage": mine[0].stage,
                    "algo": algo,
                    "n_seeds": len(values),
                    "max_gain": top[algo],
                    "matched_gain": g_star,
                    "retention_at_matched_gain": mean,
                    "low": low,
                    "high": high,
                }
            )
    return pd.DataFrame(rows, columns=list(MATCHED_COLUMNS))


def matched_gain_claims(
    paths: Sequence[GainPath],
    family_of: Callable[[str], str | None],
    confidence: float = 0.95,
    per_pair: bool = False,
    min_gain: float = 0.0,
) -> pd.DataFrame:
    """The pairwise claims at matched gain, per (sequence, later stage).

    The matched gain ``g*`` is the largest gain every condition's mean path reaches (module
    docstring); with ``per_pair``, the two conditions compared, so a condition that never gains
    (a small population, say) leaves the other pairs' claims decidable.

    * ``es_forgets_more``: every ES condition against every RL condition (by ``family_of`` of
      the condition), ``d = y_a - y_b``; supported when the interval lies below 0.
    * ``larger_population_forgets_less``: conditions ``X@pop<n>`` and ``X@pop<m>`` with n > m,
      ``d = y_n - y_m``; supported when above 0.
    * ``awd_keeps_retention``: ``X+awd...`` against ``X...``, ``d = y_awd - y_plain``;
      supported when above 0.

    Returns:
        Columns :data:`CLAIM_COLUMNS`; undecided with ``g* <= 0`` or below ``min_gain`` (no gain
        to match; no seeds-to-decide either).
    """
    rows = []
    for (sequence, j), group in _by_stage(paths).items():
        by_algo = _by_condition(group)
        means = {a: mean_path(mine) for a, mine in by_algo.items()}
        top = {a: float(np.max(gain)) for a, (_, gain) in means.items()}
        conditions = sorted(top)
        pairs: list[tuple[str, str, str, bool]] = []
        fam = {a: family_of(base_algo(a)) for a in conditions}
        for a in conditions:
            for b in conditions:
                if fam[a] == "es" and fam[b] not in (None, "es"):
                    pairs.append(("es_forgets_more", a, b, True))
                if AWD_SUFFIX in a and a.replace(AWD_SUFFIX, "", 1) == b:
                    pairs.append(("awd_keeps_retention", a, b, False))
                if POP_SEP in a and POP_SEP in b:
                    (na, pa), (nb, pb) = a.rsplit(POP_SEP, 1), b.rsplit(POP_SEP, 1)
                    if na == nb and int(pa) > int(pb):
                        pairs.append(("larger_population_forgets_less", a, b, False))
        for claim, a, b, below in pairs:
            g_star = min(top[a], top[b]) if per_pair else min(top.values())
            at = {c: retention_at_matched_gain(by_algo[c], means[c], g_star) for c in (a, b)}
            d, low, high = welch_diff_ci(at[a], at[b], confidence)
            matchable = g_star > 0 and g_star >= min_gain
            ya, yb = at[a][np.isfinite(at[a])], at[b][np.isfinite(at[b])]
            rows.append(
                {
                    "sequence": sequence,
                    "stage_index": j,
                    "stage": group[0].stage,
                    "claim": claim,
                    "a": a,
                    "b": b,
                    "matched_gain": g_star,
                    "retention_a": float(np.mean(ya)) if len(ya) else float("nan"),
                    "retention_b": float(np.mean(yb)) if len(yb) else float("nan"),
                    "difference": d,
                    "low": low,
                    "high": high,
                    "n_a": len(ya),
                    "n_b": len(yb),
                    "verdict": verdict(low, high, below) if matchable else UNDECIDED,
                    "seeds_to_decide": seeds_to_decide(ya, yb) if matchable else float("nan"),
                }
            )
    return pd.DataFrame(rows, columns=list(CLAIM_COLUMNS))


def transient_table(curves: pd.DataFrame, rng: np.random.Generator, last_k: int = LAST_K) -> pd.DataFrame:
    """Transient against permanent drop of each earlier stage i during each later stage j.

    Per run: ``drop_lowest = E[i, j-1] - min_{t in j} p_i(t)``, ``drop_end = E[i, j-1] - E[i, j]``,
    ``recovery = drop_lowest - drop_end``; per (sequence, condition, i, j) their means over seeds
    with :func:`~esbench.analysis.stats.mean_ci` intervals and a verdict (module docstring).

    Returns:
        Columns ``sequence``, ``algo``, ``stage_index`` (i), ``stage``, ``during`` (j), ``n_seeds``,
        and ``<drop_lowest|drop_end|recovery>`` with ``_low``/``_high``, and ``verdict``.
    """
    per_run = []
    if curves.empty:
        return pd.DataFrame()
    for (algo, sequence, seed, _), run in curves.groupby(["algo", "sequence", "seed", "run_id"], sort=True):
        wide = run.pivot_table(index=["timesteps", "train_stage"], columns="stage_index", values="p")
        wide = wide.sort_index(level=[1, 0])
        names = run.drop_duplicates("stage_index").set_index("stage_index")["stage"]
        stage = wide.index.get_level_values("train_stage").to_numpy(int)
        p = wide.to_numpy(float).T
        e = score_matrix(p, stage, last_k)
        for j in range(1, p.shape[0]):
            during = stage == j
            if not during.any():
                continue
            for i in range(j):
                lowest = float(p[i, during].min())
                per_run.append(
                    {
                        "sequence": sequence,
                        "algo": algo,
                        "stage_index": i,
                        "stage": str(names[i]),
                        "during": j,
                        "seed": seed,
                        "drop_lowest": e[i, j - 1] - lowest,
                        "drop_end": e[i, j - 1] - e[i, j],
                        "recovery": e[i, j] - lowest,
                    }
                )
    return transient_summary(
        pd.DataFrame(per_run), ["sequence", "algo", "stage_index", "stage", "during"], rng
    )


#: The per-run measures of a drop during a later stage (:func:`transient_summary`).
TRANSIENT_MEASURES: tuple[str, ...] = ("drop_lowest", "drop_end", "recovery")


def transient_summary(per_run: pd.DataFrame, keys: Sequence[str], rng: np.random.Generator) -> pd.DataFrame:
    """Per group of ``keys``, the mean over seeds of each of :data:`TRANSIENT_MEASURES` with its
    :func:`~esbench.analysis.stats.mean_ci` interval, and the verdict: transient when the
    recovery's interval lies above 0 and the end drop's does not, permanent when the end drop's
    lies above 0 and the recovery's does not, partly transient when both, undecided otherwise.

    Args:
        per_run: One row per run (and group), with ``keys`` and the three measures.
        keys: The columns that name a group (a condition, the stages).

    Returns:
        ``keys``, ``n_seeds``, each measure with ``_low``/``_high``, and ``verdict``.
    """
    rows = []
    if per_run.empty:
        return pd.DataFrame()
    for key, group in per_run.groupby(list(keys), sort=True):
        row = dict(zip(keys, key, strict=True))
        row["n_seeds"] = len(group)
        for col in TRANSIENT_MEASURES:
            mean, low, high = _mean_ci(group[col].to_numpy(float), rng)
            row.update({col: mean, f"{col}_low": low, f"{col}_high": high})
        rows.append({**row, "verdict": _transient_verdict(row)})
    return pd.DataFrame(rows)


def _transient_verdict(row: dict) -> str:
    recovers = np.isfinite(row["recovery_low"]) and row["recovery_low"] > 0
    stays = np.isfinite(row["drop_end_low"]) and row["drop_end_low"] > 0
    if recovers and stays:
        return "partly transient"
    if recovers:
        return "transient"
    if stays:
        return "permanent"
    return UNDECIDED


def _mean_ci(values: np.ndarray, rng: np.random.Generator) -> tuple[float, float, float]:
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if not len(values):
        return float("nan"), float("nan"), float("nan")
    if len(values) < 2:
        return float(values[0]), float("nan"), float("nan")
    mean, low, high = mean_ci(values, rng)
    return float(mean), float(low), float(high)


def _by_condition(paths: Sequence[GainPath]) -> dict[str, list[GainPath]]:
    groups: dict[str, list[GainPath]] = {}
    for p in paths:
        groups.setdefault(p.algo, []).append(p)
    return dict(sorted(groups.items()))


def _by_stage(paths: Sequence[GainPath]) -> dict[tuple[str, int], list[GainPath]]:
    groups: dict[tuple[str, int], list[GainPath]] = {}
    for p in paths:
        groups.setdefault((p.sequence, p.stage_index), []).append(p)
    return dict(sorted(groups.items()))
