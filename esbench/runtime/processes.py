"""``cluster=processes``: a real ``dask scheduler`` and N ``dask worker`` processes on this machine.

A :class:`~distributed.LocalCluster` runs its scheduler inside the driver process and talks to its
workers through nannies it owns. A cluster of machines does not: the scheduler is its own process,
and every worker is a separate ``dask worker`` (with its nanny) that connected over TCP. This kind
starts exactly that on 127.0.0.1 (the command lines a user would type, docs/guides/clusters.md), so the
scaling recipe measures the scheduler path a cluster uses, including with more workers than cores
(oversubscribed), and stops every process it started when the run ends.

Every server listens on 127.0.0.1 only: scheduler, nannies, workers and their HTTP servers.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

LOOPBACK = "127.0.0.1"


class SpawnError(RuntimeError):
    """The scheduler or a worker process did not start."""


def dask_env(config: Mapping[str, Any]) -> dict[str, str]:
    """The environment that sets Dask config keys in a child process: Dask's own serialized form
    (``DASK_INTERNAL_INHERIT_CONFIG``, read at import, as Dask passes config to processes it
    spawns). Unlike ``DASK_A__B`` variables, whose names Dask lowercases, it keeps a key's case
    (``...pre-spawn-environ.MALLOC_TRIM_THRESHOLD_``) and a None value (which unsets it)."""
    import dask.config

    return {"DASK_INTERNAL_INHERIT_CONFIG": dask.config.serialize(dict(config))}


def _spawn(args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own process group: stopped with its children (the worker)
            cwd=os.getcwd(),  # `python -m` puts it first on sys.path, as for this process
            env=env,
        )


def _stop(procs: list[subprocess.Popen[bytes]], timeout: float = 15.0) -> None:
    """SIGTERM each process group, then SIGKILL what is left after ``timeout`` seconds."""
    for p in procs:
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for p in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout=10)


@contextlib.contextmanager
def spawned_cluster(
    n_workers: int,
    threads_per_worker: int = 1,
    config: Mapping[str, Any] | None = None,
    memory_limit: str = "auto",
    timeout: float = 60.0,
) -> Iterator[str]:
    """Start ``dask scheduler`` and ``n_workers`` ``dask worker`` processes; yield the address.

    Args:
        n_workers: Worker processes (each with its nanny), any number: more than the cores is
            allowed (oversubscription is what the scaling recipe measures).
        threads_per_worker: Threads of each worker (1: the ES runtime's unit).
        config: Dask config keys set in every process (e.g. the embedded cluster's monitor
            intervals, so that both kinds pay the same housekeeping).
        memory_limit: Each worker's memory limit (Dask's ``--memory-limit``).
        timeout: Seconds to wait for the scheduler to write its address.

    Raises:
        SpawnError: The scheduler did not start within ``timeout`` (its log's tail is included).
    """
    env = {**os.environ, **dask_env(config or {})}
    with tempfile.TemporaryDirectory(prefix="esbench-dask-") as tmp:
        root = Path(tmp)
        scheduler_file = root / "scheduler.json"
        http = ["--no-dashboard", "--dashboard-address", f"{LOOPBACK}:0"]
        procs = [
            _spawn(
                ["distributed.cli.dask_scheduler", "--host", LOOPBACK, "--port", "0",
                 "--scheduler-file", str(scheduler_file), *http],
                root / "scheduler.log", env,
            )
        ]  # fmt: skip
        try:
            deadline = time.monotonic() + timeout
            while not scheduler_file.exists() or not scheduler_file.read_text().strip():
                if procs[0].poll() is not None or time.monotonic() > deadline:
                    tail = (root / "scheduler.log").read_text(errors="replace")[-2000:]
                    raise SpawnError(f"dask scheduler did not start within {timeout:g} s:\n{tail}")
                time.sleep(0.05)
            address = str(json.loads(scheduler_file.read_text())["address"])
            for i in range(n_workers):
                procs.append(
                    _spawn(
                        ["distributed.cli.dask_worker", address, "--nthreads", str(threads_per_worker),
                         "--nworkers", "1", "--host", LOOPBACK, "--name", f"w{i}",
                         "--memory-limit", str(memory_limit), "--local-directory", str(root / f"w{i}"),
                         *http],
                        root / f"worker-{i}.log", env,
                    )
                )  # fmt: skip
            yield address
        finally:
            _stop(procs[1:])  # workers first, so the scheduler does not reschedule their tasks
            _stop(procs[:1])
