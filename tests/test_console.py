"""The run bar: best evaluation return (training returns labelled apart), elapsed time and ETA."""

from __future__ import annotations

import io
import math

from esbench.tracking.console import ConsoleProgress
from esbench.tracking.logger import MetricsLogger
from esbench.tracking.store import RunStore


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


def test_speed_and_eta_follow_the_recent_rate_not_the_whole_runs_average() -> None:
    """A run that speeds up (a sweep's other job ends and leaves it both workers) shows the rate of
    the last window and an ETA from it; the whole-run average would say 25 steps/s and 4m00s."""
    now = [0.0]
    out = io.StringIO()
    bar = ConsoleProgress(10_000, "openai_es Hopper-v5 s2", stream=out, clock=lambda: now[0], window_s=60.0)
    for t, ts in ((0.0, 0), (100.0, 1_000), (130.0, 2_500), (160.0, 4_000)):
        now[0] = t
        bar.write({"timesteps": ts, "steps_per_s": ts / t if t else 0.0})
    last = out.getvalue().splitlines()[-1]
    # The window keeps the newest point at least 60 s old (t=100): 3,000 steps in 60 s.
    assert "|       50 steps/s |" in last, last
    assert last.endswith("elapsed 2m40s, ETA 2m00s"), last


def test_a_stalled_window_shows_the_rows_rate_and_no_eta() -> None:
    """No timestep taken since the window's oldest point (a resumed run's first row repeated): the
    bar falls back to the row's own steps/s and says ``ETA ?`` rather than dividing by zero."""
    now = [0.0]
    out = io.StringIO()
    bar = ConsoleProgress(1_000, "ppo Hopper-v5 s0", stream=out, clock=lambda: now[0])
    bar.write({"timesteps": 400, "steps_per_s": 7.0})
    now[0] = 5.0
    bar.write({"timesteps": 400, "steps_per_s": 7.0})
    first, second = out.getvalue().splitlines()
    for line in (first, second):
        assert "|        7 steps/s |" in line and line.endswith("ETA ?"), line


def test_a_resumed_runs_bar_keeps_the_best_evaluation_from_before_its_checkpoint(tmp_path) -> None:
    """A run resumed from a checkpoint shows the whole run's best evaluation, read back from the
    rows metrics.csv kept (not ``-`` until the next evaluation, nor only the evaluations after it)."""
    store = RunStore(tmp_path, "exp", "run")
    first = MetricsLogger(store, [])
    for ts, ev in ((0, 100.0), (500, 1503.1), (1000, math.nan), (1500, 900.0)):
        first.record_many({"timesteps": ts, "eval_return_mean": ev})
        first.dump()
    out = io.StringIO()
    bar = ConsoleProgress(4000, "openai_es Hopper-v5 s2", stream=out)
    resumed = MetricsLogger(store, [bar])
    resumed.resume(3)  # the checkpoint came after the third row; the fourth (900) is dropped
    resumed.record_many({"timesteps": 1500, "train_return_max": 1519.8})
    resumed.dump()
    resumed.record_many({"timesteps": 2000, "eval_return_mean": 1474.7})
    resumed.dump()
    no_eval, with_eval = out.getvalue().splitlines()
    assert "best eval    1503.1 | train max    1519.8" in no_eval, no_eval
    assert "best eval    1503.1 (now    1474.7)" in with_eval, with_eval
