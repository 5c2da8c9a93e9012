"""Measured coverage of every interval esbench prints: the table behind ``docs/statistics.md``.

An interval labelled 95% should contain the true value 95% of the time. This module measures
how often each of esbench's interval methods does, on simulated data with a known truth:

* a mean over seeds (:func:`esbench.analysis.metrics.intervals.mean_ci`, Student t) on normal and skewed
  (lognormal) data, beside the percentile and BCa bootstrap it replaced;
* a time to a target and a ratio of two times (:func:`esbench.analysis.verdicts.time_interval`,
  :func:`esbench.analysis.verdicts.ratio_interval`) on synthetic learning curves whose seeds
  learn at different rates, with evaluation noise and censoring ("not reached by L"), against a
  published constant and against a baseline with its own seeds;
* the efficiency per worker of a scaling claim (:func:`esbench.analysis.scaling.efficiency_interval`,
  a t interval on per-seed log ratios, seeds paired across worker counts), with normal and skewed
  run-to-run jitter;
* a time to the target where each run stops at it after a confirmation
  (:func:`esbench.analysis.verdicts.stopping_time_interval`, the Student-t interval of the mean of
  the runs' first confirmed times), with mild and strong spread between seeds' learning rates;
* a difference of two means (:func:`esbench.analysis.metrics.intervals.welch_ci`, Welch's t: the ES family
  table and the retention claim);
* Table 2's claim, ES's share of the games won (:func:`esbench.analysis.table2.win_share_interval`:
  each game decided by its Welch interval, the share bounded over the ways the undecided games
  could go; ties are neither wins nor losses), with large and small true differences;
* the IQM across tasks (:func:`esbench.analysis.metrics.aggregate.iqm` with
  :func:`esbench.analysis.metrics.bootstrap.interval_estimate`, stratified bootstrap);
* a median over seeds (the wall-clock time to a common score,
  :mod:`esbench.analysis.time_to_score`: the order-statistic interval,
  :func:`esbench.analysis.metrics.intervals.median_interval`). Its coverage is exact for any distribution; no
  interval of a median over n seeds covers more than 1 - 2 / 2^n of the time without assuming a
  distribution (75% at 3 seeds), and the report prints the exact number.

Run ``python -m esbench.analysis.coverage`` to print the table (a few seconds; seeded, so the
same numbers every time), and ``python -m esbench.analysis.coverage times`` for the intervals of a
time to a score with censored runs (:mod:`esbench.analysis.metrics.censored`; about two minutes).
"""

from __future__ import annotations

import functools
import sys

import numpy as np
import pandas as pd
from numpy.polynomial.hermite_e import hermegauss

from esbench.analysis.metrics.coverage import (
    COVERAGE_METHODS,
    difference_coverage,
    iqm_coverage,
    median_coverage,
    restricted_mean_coverage,
    simulated_coverage,
    time_to_score_coverage,
)
from esbench.analysis.scaling import efficiency_interval
from esbench.analysis.verdicts import (
    SIDE_CONFIDENCE,
    TimeToTarget,
    ratio_interval,
    stopping_time_interval,
    time_intervals,
)

#: What the table calls each distribution of :data:`esbench.analysis.metrics.coverage.DISTRIBUTIONS`.
DISTRIBUTION_LABELS: dict[str, str] = {
    "normal": "standard normal",
    "lognormal": "lognormal, sigma 1 (skewed)",
}

#: Evaluation points of the synthetic curves (x in units of one evaluation interval).
GRID = np.arange(1.0, 41.0)
#: Synthetic learning curve of a seed: ``1 - exp(-rate * exp(SPREAD * z) * x) + NOISE * eps``.
SPREAD, NOISE = 0.3, 0.03
#: Learning rates of ES and of the baseline, and the target both must reach. ES's true time is
#: near the end of the grid, so some data sets' bands do not reach it ("not reached by L").
ES_RATE, BASE_RATE, TARGET = 0.07, 0.15, 0.85


def true_time(rate: float, target: float = TARGET, grid: np.ndarray = GRID) -> float:
    """First grid x at which the population mean curve (over seeds' rates) reaches ``target``."""
    z, w = hermegauss(80)
    w = w / w.sum()
    mean = 1.0 - (w[:, None] * np.exp(-rate * np.exp(SPREAD * z)[:, None] * grid[None, :])).sum(axis=0)
    hit = np.nonzero(mean >= target)[0]
    return float(grid[hit[0]]) if hit.size else float("inf")


def _curves(rng: np.random.Generator, shape: tuple[int, int], rate: float) -> np.ndarray:
    """Shape (m, n, len(GRID)): m data sets of n seeds' evaluation curves."""
    r = rate * np.exp(SPREAD * rng.standard_normal((*shape, 1)))
    return 1.0 - np.exp(-r * GRID) + NOISE * rng.standard_normal((*shape, GRID.size))


def _tts(values: np.ndarray, confidence: float) -> list[TimeToTarget]:
    """One :class:`TimeToTarget` per data set of ``values`` (shape (m, n, len(GRID)))."""
    nan, n = float("nan"), values.shape[1]
    return [
        TimeToTarget(p, lo, hi, float(GRID[-1]), n, nan, nan, confidence=confidence)
        for p, lo, hi in time_intervals(values, GRID, TARGET, confidence)
    ]


