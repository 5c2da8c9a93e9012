"""Nothing held after a stop is a measurement, and a time to target is the first confirmed point.

A run with ``budget.stop_at_return`` ends at its first evaluation at or above the target that a
confirmation on fresh seeds backs (esbench.training.ruler.Confirmation). Its metrics end there; the
analysis lets its end not cut the other seeds' curves short, but it never draws or averages a value
for it past its stop, and a point its confirmation did not back does not count as reaching the
target. The frames below are hand-made curve tables (the columns esbench.analysis.load gives), so
every expected number is worked out in the docstrings.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from esbench.analysis.curves import aggregate_curves, mean_curve
from esbench.analysis.report import build_report
from esbench.analysis.stats import REACH_COLUMN, reach_scores
from esbench.analysis.time_to_score import time_to_common_score
from esbench.analysis.verdicts import time_to_target
from tests.synthetic_store import write_run

NAN = math.nan


def frame(
    runs: dict[str, tuple[int, list[float], list[float], list[float] | None]], algo: str = "openai_es"
) -> pd.DataFrame:
    """Curve rows: run_id -> (seed, timesteps, eval_return_mean, confirm_return_mean or None)."""
    rows = []
    for run_id, (seed, ts, ys, cs) in runs.items():
        for i, (t, y) in enumerate(zip(ts, ys, strict=True)):
            rows.append({
                "run_id": run_id, "seed": seed, "algo": algo, "env_id": "Hopper-v5", "timesteps": t,
                "wall_clock_s": t / 10, "eval_return_mean": y,
                "confirm_return_mean": NAN if cs is None else cs[i],
            })  # fmt: skip
    return pd.DataFrame(rows)


def test_a_mean_curve_averages_no_held_value_past_a_stop() -> None:
    """Seed a stopped at t=200 with 60; seed b ran to 400 with (0, 10, 20, 30, 50). Past 200 the
    mean is b's alone (30, 50) with n_seeds 1, not (45, 55) as a value held at 60 would make it,
    and the stopped run's end does not cut the curve at 200."""
    curves = frame(
        {
            "a": (0, [0, 100, 200], [0.0, 20.0, 60.0], None),
            "b": (1, [0, 100, 200, 300, 400], [0.0, 10.0, 20.0, 30.0, 50.0], None),
        }
    )
    curve = mean_curve(curves, rng=np.random.default_rng(0), stopped={"a"})
    assert curve["x"].tolist() == [0, 100, 200, 300, 400]
    assert curve["mean"].tolist() == [0.0, 15.0, 40.0, 30.0, 50.0]
    assert curve["n_seeds"].tolist() == [2, 2, 2, 1, 1]
    assert curve["low"].iloc[:3].notna().all() and curve["low"].iloc[3:].isna().all()  # no band from one seed
    # The same through aggregate_curves, what the figures draw.
    agg = aggregate_curves(curves, ["algo"], stopped={"a"})
    assert agg["mean"].tolist() == curve["mean"].tolist()
    # A run not marked stopped still bounds the common grid: no extrapolation either way.
    assert mean_curve(curves)["x"].tolist() == [0, 100, 200]


def test_a_point_counts_at_the_lower_of_its_evaluation_and_its_confirmation() -> None:
    curves = frame({"a": (0, [0, 100, 200], [0.0, 110.0, 105.0], [NAN, 90.0, 101.0])})
    assert reach_scores(curves)[REACH_COLUMN].tolist() == [0.0, 90.0, 101.0]
    assert reach_scores(curves.drop(columns="confirm_return_mean"))[REACH_COLUMN].tolist() == [
        0.0,
        110.0,
        105.0,
    ]


def test_time_to_target_is_the_first_confirmed_point() -> None:
    """Both seeds evaluated 110 >= 100 at t=100, but seed a's confirmation there gave 90 (it trained
    on) and it stopped at t=200 when 105 was confirmed by 101. Seed b: (0, 110, 120), confirmed at
    100 (stopped there). Reach scores: a (0, 90, 101), b (0, 100). Each run's time is its first
    confirmed point, 200 and 100, not 100 and 100 as the unconfirmed evaluations would say; their
    Kaplan-Meier median is 100 (half the runs got there by then)."""
    curves = frame({
        "a": (0, [0, 100, 200], [0.0, 110.0, 105.0], [NAN, 90.0, 101.0]),
        "b": (1, [0, 100], [0.0, 110.0], [NAN, 100.0]),
    })  # fmt: skip
    tt = time_to_target(curves, 100.0, stopped={"a", "b"})
    assert tt.times == (200.0, 100.0) and tt.arrived == (True, True) and tt.stopped_below == 0
    assert (tt.point, tt.low, tt.high) == (100.0, 100.0, 200.0)
    unconfirmed = time_to_target(curves.drop(columns="confirm_return_mean"), 100.0, stopped={"a", "b"})
    assert unconfirmed.times == (100.0, 100.0)  # what the same runs would say without their confirmations


