"""Timesteps and wall-clock seconds each algorithm needs to reach one common score.

The paper's wall-clock argument in miniature: ES needs more timesteps than TRPO but less time.
Per environment the common target is the highest score that every *improving* algorithm's mean
curve (over seeds, on timesteps) reaches: the lowest of their best mean evaluation returns. An
algorithm none of whose runs ever evaluates above its own first (timestep-0) evaluation did not
learn, and would drag the common score down to the untrained policy's: it does not set the score
and is listed as "did not improve" instead.

Each run (seed) then gets its first confirmed time at the target, on timesteps and on its own
wall-clock, or its budget, right-censored, where it never got there
(:func:`esbench.analysis.verdicts.time_to_target`, the estimator of every time to a score in every
report): the statistic is the **Kaplan-Meier median** with its order-statistic interval
(:func:`esbench.analysis.metrics.time_to_score`): 95% where the seeds allow it, and otherwise the
widest, whose coverage (75% at 3 seeds) is in the table's ``ci_coverage`` column and its notes. A
median or interval end the data leave unbounded is shown ``"> x"``, x the longest censored budget,
and beside it the share of runs that reached the score (Clopper-Pearson). A run that stopped at its
target score (``budget.stop_at_return``) reached every score up to it where its own curve did; above
it, it is censored at its stop. Nothing held after a stop enters the mean curves that set the
common score.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from esbench.analysis.curves import mean_curve
from esbench.analysis.figures import algo_label
from esbench.analysis.metrics.intervals import median_interval_coverage
from esbench.analysis.tables import fmt_num, write_table
from esbench.analysis.verdicts import TIME_CI_METHOD, TimeToTarget, time_to_target

TIME_TO_SCORE_COLUMNS: tuple[str, ...] = (
    "env_id",
    "algo",
    "improved",
    "target",
    "n_seeds",
    "n_reached",
    "share_low",
    "share_high",
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


def _time_columns(key: str, value_key: str, tt: TimeToTarget | None) -> dict[str, object]:
    """A row's median, interval and censoring flag for one time axis (NaN where not measured)."""
    nan = float("nan")
    if tt is None:
        return {value_key: nan, f"{key}_low": nan, f"{key}_high": nan, f"{key}_censored": False}
    median = tt.last if np.isposinf(tt.point) else tt.point
    return {
        value_key: median,
        f"{key}_low": tt.low,
        f"{key}_high": tt.high,
        f"{key}_censored": bool(np.isposinf(tt.point)),
    }


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
            runs = g.sort_values("timesteps")
            steps = time_to_target(runs, target, stopped=stopped) if np.isfinite(target) else None
            secs = (
                time_to_target(runs, target, stopped=stopped, x="wall_clock_s")
                if np.isfinite(target)
                else None
            )
            last = runs.groupby("run_id", sort=True)[["timesteps", "wall_clock_s"]].max()
            share = steps.share() if steps is not None else (nan, nan, nan)
            row = {
                "env_id": env_id,
                "algo": name,
                "improved": learned[name],
                "target": target,
                "n_seeds": len(last),
                "n_reached": steps.n_reached if steps is not None and learned[name] else 0,
                "share_low": share[1] if learned[name] else nan,
                "share_high": share[2] if learned[name] else nan,
                "ci_coverage": median_interval_coverage(len(last)),
                "timesteps_budget": float(last["timesteps"].max()),
                "wall_clock_budget": float(last["wall_clock_s"].max()),
                "steps_per_s": float(last["timesteps"].sum() / last["wall_clock_s"].sum()),
            }
            for key, tt in (("timesteps", steps), ("wall_clock", secs)):
                value_key = "wall_clock_s" if key == "wall_clock" else key
                row.update(_time_columns(key, value_key, tt if learned[name] else None))
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
        if not np.isnan(low):
            text += f" [{one(low, budget)}, {one(high, budget)}]"
        return text

    def reached(r: pd.Series) -> str:
        if not r["improved"]:
            return f"—/{r['n_seeds']}"
        text = f"{r['n_reached']}/{r['n_seeds']}"
        if r["n_reached"] < r["n_seeds"]:
            text += f" [{fmt_num(r['share_low'], 2)}, {fmt_num(r['share_high'], 2)}]"
        return text

    rows = [r for _, r in table.iterrows()]
    return pd.DataFrame(
        {
            "Environment": table["env_id"].tolist(),
            "Algorithm": [algo_label(str(a)) for a in table["algo"]],
            "Common score": [fmt_num(v, 4) for v in table["target"]],
            "Seeds reached [95% CI of the share]": [reached(r) for r in rows],
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
        f"environment. Times: {TIME_CI_METHOD}, {coverage_text(table)}; '> x': unbounded within the "
        "budget x. Seeds reached: the share within the budget, with its Clopper-Pearson interval where "
        "a run was censored. Wall-clock includes evaluations; Timesteps/s: the runs' timesteps over "
        "their wall-clock, evaluations included."
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
