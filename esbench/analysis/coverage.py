"""Measured coverage of every interval esbench prints: the table behind ``docs/statistics.md``.

An interval labelled 95% should contain the true value 95% of the time. This module measures
how often each of esbench's interval methods does, on simulated data with a known truth:

* a mean over seeds (:func:`esbench.analysis.metrics.intervals.mean_ci`, Student t) on normal and skewed
  (lognormal) data, beside the percentile and BCa bootstrap it replaced;
* the efficiency per worker of a scaling claim (:func:`esbench.analysis.scaling.efficiency_interval`,
  a t interval on per-seed log ratios, seeds paired across worker counts), with normal and skewed
  run-to-run jitter;
* a difference of two means (:func:`esbench.analysis.metrics.intervals.welch_ci`, Welch's t: the ES family
  table and the retention claim);
* Table 2's claim, ES's share of the games won (:func:`esbench.analysis.table2.win_share_interval`:
  each game decided by its Welch interval, the share bounded over the ways the undecided games
  could go; ties are neither wins nor losses), with large and small true differences;
* the IQM across tasks (:func:`esbench.analysis.metrics.aggregate.iqm` with
  :func:`esbench.analysis.metrics.bootstrap.interval_estimate`, stratified bootstrap).

Every time to a score, and every ratio of two, is measured apart
(``python -m esbench.analysis.coverage times``, about three minutes): the Kaplan-Meier median's
interval (:func:`esbench.analysis.metrics.time_to_score`, the one estimator of every time in
every report), the intervals it was chosen over, the restricted mean time, and the ratio of two
medians with both sides' uncertainty (:func:`esbench.analysis.metrics.censored.time_ratio`), at 3,
5 and 10 runs with 0-40% of runs censored and mild and strong spread.

Run ``python -m esbench.analysis.coverage`` to print the table of the rest (a few seconds; seeded,
so the same numbers every time).
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from esbench.analysis.metrics.coverage import (
    COVERAGE_METHODS,
    difference_coverage,
    iqm_coverage,
    restricted_mean_coverage,
    simulated_coverage,
    time_ratio_coverage,
    time_to_score_coverage,
)
from esbench.analysis.scaling import efficiency_interval

#: What the table calls each distribution of :data:`esbench.analysis.metrics.coverage.DISTRIBUTIONS`.
DISTRIBUTION_LABELS: dict[str, str] = {
    "normal": "standard normal",
    "lognormal": "lognormal, sigma 1 (skewed)",
}


def efficiency_coverage(n: int, skewed: bool = False, n_datasets: int = 2000, seed: int = 0) -> float:
    """Coverage of :func:`~esbench.analysis.scaling.efficiency_interval` (on throughput) at n seeds.

    Each seed runs at its own speed (lognormal, sigma 0.5: seeds play different episodes) at both
    worker counts; the larger count is 2x the workers at a true efficiency of 0.8, and every run
    jitters around its seed's speed (lognormal, sigma 0.1; ``skewed``: the log jitter is a centred
    exponential, so the log ratios are skewed). The truth is the geometric-mean efficiency, 0.8.
    """
    rng = np.random.default_rng(seed)
    truth, ideal = 0.8, 2.0
    empty = pd.DataFrame({"run_id": [], "wall_clock_s": [], "eval_return_mean": []})
    seeds = np.arange(n)

    def jitter(shape: tuple[int, int]) -> np.ndarray:
        if skewed:
            return np.exp(0.1 * (rng.exponential(1.0, shape) - 1.0))
        return np.exp(0.1 * rng.standard_normal(shape))

    speed = np.exp(0.5 * rng.standard_normal((n_datasets, n)))
    base = speed * jitter((n_datasets, n))
    top = speed * ideal * truth * jitter((n_datasets, n))
    hits = 0
    for b, t in zip(base, top, strict=True):
        runs = [pd.DataFrame({"run_id": seeds, "seed": seeds, "steps_per_s": v}) for v in (b, t)]
        eff = efficiency_interval(runs[0], runs[1], empty, ideal, threshold=None)
        hits += bool(eff.low <= truth <= eff.high)
    return hits / n_datasets


def win_share_coverage(
    n: int, n_games: int = 10, n_ties: int = 2, n_datasets: int = 2000, seed: int = 0, spread: float = 1.5
) -> float:
    """Coverage of Table 2's claim interval (:func:`esbench.analysis.table2.win_share_interval`: ES's
    share of the games won, bounded over the ways the games its Welch intervals leave undecided
    could go, a tie neither a win nor a loss) over
    ``n_games`` games whose true ES - A2C effects are spread evenly over [-spread, spread]
    (unit-normal seeds on each side, so ES truly wins half; a small ``spread`` leaves most games
    undecided, a large one decides most), plus ``n_ties`` games both sides score 0 on at every seed
    (ties): true share 1/2."""
    from esbench.analysis.table2 import win_share_interval

    rng = np.random.default_rng(seed)
    effects = np.linspace(-spread, spread, n_games)
    truth = float(np.sum(effects > 0)) / n_games
    names = [f"g{i}" for i in range(n_games + n_ties)]
    games = np.repeat(names, n)
    hits = 0
    for _ in range(n_datasets):
        es = np.vstack([effects[:, None] + rng.standard_normal((n_games, n)), np.zeros((n_ties, n))])
        rl = np.vstack([rng.standard_normal((n_games, n)), np.zeros((n_ties, n))])
        runs = pd.DataFrame(
            {
                "env_id": np.concatenate([games, games]),
                "algo": ["openai_es"] * es.size + ["a2c"] * rl.size,
                "final_eval_return": np.concatenate([es.ravel(), rl.ravel()]),
            }
        )
        ws = win_share_interval(runs, "openai_es")
        hits += bool(ws.low <= truth <= ws.high)
    return hits / n_datasets


def coverage_table(seeds: tuple[int, ...] = (3, 5, 10)) -> pd.DataFrame:
    """Measured coverage of every interval method at each seed count (nominal 95%).

    Returns:
        One row per (statistic, method, distribution): columns ``statistic``, ``method``,
        ``data``, ``used`` (whether esbench prints it), ``datasets`` and one column per seed count
        (``n=3``, ...) with the measured coverage.
    """
    rows = []
    names = {"t": "Student t", "percentile": "percentile bootstrap", "bca": "BCa bootstrap"}
    for method in COVERAGE_METHODS:
        for dist, label in DISTRIBUTION_LABELS.items():
            row = {"statistic": "mean over seeds", "method": names[method], "data": label,
                   "used": method == "t", "datasets": 2000}  # fmt: skip
            for n in seeds:
                row[f"n={n}"] = simulated_coverage(method, n, dist)
            rows.append(row)
    for skewed in (False, True):
        row = {"statistic": "efficiency per worker (scaling)", "method": "t on paired log ratios",
               "data": "skewed run jitter" if skewed else "lognormal run jitter", "used": True,
               "datasets": 2000}  # fmt: skip
        for n in seeds:
            row[f"n={n}"] = efficiency_coverage(n, skewed)
        rows.append(row)
    row = {"statistic": "difference of two means", "method": "Welch t",
           "data": "normal, spreads 1 and 3", "used": True, "datasets": 2000}  # fmt: skip
    for n in seeds:
        row[f"n={n}"] = difference_coverage(n)
    rows.append(row)
    for spread in (1.5, 0.5):
        row = {"statistic": "Table 2 share of the games won (10 games + 2 ties)",
               "method": "Welch t per game, bounds over the undecided games",
               "data": f"normal, effects in [-{spread}, {spread}] SD, true share 1/2", "used": True,
               "datasets": 2000}  # fmt: skip
        for n in seeds:
            row[f"n={n}"] = win_share_coverage(n, spread=spread)
        rows.append(row)
    row = {"statistic": "IQM across 5 tasks", "method": "stratified percentile bootstrap",
           "data": "normal per task", "used": True, "datasets": 200}  # fmt: skip
    for n in seeds:
        row[f"n={n}"] = iqm_coverage(n)
    rows.append(row)
    return pd.DataFrame(rows)


def coverage_markdown(table: pd.DataFrame) -> str:
    """The coverage table as Markdown (coverage in percent)."""
    seeds = [c for c in table.columns if c.startswith("n=")]
    head = ["Statistic", "Method", "Data", "Printed by esbench", "Data sets", *seeds]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in table.to_dict("records"):
        cells = [r["statistic"], r["method"], r["data"], "yes" if r["used"] else "no", f"{r['datasets']:,}"]
        cells += [f"{100 * r[c]:.1f}%" for c in seeds]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


#: Shares of runs censored, and spreads of log times, of the time-to-a-score simulation.
CENSORED_SHARES, TIME_SPREADS = (0.0, 0.2, 0.4), (0.3, 0.8)

#: What the time-to-a-score table calls each interval it measures.
TIME_METHODS: dict[str, str] = {
    "order": "Kaplan-Meier median, order-statistic interval (esbench)",
    "log-log": "Kaplan-Meier median, Brookmeyer-Crowley log-log band inverted",
    "linear": "Kaplan-Meier median, Brookmeyer-Crowley linear band inverted",
    "rmst": "restricted mean time to the budget, logit Student t (esbench)",
    "ratio": "ratio of two Kaplan-Meier medians, each side's interval at sqrt(0.95) (esbench)",
}


def time_to_score_table(seeds: tuple[int, ...] = (3, 5, 10), n_datasets: int = 2000) -> pd.DataFrame:
    """Measured coverage of the intervals of a time to a score, with runs censored at a common budget.

    Each cell simulates ``n_datasets`` data sets with seed ``n`` (the seeds of
    ``tests/test_metrics_censored.py``): lognormal times (median 1, log-sd 0.3 or 0.8), a budget
    that 0%, 20% or 40% of runs run past, common to the runs (and, in the last rows, each run's own,
    up to a factor exp(0.5) = 1.65 off it). The ratio rows draw two such sides (true medians 1 and
    1/2, each censored at its own budget; :func:`~esbench.analysis.metrics.coverage.time_ratio_coverage`).

    Returns:
        One row per (method, spread, censored share): columns ``method``, ``spread``, ``censored``
        and, per seed count, ``n=<n>`` (coverage), ``n=<n> low`` and ``n=<n> high`` (each end's miss).
    """
    rows = []
    for method in TIME_METHODS:
        for spread in TIME_SPREADS:
            for censored in CENSORED_SHARES:
                row: dict[str, object] = {
                    "method": method,
                    "spread": spread,
                    "censored": censored,
                    "budgets": "common",
                }
                for n in seeds:
                    if method == "rmst":
                        cov, low, high = restricted_mean_coverage(n, spread, censored, n_datasets, seed=n)
                    elif method == "ratio":
                        cov, low, high = time_ratio_coverage(n, spread, censored, n_datasets, seed=n)
                    else:
                        cov, low, high = time_to_score_coverage(n, spread, censored, n_datasets, n, method)
                    row.update({f"n={n}": cov, f"n={n} low": low, f"n={n} high": high})
                rows.append(row)
    for spread in TIME_SPREADS:  # runs of unequal length: each budget up to 1.65x off the common one
        for censored in CENSORED_SHARES[1:]:
            row = {"method": "order", "spread": spread, "censored": censored, "budgets": "varied"}
            for n in seeds:
                cov, low, high = time_to_score_coverage(n, spread, censored, n_datasets, n, budget_spread=0.5)
                row.update({f"n={n}": cov, f"n={n} low": low, f"n={n} high": high})
            rows.append(row)
    return pd.DataFrame(rows)


def time_to_score_markdown(table: pd.DataFrame) -> str:
    """:func:`time_to_score_table` as Markdown: coverage, then (low end's miss / high end's miss)."""
    seeds = [c for c in table.columns if c.startswith("n=") and " " not in c]
    head = ["Interval", "Log-sd of times", "Censored", "Budgets", *seeds]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in table.to_dict("records"):
        cells = [
            TIME_METHODS[str(r["method"])],
            f"{r['spread']}",
            f"{100 * float(r['censored']):.0f}%",
            str(r["budgets"]),
        ]
        cells += [
            f"{100 * r[c]:.1f}% ({100 * r[f'{c} low']:.1f} / {100 * r[f'{c} high']:.1f})" for c in seeds
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    """Print the coverage table (``python -m esbench.analysis.coverage``), or that of the times to a
    score (``python -m esbench.analysis.coverage times``)."""
    args = sys.argv[1:] if argv is None else argv
    if args == ["times"]:
        print(time_to_score_markdown(time_to_score_table()), end="")
    elif not args:
        print(coverage_markdown(coverage_table()), end="")
    else:
        raise SystemExit(f"unknown arguments {args}; allowed: none (every interval) or 'times'")


if __name__ == "__main__":
    main()
