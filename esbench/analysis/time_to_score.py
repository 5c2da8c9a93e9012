"""Timesteps and wall-clock seconds each algorithm needs to reach one common score.

The paper's wall-clock argument in miniature: ES needs more timesteps than TRPO but less time.
Per environment the common target is the highest score that *every* algorithm's mean curve
(over seeds, on timesteps) reaches: the lowest of their best mean evaluation returns. Each run
(seed) then gets the first evaluation point at or above it, on timesteps and on its own
wall-clock; a condition reports the median over seeds, censored (``"> x"``) where fewer than half
of its seeds got there within the budget (x: the longest run's budget), and how many did.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from esbench.analysis.curves import first_reach, mean_curve
from esbench.analysis.figures import algo_label
from esbench.analysis.tables import fmt_num, write_table

TIME_TO_SCORE_COLUMNS: tuple[str, ...] = (
    "env_id",
    "algo",
    "target",
    "n_seeds",
    "n_reached",
    "timesteps",
    "timesteps_censored",
    "wall_clock_s",
    "wall_clock_censored",
    "steps_per_s",
)


def _median_censored(values: np.ndarray, budget: float) -> tuple[float, bool]:
    """Median of per-seed times with never-reached seeds as +inf: (value, censored).

    Censored: the median seed never reached the target; the value is then the budget, read as
    "more than this".
    """
    med = float(np.median(values)) if values.size else float("nan")
    if np.isfinite(med):
        return med, False
    return budget, True


def time_to_common_score(curves: pd.DataFrame, series: str = "algo") -> pd.DataFrame:
    """One row per (environment, ``series`` value): the common target and the time to reach it.

    Args:
        curves: Curve table of :func:`esbench.analysis.load.load_curves` (complete runs; needs
            ``env_id``, ``run_id``, ``timesteps``, ``wall_clock_s``, ``eval_return_mean``).
        series: Column that names the compared conditions (default ``algo``).

    Returns:
        DataFrame with columns :data:`TIME_TO_SCORE_COLUMNS`; empty when no environment has at
        least two conditions.
    """
    rows = []
    evals = curves.dropna(subset=["eval_return_mean"])
    for env_id, env in evals.groupby("env_id", sort=True):
        groups = dict(tuple(env.groupby(series, sort=True)))
        if len(groups) < 2:
            continue
        best = {name: float(mean_curve(g)["mean"].max()) for name, g in groups.items()}
        target = min(best.values())
        for name, g in groups.items():
            steps, secs, budgets_t, budgets_s = [], [], [], []
            for _, run in g.sort_values("timesteps").groupby("run_id", sort=True):
                y = run["eval_return_mean"].to_numpy(float)
                t = first_reach(run["timesteps"].to_numpy(float), y, target)
                s = first_reach(run["wall_clock_s"].to_numpy(float), y, target)
                steps.append(np.inf if np.isnan(t) else t)
                secs.append(np.inf if np.isnan(s) else s)
                budgets_t.append(float(run["timesteps"].max()))
                budgets_s.append(float(run["wall_clock_s"].max()))
            t_med, t_cens = _median_censored(np.asarray(steps), max(budgets_t))
            s_med, s_cens = _median_censored(np.asarray(secs), max(budgets_s))
            rows.append(
                {
                    "env_id": env_id,
                    "algo": name,
                    "target": target,
                    "n_seeds": len(steps),
                    "n_reached": int(np.isfinite(steps).sum()),
                    "timesteps": t_med,
                    "timesteps_censored": t_cens,
                    "wall_clock_s": s_med,
                    "wall_clock_censored": s_cens,
                    "steps_per_s": float(np.sum(budgets_t) / np.sum(budgets_s)),
                }
            )
    return pd.DataFrame(rows, columns=list(TIME_TO_SCORE_COLUMNS))


def display_time_to_score(table: pd.DataFrame) -> pd.DataFrame:
    """The formatted (string) form of :func:`time_to_common_score`'s table."""

    def cell(value: float, censored: bool) -> str:
        return f"> {fmt_num(value)}" if censored else fmt_num(value)

    return pd.DataFrame(
        {
            "Environment": table["env_id"],
            "Algorithm": [algo_label(str(a)) for a in table["algo"]],
            "Common score": [fmt_num(v, 4) for v in table["target"]],
            "Seeds reached": [f"{r}/{n}" for r, n in zip(table["n_reached"], table["n_seeds"], strict=True)],
            "Timesteps (median)": [
                cell(v, c) for v, c in zip(table["timesteps"], table["timesteps_censored"], strict=True)
            ],
            "Wall-clock s (median)": [
                cell(v, c) for v, c in zip(table["wall_clock_s"], table["wall_clock_censored"], strict=True)
            ],
            "Timesteps/s": [fmt_num(v) for v in table["steps_per_s"]],
        }
    )


def write_time_to_score(table: pd.DataFrame, out_dir: str | Path) -> dict[str, Path]:
    """Write ``time_to_score.{csv,md,tex}`` under ``out_dir``."""
    return write_table(
        table,
        display_time_to_score(table),
        Path(out_dir) / "time_to_score",
        caption="Timesteps and wall-clock to the best score every algorithm reaches",
        label="tab:time_to_score",
        notes=(
            "Common score: the lowest of the algorithms' best mean evaluation returns on that "
            "environment. Median over seeds of the first evaluation at or above it; '> x': the "
            "median seed did not reach it within the budget x. Wall-clock includes evaluations; "
            "Timesteps/s: the runs' timesteps over their wall-clock, evaluations included."
        ),
    )
