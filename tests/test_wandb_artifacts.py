"""W&B artifacts and the W&B Report, with the real ``wandb`` client offline (no network).

A run logs its results as artifact ``run-<run_id>``; ``esbench report ... tracker=wandb_offline``
logs a report run that uses those artifacts; the W&B Report specification mirrors ``REPORT.md``.
Everything is read back from the offline ``.wandb`` files with wandb's own protobuf schema.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import re
import shutil
from pathlib import Path

import pytest
from wandb.proto import wandb_internal_pb2

from esbench.analysis.cli import main as report_main
from esbench.analysis.wandb_report import ReportSection, log_report_to_wandb, report_sections, report_spec
from esbench.tracking.wandb_artifacts import RUN_ARTIFACT_TYPE, run_artifact_name
from esbench.tracking.wandb_writer import WandbWriter
from tests.conftest import esbench, only_run_dir
from tests.test_wandb_tracking import finished_wandb_records

RUN = ["env=cartpole", "budget=smoke", "budget.timesteps=3000", "algo.noise_table_size=1000000"]
RUN_FILES = {"config.yaml", "metrics.csv", "summary.json", "checkpoint.npz"}


def _records(run_dir: Path, kind: str) -> list[wandb_internal_pb2.Record]:
    """The records of one kind of the one offline W&B run below ``run_dir``."""
    files = list(run_dir.rglob("offline-run-*/run-*.wandb"))
    assert len(files) == 1, files
    return [r for r in finished_wandb_records(files[0]) if r.WhichOneof("record_type") == kind]


def _md5(path: Path) -> str:
    """A file's digest as a W&B manifest writes it (base64 of the MD5)."""
    return base64.b64encode(hashlib.md5(path.read_bytes()).digest()).decode()


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run directory of a short CartPole run with W&B offline (the default tracker)."""
    root = tmp_path_factory.mktemp("runs")
    esbench("run", *RUN, "tracker.console=false", f"results_dir={root}")
    return only_run_dir(root)


@pytest.fixture(scope="module")
def offline_report(finished_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``esbench report <the run's results> tracker=wandb_offline``: the report directory."""
    out = tmp_path_factory.mktemp("paper")
    code = report_main(
        [str(finished_run.parent), f"out_dir={out}", "tracker=wandb_offline", "--allow-partial"]
    )
    assert code == 0
    return out / finished_run.parent.name


def test_a_finished_run_logs_its_results_as_one_artifact(finished_run: Path) -> None:
    """Config, metrics table, summary and final checkpoint, under their store names, byte for byte."""
    (record,) = _records(finished_run / "wandb", "artifact")
    artifact = record.artifact
    assert artifact.name == run_artifact_name(finished_run.name) == f"run-{finished_run.name}"
    assert artifact.type == RUN_ARTIFACT_TYPE == "run-results"
    assert not artifact.use_after_commit  # the run's output, not an input
    entries = {e.path: e for e in artifact.manifest.contents}
    assert set(entries) >= RUN_FILES
    for name, entry in entries.items():
        assert entry.digest == _md5(finished_run / name), name
        assert Path(entry.local_path) == finished_run / name  # referenced in place, not copied
    summary = json.loads((finished_run / "summary.json").read_text())
    assert summary["status"] == "complete"
    (exit_record,) = _records(finished_run / "wandb", "exit")
    assert exit_record.exit.exit_code == 0


