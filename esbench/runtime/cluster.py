"""Dask cluster factory: embedded by default, distributed when asked (DESIGN.md promise 4).

* ``cluster=local``: a LocalCluster started here, one single-threaded worker process per core.
* ``cluster=address cluster.address=tcp://HOST:8786``: a running ``dask scheduler`` (workers
  started with ``dask worker tcp://HOST:8786 --nthreads 1``).
* ``cluster=slurm``: dask-jobqueue's SLURMCluster (``pip install esbench[slurm]``).

Inside a Dask task (a sweep job started by the Dask launcher) the run reuses the cluster it runs
on through ``worker_client()``, which secedes the job from the worker's thread pool so the job's
own rollout tasks can use that slot: 2 workers can run 4 ES jobs without deadlock.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
from collections.abc import Iterator
from typing import Any

import dask
from distributed import Client, LocalCluster

log = logging.getLogger(__name__)


class ClusterError(RuntimeError):
    """The configured cluster cannot be reached or started."""


def in_dask_task() -> bool:
    """Whether this code runs inside a Dask worker task."""
    try:
        from distributed import get_worker

        get_worker()
        return True
    except (ImportError, ValueError):
        return False


def worker_count(client: Client) -> int:
    """Workers currently connected to the client's scheduler."""
    return len(client.scheduler_info(n_workers=-1)["workers"])


@contextlib.contextmanager
def dask_client(cluster_cfg: Any, quiet: bool = False) -> Iterator[Client]:
    """A connected client for the configured cluster; the cluster is closed on exit if we made it."""
    if in_dask_task():
        from distributed import worker_client

        with worker_client() as client:
            yield client
        return
    kind = cluster_cfg.kind
    _quiet_dask_logs()
    if kind == "local":
        n = int(cluster_cfg.n_workers or os.cpu_count() or 1)
        with dask.config.set(_local_cluster_config(cluster_cfg)):
            cluster = LocalCluster(
                n_workers=n,
                threads_per_worker=int(cluster_cfg.threads_per_worker),
                processes=True,
                dashboard_address=":0",  # any free port: a sweep may run several clusters at once
                memory_limit=cluster_cfg.memory_limit,
                silence_logs=logging.ERROR,
            )
        client = Client(cluster)
        _announce(client, quiet or not cluster_cfg.dashboard)
        try:
            yield client
        finally:
            client.close()
            cluster.close()
        return
    if kind == "address":
        address = cluster_cfg.address
        timeout = float(cluster_cfg.connect_timeout_s)
        try:
            client = Client(address, timeout=timeout)
        except (OSError, TimeoutError) as e:
            raise ClusterError(
                f"cluster.address={address!r}: no Dask scheduler answered within {timeout:g} s ({e}). "
                f"Start one with `dask scheduler` and workers with `dask worker {address} --nthreads 1`, "
                "or use cluster=local"
            ) from None
        try:
            client.wait_for_workers(1, timeout=timeout)
        except TimeoutError:
            client.close()
            raise ClusterError(
                f"the scheduler at {address} has no workers after {timeout:g} s; "
                f"start some with `dask worker {address} --nthreads 1`"
            ) from None
        _announce(client, quiet)
        try:
            yield client
        finally:
            client.close()
        return
    if kind == "slurm":
        try:
            from dask_jobqueue import SLURMCluster
        except ImportError:
            raise ClusterError("cluster=slurm needs dask-jobqueue: pip install 'esbench[slurm]'") from None
        cluster = SLURMCluster(
            queue=cluster_cfg.queue,
            account=cluster_cfg.account,
            cores=int(cluster_cfg.cores),
            processes=int(cluster_cfg.cores),
            memory=cluster_cfg.memory,
            walltime=cluster_cfg.walltime,
        )
        cluster.scale(jobs=int(cluster_cfg.jobs))
        client = Client(cluster)
        _announce(client, quiet)
        try:
            yield client
        finally:
            client.close()
            cluster.close()
        return
    raise ClusterError(f"cluster.kind={kind!r}; allowed: local, address, slurm")


def _local_cluster_config(cluster_cfg: Any) -> dict[str, Any]:
    """Dask settings for a LocalCluster's scheduler, nannies and workers (workers inherit them from
    their nanny), chosen so that housekeeping takes as little as possible from rollouts.

    * Dask's statistical profiler samples every worker thread's stack each 10 ms while holding the
      GIL: 5-10% of a rollout's time here.
    * The nannies' memory checks (every 100 ms), the system monitors (500 ms) and the event-loop
      health ticks (20 ms) cost the driver process about 4% of a core, which one worker shares:
      with 2 workers on 2 cores that worker finished each generation late and the other waited.
      Every ``cluster.monitor_interval_s`` is enough for memory limits and the dashboard.
    """
    interval = f"{float(cluster_cfg.monitor_interval_s)}s"
    return {
        "distributed.worker.profile.enabled": bool(cluster_cfg.worker_profile),
        "distributed.worker.memory.monitor-interval": interval,
        "distributed.admin.system-monitor.interval": interval,
        "distributed.admin.tick.interval": interval,
    }


def _quiet_dask_logs() -> None:
    """Dask sets INFO on its own loggers; keep them at WARNING in the driver."""
    for name in list(logging.root.manager.loggerDict):
        if name.startswith(("distributed", "dask")):
            logging.getLogger(name).setLevel(logging.WARNING)


def _announce(client: Client, quiet: bool) -> None:
    """Print the dashboard link when one is served."""
    _quiet_dask_logs()
    if quiet:
        return
    link = getattr(client, "dashboard_link", None)
    if link and importlib.util.find_spec("bokeh"):
        print(f"esbench: Dask dashboard at {link}", flush=True)
