"""Reports carry their data (paper/<name>/data/) and ``esbench report --check`` proves them current."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import esbench.analysis.report as report_module
from esbench.analysis.cli import main
from esbench.analysis.load import load_results
from esbench.analysis.report import build_report
from esbench.analysis.report_check import NoReportData, check_report, find_reports
from esbench.analysis.report_data import open_results, read_manifest
from esbench.tracking.store import RunStore
from tests.conftest import REPO
from tests.synthetic_store import DEFAULT_ENV_INFO, write_run

T = np.arange(0, 1001, 250)
ES_T = np.arange(0, 2001, 250)
CLEAN = {"git_commit": "f" * 40, "git_dirty": False}


def _store(root: Path, env_info: dict | None = None) -> Path:
    for seed in (0, 1):
        write_run(root, "table1", "trpo", "Hopper-v5", seed, T, 0.1 * T + 5 * seed)
        write_run(
            root,
            "table1",
            "openai_es",
            "Hopper-v5",
            seed,
            ES_T,
            np.minimum(0.2 * ES_T, 60) + seed,
            env_info=env_info if seed == 1 else None,
        )
    return root


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A table1 report built once from a synthetic store (by a clean checkout)."""
    tmp = tmp_path_factory.mktemp("made")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(report_module, "code_revision", lambda **_: CLEAN)
        return build_report("table1", _store(tmp / "runs"), tmp / "paper", seed=1).parent


@pytest.fixture
def report(made: Path, tmp_path: Path) -> Path:
    """A private copy of the built report, to damage."""
    return Path(shutil.copytree(made, tmp_path / "table1"))


def test_report_ships_its_data_and_reads_back_the_same_runs(made: Path) -> None:
    manifest = read_manifest(made / "data")
    assert (manifest.name, manifest.kind, manifest.seed, manifest.scales) == (
        "table1",
        "table1",
        1,
        ["smoke"],
    )
    assert manifest.report_commit == "f" * 40 and manifest.report_dirty is False
    assert set(manifest.sha256) >= {"runs.parquet", "curves.parquet", "configs.json", "env.json"}
    shipped = open_results(made / "data")
    store = load_results(Path(manifest.runs_dir))
    cols = ["run_id", "algo", "env_id", "seed", "timesteps", "eval_return_mean", "wall_clock_s"]
    pd.testing.assert_frame_equal(shipped.curves[cols], store.curves[cols])
    assert sorted(shipped.configs) == sorted(store.runs["run_id"])
    assert shipped.configs["openai_es-hopper-fs4-w1-s0"]["seed"] == 0
    text = (made / "REPORT.md").read_text()
    assert f"Report made from: esbench commit {'f' * 40} (clean tree)" in text and "Warning" not in text


