"""A real ``dask scheduler`` and ``dask worker`` processes on 127.0.0.1, started by a test.

Runs given ``cluster=address cluster.address=<it>`` connect to it instead of starting a LocalCluster
of their own, so many short runs of one test module share one cluster: each run then costs only its
own process, not a scheduler and worker processes importing esbench again.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from distributed import Client

from tests.conftest import REPO


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def running_dask(workdir: Path, workers: int = 2) -> Iterator[str]:
    """A scheduler and ``workers`` single-threaded worker processes, all joined: yields the address.

    Every process has its own session (a test that SIGKILLs a run's process group leaves the
    cluster alone) and is ended when the block exits. Workers import ``tests.fault_envs`` by env id,
    so they run from the checkout with it on ``PYTHONPATH``.
    """
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    dask = str(Path(sys.executable).parent / "dask")
    procs = [
        subprocess.Popen(
            [dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )
    ]  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while True:  # the scheduler accepts connections: then workers can join
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert procs[0].poll() is None and time.monotonic() < deadline, "the scheduler did not start"
                time.sleep(0.05)
        for i in range(workers):
            procs.append(
                subprocess.Popen(
                    [dask, "worker", address, "--nthreads", "1", "--no-dashboard", "--name", f"w{i}",
                     "--local-directory", str(workdir / f"w{i}")],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                    cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                )
            )  # fmt: skip
        with Client(address, timeout=60) as client:  # every worker joined before any run uses them
            client.wait_for_workers(workers, timeout=60)
        yield address
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=20)
