"""W&B side by side: online only, never touching the network otherwise, never failing."""

from __future__ import annotations

import sys
import types

import pytest

from esbench.analysis.wandb_report import log_report_to_wandb, wandb_mode


def _report_dir(tmp_path):
    (tmp_path / "tables").mkdir()
    (tmp_path / "figures").mkdir()
    (tmp_path / "tables" / "table1.csv").write_text("a,b\n1,2\n")
    (tmp_path / "figures" / "curves.png").write_bytes(b"\x89PNG")
    return tmp_path


class _Boom(types.ModuleType):
    def __getattr__(self, name):
        raise AssertionError("wandb must not be touched outside online mode")


def test_offline_does_nothing(tmp_path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "wandb", _Boom("wandb"))
    monkeypatch.setenv("WANDB_MODE", "offline")
    assert wandb_mode() == "offline"
    assert log_report_to_wandb(_report_dir(tmp_path), {}) is False
    monkeypatch.delenv("WANDB_MODE")
    assert log_report_to_wandb(tmp_path, None) is False  # default: offline


def test_online_logs_tables_and_images(tmp_path, monkeypatch) -> None:
    logged: dict = {}
    fake = types.ModuleType("wandb")

    class Run:
        def log(self, payload):
            logged.update(payload)

        def finish(self):
            logged["finished"] = True

    def init(**kw):
        logged["init"] = kw
        return Run()

    fake.init = init
    fake.Table = lambda dataframe: ("table", dataframe.shape)
    fake.Image = lambda path: ("image", path)
    monkeypatch.setitem(sys.modules, "wandb", fake)
    monkeypatch.setenv("WANDB_MODE", "online")
    assert log_report_to_wandb(_report_dir(tmp_path), {"tracker": {"project": "p"}}) is True
    assert logged["init"]["job_type"] == "report" and logged["init"]["project"] == "p"
    assert logged["tables/table1"] == ("table", (1, 2)) and logged["figures/curves"][0] == "image"
    assert logged["finished"]


def test_online_failure_never_fails(tmp_path, monkeypatch) -> None:
    fake = types.ModuleType("wandb")

    def init(**kw):
        raise ConnectionError("no network")

    fake.init = init
    monkeypatch.setitem(sys.modules, "wandb", fake)
    with pytest.warns(RuntimeWarning, match="no network"):
        assert log_report_to_wandb(_report_dir(tmp_path), None, mode="online") is False
