"""Kill a real run from outside and prove that running it again *resumed* it (not restarted it).

A run's checkpoint records how many rows of ``metrics.csv`` it covers; a resumed run cuts the file
back to those rows and appends after them, so those rows stay byte-for-byte what the killed run
wrote, wall-clock and CPU columns included. A run that restarted from scratch rewrites them with
new timings, so :func:`assert_resumed` fails it. This reads only what a run writes (the checkpoint's
data-only manifest and ``metrics.csv``), not the trainer's classes, so it holds whichever module
writes the checkpoint.

Typical use::

    killed = kill_after_checkpoint(args, root, rows=3)  # SIGKILL once a checkpoint covers 3 rows
    esbench("run", *args, f"results_dir={root}")  # the same command again
    assert_resumed(killed)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.conftest import REPO, read_run

POLL_S = 0.02  # how often the run's files are looked at while waiting for a condition


def checkpoint_rows(run_dir: Path) -> int:
    """Rows of ``metrics.csv`` the run's checkpoint covers; 0 without a (readable) checkpoint.

    A checkpoint is a data-only state file: its structure is JSON in the entry ``__state__``, and
    the root object has a field ``n_rows``. Read here without loading any of esbench's classes.
    """
    path = run_dir / "checkpoint.npz"
    try:
        with np.load(path, allow_pickle=False) as archive:
            tree = json.loads(archive["__state__"].tobytes())
    except (OSError, ValueError, KeyError):  # absent, or replaced while being read
        return 0
    fields = tree["root"].get("fields", {})
    return int(fields["n_rows"]) if "n_rows" in fields else 0


def run_dirs(root: Path) -> list[Path]:
    """Every run directory (one holding ``config.yaml``) below a results root."""
    return sorted(p.parent for p in root.rglob("config.yaml"))


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(POLL_S)


def kill_when(
    args: list[str], root: Path, ready: Callable[[], bool], what: str, timeout: float = 240
) -> None:
    """Start ``esbench run *args results_dir=root`` in its own process group, wait until ``ready()``,
    then SIGKILL the whole group (the driver, its Dask scheduler and workers) from outside."""
    with tempfile.TemporaryFile() as err:  # a file, not a pipe: nobody reads while waiting
        proc = subprocess.Popen(
            [sys.executable, "-m", "esbench.cli", "run", *args, "cluster.dashboard=false",
             f"results_dir={root}"],
            cwd=REPO, stdout=subprocess.DEVNULL, stderr=err,
            start_new_session=True,  # its own process group: the kill takes its Dask workers too
        )  # fmt: skip
        try:

            def ready_or_gone() -> bool:
                if proc.poll() is not None:
                    err.seek(0)
                    tail = err.read().decode(errors="replace")[-3000:]
                    raise AssertionError(f"the run ended ({proc.returncode}) before {what}:\n{tail}")
                return ready()

            wait_for(ready_or_gone, timeout, what)
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)


@dataclass(frozen=True)
class KilledRun:
    """A run directory as a SIGKILL left it."""

    run_dir: Path
    rows: int  #: rows of metrics.csv its checkpoint covers
    metrics: bytes  #: metrics.csv at the moment of the kill


def capture(run_dir: Path) -> KilledRun:
    """Record a killed run (after the kill, so nothing changes under it); it must be unfinished."""
    assert not (run_dir / "summary.json").exists(), f"{run_dir.name} completed before it was killed"
    rows = checkpoint_rows(run_dir)
    assert rows > 0, f"{run_dir.name} has no checkpoint covering a row"
    return KilledRun(run_dir, rows, (run_dir / "metrics.csv").read_bytes())


def kill_after_checkpoint(args: list[str], root: Path, rows: int = 3, timeout: float = 240) -> KilledRun:
    """Run ``args`` (a single run) and SIGKILL it once its checkpoint covers ``rows`` rows."""

    def ready() -> bool:
        dirs = run_dirs(root)
        return bool(dirs) and checkpoint_rows(dirs[0]) >= rows

    kill_when(args, root, ready, f"a checkpoint covering {rows} rows", timeout)
    (run_dir,) = run_dirs(root)
    return capture(run_dir)


def assert_resumed(killed: KilledRun) -> None:
    """The run in ``killed.run_dir`` was completed by resuming, not by starting over.

    The header and the rows the checkpoint covered are byte-for-byte what the killed run wrote
    (their wall-clock columns would differ after a restart), further rows follow them, and the run
    is complete.
    """
    after = (killed.run_dir / "metrics.csv").read_bytes()
    before_lines = killed.metrics.splitlines(keepends=True)
    after_lines = after.splitlines(keepends=True)
    assert len(before_lines) > killed.rows, "metrics.csv held fewer rows than its checkpoint covers"
    for i, line in enumerate(before_lines[: killed.rows + 1]):
        if i >= len(after_lines) or after_lines[i] != line:
            now = after_lines[i] if i < len(after_lines) else b"(missing)"
            raise AssertionError(
                f"row {i} of {killed.rows} covered by the checkpoint changed: the run restarted "
                f"instead of resuming\n  killed: {line!r}\n  now:    {now!r}"
            )
    assert len(after_lines) > killed.rows + 1, "no rows follow the resumed ones"
    assert after.endswith(b"\n")
    assert (killed.run_dir / "summary.json").exists(), "the resumed run did not complete"


#: The algorithms whose resumed run the default suite also compares with an uninterrupted one: one
#: of each kind of resumed state (Adam moments, a low-rank strategy, a covariance matrix; an
#: on-policy rollout, a replay buffer). The others are compared in the slow suite (``pytest -m
#: slow``), which runs before a runtime change lands; every one's kill-and-resume runs in the
#: default suite.
DEFAULT_COMPARED = {"openai_es", "eggroll", "cma_es", "ppo", "dqn"}


def compared_in_default_suite(keys: list[str]) -> list[object]:
    """``keys`` as pytest parameters: those of :data:`DEFAULT_COMPARED` plain, the rest marked slow."""
    return [k if k in DEFAULT_COMPARED else pytest.param(k, marks=pytest.mark.slow) for k in keys]


@dataclass(frozen=True)
class Resumed:
    """A run killed once its checkpoint covered rows, then completed by the same command."""

    args: list[str]  #: the run's overrides, without its cluster and results directory
    killed: KilledRun  #: the run directory as the SIGKILL left it
    log: str  #: stderr of the command that completed it

    @property
    def summary(self) -> dict:
        """The completed run's ``summary.json``."""
        return json.loads((self.killed.run_dir / "summary.json").read_text())


def assert_same_results(reference: Path, resumed: Path) -> None:
    """Every non-timing column and the final parameters equal the uninterrupted run's, and only the
    second was resumed (once)."""
    (m1, s1), (m2, s2) = read_run(reference), read_run(resumed)
    pd.testing.assert_frame_equal(m1, m2)
    assert s1["params_sha256"] == s2["params_sha256"]
    assert s1["resumed_from"] == [] and len(s2["resumed_from"]) == 1
