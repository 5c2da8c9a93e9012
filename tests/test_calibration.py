"""The calibration file and the estimates priced from it (``esbench bench calibrate``).

The default-suite tests use synthetic calibration files: the file's round trip, its checks, and that
an estimate follows the rates it is priced from and says which priced it. The measuring itself is
real in the slow test at the end.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from esbench import reproduce
from esbench.recipes import STEP_RATES, estimate, get_recipe, pricing
from esbench.utils.calibration import (
    CalibrationError,
    calibration_path,
    load_calibration,
    save_calibration,
)


def _calibration(slowdown: float = 1.0, date: str = "2026-01-02 03:04:05") -> dict[str, Any]:
    """The built-in rates as a calibration, every cost ``slowdown`` times the built-in one."""
    rates = copy.deepcopy(STEP_RATES)
    rates["mujoco_raw"] = {k: v / slowdown for k, v in rates["mujoco_raw"].items()}
    rates["es_policy_s"] *= slowdown
    del rates["es_steps_per_s"], rates["es_episode_steps"], rates["rl_steps_per_s"]  # empty: not measured
    rates["rl_steps_per_s"] = {"trpo": 1700 / slowdown, "ppo": 1500 / slowdown, "a2c": 1200 / slowdown}
    rates["atari_frame_s"] *= slowdown
    rates["atari_cnn_s"] = {k: v * slowdown for k, v in rates["atari_cnn_s"].items()}
    rates["job_overhead_s"] = {k: v * slowdown for k, v in rates["job_overhead_s"].items()}
    rates["sweep_overhead_s"] *= slowdown
    rates["recipe_overhead_s"] *= slowdown
    rates["validate_s"] *= slowdown
    rates["lm"] = {
        k: {a: b * slowdown for a, b in v.items()} if isinstance(v, dict) else v * slowdown
        for k, v in rates["lm"].items()
    }
    rates["lm"]["points"] = STEP_RATES["lm"]["points"]
    return {
        "schema": 1,
        "date": date,
        "seconds": 1.0,
        "machine": {"cpu_model": "test", "cpu_count": 2},
        "versions": {},
        "rates": rates,
    }


def test_calibration_file_round_trip_and_location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Saved atomically (nothing else left beside it), loaded back equal; the location follows
    ``$ESBENCH_CALIBRATION``, else ``$ESBENCH_CACHE``; no file is no calibration."""
    monkeypatch.delenv("ESBENCH_CALIBRATION", raising=False)
    monkeypatch.setenv("ESBENCH_CACHE", str(tmp_path / "cache"))
    assert calibration_path() == tmp_path / "cache" / "calibration.json"
    assert load_calibration() is None
    data = _calibration()
    written = save_calibration(data)
    assert written == calibration_path() and load_calibration() == json.loads(json.dumps(data))
    assert [p.name for p in written.parent.iterdir()] == ["calibration.json"]
    monkeypatch.setenv("ESBENCH_CALIBRATION", str(tmp_path / "elsewhere.json"))
    assert calibration_path() == tmp_path / "elsewhere.json" and load_calibration() is None


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.update(schema=0), r"schema=0; allowed: 1"),
        (
            lambda d: d["rates"]["mujoco_raw"].update(hopper=-5),
            r"rates\.mujoco_raw\.hopper=-5; allowed: a positive",
        ),
        (lambda d: d["rates"].update(sweep_overhead_s="fast"), r"rates\.sweep_overhead_s='fast'"),
        (lambda d: d.pop("date"), r"needs 'date'"),
    ],
)
def test_a_bad_calibration_is_refused_naming_the_key(tmp_path: Path, edit: Any, message: str) -> None:
    data = _calibration()
    edit(data)
    path = tmp_path / "calibration.json"
    with pytest.raises(CalibrationError, match=message):
        save_calibration(data, path)
    assert not path.exists()
    path.write_text(json.dumps(data))
    with pytest.raises(CalibrationError, match=message):
        load_calibration(path)


def test_an_estimate_follows_the_calibration_and_names_its_source(tmp_path: Path) -> None:
    """A machine twice as slow is priced at twice the cost; the estimate says which rates priced it."""
    builtin = pricing(tmp_path / "none.json")
    assert not builtin.calibrated and "built-in rates; run `esbench bench calibrate`" in builtin.source
    same, slow = tmp_path / "same.json", tmp_path / "slow.json"
    save_calibration(_calibration(1.0), same)
    save_calibration(_calibration(2.0, date="2026-05-06 07:08:09"), slow)
    assert pricing(slow).source == f"priced by calibration of 2026-05-06 07:08:09 ({slow})"
    for name in ("table1", "table2", "retention", "lm_retention"):
        recipe = get_recipe(name)
        base = estimate(recipe, "smoke", 2, builtin)
        assert estimate(recipe, "smoke", 2, pricing(same)).wall_s == pytest.approx(base.wall_s, rel=1e-9)
        doubled = estimate(recipe, "smoke", 2, pricing(slow))
        assert doubled.wall_s == pytest.approx(2 * base.wall_s, rel=1e-6)
        assert doubled.core_s == pytest.approx(2 * base.core_s, rel=1e-6)
        assert doubled.source == pricing(slow).source


