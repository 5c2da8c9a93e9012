"""The population-size ablation's report on synthetic runs: the trend verdict both ways, the ratio
to the paper's ES, runs of different populations kept apart, and the shipped data recomputing it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from esbench.analysis.load import load_results, stopped_runs
from esbench.analysis.population import claim_table, population_table
from esbench.analysis.table1 import load_mujoco_reference
from esbench.analysis.verdicts import CONTRADICTED, SUPPORTED, UNDECIDED
from tests.synthetic_store import write_run

ENV = "InvertedPendulum-v5"  # the paper's target at 100%: 1,000; its ES needed 455k timesteps
STEP = 25_000


def _write_population(root: Path, population: int, reach_at: float, seeds: int = 3) -> None:
    """Runs that climb linearly to the target 1,000 near ``reach_at`` timesteps and stop there."""
    for seed in range(seeds):
        at = reach_at * (1.0 + 0.05 * (seed - 1))
        t = np.arange(0.0, at + STEP, STEP)
        y = np.minimum(1000.0 * t / at, 1000.0)
        y[-1] = 1000.0  # the stopping point (stop_at_return is set to the last value)
        write_run(
            root, "population", "openai_es", ENV, seed, t, y, stopped_at_return=True, population=population
        )


def _tables(root: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    results = load_results(root / "population")
    stopped = stopped_runs(results)
    ref = load_mujoco_reference()
    return population_table(results.curves, ref, stopped), claim_table(results.curves, ref, stopped)


def test_larger_population_needing_more_timesteps_is_supported(tmp_path: Path) -> None:
    _write_population(tmp_path, 40, 100_000)
    _write_population(tmp_path, 1000, 400_000)
    table, claims = _tables(tmp_path)
    assert list(table["population"]) == [40, 1000]
    assert list(table["n_seeds"]) == [3, 3]  # same seeds, other populations: not superseded
    assert list(table["n_reached"]) == [3, 3]
    assert table["target"].tolist() == [1000.0, 1000.0]
    assert table["paper_es_timesteps"].tolist() == [455_000.0, 455_000.0]
    small, large = table.itertuples()
    assert small.timesteps == pytest.approx(100_000, rel=0.3)
    assert large.timesteps == pytest.approx(400_000, rel=0.3)
    assert small.ratio == pytest.approx(small.timesteps / 455_000)
    assert small.reproduced == CONTRADICTED and "faster" in small.reproduced_note
    assert claims["verdict"].tolist() == [SUPPORTED]
    assert (claims["small"].item(), claims["large"].item()) == (40, 1000)


def test_larger_population_needing_fewer_timesteps_is_contradicted(tmp_path: Path) -> None:
    _write_population(tmp_path, 40, 400_000)
    _write_population(tmp_path, 1000, 100_000)
    _, claims = _tables(tmp_path)
    assert claims["verdict"].tolist() == [CONTRADICTED]
    assert "fewer" in claims["decide"].item()


def test_a_population_that_never_reaches_the_target_is_censored(tmp_path: Path) -> None:
    _write_population(tmp_path, 40, 100_000)
    for seed in range(3):  # population 1000: climbs to 600 by 500k timesteps, never stops
        t = np.arange(0.0, 500_001, STEP)
        write_run(
            tmp_path, "population", "openai_es", ENV, seed, t, 600.0 * t / t[-1] + seed, population=1000
        )
    table, claims = _tables(tmp_path)
    large = table[table["population"] == 1000].iloc[0]
    assert np.isposinf(large["timesteps"]) and large["n_reached"] == 0
    assert large["timesteps_text"].startswith("> ")
    assert large["timesteps_text"].endswith("; reached 0/3 [0, 0.71]")  # the share within the budget
    assert claims["verdict"].tolist() == [SUPPORTED]  # not reached by 500k > the small one's 100k


def test_equal_populations_are_undecided(tmp_path: Path) -> None:
    _write_population(tmp_path, 40, 200_000)
    _write_population(tmp_path, 1000, 200_000)
    _, claims = _tables(tmp_path)
    assert claims["verdict"].tolist() == [UNDECIDED]


def test_report_ships_its_data_and_passes_the_check(tmp_path: Path) -> None:
    from esbench.analysis.report import build_report
    from esbench.analysis.report_check import check_report

    _write_population(tmp_path / "runs", 40, 100_000)
    _write_population(tmp_path / "runs", 1000, 400_000)
    path = build_report("population", results_dir=tmp_path / "runs", out_dir=tmp_path / "paper")
    text = path.read_text()
    assert "a larger population needs more timesteps to the paper's target (population 1000 vs 40)" in text
    assert "**supported**" in text
    assert (path.parent / "figures" / "population.png").is_file()
    assert (path.parent / "data" / "runs.parquet").is_file()
    result = check_report(path.parent)
    assert result.ok, result.message


@pytest.mark.slow  # 3-9 min on 2 cores under load average ~7 (8 jobs, two sweeps, the report)
def test_reproduce_population_smoke_end_to_end(tmp_path: Path) -> None:
    from esbench.analysis.report_check import check_report
    from esbench.recipes import all_jobs, get_recipe
    from tests.conftest import esbench

    runs, reports = tmp_path / "runs", tmp_path / "reports"
    esbench(
        "reproduce", "population", "scale=smoke", f"results_dir={runs}", f"out_dir={reports}", timeout=1800
    )
    jobs = all_jobs(get_recipe("population"), "smoke")
    assert len(list((runs / "population").rglob("summary.json"))) == len(jobs) == 8
    results = load_results(runs / "population")
    assert sorted(set(results.runs["population"])) == [4, 8]
    assert set(results.runs.groupby(["env_id", "population"]).size()) == {2}  # 2 seeds each
    assert all(any(o.startswith("budget.stop_at_return=") for o in j) for j in jobs)  # paper targets
    report = reports / "population" / "REPORT.md"
    assert "a larger population needs more timesteps" in report.read_text()
    result = check_report(report.parent)
    assert result.ok, result.message