def test_a_stopped_run_reached_the_target_at_its_stop_and_the_other_is_censored() -> None:
    """Seed a stopped at t=100 with 150 (confirmed); seed b: (0, 40, 70, 95) on (0, 100, 200, 300).
    For the target 100, a reached it at 100 (nothing is held past its stop: no mean curve is read)
    and b never did: censored at its budget, 300. The Kaplan-Meier median is 100, its interval
    [100, inf): one run of two bounds nothing above."""
    curves = frame({
        "a": (0, [0, 100], [0.0, 150.0], [NAN, 150.0]),
        "b": (1, [0, 100, 200, 300], [0.0, 40.0, 70.0, 95.0], None),
    })  # fmt: skip
    tt = time_to_target(curves, 100.0, stopped={"a"})
    assert tt.times == (100.0, 300.0) and tt.arrived == (True, False)
    assert (tt.point, tt.low, tt.high, tt.last, tt.n_seeds) == (100.0, 100.0, np.inf, 300.0, 2)
    # For a target above its stopping score, the stopped run is censored at its stop.
    assert time_to_target(curves, 200.0, stopped={"a"}).stopped_below == 1


def test_time_to_a_common_score_counts_each_seed_at_its_first_confirmed_point() -> None:
    """TRPO's best mean is 100 (the common score). ES seed a evaluated 120 at t=100 but its
    confirmation gave 80, then 100 was confirmed at t=300; seed b reached 100 at t=200 (no
    confirmation: no target). Per-seed times (300, 200): Kaplan-Meier median 200 (half the seeds
    there), with interval [200, 300]; unconfirmed, (100, 200) would give 100."""
    trpo = frame(
        {f"t{s}": (s, [0, 100, 200, 300], [0.0, 40.0, 80.0, 100.0], None) for s in (0, 1)}, algo="trpo"
    )
    es = frame({
        "a": (0, [0, 100, 200, 300], [0.0, 120.0, 90.0, 100.0], [NAN, 80.0, NAN, 100.0]),
        "b": (1, [0, 100, 200, 300], [0.0, 50.0, 100.0, 130.0], None),
    })  # fmt: skip
    table = time_to_common_score(pd.concat([trpo, es]), stopped={"a"}).set_index("algo")
    row = table.loc["openai_es"]
    assert row["target"] == 100.0 and row["n_reached"] == 2 and row["timesteps"] == 200.0
    assert (row["timesteps_low"], row["timesteps_high"]) == (200.0, 300.0)


def test_a_report_scores_a_stopped_run_by_its_confirmation_and_marks_its_stop(tmp_path: Path) -> None:
    """Two ES seeds on Swimmer stopped at their target 100, stopping evaluations 120 and 110 (the
    points that triggered the stops, selected for being high), confirmations 104 and 100. The
    summary's final score is the confirmations' mean, 102, not 115; the curves' caption says no
    value is held past a stop. The written metrics carry the confirmation on the stop's row."""
    for seed, (ys, confirm) in enumerate((([0.0, 50.0, 120.0], 104.0), ([0.0, 60.0, 110.0], 100.0))):
        run_dir = write_run(tmp_path, "curves", "openai_es", "Swimmer-v5", seed, [0, 250, 500], ys,
                            stopped_at_return=True)  # fmt: skip
        metrics = pd.read_csv(run_dir / "metrics.csv")
        last = metrics.index[-1]
        metrics.loc[last, ["confirm_return_mean", "confirm_return_std", "confirmed"]] = [confirm, 1.0, 1.0]
        metrics.to_csv(run_dir / "metrics.csv", index=False)
    report = build_report("curves", tmp_path, tmp_path / "paper", allow_partial=True)
    summary = pd.read_csv(report.parent / "tables" / "summary.csv")
    assert summary["final_eval_return"].tolist() == [102.0]
    text = report.read_text()
    assert "nothing is drawn or averaged for it past its stop" in text
    assert "their final score is the confirmation's mean" in text


def _with_stochastic(run_dir: Path, values: list[float]) -> None:
    """Fill a synthetic run's eval_stochastic_return_mean on its evaluation rows."""
    metrics = pd.read_csv(run_dir / "metrics.csv")
    points = metrics.index[metrics["eval_return_mean"].notna()]
    metrics.loc[points, "eval_stochastic_return_mean"] = values
    metrics.loc[points, "eval_stochastic_return_std"] = 0.0
    metrics.to_csv(run_dir / "metrics.csv", index=False)


def test_the_summary_shows_the_stochastic_evaluation_where_it_differs(tmp_path: Path) -> None:
    """Two seeds with final deterministic returns 100 and 120 and stochastic ones 90 and 100: the
    summary adds their mean, 95, beside 110. Where the stochastic evaluation equals the
    deterministic one everywhere (ES on discrete actions), no column is added."""
    for seed, (ys, noisy) in enumerate((([0.0, 100.0], [0.0, 90.0]), ([0.0, 120.0], [0.0, 100.0]))):
        _with_stochastic(write_run(tmp_path / "a", "curves", "trpo", "Swimmer-v5", seed, [0, 500], ys), noisy)
        _with_stochastic(write_run(tmp_path / "b", "curves", "trpo", "Swimmer-v5", seed, [0, 500], ys), ys)
    report = build_report("curves", tmp_path / "a", tmp_path / "paper_a", allow_partial=True)
    summary = pd.read_csv(report.parent / "tables" / "summary.csv")
    assert summary["final_eval_return"].tolist() == [110.0] and summary["stochastic_return"].tolist() == [
        95.0
    ]
    assert "Final stochastic return [95% CI]" in (report.parent / "tables" / "summary.md").read_text()
    same = build_report("curves", tmp_path / "b", tmp_path / "paper_b", allow_partial=True)
    assert "stochastic_return" not in pd.read_csv(same.parent / "tables" / "summary.csv").columns
    assert "stochastic" not in (same.parent / "tables" / "summary.md").read_text()