def test_an_artifact_that_cannot_be_built_never_fails_the_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A run directory without its files: one warning, and the W&B run still closes cleanly."""
    writer = WandbWriter(
        mode="offline", project="esbench", entity=None, run_dir=tmp_path, run_id="r0",
        group="g", job_type="openai_es", tags=[], config={},
    )  # fmt: skip
    assert writer.run is not None
    writer.write({"timesteps": 1, "eval_return_mean": 2.0})
    with caplog.at_level(logging.WARNING):
        writer.finish({"final_eval_return": 2.0})
    assert "W&B artifact of this run not logged" in caplog.text and "summary.json" in caplog.text
    assert _records(tmp_path / "wandb", "artifact") == []
    (exit_record,) = _records(tmp_path / "wandb", "exit")
    assert exit_record.exit.exit_code == 0


@pytest.mark.parametrize("artifacts", [True, False])
def test_tracker_artifacts_turns_the_artifact_on_and_off(
    artifacts: bool, finished_run: Path, tmp_path: Path
) -> None:
    for name in RUN_FILES:
        shutil.copy(finished_run / name, tmp_path / name)
    writer = WandbWriter(
        mode="offline", project="esbench", entity=None, run_dir=tmp_path, run_id="r1",
        group="g", job_type="openai_es", tags=[], config={}, artifacts=artifacts,
    )  # fmt: skip
    writer.finish({"final_eval_return": 1.0})
    names = [r.artifact.name for r in _records(tmp_path / "wandb", "artifact")]
    assert names == (["run-r1"] if artifacts else [])


def test_the_report_run_uses_the_runs_artifacts(finished_run: Path, offline_report: Path) -> None:
    """The report run declares the run's artifact, same name, type and digest as the one the run
    logged, as an input (use_after_commit), and logs the report's tables and figures."""
    (run_artifact,) = _records(finished_run / "wandb", "artifact")
    report_wandb = offline_report.parent / "wandb"
    assert not (offline_report / "wandb").exists()  # beside the report, so --check sees only it
    used = [r.artifact for r in _records(report_wandb, "artifact") if r.artifact.type == RUN_ARTIFACT_TYPE]
    assert [(a.name, a.digest, a.use_after_commit) for a in used] == [
        (run_artifact.artifact.name, run_artifact.artifact.digest, True)
    ]
    (run_record,) = _records(report_wandb, "run")
    assert run_record.run.job_type == "report"
    logged = {  # a logged table or image is several keys below its name: tables/<name>/...
        "/".join((i.key or "/".join(i.nested_key)).split("/")[:2])
        for r in _records(report_wandb, "history")
        for i in r.history.item
    }
    tables = {f"tables/{p.stem}" for p in (offline_report / "tables").glob("*.csv")}
    figures = {f"figures/{p.stem}" for p in (offline_report / "figures").glob("*.png")}
    assert tables and figures and tables | figures <= logged
    assert report_main(["--check", str(offline_report)]) == 0


