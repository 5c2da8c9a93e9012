"""The scaling claim's efficiency per worker: paired by seed, on logs, with a measured coverage."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from esbench.analysis.coverage import efficiency_coverage
from esbench.analysis.scaling import efficiency_interval


def _runs(seeds: list[int], speeds: list[float], workers: int) -> pd.DataFrame:
    return pd.DataFrame({"run_id": [f"w{workers}s{s}" for s in seeds], "seed": seeds, "steps_per_s": speeds})


def _curves(runs: pd.DataFrame, reach_at: list[float]) -> pd.DataFrame:
    """Each run scores 0 at 1 s and 10 at its ``reach_at`` second."""
    rows = []
    for rid, t in zip(runs["run_id"], reach_at, strict=True):
        rows += [(rid, 1.0, 0.0), (rid, t, 10.0)]
    return pd.DataFrame(rows, columns=["run_id", "wall_clock_s", "eval_return_mean"])


NO_CURVES = pd.DataFrame({"run_id": [], "wall_clock_s": [], "eval_return_mean": []})


@pytest.mark.parametrize("n", [3, 5, 10])
def test_the_efficiency_interval_covers_95_percent(n: int) -> None:
    assert 0.93 <= efficiency_coverage(n) <= 0.97


def test_pairing_by_seed_removes_the_spread_between_seeds() -> None:
    """Seeds 10x apart in speed, each exactly 1.6x faster on 2 workers: efficiency 0.8, no doubt."""
    base = _runs([0, 1, 2], [100.0, 1000.0, 300.0], 1)
    top = _runs([0, 1, 2], [160.0, 1600.0, 480.0], 2)
    eff = efficiency_interval(base, top, NO_CURVES, 2.0, threshold=None)
    assert eff.paired and eff.basis == "throughput" and eff.n_seeds == 3
    assert (
        eff.point == pytest.approx(0.8) and eff.low == pytest.approx(0.8) and eff.high == pytest.approx(0.8)
    )
    # Unpaired (no seed in common) the same speeds leave the interval wide open.
    top_other = _runs([3, 4, 5], [160.0, 1600.0, 480.0], 2)
    loose = efficiency_interval(base, top_other, NO_CURVES, 2.0, threshold=None)
    assert not loose.paired and loose.point == pytest.approx(0.8)
    assert loose.low < 0.3 and loose.high > 2.0


def test_time_to_threshold_is_compared_when_every_run_reaches_it() -> None:
    base = _runs([0, 1], [1.0, 1.0], 1)
    top = _runs([0, 1], [50.0, 50.0], 2)  # throughput would say 25: the times must win
    curves = pd.concat([_curves(base, [11.0, 21.0]), _curves(top, [6.0, 11.0])])
    eff = efficiency_interval(base, top, curves, 2.0, threshold=10.0)
    assert eff.basis == "time"
    assert eff.point == pytest.approx(np.sqrt((11 / 6) * (21 / 11)) / 2.0)
    assert eff.low < eff.point < eff.high
    # A run that never reaches the threshold: the comparison falls back to throughput.
    never = pd.concat([_curves(base, [11.0, 21.0]), _curves(top, [6.0, 11.0])])
    never.loc[never["run_id"] == "w2s1", "eval_return_mean"] = 0.0
    assert efficiency_interval(base, top, never, 2.0, threshold=10.0).basis == "throughput"


def test_one_seed_gives_no_interval() -> None:
    eff = efficiency_interval(_runs([0], [100.0], 1), _runs([0], [150.0], 2), NO_CURVES, 2.0, threshold=None)
    assert eff.point == pytest.approx(0.75) and np.isnan(eff.low) and np.isnan(eff.high)