def test_sweeps_run_one_after_another_and_jobs_share_the_cores(tmp_path: Path) -> None:
    """The wall-clock model: a recipe's sweeps add up (each with its start-up), and on 2 cores two
    single-threaded jobs at once cost their core-seconds over 2 cores slowed by the measured
    parallel efficiency, never less than the longest job alone."""
    data = _calibration()
    data["rates"]["parallel_efficiency"] = 0.5
    path = tmp_path / "half.json"
    save_calibration(data, path)
    half, full = pricing(path), pricing(tmp_path / "none.json")
    recipe = get_recipe("curves")  # smoke: one ES sweep, then one sweep of three RL jobs
    a, b = estimate(recipe, "smoke", 2, full), estimate(recipe, "smoke", 2, half)
    assert b.wall_s > a.wall_s and b.core_s == pytest.approx(a.core_s)
    one_core = estimate(recipe, "smoke", 1, half)
    assert one_core.wall_s > a.wall_s  # one core: every job after the other
    assert one_core.wall_s == pytest.approx(b.wall_s)  # two cores at half speed each are one core
    overheads = STEP_RATES["recipe_overhead_s"] + len(recipe.plan("smoke")) * STEP_RATES["sweep_overhead_s"]
    assert a.wall_s > overheads


def test_reproduce_prints_the_estimate_and_its_source_before_the_first_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "calibration.json"
    monkeypatch.setenv("ESBENCH_CALIBRATION", str(path))
    assert reproduce.main(["table1", "scale=smoke", "--dry-run"]) == 0
    assert "built-in rates; run `esbench bench calibrate`" in capsys.readouterr().out.splitlines()[0]
    save_calibration(_calibration(3.0, date="2026-07-08 09:10:11"), path)
    assert reproduce.main(["table1", "scale=smoke", "--dry-run"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("# reproduce table1 at scale smoke: 2 job(s), estimated ~")
    assert first.endswith(f"priced by calibration of 2026-07-08 09:10:11 ({path})")
    path.write_text("{not json")
    assert reproduce.main(["table1", "scale=smoke", "--dry-run"]) == 2
    assert "not readable JSON" in capsys.readouterr().err


@pytest.mark.slow
def test_calibrate_measures_every_rate_on_this_machine(tmp_path: Path) -> None:
    """The real measurement (a few minutes): every rate the estimator reads is measured, positive,
    and the file it writes prices estimates."""
    from esbench.bench.calibrate import calibrate

    data = calibrate(lm=True)
    path = save_calibration(data, tmp_path / "calibration.json")
    rates = load_calibration(path)["rates"]  # type: ignore[index]
    assert set(rates["mujoco_raw"]) == set(STEP_RATES["mujoco_raw"])
    assert set(rates["rl_steps_per_s"]) == {"trpo", "ppo", "a2c"}
    assert set(rates["lm"]["completion_s"]) == {"eggroll", "openai_es", "grpo"}
    assert set(rates["job_overhead_s"]) == {"es", "rl"} and rates["validate_s"] > 0
    assert 0 < rates["parallel_efficiency"] <= 1 and 0 < rates["es_fraction"] < 2
    assert data["machine"]["cpu_count"] and data["versions"]["mujoco"]
    assert pricing(path).calibrated and estimate(get_recipe("table1"), "smoke", 2, pricing(path)).wall_s > 0


def test_an_es_budget_is_priced_in_whole_generations() -> None:
    """ES stops after the generation that reaches its budget: 8 members x 300-step episodes run
    2,400 steps a generation, so a budget of 3,000 runs 4,800 (as the frameskip smoke's ES job did)."""
    from esbench.recipes import whole_generations

    assert whole_generations(3000, "openai_es", {"algo.population_size": "8"}, 300) == 4800
    assert whole_generations(4800, "openai_es", {"algo.population_size": "8"}, 300) == 4800
    assert whole_generations(1000, "openai_es", {}, 1000) == 40_000  # conf/algo/openai_es.yaml: 40


def test_calibrate_refuses_an_unknown_argument(capsys: pytest.CaptureFixture[str]) -> None:
    from esbench.bench.command import main

    assert main(["calibrate", "--fast"]) == 2
    assert "unknown argument '--fast'; allowed: --out PATH, --no-lm" in capsys.readouterr().err
