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
