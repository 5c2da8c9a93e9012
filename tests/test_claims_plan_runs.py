"""Runs record the plan they were made under, through the real CLI; a report rebuilt after its
claims changed says so first and decides nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from esbench.analysis.claims.verdicts import NOT_DECIDED, VERDICTS
from esbench.analysis.report import build_report
from esbench.analysis.report_check import check_report
from esbench.recipes import get_recipe
from esbench.tracking.schema import PLAN_FILE, SUMMARY_FILE
from esbench.utils.resources import experiments_dir
from tests.conftest import esbench


@pytest.fixture(scope="module")
def reproduced(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(runs, report) of the retention recipe at smoke, one seed, sequence runs only: 4 CartPole jobs."""
    root = tmp_path_factory.mktemp("plan-runs")
    args = ("retention", "scale=smoke", "seed=0", "sequence.only_stage=null")
    esbench("reproduce", *args, f"results_dir={root / 'runs'}", f"out_dir={root / 'reports'}", timeout=900)
    return root / "runs" / "retention", root / "reports" / "retention"


def _claims_verdicts(report: str) -> list[str]:
    """The verdict column of the report's claims table."""
    lines = report.split("## Claims checked\n", 1)[1].lstrip("\n").splitlines()
    table = lines[: next((k for k, line in enumerate(lines) if not line.startswith("|")), len(lines))]
    return [row.rstrip(" |").rsplit("| ", 1)[1] for row in table[2:]]


def test_every_run_reproduce_launches_records_its_recipes_plan_and_its_report_ships_it(
    reproduced: tuple[Path, Path],
) -> None:
    runs, report = reproduced
    plan = get_recipe("retention").claims
    made = [d for d in runs.iterdir() if (d / SUMMARY_FILE).is_file()]
    assert len(made) == 4
    for run in made:
        record = json.loads((run / PLAN_FILE).read_text())
        assert record == plan.record() and record["files"] == {
            "experiments/claims/retention.yaml": plan.files[0].sha256
        }
        shipped = report / "data" / "runs" / run.name / PLAN_FILE
        assert shipped.read_bytes() == (run / PLAN_FILE).read_bytes()
    text = (report / "REPORT.md").read_text()
    assert f"plan `{plan.hash[:12]}`, were fixed before its runs: all 4 record it" in text.splitlines()[2]
    verdicts = _claims_verdicts(text)
    assert verdicts and NOT_DECIDED not in verdicts and set(verdicts) <= set(VERDICTS)


def test_a_report_rebuilt_after_its_claims_changed_says_so_first_and_decides_nothing(
    reproduced: tuple[Path, Path], tmp_path: Path
) -> None:
    _, report = reproduced
    recorded = get_recipe("retention").claims
    recipes = tmp_path / "experiments"
    (recipes / "claims").mkdir(parents=True)
    recipe = (experiments_dir() / "retention.yaml").read_text()
    (recipes / "retention.yaml").write_text(recipe.replace("experiments/claims/", "claims/"))
    claims = (experiments_dir() / "claims" / "retention.yaml").read_text()
    (recipes / "claims" / "retention.yaml").write_text(claims.replace("limit: 0.0", "limit: 0.05", 1))
    data = tmp_path / "copy" / "data"
    shutil.copytree(report / "data", data)

    rebuilt = build_report("retention", results_dir=data, out_dir=tmp_path / "out", recipes_dir=recipes)
    text = rebuilt.read_text()
    changed = get_recipe("retention", recipes).claims
    first = text.splitlines()[2]
    assert first.startswith("> **Not decided: the plan changed after these runs.**")
    assert f"`claims/retention.yaml` (sha256 {changed.files[0].sha256[:12]})" in first
    assert f"plan `{changed.hash[:12]}`" in first and f"4 record plan `{recorded.hash[:12]}`" in first
    assert f"`experiments/claims/retention.yaml` (sha256 {recorded.files[0].sha256[:12]})" in first
    verdicts = _claims_verdicts(text)
    assert verdicts and set(verdicts) == {NOT_DECIDED}
    assert check_report(rebuilt.parent).ok  # and it is a function of its data
