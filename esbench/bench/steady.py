"""The steady-state window of a benchmark run's ``metrics.csv``.

A run's rows are: the timestep-0 evaluation (generation 0, before any training), one row per
generation, and a last row that also carries the final evaluation. The first generation includes
worker start-up (imports, the noise table, the first rollout's allocations: 1-3 s against ~1 s for
a steady generation on HalfCheetah), and the last includes the final evaluation, so throughput is
measured between the end of generation 1 and the end of the second-to-last generation.
"""

from __future__ import annotations

import math

import pandas as pd


def steady_window(metrics: pd.DataFrame) -> pd.DataFrame:
    """The rows that bound the steady window: from the end of generation 1 to the row before the last.

    Rates are differences between the window's first and last rows, so generation 1 itself (worker
    start-up) and the final generation (final evaluation) fall outside it.
    """
    return metrics[metrics["generation"] >= 1].iloc[:-1]


def steady_rate(metrics: pd.DataFrame, column: str = "timesteps") -> float:
    """``column`` per wall-clock second over :func:`steady_window` (NaN with fewer than 2 rows)."""
    window = steady_window(metrics)
    if len(window) < 2:
        return math.nan
    wall = float(window["wall_clock_s"].iloc[-1] - window["wall_clock_s"].iloc[0])
    return float(window[column].iloc[-1] - window[column].iloc[0]) / wall if wall > 0 else math.nan


def generation_rates(metrics: pd.DataFrame, column: str = "timesteps") -> list[float]:
    """``column`` per wall-clock second of every generation inside :func:`steady_window`, in order.

    On a shared host the speed of identical work moves by 2x within a minute (per-generation worker
    CPU time for the same 40,000 HalfCheetah steps ranged from 3.2 to 7.0 s here), so besides the
    window's mean rate a benchmark reports the fastest generation: noise only slows a run down, and
    the fastest of many short samples is the best estimate of what the code does on a quiet machine
    (the convention of Python's ``timeit``).
    """
    window = steady_window(metrics)
    wall = window["wall_clock_s"].diff().to_numpy()[1:]
    done = window[column].diff().to_numpy()[1:]
    return [float(d / w) for d, w in zip(done, wall, strict=True) if w > 0]


def busy_fraction(metrics: pd.DataFrame, workers: int) -> float:
    """The share of the workers' wall-clock spent in rollouts over :func:`steady_window`:
    ``Δcpu_s / (Δwall_clock_s * workers)`` (``cpu_s`` sums the CPU time of the workers' tasks).

    Host slowdowns stretch CPU time and wall-clock alike, so this measures the runtime's own
    overhead (waiting for the master, the scheduler, stragglers) whatever the host does."""
    window = steady_window(metrics)
    if len(window) < 2 or workers < 1:
        return math.nan
    wall = float(window["wall_clock_s"].iloc[-1] - window["wall_clock_s"].iloc[0])
    cpu = float(window["cpu_s"].iloc[-1] - window["cpu_s"].iloc[0])
    return cpu / (wall * workers) if wall > 0 else math.nan
