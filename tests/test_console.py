"""The run bar: best evaluation return (training returns labelled apart), elapsed time and ETA."""

from __future__ import annotations

import io
import math

from esbench.tracking.console import ConsoleProgress


def test_bar_shows_best_evaluation_training_max_elapsed_and_eta() -> None:
    now = [100.0]
    out = io.StringIO()
    bar = ConsoleProgress(1000, "openai_es Hopper-v5 s0", stream=out, clock=lambda: now[0])
    bar.write({"timesteps": 0, "eval_return_mean": 10.0, "train_return_max": math.nan})
    now[0] = 110.0  # 250 steps in 10 s -> 750 more in 30 s
    bar.write({"timesteps": 250, "train_return_max": 900.0, "steps_per_s": 25.0})
    now[0] = 120.0
    bar.write({"timesteps": 500, "eval_return_mean": 50.0, "train_return_max": 80.0})
    now[0] = 125.0
    bar.write({"timesteps": 1000, "eval_return_mean": 20.0})
    first, second, third, last = out.getvalue().splitlines()
    assert "best eval      10.0 (now      10.0)" in first and "train max" not in first
    assert first.endswith("elapsed 0s, ETA ?")
    # A training return of 900 (a perturbed member's) is not the best evaluation.
    assert "best eval      10.0 | train max     900.0 |       25 steps/s" in second
    assert second.endswith("elapsed 10s, ETA 30s")
    assert "best eval      50.0 (now      50.0) | train max      80.0" in third
    assert third.endswith("elapsed 20s, ETA 20s")
    assert "best eval      50.0 (now      20.0)" in last and last.endswith("elapsed 25s, ETA done")
