"""The ES family table: every variant's final score per environment, against a reference variant.

For each environment and algorithm: the mean final evaluation return over seeds with its Student-t
95% CI (:func:`esbench.analysis.metrics.intervals.mean_ci`), and the difference to the reference (OpenAI-ES by
default) with Welch's t interval of the difference of means (the two sides' seeds independent,
variances unequal: :func:`esbench.analysis.metrics.intervals.welch_ci`; both intervals' coverage is
measured by :mod:`esbench.analysis.coverage`). The comparison column says what the interval supports:
``better`` / ``worse`` when the difference's CI excludes 0, ``indistinguishable`` when it straddles
0, ``n/a`` with fewer than 2 seeds on either side (no interval).

Across tasks, rliable's aggregates of the final scores normalized per task (Agarwal et al. 2021):
IQM, optimality gap, probability of improvement over the reference (:func:`aggregate_table`) and the
run-score distribution (:func:`performance_profiles`), each with a stratified-bootstrap interval.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pandas as pd

from esbench.analysis.figures import algo_label
from esbench.analysis.load import is_es
from esbench.analysis.metrics.aggregate import (
    iqm,
    optimality_gap,
    performance_profile,
    probability_of_improvement,
)
from esbench.analysis.metrics.bootstrap import interval_estimate
from esbench.analysis.metrics.intervals import mean_ci, welch_ci
from esbench.analysis.tables import fmt_num, write_table

REFERENCE = "openai_es"


def difference_ci(
    a: np.ndarray, b: np.ndarray, rng: np.random.Generator | None = None, confidence: float = 0.95
) -> tuple[float, float, float]:
    """mean(a) - mean(b) and Welch's t interval (:func:`esbench.analysis.metrics.intervals.welch_ci`).

    A percentile bootstrap of the difference covers too rarely at a few seeds a side; Welch's
    interval covers 95% on normal data (``python -m esbench.analysis.coverage``).

    Args:
        a, b: The two samples.
        rng: Unused (Welch's interval draws nothing); kept so every interval function takes one.
        confidence: Confidence level.

    Returns:
        (difference, low, high); low/high NaN when either sample has fewer than 2 values.
    """
    del rng
    return welch_ci(a, b, confidence)


def compare(low: float, high: float) -> str:
    """What a difference CI supports (see the module docstring)."""
    if not (np.isfinite(low) and np.isfinite(high)):
        return "n/a"
    if low > 0:
        return "better"
    if high < 0:
        return "worse"
    return "indistinguishable"


def family_table(
    complete: pd.DataFrame, rng: np.random.Generator, reference: str = REFERENCE
) -> pd.DataFrame:
    """One row per (env, algorithm) of the complete runs, ES variants first then RL.

    Columns: env_id, env_name, algo, is_es, n_seeds, final, low, high, diff, diff_low, diff_high,
    versus (the reference's comparison word; empty for the reference itself).
    """
    rows = []
    for env_id, env in complete.groupby("env_id", sort=True):
        ref = env[env["algo"] == reference]["final_eval_return"].to_numpy(float)
        order = sorted(env["algo"].unique(), key=lambda a: (not is_es(str(a)), str(a) != reference, str(a)))
        for algo in order:
            values = env[env["algo"] == algo]["final_eval_return"].to_numpy(float)
            mean, low, high = mean_ci(values, rng)
            d, dlo, dhi = (np.nan, np.nan, np.nan)
            if algo != reference and len(ref):
                d, dlo, dhi = difference_ci(values, ref, rng)
            rows.append(
                {
                    "env_id": env_id,
                    "env_name": str(env["env_name"].iloc[0]),
                    "algo": str(algo),
                    "is_es": is_es(str(algo)),
                    "n_seeds": len(values),
                    "final": float(mean),
                    "low": float(low),
                    "high": float(high),
                    "diff": d,
                    "diff_low": dlo,
                    "diff_high": dhi,
                    "versus": "" if algo == reference or not len(ref) else compare(dlo, dhi),
                }
            )
    return pd.DataFrame(rows)


def write_family_table(table: pd.DataFrame, out_dir: Path, reference: str = REFERENCE) -> dict[str, Path]:
    """CSV / Markdown / LaTeX of :func:`family_table`."""

    def ci(m: float, lo: float, hi: float) -> str:
        return f"{fmt_num(m, 4)} [{fmt_num(lo, 3)}, {fmt_num(hi, 3)}]" if np.isfinite(lo) else fmt_num(m, 4)

    display = pd.DataFrame(
        {
            "Environment": table["env_name"],
            "Algorithm": [algo_label(a) for a in table["algo"]],
            "Seeds": table["n_seeds"].astype(str),
            "Final eval return [95% CI]": [
                ci(m, lo, hi) for m, lo, hi in zip(table["final"], table["low"], table["high"], strict=True)
            ],
            f"Difference to {algo_label(reference)} [95% CI]": [
                "—" if not np.isfinite(d) else ci(d, lo, hi)
                for d, lo, hi in zip(table["diff"], table["diff_low"], table["diff_high"], strict=True)
            ],
            "Supported": [v or "—" for v in table["versus"]],
        }
    )
    notes = (
        "Mean over seeds of each run's final evaluation (deterministic policy, fixed evaluation seeds); "
        "Student-t 95% CIs. Difference: mean minus the reference's mean, with Welch's t 95% interval "
        "(independent seeds, unequal variances). better / worse: the difference's CI excludes 0; "
        "indistinguishable: it does not; n/a: fewer than 2 seeds."
    )
    return write_table(
        table,
        display,
        out_dir / "es_family",
        caption=f"The ES family against {algo_label(reference)}: final evaluation return per environment",
        label="tab:es_family",
        notes=notes,
    )


#: Thresholds (normalized score) at which the performance profiles are drawn.
PROFILE_TAUS = np.linspace(0.0, 1.0, 21)

#: Stratified-bootstrap resamples of the aggregates.
AGGREGATE_REPS = 2000


def normalized_final_scores(
    complete: pd.DataFrame, curves: pd.DataFrame
) -> tuple[dict[str, np.ndarray], list[str]]:
    """Each algorithm's final scores as a runs x tasks array, min-max normalized per task.

    A task's 0 is the lowest evaluation return (or final score) any algorithm reached on it and its
    1 the highest, as in the learning-curve figures' IQM panel. Only algorithms with the same number
    of seeds on every task get an array (rliable's measures need one): the others are left out.

    Returns:
        (algo -> array of shape (n_seeds, n_tasks), runs sorted by seed; the tasks, in column order).
    """
    tasks = sorted(str(t) for t in complete["env_id"].unique())
    bounds = {}
    for task in tasks:
        returns = np.concatenate(
            [
                curves.loc[curves["env_id"] == task, "eval_return_mean"].dropna().to_numpy(float),
                complete.loc[complete["env_id"] == task, "final_eval_return"].dropna().to_numpy(float),
            ]
        )
        bounds[task] = (float(returns.min()), float(returns.max()))
    scores = {}
    for algo, runs in complete.groupby("algo", sort=True):
        columns = []
        for task in tasks:
            final = runs[runs["env_id"] == task].sort_values("seed")["final_eval_return"].to_numpy(float)
            lo, hi = bounds[task]
            columns.append((final - lo) / (hi - lo) if hi > lo else np.zeros_like(final))
        if len({len(c) for c in columns}) == 1 and len(columns[0]):
            scores[str(algo)] = np.column_stack(columns)
    return scores, tasks


def aggregate_table(
    scores: dict[str, np.ndarray],
    rng: np.random.Generator,
    reference: str = REFERENCE,
    reps: int = AGGREGATE_REPS,
) -> pd.DataFrame:
    """rliable's aggregates of each algorithm's normalized final scores, with stratified-bootstrap
    95% intervals (:func:`esbench.analysis.metrics.bootstrap.interval_estimate`), in sorted order of
    the algorithms from one Generator.

    Columns: algo, n_seeds, n_tasks, iqm, iqm_low, iqm_high, gap, gap_low, gap_high (optimality gap,
    gamma 1), poi, poi_low, poi_high (probability of improvement over ``reference``; NaN for the
    reference itself or when it has no array).
    """
    rows = []
    for algo in sorted(scores):
        x = scores[algo]
        row: dict[str, object] = {"algo": algo, "n_seeds": x.shape[0], "n_tasks": x.shape[1]}
        for key, measure in (("iqm", iqm), ("gap", optimality_gap)):
            point, low, high = interval_estimate(measure, x, rng=rng, reps=reps)
            row.update({key: float(point), f"{key}_low": float(low), f"{key}_high": float(high)})
        poi = [np.nan, np.nan, np.nan]
        if algo != reference and reference in scores:
            ends = interval_estimate(probability_of_improvement, x, scores[reference], rng=rng, reps=reps)
            poi = [float(v) for v in ends]
        row.update({"poi": poi[0], "poi_low": poi[1], "poi_high": poi[2]})
        rows.append(row)
    return pd.DataFrame(rows)


def performance_profiles(
    scores: dict[str, np.ndarray],
    rng: np.random.Generator,
    taus: np.ndarray = PROFILE_TAUS,
    reps: int = AGGREGATE_REPS,
) -> pd.DataFrame:
    """Each algorithm's run-score distribution (rliable's performance profile) at ``taus``, with
    stratified-bootstrap 95% bands. Tidy: columns algo, tau, share, low, high."""
    parts = []
    for algo in sorted(scores):
        point, low, high = interval_estimate(
            functools.partial(performance_profile, taus=taus), scores[algo], rng=rng, reps=reps
        )
        parts.append(pd.DataFrame({"algo": algo, "tau": taus, "share": point, "low": low, "high": high}))
    return (
        pd.concat(parts, ignore_index=True)
        if parts
        else pd.DataFrame(columns=["algo", "tau", "share", "low", "high"])
    )


def write_aggregate_table(table: pd.DataFrame, out_dir: Path, reference: str = REFERENCE) -> dict[str, Path]:
    """CSV / Markdown / LaTeX of :func:`aggregate_table`."""

    def ci(m: float, lo: float, hi: float) -> str:
        if not np.isfinite(m):
            return "—"
        text = f"{fmt_num(m, 3)}"
        return text + (f" [{fmt_num(lo, 3)}, {fmt_num(hi, 3)}]" if np.isfinite(lo) else "")

    rows = table.to_dict("records")
    display = pd.DataFrame(
        {
            "Algorithm": [algo_label(str(r["algo"])) for r in rows],
            "Seeds x tasks": [f"{r['n_seeds']} x {r['n_tasks']}" for r in rows],
            "IQM [95% CI]": [ci(r["iqm"], r["iqm_low"], r["iqm_high"]) for r in rows],
            "Optimality gap [95% CI]": [ci(r["gap"], r["gap_low"], r["gap_high"]) for r in rows],
            f"P(better than {algo_label(reference)}) [95% CI]": [
                ci(r["poi"], r["poi_low"], r["poi_high"]) for r in rows
            ],
        }
    )
    notes = (
        "Final evaluation returns normalized per task, (R - R_min) / (R_max - R_min) with R_min and R_max "
        "the lowest and highest return any algorithm reached on the task. IQM: mean of the middle 50% of "
        "all runs' scores; optimality gap: mean shortfall below 1 (lower is better); P(better): the chance "
        "a run beats a reference run on the same task, averaged over tasks (0.5: alike). rliable's "
        "definitions; stratified bootstrap intervals (runs resampled within each task, seeded)."
    )
    return write_table(
        table,
        display,
        out_dir / "es_family_aggregate",
        caption="Aggregates across tasks of the normalized final scores",
        label="tab:es_family_aggregate",
        notes=notes,
    )