def test_offline_the_report_is_not_saved_and_says_so(
    offline_report: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report_dir = tmp_path / offline_report.name
    shutil.copytree(offline_report, report_dir)
    result = log_report_to_wandb(report_dir, "offline")
    assert result is not None and result.report is not None and result.report_url is None
    assert result.run_dir.parent == tmp_path / "wandb"
    assert result.used_artifacts == [run_artifact_name(_run_id(report_dir))]
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith("W&B Report not saved: offline")


def _run_id(report_dir: Path) -> str:
    """The one run id in a report's data (its configs, by run id)."""
    (run_id,) = json.loads((report_dir / "data" / "configs.json").read_text())
    return str(run_id)


def _expected_sections(report_md: Path) -> list[tuple[str, list[str], list[str]]]:
    """(title, table panels, figure panels) per ``## `` section, read straight from the Markdown."""
    out = []
    for chunk in re.split(r"^## ", report_md.read_text(), flags=re.M)[1:]:
        title, _, body = chunk.partition("\n")
        tables = list(dict.fromkeys(re.findall(r"\[CSV\]\((tables/[^)]+)\.csv\)", body)))
        figures = list(dict.fromkeys(re.findall(r"!\[.*?\]\((figures/[^)]+)\.png\)", body)))
        out.append((title.strip(), tables, figures))
    return out


def _spec_sections(report) -> list[tuple[str, list[str], list[str]]]:
    """(heading, table panels, figure panels) per H2 of a W&B Report specification."""
    out: list[tuple[str, list[str], list[str]]] = []
    for block in report.blocks:
        kind = type(block).__name__
        if kind == "H2":
            out.append((block.text, [], []))
        elif kind == "PanelGrid":
            for panel in block.panels:
                if type(panel).__name__ == "WeavePanelSummaryTable":
                    out[-1][1].append(panel.table_name)
                else:
                    assert type(panel).__name__ == "MediaBrowser"
                    out[-1][2].extend(panel.media_keys)
        else:
            assert kind == "MarkdownBlock", kind
    return out


@pytest.mark.parametrize("which", ["built", "table1", "retention"])
def test_the_report_spec_has_one_heading_and_panel_grid_per_report_section(
    which: str, offline_report: Path
) -> None:
    """Built without a network: each REPORT.md section, in order, with its tables and figures."""
    report_dir = offline_report if which == "built" else Path(__file__).parents[1] / "paper" / which
    report = report_spec(report_dir, project="esbench", entity="me", run_id="abc123")
    assert report.project == "esbench" and report.entity == "me"
    expected = _expected_sections(report_dir / "REPORT.md")
    assert len(expected) >= 3 and any(t or f for _, t, f in expected)
    assert _spec_sections(report) == expected
    for block in report.blocks:
        if type(block).__name__ == "PanelGrid":
            assert block.runsets[0].filters == "ID = 'abc123'"  # the panels show the report run


def test_report_sections_keep_prose_and_drop_what_panels_show(tmp_path: Path) -> None:
    (tmp_path / "REPORT.md").write_text(
        "# Reproduction report: x\n\nintro\n\n## A\n\nclaim table:\n\n| a |\n|---|\n| 1 |\n\n"
        "## B\n\nprose\n\n| t |\n|---|\n| 2 |\n\n([CSV](tables/t.csv), [MD](tables/t.md))\n\n"
        "![cap](figures/f.png)\n\n*cap* ([PDF](figures/f.pdf))\n"
    )
    title, sections = report_sections(tmp_path / "REPORT.md")
    assert title == "Reproduction report: x"
    assert sections == [
        ReportSection("A", "claim table:\n\n| a |\n|---|\n| 1 |"),
        ReportSection("B", "prose", tables=("t",), figures=("f",)),
    ]


def test_report_tracker_option_is_checked(capsys: pytest.CaptureFixture[str]) -> None:
    assert report_main(["table1", "wandb=online"]) == 2
    assert "tracker=wandb_online" in capsys.readouterr().err
    assert report_main(["table1", "tracker=wandb"]) == 2
    err = capsys.readouterr().err
    assert "tracker=wandb" in err and "none, wandb_offline, wandb_online" in err


def test_every_wandb_network_call_has_a_bound() -> None:
    """The tracker's timeouts reach the wandb.Settings fields that bound init, finish and requests."""
    import wandb

    from esbench.tracking.wandb_writer import HTTP_RETRIES, timeout_settings

    settings = wandb.Settings(**timeout_settings(3, 40, 7))
    assert (settings.init_timeout, settings.finish_timeout) == (3, 40)
    for kind in ("graphql", "file_stream", "file_transfer"):
        assert getattr(settings, f"x_{kind}_timeout_seconds") == 7
        assert getattr(settings, f"x_{kind}_retry_max") == HTTP_RETRIES


@pytest.mark.parametrize("key", ["finish_timeout_s", "http_timeout_s"])
def test_timeouts_must_be_positive(key: str) -> None:
    proc = esbench("run", *RUN, "tracker=none", f"tracker.{key}=0", check=False)
    assert proc.returncode == 2
    assert f"tracker.{key}=0" in proc.stderr and "> 0" in proc.stderr


def test_saving_the_report_is_bounded() -> None:
    """The W&B Report is saved in a thread waited for at most report_timeout_s seconds."""
    import threading
    import time

    from esbench.analysis.wandb_report import _bounded

    release = threading.Event()
    started = time.monotonic()
    with pytest.raises(TimeoutError, match=r"0\.2 s"):
        _bounded(lambda: release.wait(30), 0.2)
    assert time.monotonic() - started < 5
    release.set()
    assert _bounded(lambda: 7, 5) == 7
    with pytest.raises(ConnectionError):
        _bounded(lambda: (_ for _ in ()).throw(ConnectionError("no network")), 5)
