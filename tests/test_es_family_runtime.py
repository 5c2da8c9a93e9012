"""Every registered ES variant on the real Dask runtime: one worker or two, the same numbers.

Parametrized over the registry, so a new variant inherits these promises (DESIGN.md promise 1):
the run is a pure function of its config whatever the number of workers, and a run killed mid-way
resumes from its checkpoint (not from scratch) to the same parameters.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from esbench.config.registry import algorithms
from tests.conftest import REPO, SMALL, esbench, only_run_dir, read_run

ES_KEYS = sorted(algorithms("es"))
PENDULUM = [
    "env=inverted_pendulum",
    "budget=smoke",
    *SMALL,
    "eval.interval_timesteps=2000",
    "eval.episodes=2",
]


#: Variants whose 1-vs-2-worker identity runs by default: a covariance (CMA-ES) and per-parameter
#: sigmas (PGPE). OpenAI-ES has its own in test_es_run, EGGROLL in test_eggroll; every variant runs
#: in the slow suite.
DEFAULT_IDENTITY = ("cma_es", "pgpe")


@pytest.mark.parametrize(
    "algo", [a if a in DEFAULT_IDENTITY else pytest.param(a, marks=pytest.mark.slow) for a in ES_KEYS]
)
def test_one_and_two_workers_give_identical_runs(algo: str, tmp_path: Path) -> None:
    runs = {}
    for workers in (1, 2):
        esbench(
            "run", f"algo={algo}", *PENDULUM, "budget.timesteps=4000", f"cluster.n_workers={workers}",
            f"results_dir={tmp_path / str(workers)}",
        )  # fmt: skip
        runs[workers] = read_run(only_run_dir(tmp_path / str(workers)))
    (m1, s1), (m2, s2) = runs[1], runs[2]
    pd.testing.assert_frame_equal(m1, m2)
    assert s1["params_sha256"] == s2["params_sha256"]
    assert s1["algo"] == algo and m1["generation"].iloc[-1] >= 2


@pytest.mark.slow
@pytest.mark.parametrize("algo", ES_KEYS)
def test_killed_run_resumes_from_its_checkpoint_to_identical_parameters(algo: str, tmp_path: Path) -> None:
    """Killed (SIGKILL, the whole process group) after a few generations, then run again with a
    different worker count: the second run says it resumed from a generation > 0 and ends with
    the uninterrupted run's parameters."""
    args = [f"algo={algo}", *PENDULUM, "budget.timesteps=20000", "checkpoint_every=1"]
    esbench("run", *args, "cluster.n_workers=1", f"results_dir={tmp_path / 'straight'}")
    straight = read_run(only_run_dir(tmp_path / "straight"))
    root = tmp_path / "killed"
    proc = subprocess.Popen(
        [sys.executable, "-m", "esbench.cli", "run", *args, "cluster.n_workers=1", f"results_dir={root}"],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            metrics = list(root.rglob("metrics.csv"))
            if metrics and len(metrics[0].read_text().splitlines()) > 3:
                break
            time.sleep(0.05)
        else:
            raise AssertionError("the run never logged 3 generations")
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    run_dir = only_run_dir(root)
    assert not (run_dir / "summary.json").exists()  # killed mid-run
    resumed = esbench("run", *args, "cluster.n_workers=2", f"results_dir={root}")
    found = re.search(r"resuming \S+ from generation (\d+)", resumed.stderr)
    assert found and int(found.group(1)) > 0, resumed.stderr[-2000:]
    metrics, summary = read_run(run_dir)
    pd.testing.assert_frame_equal(straight[0], metrics)
    assert straight[1]["params_sha256"] == summary["params_sha256"]
