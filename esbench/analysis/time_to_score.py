"""Timesteps and wall-clock seconds each algorithm needs to reach one common score.

The paper's wall-clock argument in miniature: ES needs more timesteps than TRPO but less time.
Per environment the common target is the highest score that every *improving* algorithm's mean
curve (over seeds, on timesteps) reaches: the lowest of their best mean evaluation returns. An
algorithm none of whose runs ever evaluates above its own first (timestep-0) evaluation did not
learn, and would drag the common score down to the untrained policy's: it does not set the score
and is listed as "did not improve" instead.

Each run (seed) then gets the first evaluation point at or above the target, on timesteps and on
its own wall-clock (+inf where it never got there). The statistic is the **median over seeds** of
those times, with the median's distribution-free order-statistic interval
(:func:`esbench.analysis.metrics.intervals.median_interval`): 95% where the seeds allow it, and otherwise the
widest, whose exact coverage (75% at 3 seeds) is in the table's ``ci_coverage`` column and its
notes. A median or interval end that is +inf (the median seed never got there) is shown censored,
``"> x"``, with x the longest run's budget. A run that stopped at its target score (``budget.stop_at_return``)
reached every score up to it at its stopping point, like any run; above it, it is censored at its
stop. A point confirmed on fresh evaluation seeds before a stop counts at the lower of its
evaluation and its confirmation (:func:`esbench.analysis.stats.reach_scores`), and nothing held
after a stop enters the mean curves that set the common score.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from esbench.analysis.curves import first_reach, mean_curve
from esbench.analysis.figures import algo_label
from esbench.analysis.metrics.intervals import median_interval, median_interval_coverage
from esbench.analysis.stats import MEDIAN_CI_METHOD, REACH_COLUMN, reach_scores
from esbench.analysis.tables import fmt_num, write_table

TIME_TO_SCORE_COLUMNS: tuple[str, ...] = (
    "env_id",
    "algo",
    "improved",
    "target",
    "n_seeds",
    "n_reached",
    "ci_coverage",
    "timesteps",
    "timesteps_low",
    "timesteps_high",
    "timesteps_budget",
    "timesteps_censored",
    "wall_clock_s",
    "wall_clock_low",
    "wall_clock_high",
    "wall_clock_budget",
    "wall_clock_censored",
    "steps_per_s",
)


def improved(runs: pd.DataFrame) -> bool:
    """Whether any run of ``runs`` (curve-table rows of one condition) evaluated above its own
    first evaluation (the untrained policy's, at timestep 0)."""
    rows = runs.dropna(subset=["eval_return_mean"]).sort_values("timesteps", kind="stable")
    for _, run in rows.groupby("run_id", sort=True):
        values = run["eval_return_mean"].to_numpy(float)
        if len(values) > 1 and values[1:].max() > values[0]:
            return True
    return False


def _median_with_interval(values: np.ndarray, budget: float) -> tuple[float, float, float, bool]:
    """(median, low, high, censored) of per-seed times (+inf: never reached).

    The median is replaced by ``budget`` and ``censored`` set when it is +inf (read "more than
    budget"); low/high are :func:`~esbench.analysis.metrics.intervals.median_interval`'s (+inf ends kept), NaN
    with fewer than 2 seeds.
    """
    if not values.size:
        return float("nan"), float("nan"), float("nan"), False
    med = float(np.median(values))
    low, high, _ = median_interval(values)
    if np.isfinite(med):
        return med, low, high, False
    return budget, low, high, True


def time_to_common_score(
    curves: pd.DataFrame, series: str = "algo", stopped: set[object] | None = None
) -> pd.DataFrame:
    """One row per (environment, ``series`` value): the common target and the time to reach it.

    Args:
        curves: Curve table of :func:`esbench.analysis.load.load_curves` (complete runs; needs
            ``env_id``, ``run_id``, ``timesteps``, ``wall_clock_s``, ``eval_return_mean``).
        series: Column that names the compared conditions (default ``algo``).
        stopped: run_ids that ended at their target score (their end does not cut short the mean
            curves that set the common score, :func:`esbench.analysis.curves.mean_curve`).

    Returns:
        DataFrame with columns :data:`TIME_TO_SCORE_COLUMNS`; empty when no environment has at
        least two conditions. Conditions that did not improve (``improved`` False) have NaN times;
        ``target`` is NaN where no condition improved.
    """
    nan = float("nan")
    rows = []
    evals = curves.dropna(subset=["eval_return_mean"])
    for env_id, env in evals.groupby("env_id", sort=True):
        groups = dict(tuple(env.groupby(series, sort=True)))
        if len(groups) < 2:
            continue
        learned = {name: improved(g) for name, g in groups.items()}
        best = [float(mean_curve(g, stopped=stopped)["mean"].max()) for n, g in groups.items() if learned[n]]
        target = min(best) if best else nan
        for name, g in groups.items():
            steps, secs, budgets_t, budgets_s = [], [], [], []
            for _, run in reach_scores(g.sort_values("timesteps")).groupby("run_id", sort=True):
                y = run[REACH_COLUMN].to_numpy(float)  # a confirmed point: the lower of the two
                t = first_reach(run["timesteps"].to_numpy(float), y, target)
                s = first_reach(run["wall_clock_s"].to_numpy(float), y, target)
                steps.append(np.inf if np.isnan(t) else t)
                secs.append(np.inf if np.isnan(s) else s)
                budgets_t.append(float(run["timesteps"].max()))
                budgets_s.append(float(run["wall_clock_s"].max()))
            row = {
                "env_id": env_id,
                "algo": name,
                "improved": learned[name],
                "target": target,
                "n_seeds": len(steps),
                "n_reached": int(np.isfinite(steps).sum()) if learned[name] else 0,
                "ci_coverage": median_interval_coverage(len(steps)),
                "timesteps_budget": max(budgets_t),
                "wall_clock_budget": max(budgets_s),
                "steps_per_s": float(np.sum(budgets_t) / np.sum(budgets_s)),
            }
            for key, times, budget in (
                ("timesteps", steps, max(budgets_t)),
                ("wall_clock", secs, max(budgets_s)),
            ):
                if learned[name] and np.isfinite(target):
                    med, low, high, cens = _median_with_interval(np.asarray(times), budget)
                else:
                    med, low, high, cens = nan, nan, nan, False
                value_key = "wall_clock_s" if key == "wall_clock" else key
                row.update({value_key: med, f"{key}_low": low, f"{key}_high": high, f"{key}_censored": cens})
            rows.append(row)
    return pd.DataFrame(rows, columns=list(TIME_TO_SCORE_COLUMNS))


def display_time_to_score(table: pd.DataFrame) -> pd.DataFrame:
    """The formatted (string) form of :func:`time_to_common_score`'s table."""

    def one(value: float, budget: float) -> str:
        return f"> {fmt_num(budget)}" if np.isposinf(value) else fmt_num(value)

    def cell(r: pd.Series, key: str, value_key: str) -> str:
        if not r["improved"]:
            return "did not improve"
        value, budget = r[value_key], r[f"{key}_budget"]
        text = f"> {fmt_num(budget)}" if r[f"{key}_censored"] else fmt_num(value)
        low, high = r[f"{key}_low"], r[f"{key}_high"]
        if np.isfinite(low) or np.isposinf(low):
            text += f" [{one(low, budget)}, {one(high, budget)}]"
        return text

    rows = [r for _, r in table.iterrows()]
    return pd.DataFrame(
        {
            "Environment": table["env_id"].tolist(),
            "Algorithm": [algo_label(str(a)) for a in table["algo"]],
            "Common score": [fmt_num(v, 4) for v in table["target"]],
            "Seeds reached": [
                f"{r['n_reached']}/{r['n_seeds']}" if r["improved"] else f"—/{r['n_seeds']}" for r in rows
            ],
            "Timesteps, median [CI]": [cell(r, "timesteps", "timesteps") for r in rows],
            "Wall-clock s, median [CI]": [cell(r, "wall_clock", "wall_clock_s") for r in rows],
            "Timesteps/s": [fmt_num(v) for v in table["steps_per_s"]],
        }
    )


def coverage_text(table: pd.DataFrame) -> str:
    """The intervals' exact coverage at the table's seed counts, e.g. "exact coverage 75% at 3
    seeds (no interval of a median over fewer than 6 seeds reaches 95%)"."""
    counts = sorted({int(n) for n in table["n_seeds"] if int(n) >= 2})
    if not counts:
        return "no interval with fewer than 2 seeds"
    parts = [f"{100 * median_interval_coverage(n):.3g}% at {n} seeds" for n in counts]
    text = "exact coverage " + ", ".join(parts)
    if counts[0] < 6:
        text += (
            " (no interval of a median over fewer than 6 seeds reaches 95%; at 6 or more it is 95% or above)"
        )
    return text


def write_time_to_score(table: pd.DataFrame, out_dir: str | Path) -> dict[str, Path]:
    """Write ``time_to_score.{csv,md,tex}`` under ``out_dir``."""
    notes = (
        "Common score: the lowest of the improving algorithms' best mean evaluation returns on that "
        "environment. Per seed, the first evaluation at or above it; shown: the median over seeds "
        f"with its {MEDIAN_CI_METHOD}, {coverage_text(table)}. '> x': the median seed (or the "
        "interval's end) did not reach it within the budget x. A run stopped at a target score "
        "counts as reached at its stopping timestep. Wall-clock includes evaluations; Timesteps/s: "
        "the runs' timesteps over their wall-clock, evaluations included."
    )
    flat = sorted(
        {algo_label(str(a)) for a, ok in zip(table["algo"], table["improved"], strict=True) if not ok}
    )
    if flat:
        notes += (
            f" Did not improve (no run ever evaluated above its timestep-0 evaluation, so it does not set "
            f"the common score): {', '.join(flat)}."
        )
    return write_table(
        table,
        display_time_to_score(table),
        Path(out_dir) / "time_to_score",
        caption="Timesteps and wall-clock to the best score every improving algorithm reaches",
        label="tab:time_to_score",
        notes=notes,
    )
