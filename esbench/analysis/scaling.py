"""Scaling with workers (Salimans et al. 2017, Sec. 4.3, Fig. 1): speedup against linear.

A run is a pure function of its config, so the same seed gives the same curve at every worker
count: only wall-clock time changes. Per (algorithm, environment, workers) we measure

* time to threshold: the median over seeds of the first wall-clock second at which a run's
  evaluation reaches the threshold (default: the highest score every run of that algorithm and
  environment reached, so each run has a time), as in the paper's Fig. 1;
* throughput: mean over seeds of training timesteps per wall-clock second.

Speedups are relative to the fewest workers measured on the same kind of cluster; the ideal
(linear) speedup is ``workers / min_workers`` and efficiency (per worker) is speedup / ideal. The
kinds are kept apart: ``local`` (a LocalCluster, scheduler inside the driver) and ``processes`` (a
``dask scheduler`` process and ``dask worker`` processes over TCP, as on a cluster; more workers
than cores is oversubscribed).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from esbench.analysis.curves import first_reach
from esbench.analysis.metrics.intervals import mean_ci, welch_ci
from esbench.analysis.tables import fmt_num, write_table

#: How a report names the interval of the efficiency per worker.
EFFICIENCY_CI_METHOD = (
    "Student-t interval of the mean over seeds of log(efficiency), exponentiated (so the point is "
    "the geometric mean); seeds paired across the two worker counts (Welch's interval on log "
    "times when fewer than 2 seeds are shared)"
)

SCALING_COLUMNS: tuple[str, ...] = (
    "algo",
    "env_id",
    "env_name",
    "cluster",
    "workers",
    "n_seeds",
    "threshold",
    "time_to_threshold_s",
    "steps_per_s",
    "ideal_speedup",
    "speedup_time",
    "speedup_throughput",
    "efficiency_time",
    "efficiency_throughput",
    "partial",
)


def time_to_threshold(run_curve: pd.DataFrame, threshold: float) -> float:
    """First ``wall_clock_s`` at which one run's ``eval_return_mean`` >= threshold (NaN if never)."""
    run_curve = run_curve.sort_values("wall_clock_s", kind="stable")
    return first_reach(
        run_curve["wall_clock_s"].to_numpy(float), run_curve["eval_return_mean"].to_numpy(float), threshold
    )


def scaling_table(
    runs: pd.DataFrame,
    curves: pd.DataFrame,
    threshold: float | None = None,
    partial: set[tuple[object, ...]] | None = None,
) -> pd.DataFrame:
    """Speedup against workers for every (algo, env_id, cluster kind).

    Args:
        runs: Complete runs of the run table (``steps_per_s``, ``workers``).
        curves: The curve table of those runs.
        threshold: Score to reach; default per (algo, env) the min over runs of each run's best
            evaluation.
        partial: (algo, env_id, cluster, workers) or (algo, env_id, workers) keys marked partial.

    Returns:
        DataFrame with columns :data:`SCALING_COLUMNS`, one row per worker count.
    """
    partial = partial or set()
    if "cluster" not in runs.columns:
        runs = runs.assign(cluster="local")
    rows = []
    for (algo, env_id, cluster), group in runs.groupby(["algo", "env_id", "cluster"], sort=True):
        cur = curves[curves["run_id"].isin(group["run_id"])]
        best = cur.groupby("run_id")["eval_return_mean"].max()
        thr = float(best.min()) if threshold is None and len(best) else threshold
        per_w = []
        for workers, wg in group.groupby("workers", sort=True):
            times = [
                time_to_threshold(cur[cur["run_id"] == rid], thr) if thr is not None else np.nan
                for rid in wg["run_id"]
            ]
            finite = [t for t in times if np.isfinite(t)]
            per_w.append(
                {
                    "algo": algo,
                    "env_id": env_id,
                    "env_name": str(wg["env_name"].iloc[0]),
                    "cluster": str(cluster),
                    "workers": workers,
                    "n_seeds": len(wg),
                    "threshold": thr,
                    "time_to_threshold_s": float(np.median(finite)) if finite else float("nan"),
                    "steps_per_s": float(wg["steps_per_s"].astype(float).mean()),
                    "partial": (algo, env_id, cluster, workers) in partial
                    or (algo, env_id, workers) in partial,
                }
            )
        base = per_w[0]
        for row in per_w:
            ideal = float(row["workers"]) / float(base["workers"])
            s_time = base["time_to_threshold_s"] / row["time_to_threshold_s"]
            s_thr = row["steps_per_s"] / base["steps_per_s"]
            row.update(
                ideal_speedup=ideal,
                speedup_time=s_time,
                speedup_throughput=s_thr,
                efficiency_time=s_time / ideal,
                efficiency_throughput=s_thr / ideal,
            )
            rows.append(row)
    return pd.DataFrame(rows, columns=list(SCALING_COLUMNS))


@dataclass(frozen=True)
class Efficiency:
    """Efficiency per worker of one worker count against another, with its interval.

    Attributes:
        point: Geometric mean over seeds of (speedup / ideal speedup).
        low, high: Its interval (:data:`EFFICIENCY_CI_METHOD`); NaN with fewer than 2 seeds.
        n_seeds: Seeds behind it (shared by both worker counts when ``paired``; else the fewer).
        basis: ``"time"`` (time to the threshold) or ``"throughput"`` (timesteps per second).
        paired: Whether each seed was compared with itself at the other worker count.
    """

    point: float
    low: float
    high: float
    n_seeds: int
    basis: str
    paired: bool


