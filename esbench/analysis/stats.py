"""Seeds over a results table: common grids, curves on one grid, loud seed checks, and the words a
report prints about its intervals.

The intervals themselves, and their simulated coverage, live in :mod:`esbench.analysis.metrics`
(numbers in, numbers out); this module keeps what needs the curve table (pandas) or a sentence.
Seeds are the replication unit: a condition with missing or unequal seeds fails loudly
(:func:`check_seeds`) instead of being truncated.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np
import pandas as pd

from esbench.analysis.metrics.coverage import simulated_coverage

#: The interval methods of :func:`~esbench.analysis.metrics.intervals.mean_ci` and
#: :func:`~esbench.analysis.metrics.intervals.median_interval`, as a report names them.
MEAN_CI_METHOD = "Student-t interval of the mean over seeds"
MEDIAN_CI_METHOD = "distribution-free order-statistic interval of the median over seeds"


class IncompleteResultsError(ValueError):
    """Missing runs or unequal seed counts, found while ``allow_partial`` is False."""


def coverage_sentence(n_seeds: int, confidence: float = 0.95, n_datasets: int = 2000) -> str:
    """One sentence a report prints under its intervals: the method, the seeds, the measured coverage.

    The coverage is simulated here (seeded, so the sentence is the same bytes every time) at the
    report's own seed count, on normal data and on a skewed (lognormal) case.

    Args:
        n_seeds: Seeds behind the report's intervals (the fewest of any condition).
        confidence: Nominal level.
        n_datasets: Simulated data sets per distribution.
    """
    level = f"{round(100 * confidence)}%"
    if n_seeds < 2:
        return (
            f"Intervals: {MEAN_CI_METHOD} ({level}); with {_seeds(n_seeds)} there is no interval, so no "
            "claim is decided from it."
        )
    normal = simulated_coverage("t", n_seeds, "normal", n_datasets, confidence)
    skewed = simulated_coverage("t", n_seeds, "lognormal", n_datasets, confidence)
    return (
        f"Intervals: {MEAN_CI_METHOD} ({level} nominal), {n_seeds} seeds; measured coverage at "
        f"{n_seeds} seeds on {n_datasets:,} simulated data sets: {100 * normal:.1f}% on normal data, "
        f"{100 * skewed:.1f}% on a skewed (lognormal, sigma 1) case."
    )


#: The column :func:`reach_scores` adds: what a point certifies for a time to target.
REACH_COLUMN = "reach_return"


def reach_scores(curves: pd.DataFrame) -> pd.DataFrame:
    """``curves`` with :data:`REACH_COLUMN`: the score a point certifies for a time to target.

    It is ``eval_return_mean``, except where the run confirmed that point on fresh evaluation
    seeds (``confirm_return_mean``, taken when a run with ``budget.stop_at_return`` reached its
    target: :class:`esbench.training.ruler.Confirmation`), where it is the lower of the two: a
    point reaches a target only when its confirmation does too, so a time to the stopping target
    is the first confirmed point, never a lucky evaluation the confirmation did not back.
    """
    out = curves.copy()
    score = out["eval_return_mean"].astype(float)
    if "confirm_return_mean" in out.columns:
        confirm = out["confirm_return_mean"].astype(float)
        score = score.where(confirm.isna(), np.minimum(score, confirm))
    out[REACH_COLUMN] = score
    return out


def common_grid(xs: Sequence[np.ndarray], open_ended: Sequence[bool] | None = None) -> np.ndarray:
    """The union of the runs' x values inside the range every run covers.

    Args:
        xs: One increasing array of x values (e.g. timesteps) per run.
        open_ended: Per run, whether its end does not bound the grid (a run that stopped at its
            target score, carried forward past its end: :func:`interpolate_runs`). Default: none.
            When every run is open-ended the grid ends at the longest run's end.

    Returns:
        Sorted unique x values of shape (n_grid,), within [max of firsts, min of the lasts of the
        runs that are not open-ended]. Runs that share their evaluation points get exactly those
        points back.
    """
    pairs = [
        (np.asarray(x, dtype=float), bool(o))
        for x, o in zip(xs, open_ended if open_ended is not None else [False] * len(xs), strict=True)
        if len(x)
    ]
    if not pairs:
        return np.empty(0)
    arrays = [a for a, _ in pairs]
    lo = max(a.min() for a in arrays)
    bounded = [a.max() for a, o in pairs if not o]
    hi = min(bounded) if bounded else max(a.max() for a in arrays)
    grid = np.unique(np.concatenate(arrays))
    return grid[(grid >= lo) & (grid <= hi)]


def interpolate_runs(
    curves: pd.DataFrame,
    x: str = "timesteps",
    y: str = "eval_return_mean",
    grid: np.ndarray | None = None,
    carry: Collection[object] | None = None,
    held: float = float("nan"),
) -> tuple[np.ndarray, np.ndarray, list[object]]:
    """Put each run's curve on one x grid by linear interpolation (no extrapolation; the runs of
    ``carry`` hold ``held`` past their end).

    A run that ended at its target score (``budget.stop_at_return``) is not cut short by chance:
    it stopped because it got there. Passing its run_id in ``carry`` takes its end out of the
    bounds of the default grid, so one early stopper does not truncate the other seeds' curves.
    Past its stop it holds ``held``, which is never a measurement: NaN by default (nothing: means
    and bands past the stop are over the runs still measured, :func:`esbench.analysis.curves.mean_curve`),
    or a number a caller can justify, such as the target a run reached for a time to that target
    (:func:`esbench.analysis.verdicts.time_to_target`: "at or above it", its least value).

    Args:
        curves: Curve-table rows of one condition (several runs, e.g. one algo on one env).
        x: Column of the x axis (``timesteps``, ``wall_clock_s``, ``frames``, ...).
        y: Column of the y axis.
        grid: x values to interpolate at; default :func:`common_grid` of the runs.
        carry: run_ids whose end does not bound the grid, holding ``held`` past their last x.
        held: What a carried run holds past its end (NaN: nothing).

    Returns:
        (grid, values, run_ids): grid of shape (n_grid,), values of shape (n_runs, n_grid)
        (NaN outside a run's own x range, and ``held`` after the end of a carried run), and the
        run ids in row order (sorted by seed).
    """
    carry = set(carry or ())
    runs = []
    ordered = curves.sort_values(["seed", "run_id", x], kind="stable")
    for run_id, run in ordered.groupby("run_id", sort=False):
        run = run[np.isfinite(run[x].to_numpy(float)) & np.isfinite(run[y].to_numpy(float))]
        xv = run[x].to_numpy(float)
        yv = run[y].to_numpy(float)
        xv, keep = np.unique(xv, return_index=True)  # last duplicate would be ambiguous: keep first
        runs.append((run_id, xv, yv[keep]))
    if grid is None:
        grid = common_grid([r[1] for r in runs], [r[0] in carry for r in runs])
    values = np.full((len(runs), len(grid)), np.nan)
    for i, (run_id, xv, yv) in enumerate(runs):
        if len(xv):
            right = held if run_id in carry else np.nan
            values[i] = np.interp(grid, xv, yv, left=np.nan, right=right)
    return np.asarray(grid, dtype=float), values, [r[0] for r in runs]


def seed_counts(runs: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """Complete and missing runs per condition.

    Args:
        runs: The run table (:func:`esbench.analysis.load.load_run_table`).
        by: Condition columns, e.g. ``["algo", "env_id"]``.

    Returns:
        One row per condition: the ``by`` columns, ``n_seeds`` (complete runs), ``n_missing``
        (incomplete runs), ``missing_runs`` (their run ids, comma-separated), and ``partial``
        (True where runs are missing or the seed count is below the largest one).
    """
    rows = []
    for key, group in runs.groupby(list(by), sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        done = group[group["complete"]]
        miss = group[~group["complete"]]
        rows.append(
            {
                **dict(zip(by, key, strict=True)),
                "n_seeds": int(done["seed"].nunique()),
                "n_missing": len(miss),
                "missing_runs": ", ".join(map(str, miss["run_id"])),
            }
        )
    table = pd.DataFrame(rows, columns=[*by, "n_seeds", "n_missing", "missing_runs"])
    top = table["n_seeds"].max() if len(table) else 0
    table["partial"] = (table["n_missing"] > 0) | (table["n_seeds"] < top)
    return table


def check_seeds(runs: pd.DataFrame, by: Sequence[str], allow_partial: bool = False) -> pd.DataFrame:
    """Fail loudly on missing runs or unequal seed counts (never silently truncate).

    Args:
        runs: The run table.
        by: Condition columns whose seed counts must agree.
        allow_partial: Return the counts (``partial`` column marks the short conditions)
            instead of raising.

    Returns:
        The :func:`seed_counts` table.

    Raises:
        IncompleteResultsError: Some run is missing or seed counts differ, and not allow_partial.
            The message names each condition with its seed count.
    """
    counts = seed_counts(runs, by)
    if allow_partial or not counts["partial"].any():
        return counts
    lines = []
    for _, row in counts.iterrows():
        name = "/".join(str(row[c]) for c in by)
        line = f"  {name}: {row['n_seeds']} seed(s)"
        if row["n_missing"]:
            line += f", {row['n_missing']} missing run(s) (no summary.json): {row['missing_runs']}"
        lines.append(line)
    raise IncompleteResultsError(
        "incomplete results: seed counts differ or runs are missing "
        f"(by {', '.join(by)}):\n" + "\n".join(lines) + "\nrerun the sweep, or pass --allow-partial"
    )


def partial_keys(counts: pd.DataFrame, by: Sequence[str]) -> set[tuple[object, ...]]:
    """The condition keys (tuples over ``by``) marked partial in a :func:`seed_counts` table."""
    return {tuple(row[c] for c in by) for _, row in counts[counts["partial"]].iterrows()}


def _seeds(n: int) -> str:
    """``n`` with the noun "seed" in the right number ("1 seed", "0 seeds")."""
    return f"{n} seed" if n == 1 else f"{n} seeds"