def ratio_coverage(n_es: int, n_base: int = 0, n_datasets: int = 500, seed: int = 0) -> tuple[float, float]:
    """Coverage of ES time / baseline time on the synthetic curves, and how often ES is censored.

    Args:
        n_es: ES seeds per data set.
        n_base: Baseline seeds; 0 divides by the baseline's true time (a published constant), so
            this measures the time-to-target interval itself.
        n_datasets: Simulated data sets.
        seed: Seed of the simulation.

    Returns:
        (coverage, censored): the fraction of intervals that contain the true ratio, and the
        fraction whose upper end is "not reached by L".
    """
    rng = np.random.default_rng(seed)
    base_time = true_time(BASE_RATE)
    truth = true_time(ES_RATE) / base_time
    conf = SIDE_CONFIDENCE if n_base else 0.95
    es = _tts(_curves(rng, (n_datasets, n_es), ES_RATE), conf)
    if n_base:
        ratios = [
            ratio_interval(e, b)
            for e, b in zip(es, _tts(_curves(rng, (n_datasets, n_base), BASE_RATE), conf), strict=True)
        ]
    else:
        ratios = [ratio_interval(e, base_time) for e in es]
    low = np.array([r.low if np.isfinite(r.low) else r.lower_bound for r in ratios])
    high = np.array([r.high for r in ratios])
    return float(np.mean((low <= truth) & (truth <= high))), float(np.mean(np.isposinf(high)))


#: Evaluation points of the stopping runs (long enough that almost every run reaches the target).
STOP_GRID = np.arange(1.0, 121.0)
#: Learning rate of the stopping runs, and the seed-to-seed spread of their log rates (mild, strong).
STOP_RATE, STOP_SPREADS = 0.15, (0.3, 0.8)


def _stopping_times(rng: np.random.Generator, shape: tuple[int, int], spread: float) -> np.ndarray:
    """Shape ``shape``: each run's first confirmed point at or above :data:`TARGET` (+inf: never).

    A run's curve is ``1 - exp(-rate * x)`` with a lognormal rate, evaluated with noise
    :data:`NOISE` (5 episodes); an evaluation at or above the target is confirmed on 10 fresh
    episodes (noise / sqrt(2)), and the run stops where the lower of the two reaches it, as
    ``budget.stop_at_return`` does."""
    rate = STOP_RATE * np.exp(spread * rng.standard_normal((*shape, 1)))
    true = 1.0 - np.exp(-rate * STOP_GRID)
    evaluation = true + NOISE * rng.standard_normal(true.shape)
    confirmation = true + NOISE / np.sqrt(2.0) * rng.standard_normal(true.shape)
    hit = np.minimum(evaluation, confirmation) >= TARGET
    return np.where(hit.any(axis=-1), STOP_GRID[np.argmax(hit, axis=-1)], np.inf)


@functools.lru_cache(maxsize=8)
def _true_stopping_time(spread: float, seed: int) -> float:
    """Mean stopping time of 400,000 simulated runs (those that reach the target)."""
    times = _stopping_times(np.random.default_rng(10_000 + seed), (1, 400_000), spread)[0]
    return float(times[np.isfinite(times)].mean())


def stopping_time_coverage(n: int, spread: float = 0.3, n_datasets: int = 2000, seed: int = 0) -> float:
    """Coverage of the mean stopping time's interval (:func:`stopping_time_interval`) at ``n``
    seeds: the true mean is that of 400,000 simulated runs; data sets with a run that never
    reached the target (under 0.1% at the strong spread) are left out, as the report then reads the
    mean curve instead."""
    truth = _true_stopping_time(spread, seed)
    data = _stopping_times(np.random.default_rng(seed), (n_datasets, n), spread)
    data = data[np.all(np.isfinite(data), axis=1)]
    ends = np.array([stopping_time_interval(d)[1:] for d in data])
    return float(np.mean((ends[:, 0] <= truth) & (truth <= ends[:, 1])))


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
    synthetic = "synthetic curves, seed rates lognormal, eval noise, some censored"
    for label, n_base, method in (
        ("time to target (ratio to a published constant)", 0, "inverted t band"),
        ("ratio to our baseline (both sides resampled)", -1, "inverted t bands at sqrt(0.95)"),
    ):
        row = {"statistic": label, "method": method, "data": synthetic, "used": True, "datasets": 500}
        for n in seeds:
            row[f"n={n}"] = ratio_coverage(n, n if n_base < 0 else 0)[0]
        rows.append(row)
    for spread in STOP_SPREADS:
        row = {"statistic": "time to the target, runs stopped at it", "method": "t on per-run times",
               "data": f"stopping runs, log-rate spread {spread}", "used": True,
               "datasets": 2000}  # fmt: skip
        for n in seeds:
            row[f"n={n}"] = stopping_time_coverage(n, spread)
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
    row = {"statistic": "median over seeds (time to a common score)", "method": "order statistics",
           "data": "lognormal times", "used": True, "datasets": 2000}  # fmt: skip
    for n in seeds:
        row[f"n={n}"] = median_coverage(n)
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
}


def time_to_score_table(seeds: tuple[int, ...] = (3, 5, 10), n_datasets: int = 2000) -> pd.DataFrame:
    """Measured coverage of the intervals of a time to a score, with runs censored at a common budget.

    Each cell simulates ``n_datasets`` data sets with seed ``n`` (the seeds of
    ``tests/test_metrics_censored.py``): lognormal times (median 1, log-sd 0.3 or 0.8), a budget
    that 0%, 20% or 40% of runs run past, common to the runs (and, in the last rows, each run's own,
    up to a factor exp(0.5) = 1.65 off it).

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
