"""One writer per run directory: a second process on the same run stops with one line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from esbench.tracking.store import LOCK_FILE, RunLockedError, RunStore
from tests.conftest import REPO, SMALL, esbench, read_run

HOLD = """
import sys
from esbench.tracking.store import RunStore
with RunStore(sys.argv[1], "exp", "run").lock():
    print("locked", flush=True)
    sys.stdin.read()  # holds the lock until the test kills it (or closes its stdin), however long
"""


def _hold_in_subprocess(root: Path) -> subprocess.Popen[str]:
    """Another process that takes the run's lock and keeps it (until killed)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(root)],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


def test_a_second_process_cannot_take_the_lock_until_the_holder_dies(tmp_path: Path) -> None:
    holder = _hold_in_subprocess(tmp_path)
    try:
        store = RunStore(tmp_path, "exp", "run")
        with pytest.raises(RunLockedError) as err, store.lock():
            pass
        message = str(err.value)
        assert "\n" not in message
        assert str(store.dir) in message and f"another process (pid {holder.pid} on " in message
    finally:
        holder.send_signal(signal.SIGKILL)  # dies without cleaning up: the kernel drops the lock
        holder.wait(timeout=30)
    with store.lock():  # no stale lock after a killed holder
        assert (store.dir / LOCK_FILE).read_text().startswith(f"pid {os.getpid()} ")
    with store.lock():  # released on exit from the block, reusable in the same process
        pass


def test_lock_excludes_a_second_holder_in_the_same_process_and_clear_keeps_it(tmp_path: Path) -> None:
    store = RunStore(tmp_path, "exp", "run")
    with store.lock():
        with pytest.raises(RunLockedError), RunStore(tmp_path, "exp", "run").lock():
            pass
        (store.dir / "metrics.csv").write_text("x\n")
        store.clear()  # a resume=false start empties the run but keeps the held lock's file
        assert [p.name for p in store.dir.iterdir()] == [LOCK_FILE]
        with pytest.raises(RunLockedError), RunStore(tmp_path, "exp", "run").lock():
            pass


def test_two_esbench_runs_of_the_same_config(tmp_path: Path) -> None:
    """The second stops with one line naming the run directory; the first completes normally."""
    args = [
        "run", *SMALL, "env=inverted_pendulum", "budget=smoke", "budget.timesteps=30000",
        "cluster.n_workers=1", f"results_dir={tmp_path}",
    ]  # fmt: skip
    first = subprocess.Popen(
        [sys.executable, "-m", "esbench.cli", *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, so a failure below takes its workers too
    )
    try:
        deadline = time.monotonic() + 120
        while not list(tmp_path.rglob("metrics.csv")):  # the first is training, holding the lock
            assert first.poll() is None and time.monotonic() < deadline, first.communicate()
            time.sleep(0.05)
        (run_dir,) = [p.parent for p in tmp_path.rglob(LOCK_FILE)]

        # The first is paused (its workers too) while the second tries: however slow the machine,
        # it still holds the lock mid-run when the second looks.
        os.killpg(first.pid, signal.SIGSTOP)
        try:
            second = esbench(*args, check=False, timeout=120)
        finally:
            os.killpg(first.pid, signal.SIGCONT)
        assert second.returncode == 3, second.stderr
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1, second.stderr
        assert lines[0].startswith(f"esbench: error: run directory {run_dir} is in use: ")
        assert f"another process (pid {first.pid} on " in lines[0]

        out, err = first.communicate(timeout=300)
        assert first.returncode == 0, err[-3000:]
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait()
    assert "run complete" in out
    metrics, summary = read_run(run_dir)
    assert summary["total_timesteps"] >= 30_000 and summary["status"] == "complete"
    assert list(metrics["generation"]) == list(range(len(metrics)))  # one writer's rows, in order
    assert pd.read_csv(run_dir / "metrics.csv")["timesteps"].is_monotonic_increasing
