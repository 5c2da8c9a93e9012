"""W&B for a report: nothing without a tracker, and a W&B failure never fails the report."""

from __future__ import annotations

import sys
import types

import pytest

from esbench.analysis.wandb_report import WandbReportSettings, log_report_to_wandb
from tests.test_wandb_tracking import _refused


def _report_dir(tmp_path):
    (tmp_path / "tables").mkdir()
    (tmp_path / "tables" / "table1.csv").write_text("a,b\n1,2\n")
    (tmp_path / "REPORT.md").write_text("# Reproduction report: t\n\n## T\n\n([CSV](tables/table1.csv))\n")
    return tmp_path


class _Boom(types.ModuleType):
    def __getattr__(self, name):
        raise AssertionError("wandb must not be touched without a W&B tracker")


def test_without_a_wandb_tracker_nothing_is_touched(tmp_path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "wandb", _Boom("wandb"))
    monkeypatch.setenv("WANDB_MODE", "online")  # the environment does not turn it on: tracker= does
    assert log_report_to_wandb(_report_dir(tmp_path), "disabled") is None


def test_online_without_network_warns_and_never_fails(tmp_path, monkeypatch) -> None:
    """The real client against a refused port: one RuntimeWarning within the init timeout."""
    monkeypatch.delenv("WANDB_MODE")
    monkeypatch.setenv("WANDB_API_KEY", "esbench-test-" + "0" * 40)
    with _refused() as url:
        monkeypatch.setenv("WANDB_BASE_URL", url)
        with pytest.warns(RuntimeWarning, match="W&B logging of the report failed"):
            out = log_report_to_wandb(_report_dir(tmp_path), "online", WandbReportSettings(init_timeout_s=3))
    assert out is None
    assert (tmp_path / "REPORT.md").is_file()
