"""Shared fixtures: a per-session noise-table cache, W&B kept offline, small helpers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from esbench.runner import load_components
from esbench.tracking.schema import EXECUTION_COLUMNS

load_components()  # the algorithm registry, env checks and resolvers, as every entry point does

REPO = Path(__file__).resolve().parents[1]
TIMING_COLUMNS = list(EXECUTION_COLUMNS)  # where/how fast a run executed: not compared


@pytest.fixture(scope="session", autouse=True)
def _isolated_environment(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Noise tables in a session cache; W&B never reaches the network."""
    cache = tmp_path_factory.mktemp("esbench-cache")
    os.environ["ESBENCH_CACHE"] = str(cache)
    os.environ["WANDB_MODE"] = "offline"
    os.environ["WANDB_SILENT"] = "true"
    os.environ.setdefault("MUJOCO_GL", "disable")


#: The longest test files, longest first (measured: ``--durations``). They are collected first so
#: that, with ``pytest -n 2 --dist loadfile --no-loadscope-reorder`` (``make test``), each starts as
#: early as it can while the many short files fill the gaps (longest job first: the suite's
#: wall-clock is then close to its total work divided by the workers).
LONGEST_FIRST = (
    "test_resume.py", "test_reproduce.py", "test_sequence_runs.py", "test_resume_rl.py", "test_atari_es.py",
    "test_es_run.py",
    "test_report_check.py", "test_checkpoint_safety.py", "test_launcher.py", "test_baselines.py",
    "test_readme_command.py", "test_corrupt_files.py", "test_scale_out.py",
)  # fmt: skip


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Move the items of :data:`LONGEST_FIRST` files to the front, keeping every other order."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order


SMALL = ["tracker=none", "tracker.console=false", "algo.noise_table_size=1000000"]


def esbench(
    *args: str, timeout: float = 300, check: bool = True, cwd: Path = REPO
) -> subprocess.CompletedProcess[str]:
    """Run the real CLI in a subprocess (as a user would), from ``cwd`` (a checkout: its
    ``esbench`` package is the one imported).

    A run (``esbench run``, not its ``--help`` or ``--cfg``) gets ``cluster.dashboard=false`` unless
    the test sets it: importing the dashboard (bokeh) costs each run a second or more, and only
    ``tests/test_security.py`` (which starts its own clusters) looks at the dashboard.
    """
    if args[:1] == ("run",) and not any(a.startswith(("--", "cluster.dashboard=")) for a in args):
        args = (*args, "cluster.dashboard=false")
    proc = subprocess.run(
        [sys.executable, "-m", "esbench.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=os.environ.copy(),
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"esbench {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return proc


def only_run_dir(root: Path) -> Path:
    """The single run directory below a results root."""
    dirs = [p.parent for p in root.rglob("config.yaml")]
    assert len(dirs) == 1, dirs
    return dirs[0]


def read_run(run_dir: Path) -> tuple[pd.DataFrame, dict]:
    """(metrics without timing columns, summary) of a run."""
    metrics = pd.read_csv(run_dir / "metrics.csv").drop(columns=TIMING_COLUMNS)
    return metrics, json.loads((run_dir / "summary.json").read_text())
