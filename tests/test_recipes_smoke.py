"""Every recipe at smoke scale, end to end through the real CLI: ``make test-recipes``, a step of CI.

One ``esbench reproduce all scale=smoke`` (every recipe's jobs, then every report: about 4 minutes on
2 idle cores) feeds every test here: each recipe ran all its jobs, and each report is the smoke
scale's and is recomputed from the data it ships. Marked ``recipes``, so the default suite leaves it
to its own CI step (``pytest -m recipes``); the default suite runs the README's main command itself
(``tests/test_readme_command.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from esbench.analysis.report_check import check_report
from esbench.recipes import all_jobs, get_recipe, load_recipes
from tests.conftest import esbench
from tests.smoke_golden import compare_run, every_run, golden_runs

RECIPES = tuple(load_recipes())
#: Its own CI step; the first test also pays for the shared reproduction (pytest-timeout counts
#: fixture set-up).
pytestmark = [pytest.mark.recipes, pytest.mark.timeout(2400)]


@pytest.fixture(scope="module")
def reproduced(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """(results directory, reports directory, stdout) of ``esbench reproduce all scale=smoke``."""
    root = tmp_path_factory.mktemp("reproduce-all")
    runs, reports = root / "runs", root / "reports"
    args = ("all", "scale=smoke", f"results_dir={runs}", f"out_dir={reports}")
    proc = esbench("reproduce", *args, timeout=2400)
    return runs, reports, proc.stdout


@pytest.mark.parametrize("name", RECIPES)
def test_every_recipe_at_smoke_runs_its_jobs_and_writes_a_report_its_data_recomputes(
    name: str, reproduced: tuple[Path, Path, str]
) -> None:
    runs, reports, stdout = reproduced
    recipe = get_recipe(name)
    report = reports / recipe.report / "REPORT.md"
    assert f"report written: {report}" in stdout
    assert "Scale: smoke" in report.read_text()
    jobs = all_jobs(recipe, "smoke")
    assert len(list((runs / name).rglob("summary.json"))) == len(jobs), name
    # each run records the plan it was made under, and the report finds them all made under it
    records = [json.loads(p.read_text()) for p in (runs / name).rglob("plan.json")]
    assert records == [recipe.claims.record()] * len(jobs), name
    assert "were fixed before its runs: all" in report.read_text().splitlines()[2], name
    result = check_report(report.parent)  # every table, number and verdict, from data/ alone
    assert result.ok, result.message


def test_every_recipe_runs_the_jobs_it_has_golden_data_for(reproduced: tuple[Path, Path, str]) -> None:
    runs, _, _ = reproduced
    assert sorted(every_run(runs)) == golden_runs()


@pytest.mark.parametrize("key", golden_runs())
def test_every_smoke_run_computes_its_golden_metrics_and_parameters(
    key: str, reproduced: tuple[Path, Path, str]
) -> None:
    """What every learner computes cannot change unnoticed (``tests/smoke_golden.py``)."""
    runs, _, _ = reproduced
    compare_run(key, every_run(runs)[key])
