"""The README's main command, end to end through the real CLI, once per test session.

One ``esbench reproduce table1 scale=smoke`` (its two jobs, then the report) feeds every test here:
the jobs ran, the report is the smoke scale's and is recomputed from the data it ships, its content
(every row, the three verdict labels, the published numbers beside ours, the paper's claims in its
words), and the golden data of ``tests/smoke_golden.py``. Every other recipe's smoke scale runs in
``tests/test_recipes_smoke.py`` (``make test-recipes``, a step of CI).
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from esbench.analysis.report_check import check_report
from esbench.recipes import all_jobs, get_recipe
from tests.conftest import esbench, read_run
from tests.smoke_golden import compare_run, every_run, golden_runs


@pytest.fixture(scope="module")
def reproduced(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """(results directory, reports directory, stdout) of ``esbench reproduce table1 scale=smoke``."""
    root = tmp_path_factory.mktemp("reproduce-table1")
    runs, reports = root / "runs", root / "reports"
    proc = esbench(
        "reproduce", "table1", "scale=smoke", f"results_dir={runs}", f"out_dir={reports}", timeout=1200
    )
    return runs, reports, proc.stdout


def test_table1_smoke_runs_its_jobs_and_writes_a_report_its_data_recomputes(
    reproduced: tuple[Path, Path, str],
) -> None:
    runs, reports, stdout = reproduced
    report = reports / get_recipe("table1").report / "REPORT.md"
    assert f"report written: {report}" in stdout
    assert len(list((runs / "table1").rglob("summary.json"))) == len(all_jobs(get_recipe("table1"), "smoke"))
    result = check_report(report.parent)  # every table, number and verdict, from data/ alone
    assert result.ok, result.message


def test_table1_smoke_report_holds_every_row_the_three_labels_and_the_published_numbers(
    reproduced: tuple[Path, Path, str],
) -> None:
    """The README's main command: a report whose tables hold every (task, fraction) row, whose
    verdicts use the three labels, and whose published numbers (read from the reference CSV, not
    typed here) stand beside ours."""
    from esbench.analysis.table1 import PROGRESS_FRACTIONS, load_claims, load_mujoco_reference
    from esbench.analysis.tables import fmt_num
    from esbench.analysis.verdicts import VERDICT_LABELS

    runs, reports, _ = reproduced
    out = reports / "table1"
    assert len(list((runs / "table1").rglob("summary.json"))) == 2
    text = (out / "REPORT.md").read_text()
    assert "Scale: smoke" in text
    ref = load_mujoco_reference().set_index(["gymnasium_id", "progress_fraction"])
    for name in ("table1", "table1_paper"):
        table = pd.read_csv(out / "tables" / f"{name}.csv", keep_default_na=False)
        assert list(zip(table["env_id"], table["progress_fraction"], strict=True)) == [
            ("InvertedPendulum-v5", p) for p in PROGRESS_FRACTIONS
        ]
        for col in ("verdict", "reproduced"):
            assert set(table[col]) - {""} <= set(VERDICT_LABELS), (name, col, set(table[col]))
        assert table["reproduced"].ne("").all()  # every cell has a published ratio to compare with
        assert table.loc[table["progress_fraction"] == 1.0, "claim"].tolist() == ["B"]
        rows = [line for line in (out / "tables" / f"{name}.md").read_text().splitlines() if "| 25%" in line
                or "| 50%" in line or "| 75%" in line or "| 100%" in line]  # fmt: skip
        assert len(rows) == len(PROGRESS_FRACTIONS)
        for line, p in zip(rows, PROGRESS_FRACTIONS, strict=True):
            published = ref.loc[("InvertedPendulum-v5", p)]
            cells = [c.strip() for c in line.split("|")]
            assert cells[1] == "InvertedPendulum" and cells[2] == f"{round(100 * p)}%"
            assert fmt_num(published["es_over_trpo"], 3) in cells, (line, published["es_over_trpo"])
            if name == "table1_paper":
                target = fmt_num(published["trpo_score"], 4)
                assert target in cells or f"{target} †" in cells  # † a target near the ceiling (1000)
                assert fmt_num(published["es_timesteps"]) in cells
    # The claims in the paper's words, each with its answers, all from the three labels.
    for claim in load_claims():
        assert f"\u201c{claim.quote}\u201d" in text
    answers = re.findall(r"\*\*(\w+)\*\*", text.split("## Claims in the paper's words", 1)[1])
    assert answers and set(answers) <= set(VERDICT_LABELS), answers
    assert "measured coverage" in text and "Student-t" in text


#: The table1 smoke runs among every recipe's golden data (``tests/smoke_golden.py``).
TABLE1_GOLDEN = [key for key in golden_runs() if key.startswith("table1/")]


@pytest.mark.parametrize("key", TABLE1_GOLDEN)
def test_smoke_sample_matches_golden_data(key: str, reproduced: tuple[Path, Path, str]) -> None:
    """What the runner computes cannot change unnoticed: table1's smoke runs equal their golden
    metrics and final parameters (``tests/smoke_golden.py``; every recipe's in ``make test-recipes``)."""
    runs, _, _ = reproduced
    found = every_run(runs)
    assert sorted(k for k in found if k.startswith("table1/")) == TABLE1_GOLDEN
    fresh, _ = read_run(found[key])
    assert fresh["eval_return_mean"].notna().sum() >= 2  # evaluated at least at 0 and once more
    compare_run(key, found[key])
