"""The benchmarks' steady-state window leaves out the timestep-0 row, worker start-up and the final row."""

import math

import pandas as pd
import pytest

from esbench.bench.steady import busy_fraction, generation_rates, steady_rate, steady_window


def _metrics() -> pd.DataFrame:
    # generation 0: the timestep-0 evaluation; generation 1: 3 s of worker start-up; then 1 s per
    # generation of 1,000 steps; the last row carries a 5 s final evaluation.
    return pd.DataFrame(
        {
            "generation": [0, 1, 2, 3, 4, 5],
            "timesteps": [0, 1000, 2000, 3000, 4000, 5000],
            "wall_clock_s": [0.5, 3.5, 4.5, 5.5, 6.5, 11.5],
        }
    )


def test_window_is_generations_two_to_second_to_last() -> None:
    window = steady_window(_metrics())
    assert window["generation"].tolist() == [1, 2, 3, 4]


def test_rate_excludes_start_up_and_final_evaluation() -> None:
    # Counting the timestep-0 row would give 4000 / 6 s = 667 steps/s; the steady rate is 1000.
    assert steady_rate(_metrics()) == pytest.approx(1000.0)


def test_rate_is_nan_without_two_steady_rows() -> None:
    assert math.isnan(steady_rate(_metrics().iloc[:3]))


def test_generation_rates_are_per_generation_inside_the_window() -> None:
    m = _metrics()
    m.loc[3, "wall_clock_s"] = 6.0  # generation 3 took 1.5 s (a slow moment of the host)
    m.loc[4, "wall_clock_s"] = 6.5  # so generation 4 took 0.5 s
    assert generation_rates(m) == pytest.approx([1000.0, 1000.0 / 1.5, 2000.0])
    assert max(generation_rates(m)) == pytest.approx(2000.0)


def test_busy_fraction_is_worker_cpu_over_worker_wall_clock() -> None:
    m = _metrics()
    # 2 workers; across the window (3 s of wall-clock) the tasks used 5.4 CPU seconds: 90% busy.
    m["cpu_s"] = [0.1, 2.0, 3.8, 5.6, 7.4, 12.0]
    assert busy_fraction(m, workers=2) == pytest.approx(0.9)
    assert busy_fraction(m, workers=1) == pytest.approx(1.8)  # more CPU than one worker has: wrong count
    assert math.isnan(busy_fraction(m.iloc[:3], workers=2))
