"""A sweep killed part-way, then the same command again (issue #16 item 10): finished jobs are not
recomputed, the killed job resumes from its checkpoint, and the results equal an uninterrupted
sweep's. Real processes: the sweep's driver, its LocalCluster and workers are SIGKILLed together."""

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

from tests.conftest import REPO, SMALL, esbench, read_run

SWEEP = [
    "-m", "hydra/launcher=dask", "algo=openai_es", "env=inverted_pendulum", "budget=smoke", *SMALL,
    "cluster.n_workers=1", "hydra.launcher.max_concurrent=1", "budget.timesteps=30000",
    "checkpoint_every=1", "seed=0,1,2", "experiment=sweep",
]  # fmt: skip


def _runs(root: Path) -> dict[str, Path]:
    return {p.name: p for p in (root / "sweep").iterdir() if p.is_dir()} if (root / "sweep").exists() else {}


def _killed_part_way(root: Path) -> tuple[set[str], str]:
    """Start the sweep, SIGKILL it once one job is complete and another has checkpointed; return
    (complete run ids, the run id killed mid-run)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "esbench.cli", "run", *SWEEP, f"results_dir={root}"],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.time() + 240
        while time.time() < deadline:
            runs = _runs(root)
            done = {k for k, d in runs.items() if (d / "summary.json").exists()}
            midway = [
                k for k, d in runs.items()
                if k not in done and (d / "checkpoint.npz").exists()
                and len((d / "metrics.csv").read_text().splitlines()) > 4
            ]  # fmt: skip
            if done and midway:
                break
            time.sleep(0.05)
        else:
            raise AssertionError("the sweep never had one job complete and another part-way")
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    runs = _runs(root)
    done_after = {k for k, d in runs.items() if (d / "summary.json").exists()}
    killed = [k for k, d in runs.items() if k not in done_after and (d / "checkpoint.npz").exists()]
    assert done_after and killed, (done_after, runs)
    return done_after, killed[0]


@pytest.mark.slow
def test_killed_sweep_skips_finished_jobs_and_resumes_the_killed_one(tmp_path: Path) -> None:
    straight_root = tmp_path / "straight"
    esbench("run", *SWEEP, f"results_dir={straight_root}", timeout=600)
    straight = {k: read_run(d) for k, d in _runs(straight_root).items()}
    assert len(straight) == 3

    root = tmp_path / "killed"
    done, killed = _killed_part_way(root)
    mtimes = {k: (_runs(root)[k] / "summary.json").stat().st_mtime_ns for k in done}
    again = esbench("run", *SWEEP, f"results_dir={root}", timeout=600)
    out = again.stdout + again.stderr
    assert out.count("job skipped") == len(done), out[-3000:]
    for k in done:  # not recomputed: the summary is the one the killed sweep wrote
        assert (_runs(root)[k] / "summary.json").stat().st_mtime_ns == mtimes[k]
    found = re.search(rf"resuming {re.escape(killed)} from generation (\d+)", out)
    assert found and int(found.group(1)) > 0, out[-3000:]
    for k, (metrics, summary) in straight.items():
        resumed_metrics, resumed_summary = read_run(_runs(root)[k])
        assert resumed_summary["params_sha256"] == summary["params_sha256"], k
        pd.testing.assert_frame_equal(metrics, resumed_metrics)
