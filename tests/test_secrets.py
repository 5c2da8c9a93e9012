"""No secret in results: an API key in the environment reaches no file a run or a report writes.

The sentinel stands for a W&B API key. Every file under the run directory (W&B's offline run and
logs included) and the report directory is read as bytes and searched for it.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

from esbench.analysis.load import load_run_table
from esbench.analysis.report import build_report
from esbench.config.errors import ConfigError
from esbench.tracking.store import RunStore
from tests.conftest import esbench, only_run_dir
from tests.synthetic_store import write_run

CARTPOLE = ["env=cartpole", "budget=smoke", "budget.timesteps=3000", "algo.noise_table_size=1000000"]


@pytest.fixture
def sentinel(monkeypatch: pytest.MonkeyPatch) -> str:
    """A unique fake W&B API key, set in the environment of this test and its subprocesses."""
    value = f"esbench-sentinel-{uuid.uuid4().hex}"
    monkeypatch.setenv("WANDB_API_KEY", value)
    return value


def files_holding(sentinel: str, *roots: Path) -> tuple[list[Path], int]:
    """(files under ``roots`` whose bytes contain ``sentinel``, number of files read)."""
    needle, hits, read = sentinel.encode(), [], 0
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.is_file() and not path.is_symlink():
                read += 1
                if needle in path.read_bytes():
                    hits.append(path)
    return hits, read


def test_api_key_reaches_no_file_of_a_run_or_its_report(tmp_path: Path, sentinel: str) -> None:
    """A smoke run with the default tracker (W&B offline: its run files and debug logs land in the
    run directory), then ``esbench report`` over it (its report run offline too), with the key in the
    environment of both."""
    results, reports = tmp_path / "runs", tmp_path / "reports"
    esbench("run", *CARTPOLE, "tracker.console=false", "experiment=secrets", f"results_dir={results}")
    run_dir = only_run_dir(results)
    assert list((run_dir / "wandb").glob("offline-run-*/run-*.wandb")), "W&B did not write its run"
    esbench("report", str(results / "secrets"), f"out_dir={reports}", "tracker=wandb_offline")
    assert list(reports.rglob("REPORT.md"))
    assert list((reports / "wandb").glob("offline-run-*/run-*.wandb")), "W&B did not write the report run"
    hits, read = files_holding(sentinel, results, reports)
    assert read >= 10, read  # the walk saw the run, its W&B files and the report
    assert hits == []


def test_a_config_reading_the_environment_is_refused_before_any_work(tmp_path: Path, sentinel: str) -> None:
    """``${oc.env:...}`` would be resolved into config.yaml and the W&B run: one line, status 2,
    for a run and for a sweep, and nothing is written."""
    planted = "tracker.entity=${oc.env:WANDB_API_KEY}"
    for mode in ([], ["-m", "seed=0,1"]):
        proc = esbench("run", *mode, *CARTPOLE, planted, f"results_dir={tmp_path}", check=False)
        assert proc.returncode == 2, proc.stderr[-2000:]
        assert proc.stderr.count("\n") == 1 and "tracker.entity=" in proc.stderr, proc.stderr
        assert "environment variable" in proc.stderr and sentinel not in proc.stderr + proc.stdout
    assert files_holding(sentinel, tmp_path) == ([], 0)  # no file at all


def test_store_refuses_to_write_a_config_reading_the_environment(tmp_path: Path, sentinel: str) -> None:
    """The backstop for callers that skip validation: ``write_config`` itself refuses."""
    store = RunStore(tmp_path, "exp", "run")
    cfg = OmegaConf.create({"seed": 0, "tracker": {"tags": ["a", "${oc.env:WANDB_API_KEY}"]}})
    with pytest.raises(ConfigError, match=r"tracker\.tags\[1\]="):
        store.write_config(cfg)
    assert files_holding(sentinel, tmp_path) == ([], 0)
    store.write_config(OmegaConf.create({"seed": 0, "name": "${seed}"}))  # other interpolations resolve
    assert OmegaConf.load(store.path("config.yaml")).name == 0


def test_report_never_resolves_interpolations_in_a_stored_config(tmp_path: Path, sentinel: str) -> None:
    """A config.yaml planted with ``${oc.env:...}`` is read as text: the report does not expand it
    (its columns fall back to the summary), and the key appears in no report file."""
    runs = tmp_path / "runs"
    steps = np.arange(0, 1001, 250)
    for seed in (0, 1):
        write_run(runs, "table1", "trpo", "Hopper-v5", seed, steps, 0.1 * steps)
        write_run(runs, "table1", "openai_es", "Hopper-v5", seed, steps, 0.2 * steps)
    config = next(runs.rglob("config.yaml"))
    planted = OmegaConf.load(config)
    planted.env.id = "${oc.env:WANDB_API_KEY}"
    planted.env.name = "${oc.env:WANDB_API_KEY}"
    OmegaConf.save(planted, config)  # saved unresolved
    assert "${oc.env:WANDB_API_KEY}" in config.read_text()

    table = load_run_table(runs)
    assert sentinel not in table.to_csv()
    assert set(table["env_id"]) == {"Hopper-v5"}  # from summary.json
    report = build_report("table1", runs, tmp_path / "paper")
    assert report.is_file()
    assert files_holding(sentinel, tmp_path / "paper")[0] == []
