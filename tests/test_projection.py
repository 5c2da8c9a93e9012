"""The scaling projection: the model on known numbers, and its place in ``esbench report scaling``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from esbench.analysis.projection import (
    Calibration,
    Scenario,
    bottleneck,
    bottleneck_markdown,
    generation_time,
    local_table,
    paper_projection,
    paper_scenario,
)


def _raw(task_ms: float = 1.0, per_episode_us: float = 5.0, beta: float = 1e8) -> dict:
    """Raw measurements with known constants: master 2 ms + per_episode_us per episode, payload
    1,000 + 50 B per episode (4 records), scheduler rounds of 5 ms + task_ms per task + bytes/beta."""
    sizes = [1_000 + 50 * n for n in (40, 2_000, 10_000)]
    return {
        "cores": 2,
        "rollout": [{"env_id": "Humanoid-v5", "step_s": 2e-4}, {"env_id": "Hopper-v5", "step_s": 1e-4}],
        "master": [{"episodes": n, "seconds": 0.002 + per_episode_us * 1e-6 * n} for n in (40, 400, 10_000)],
        "messages": [
            {"episodes": n, "history": h, "task_bytes": (1_000 + (50 if h == 4 else 12.5) * n)}
            for n in (40, 2_000, 10_000)
            for h in (4, 1)
        ],
        "scheduler": [
            {
                "episodes": n,
                "task_bytes": b,
                "tasks": k,
                "seconds": 0.005 + k * (task_ms * 1e-3 + b / beta) + 0.0001 * k,
                "master_cpu_s": k * (task_ms * 1e-3 + b / beta),
                "scheduler_cpu_s": 0.5 * k * task_ms * 1e-3,
            }
            for n, b in zip((40, 2_000, 10_000), sizes, strict=True)
            for k in (2, 8, 32, 128)
        ],
    }


def test_calibration_recovers_the_constants_it_was_made_from() -> None:
    cal = Calibration.from_dict(_raw())
    assert cal.master == pytest.approx((0.002, 5e-6), rel=1e-6)
    assert cal.bytes_history4 == pytest.approx((1_000, 50), rel=1e-6)
    assert cal.bytes_history1 == pytest.approx((1_000, 12.5), rel=1e-6)
    assert cal.task_s == pytest.approx(1e-3, rel=1e-6)
    assert cal.scheduler_bytes_per_s == pytest.approx(1e8, rel=1e-6)
    assert cal.round_s == pytest.approx(0.005, rel=1e-6)


def test_real_run_payloads_win_over_built_messages_and_the_report_says_what_is_implemented() -> None:
    """With real-run payloads (``esbench bench projection``'s ``payloads``) the bytes are fitted to
    them; the verdict names ``algo.sync_history=1`` as implemented, the sub-masters as projected,
    and shows the measured cost of the sync history on a real run."""
    raw = _raw()
    raw["payloads"] = [
        {"episodes": n, "history": h, "task_bytes": 2_000 + (40 if h == 4 else 10) * n}
        for n in (40, 1_000)
        for h in (4, 1)
    ]
    raw["sync_history_cost"] = [
        {"history": h, "generations": 20, "snapshots_sent": s, "bytes_to_workers_per_generation": b,
         "seconds_per_generation": 0.7, "wall_clock_s": 15.0, "params_sha256": "ab" * 32}
        for h, s, b in ((4, 0, 9_000.0), (1, 2, 5_000.0))
    ]  # fmt: skip
    cal = Calibration.from_dict(raw)
    assert cal.payload_source == "real runs"
    assert cal.bytes_history4 == pytest.approx((2_000, 40), rel=1e-6)
    assert cal.bytes_history1 == pytest.approx((2_000, 10), rel=1e-6)
    assert Calibration.from_dict(_raw()).payload_source == "built messages"
    # a smaller payload per task moves the half-efficiency point out
    four, one = (bottleneck(cal, paper_scenario(cal, h))["half_efficiency_workers"] for h in (4, 1))
    assert one > four
    text = bottleneck_markdown(cal)
    assert "`algo.sync_history=1` | implemented, measured" in text
    assert "sub-masters), 4 records | projected" in text
    assert "| 1 | 20 | 2 | 5.0 | 0.700 | yes |" in text  # the real run's snapshots, counted
    assert "Measured serial cost per task at 10,000 episodes" in text


def test_bottleneck_is_where_serial_time_equals_rollouts() -> None:
    cal = Calibration.from_dict(_raw())
    sc = Scenario(episodes=10_000, steps=5e6, env_id="Humanoid-v5")
    b = bottleneck(cal, sc)
    t = generation_time(cal, sc, b["half_efficiency_workers"])
    assert t["master"] + t["scheduler"] == pytest.approx(t["rollouts"], rel=1e-6)
    # past the fastest point a generation gets slower; before it, faster
    w = b["fastest_workers"]
    assert generation_time(cal, sc, w)["total"] < generation_time(cal, sc, 2 * w)["total"]
    assert generation_time(cal, sc, w)["total"] < generation_time(cal, sc, w / 2)["total"]
    # fewer, larger tasks (one per 18 workers) move the bottleneck out by about sqrt(18)
    wider = bottleneck(cal, Scenario(10_000, 5e6, "Humanoid-v5", workers_per_task=18))
    assert wider["fastest_workers"] == pytest.approx(w * math.sqrt(18), rel=1e-6)


def test_paper_projection_reproduces_its_calibration_point_and_scales_sublinearly() -> None:
    cal = Calibration.from_dict(_raw())
    proj = paper_projection(cal, [18, 1440])
    assert proj["minutes"][0] == pytest.approx(657.0, rel=1e-9)  # the calibration point itself
    assert proj["minutes"][1] > 657.0 / 80  # never better than linear
    assert proj["predicted_1440_minutes"] == pytest.approx(proj["minutes"][1])


def test_local_table_predicts_from_generations_read_off_the_runs() -> None:
    cal = Calibration.from_dict(_raw())
    scaling = pd.DataFrame(
        {"algo": "openai_es", "env_id": "Hopper-v5", "cluster": "processes", "workers": [1, 2, 4],
         "threshold": 100.0, "time_to_threshold_s": [100.0, 55.0, 60.0]}
    )  # fmt: skip
    curves = pd.DataFrame(
        {"algo": "openai_es", "env_id": "Hopper-v5", "run_id": "r", "generation": [0, 10, 20],
         "timesteps": [0, 10_000, 20_000], "eval_return_mean": [0.0, 50.0, 120.0]}
    )  # fmt: skip
    table = local_table(cal, scaling, curves)
    assert list(table["workers"]) == [1, 2, 4]
    assert (table["generations"] == 20).all() and (table["steps_per_generation"] == 1_000).all()
    pred = table["predicted_s"].to_numpy()
    assert pred[1] < pred[0]  # a second core helps
    assert pred[2] > pred[1]  # a third and fourth worker on 2 cores only add overhead
    one = 20 * generation_time(cal, Scenario(40, 1_000, "Hopper-v5", cores=2), 1)["total"]
    assert pred[0] == pytest.approx(one)


def test_report_scaling_includes_the_projection(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from esbench.analysis.projection import CALIBRATION_FILE
    from esbench.analysis.report import build_report
    from tests.synthetic_store import write_run

    root = tmp_path / "runs"
    for workers in (1, 2):
        for seed in (0, 1):
            write_run(
                root, experiment="scaling", algo="openai_es", env_id="Hopper-v5", seed=seed, workers=workers,
                timesteps=np.array([0, 50_000, 100_000]), eval_returns=np.array([10.0, 500.0, 900.0 + seed]),
            )  # fmt: skip
    monkeypatch.chdir(tmp_path)
    report = build_report("scaling", root, tmp_path / "paper")
    assert "esbench bench projection" in report.read_text()  # no calibration yet: how to get one
    CALIBRATION_FILE.parent.mkdir(parents=True)
    CALIBRATION_FILE.write_text(json.dumps({"projection": _raw()}))
    text = build_report("scaling", root, tmp_path / "paper").read_text()
    assert "### Projection" in text and "efficiency 1/2 at W" in text
    assert "Assumptions" in text and (tmp_path / "paper/scaling/figures/scaling_projection.png").exists()
    assert "| openai_es | Hopper-v5 | local | 2 |" in text  # measured beside predicted
