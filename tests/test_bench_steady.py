"""The benchmarks' steady-state window leaves out the timestep-0 row, worker start-up and the final row."""

import math

import pandas as pd
import pytest

from esbench.bench.steady import steady_rate, steady_window


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