def _per_seed(
    runs: pd.DataFrame, curves: pd.DataFrame, threshold: float | None
) -> tuple[pd.Series, pd.Series]:
    """(seconds to ``threshold``, timesteps per second) of each run, indexed by seed."""
    seeds = runs["seed"].to_numpy()
    times = [
        time_to_threshold(curves[curves["run_id"] == rid], threshold) if threshold is not None else np.nan
        for rid in runs["run_id"]
    ]
    speed = runs["steps_per_s"].astype(float).to_numpy()
    return pd.Series(times, index=seeds, dtype=float), pd.Series(speed, index=seeds, dtype=float)


def efficiency_interval(
    base_runs: pd.DataFrame,
    top_runs: pd.DataFrame,
    curves: pd.DataFrame,
    ideal: float,
    threshold: float | None,
    confidence: float = 0.95,
) -> Efficiency:
    """Efficiency per worker of ``top_runs`` against ``base_runs`` (one algorithm, environment and
    cluster kind at two worker counts), with an interval whose coverage is that of a t interval.

    A run is a pure function of its config, so a seed plays the same curve at every worker count and
    only its wall clock differs: comparing each seed with itself removes the spread between seeds.
    Per shared seed, efficiency = (its time to ``threshold`` at the base count / at the top count)
    / ``ideal``; on timesteps per second (top / base) / ``ideal`` when a time is not measured (a run
    that never reached the threshold). Ratios are skewed, so the interval is taken on their logs
    and exponentiated: at n seeds it covers as a t interval does (95% on normal logs; measured for
    skewed ones by :func:`esbench.analysis.metrics.coverage.simulated_coverage`).

    Args:
        base_runs, top_runs: Complete runs (run table rows: run_id, seed, steps_per_s) at the fewer
            and the more workers.
        curves: The curve table (wall_clock_s, eval_return_mean) of those runs.
        ideal: The linear speedup, top workers / base workers.
        threshold: The score whose time is compared; None compares throughput.
        confidence: Nominal level.
    """
    nan = float("nan")
    base_t, base_s = _per_seed(base_runs, curves, threshold)
    top_t, top_s = _per_seed(top_runs, curves, threshold)
    timed = bool(np.all(np.isfinite(base_t)) and np.all(np.isfinite(top_t)) and len(base_t) and len(top_t))
    # Efficiency is (base time / top time) / ideal or (top speed / base speed) / ideal: in logs,
    # the mean of "numerator" minus the mean of "denominator", less log(ideal).
    num, den = (np.log(base_t), np.log(top_t)) if timed else (np.log(top_s), np.log(base_s))
    basis = "time" if timed else "throughput"
    shared = sorted(set(num.index) & set(den.index))
    if len(shared) >= 2:
        diff = num.loc[shared].to_numpy() - den.loc[shared].to_numpy() - np.log(ideal)
        mean, low, high = mean_ci(diff, confidence=confidence)
        return Efficiency(
            float(np.exp(mean)), float(np.exp(low)), float(np.exp(high)), len(shared), basis, True
        )
    if num.empty or den.empty:
        return Efficiency(nan, nan, nan, 0, basis, False)
    diff_w, low_w, high_w = welch_ci(num.to_numpy(), den.to_numpy(), confidence)
    shift = np.log(ideal)
    n = min(len(num), len(den))
    return Efficiency(
        float(np.exp(diff_w - shift)),
        float(np.exp(low_w - shift)),
        float(np.exp(high_w - shift)),
        n,
        basis,
        False,
    )


def write_scaling(table: pd.DataFrame, out_dir: str | Path) -> dict[str, Path]:
    """Write ``scaling.csv``/``.md``/``.tex`` under ``out_dir``."""
    display = pd.DataFrame(
        {
            "Environment": [f"{r.env_name}{' *' if r.partial else ''}" for r in table.itertuples()],
            "Algorithm": table["algo"].tolist(),
            "Cluster": table["cluster"].tolist(),
            "Workers": [str(int(w)) for w in table["workers"]],
            "Seeds": [str(n) for n in table["n_seeds"]],
            "Time to threshold (s)": [fmt_num(v) for v in table["time_to_threshold_s"]],
            "Timesteps/s": [fmt_num(v) for v in table["steps_per_s"]],
            "Ideal": [fmt_num(v) for v in table["ideal_speedup"]],
            "Speedup (time)": [fmt_num(v) for v in table["speedup_time"]],
            "Speedup (throughput)": [fmt_num(v) for v in table["speedup_throughput"]],
            "Efficiency per worker (time)": [fmt_num(v, 2) for v in table["efficiency_time"]],
            "Efficiency per worker (throughput)": [fmt_num(v, 2) for v in table["efficiency_throughput"]],
        }
    )
    notes = (
        "Time to threshold: median over seeds of the first wall-clock second at which the evaluation "
        "score reaches the threshold (the highest score every run of the algorithm, environment and "
        "cluster kind reached). Speedups relative to the fewest workers of the same cluster kind; Ideal = "
        "linear speedup; efficiency per worker = speedup / ideal. Cluster: local = Dask LocalCluster "
        "(scheduler in the driver process); processes = a `dask scheduler` process and `dask worker` "
        "processes over TCP on this machine (workers beyond its cores are oversubscribed)."
    )
    if table["partial"].any():
        notes += " *: partial results (missing runs or fewer seeds than other conditions)."
    return write_table(
        table,
        display,
        Path(out_dir) / "scaling",
        caption="Scaling: speedup against number of workers",
        label="tab:scaling",
        notes=notes,
    )