def test_a_report_renders_again_from_its_data_alone(
    made: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(report_module, "code_revision", lambda **_: CLEAN)  # the commit that made it
    again = build_report("table1", made / "data", tmp_path / "again").parent
    files = sorted(p.relative_to(made) for p in made.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(again) for p in again.rglob("*") if p.is_file())
    for rel in files:
        assert (made / rel).read_bytes() == (again / rel).read_bytes(), rel
    with pytest.raises(report_module.UnknownTargetError, match="holds the data of report 'table1'"):
        build_report("table2", made / "data", tmp_path / "again")


def test_a_report_rendered_again_by_other_code_names_that_code(
    report: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Re-rendering from the shipped data is done by today's code: the manifest and REPORT.md name
    today's commit (the one that reproduces the tables), the data files stay as they were."""
    before = read_manifest(report / "data")
    other_code = {"git_commit": "c" * 40, "git_dirty": False}
    monkeypatch.setattr(report_module, "code_revision", lambda **_: other_code)
    path = build_report("table1", report / "data", report.parent)  # in place, as for a committed report
    after = read_manifest(report / "data")
    assert (before.report_commit, after.report_commit) == ("f" * 40, "c" * 40)
    assert after.sha256 == before.sha256 and after.run_commits == before.run_commits
    assert f"Report made from: esbench commit {'c' * 40} (clean tree)" in path.read_text()
    assert check_report(report).ok


def test_check_passes_on_a_fresh_report(report: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--check", str(report)]) == 0
    out = capsys.readouterr().out.strip()
    assert out.startswith(f"{report}: up to date") and "figures compared byte for byte" in out
    assert len(out.splitlines()) == 1


def test_a_changed_number_in_the_data_fails_naming_the_difference(report: Path) -> None:
    curves = pd.read_parquet(report / "data" / "curves.parquet")
    last = curves.index[(curves["run_id"] == "openai_es-hopper-fs4-w1-s0")][-1]
    curves.loc[last, "eval_return_mean"] += 7.0  # ES seed 0's final evaluation
    curves.to_parquet(report / "data" / "curves.parquet", index=False)
    result = check_report(report)
    assert not result.ok
    assert "differs from the report recomputed from its data" in result.message
    assert "committed" in result.message and "recomputed" in result.message
    assert "data/curves.parquet also changed" in result.message


def test_a_changed_table_cell_fails_naming_file_line_and_column(report: Path) -> None:
    path = report / "tables" / "summary.csv"
    lines = path.read_text().splitlines(keepends=True)
    header = lines[0].rstrip("\n").split(",")
    col = header.index("final_eval_return")
    cells = lines[2].rstrip("\n").split(",")
    original = cells[col]
    cells[col] = str(float(original) + 1)
    lines[2] = ",".join(cells) + "\n"
    path.write_text("".join(lines))
    result = check_report(report)
    assert not result.ok
    assert "tables/summary.csv line 3" in result.message and "column final_eval_return" in result.message
    assert f"recomputed {original!r}" in result.message


def test_a_changed_report_line_fails_naming_it(report: Path) -> None:
    path = report / "REPORT.md"
    text = path.read_text()
    claim = next(line for line in text.splitlines() if line.startswith("| A (Sec. 4.1)"))
    path.write_text(text.replace(claim, claim.rsplit("|", 2)[0] + "| supported |"))  # a verdict edited
    result = check_report(report)
    assert not result.ok
    number = text.splitlines().index(claim) + 1
    assert f"REPORT.md line {number}, column 'verdict'" in result.message
    assert main(["--check", str(report)]) == 1


def test_figures_are_compared_only_where_drawn_by_the_same_versions(report: Path) -> None:
    png = report / "figures" / "curves_timesteps.png"
    png.write_bytes(png.read_bytes() + b"\0")
    result = check_report(report)
    assert not result.ok and "figures/curves_timesteps.png" in result.message
    manifest = json.loads((report / "data" / "manifest.json").read_text())
    manifest["figure_versions"]["matplotlib"] = "0.0.1"
    (report / "data" / "manifest.json").write_text(json.dumps(manifest))
    result = check_report(report)
    assert result.ok and "figures not compared: drawn with freetype" in result.message


def test_a_stale_extra_file_fails(report: Path) -> None:
    (report / "tables" / "old_table.md").write_text("| a |\n")
    result = check_report(report)
    assert not result.ok and "tables/old_table.md: committed, but" in result.message


def test_a_report_from_a_dirty_tree_or_several_commits_says_so(tmp_path: Path, monkeypatch) -> None:
    dirty = {"git_commit": "a" * 40, "git_dirty": True}
    monkeypatch.setattr(report_module, "code_revision", lambda **_: dirty)
    other = {**DEFAULT_ENV_INFO, "git_commit": "b" * 40}
    path = build_report("table1", _store(tmp_path / "runs", env_info=other), tmp_path / "paper")
    text = path.read_text()
    assert "**Warning: this report was made from a working tree with uncommitted changes**" in text
    assert (
        f"commit {'a' * 40}" in text
        and f"Report made from: esbench commit {'a' * 40} (with uncommitted" in text
    )
    assert "**Warning: the runs came from 2 different commits**" in text
    assert read_manifest(path.parent / "data").report_dirty is True
    assert check_report(path.parent).ok  # the warning is part of the data, not of the checker's tree


def test_a_report_without_data_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "REPORT.md").write_text("# an old report\n")
    with pytest.raises(NoReportData, match="old has no data/ directory"):
        check_report(tmp_path / "old")
    assert main(["--check", str(tmp_path)]) == 2
    assert "has no data/ directory" in capsys.readouterr().err


def test_a_retention_report_ships_its_runs_files_and_checks(tmp_path: Path) -> None:
    """The retention analysis reads each run's metrics and snapshots: they ship in data/runs/."""
    from tests.test_analysis_retention_report import _store as retention_store

    path = build_report("retention", retention_store(tmp_path / "runs"), tmp_path / "paper")
    data = path.parent / "data"
    assert read_manifest(data).run_files and sorted(p.name for p in (data / "runs").iterdir())
    assert all((d / "metrics.csv").is_file() for d in (data / "runs").iterdir())
    assert check_report(path.parent).ok
    shutil.rmtree(tmp_path / "runs")  # the report no longer needs the results store
    (path.parent / "wandb_summary.json").write_text("{}\n")
    result = check_report(path.parent)
    assert not result.ok and "wandb_summary.json line 1" in result.message


def test_shipped_runs_restore_a_results_store_that_rebuilds_the_report(made: Path, tmp_path: Path) -> None:
    """Every report ships complete run directories (data/runs/): copied into an empty results store
    they are complete runs (a sweep skips them) and rebuild the same tables, so a study can be
    extended with more seeds or tasks from the committed report alone."""
    shipped = made / "data" / "runs"
    manifest = read_manifest(made / "data")
    store = load_results(Path(manifest.runs_dir))
    assert sorted(p.name for p in shipped.iterdir()) == sorted(store.runs["run_id"])
    assert manifest.run_files == ["config.yaml", "metrics.csv", "summary.json", "env.json", "plan.json"]
    restored = tmp_path / "restored"
    shutil.copytree(shipped, restored / "table1")
    for run_id in (p.name for p in shipped.iterdir()):
        assert RunStore(restored, "table1", run_id).is_complete, run_id
    again = build_report("table1", restored, tmp_path / "again", seed=1).parent

    def tables_of(report: Path) -> list[Path]:
        return sorted(p.relative_to(report) for p in (report / "tables").rglob("*") if p.is_file())

    tables = tables_of(made)
    assert tables and tables == tables_of(again)
    for rel in tables:
        assert (made / rel).read_bytes() == (again / rel).read_bytes(), rel


COMMITTED = find_reports(REPO / "paper")
CHECKABLE = [p for p in COMMITTED if (p / "data").is_dir()]

#: Committed reports that do not ship their data/: none. It stays empty: a report nobody can
#: re-derive is regenerated (``esbench reproduce <recipe> scale=<its scale> out_dir=paper``), not listed.
WITHOUT_DATA: set[str] = set()


@pytest.mark.artifacts
@pytest.mark.parametrize("report_dir", CHECKABLE, ids=[p.relative_to(REPO).as_posix() for p in CHECKABLE])
def test_every_committed_report_is_up_to_date(report_dir: Path) -> None:
    """Every report under paper/ that ships its data/ recomputes from it to the committed bytes."""
    result = check_report(report_dir)
    assert result.ok, result.message


@pytest.mark.artifacts
def test_only_the_listed_old_reports_lack_their_data() -> None:
    """A new or regenerated report always ships data/; the old ones without it are named here, so the
    list of reports nobody can re-derive cannot grow unnoticed (and a regenerated one must leave it)."""
    without = {p.relative_to(REPO).as_posix() for p in COMMITTED if not (p / "data").is_dir()}
    assert without == WITHOUT_DATA
    assert CHECKABLE, "no committed report ships its data/"
