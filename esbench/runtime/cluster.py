"""Dask cluster factory: embedded by default, distributed when asked (DESIGN.md promise 4).

* ``cluster=local``: a LocalCluster started here, one single-threaded worker process per core.
  Nothing listens beyond this machine: the scheduler, the nannies, the workers and the dashboard
  bind 127.0.0.1, and ``cluster.dashboard=false`` leaves the scheduler with no HTTP server at all.
* ``cluster=address cluster.address=tcp://HOST:8786``: a running ``dask scheduler`` (workers
  started with ``dask worker tcp://HOST:8786 --nthreads 1``); with ``tls://`` and
  ``cluster.security.*`` the connection is mutual TLS (:func:`security_from_config`).
* ``cluster=slurm``: dask-jobqueue's SLURMCluster (``pip install esbench[slurm]``).

Inside a Dask task (a sweep job started by the Dask launcher) the run reuses the cluster it runs
on through ``worker_client()``, which secedes the job from the worker's thread pool so the job's
own rollout tasks can use that slot: 2 workers can run 4 ES jobs without deadlock.

Inside :func:`reusing_local_clusters` (``esbench reproduce``, which runs a recipe's sweeps one after
another in one process) a LocalCluster outlives the sweep that started it and serves the next one
that asks for the same cluster, so a recipe's workers start (and import torch, MuJoCo, SB3) once.
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib.util
import logging
import os
from collections.abc import Iterator
from typing import Any

import dask
from distributed import Client, LocalCluster
from distributed.security import Security

log = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
"""Where every server of the embedded cluster listens: reachable from this machine only."""


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


#: Set while the CLI runs a single run (:func:`sole_run_of_process`): the process exists for that
#: one run and ends with it.
_SOLE_RUN: contextvars.ContextVar[bool] = contextvars.ContextVar("esbench_sole_run", default=False)


@contextlib.contextmanager
def sole_run_of_process() -> Iterator[None]:
    """Mark the code inside as the only run this process will execute (``esbench run`` without
    ``-m``), so a learner that must own its process may train here rather than start a worker."""
    token = _SOLE_RUN.set(True)
    try:
        yield
    finally:
        _SOLE_RUN.reset(token)


def is_sole_run_of_process() -> bool:
    """Whether the run executing now is the only one its process runs (:func:`sole_run_of_process`)."""
    return _SOLE_RUN.get()


def worker_count(client: Client) -> int:
    """Workers currently connected to the client's scheduler.

    One small request to the scheduler (its totals, no per-worker records: O(1) bytes however
    many workers there are), so the ES loop can read it every generation as workers come and go.
    """
    info = client.scheduler_info(n_workers=0)
    return int(info.get("n_workers", len(info.get("workers", {}))))


#: The LocalCluster kept for reuse inside :func:`reusing_local_clusters`, with its settings; None
#: outside it (each ``dask_client`` then starts and closes its own).
_KEPT: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "esbench_kept_cluster", default=None
)


@contextlib.contextmanager
def reusing_local_clusters() -> Iterator[None]:
    """Inside, a ``cluster=local`` LocalCluster stays open when its client closes, and the next
    :func:`dask_client` asking for the same settings (workers, threads, memory limit, dashboard,
    the Dask settings its processes start with)
    connects to it instead of starting another; settings that differ close it and start anew (one
    kept at a time, so idle workers never share the machine with a measured sweep). Closed on exit.

    The workers are the same kind of process a new cluster would start; a job's numbers do not
    depend on which worker runs it, or on what ran there before (each run seeds its own streams).
    """
    kept: dict[str, Any] = {}
    token = _KEPT.set(kept)
    try:
        yield
    finally:
        _KEPT.reset(token)
        if kept.get("cluster") is not None:
            close_quietly(kept["cluster"])


def close_quietly(cluster: Any) -> None:
    """Close a cluster we started; a shutdown that times out (a loaded machine) is logged, not
    raised: the work is done by then, and a completed run or sweep must not exit as failed."""
    try:
        cluster.close()
    except TimeoutError as e:
        log.warning("the Dask cluster did not shut down in time (%s); its processes end with this one", e)


def _local_cluster(cluster_cfg: Any) -> tuple[LocalCluster, bool]:
    """A LocalCluster for ``cluster_cfg`` and whether the caller closes it (False: it is kept)."""
    n = int(cluster_cfg.n_workers or os.cpu_count() or 1)
    dashboard = bool(cluster_cfg.dashboard)
    config = _local_cluster_config(cluster_cfg)  # the Dask settings its processes start with
    threads, memory = int(cluster_cfg.threads_per_worker), str(cluster_cfg.memory_limit)
    settings = (n, threads, memory, dashboard, repr(config))
    kept = _KEPT.get()
    if kept is not None and kept.get("settings") == settings:
        cluster = kept["cluster"]
        if cluster.status.name == "running":
            return cluster, False
    if kept is not None and kept.get("cluster") is not None:
        close_quietly(kept.pop("cluster"))
        kept.pop("settings", None)
    with dask.config.set(config):
        cluster = LocalCluster(
            n_workers=n,
            threads_per_worker=threads,
            processes=True,
            host=LOOPBACK,  # scheduler, nannies and workers
            # any free port: a sweep may run several clusters at once. Dask starts the
            # scheduler's HTTP server even without a dashboard; see _serve_no_http.
            dashboard_address=f"{LOOPBACK}:0",
            scheduler_kwargs={"dashboard": dashboard},
            worker_dashboard_address=None,
            memory_limit=cluster_cfg.memory_limit,
            silence_logs=logging.ERROR,
        )
    if not dashboard:
        try:
            _serve_no_http(cluster)
        except BaseException:
            cluster.close()
            raise
    if kept is None:
        return cluster, True
    kept.update(cluster=cluster, settings=settings)
    return cluster, False


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
        cluster, owned = _local_cluster(cluster_cfg)
        try:
            client = Client(cluster)
        except BaseException:
            if owned:
                cluster.close()
            raise
        _announce(client, quiet or not cluster_cfg.dashboard)
        try:
            yield client
        finally:
            client.close()
            if owned:
                close_quietly(cluster)
        return
    if kind == "address":
        address = cluster_cfg.address
        timeout = float(cluster_cfg.connect_timeout_s)
        security = security_from_config(cluster_cfg)
        try:
            client = Client(address, timeout=timeout, security=security)
        except (OSError, TimeoutError) as e:
            if security is not None and "certificate" in str(e).lower():
                raise ClusterError(
                    f"cluster.address={address!r}: the TLS handshake failed ({e}); the scheduler's CA "
                    "must have signed cluster.security.tls_client_cert, and cluster.security.tls_ca_file "
                    "must be the CA that signed the scheduler's certificate"
                ) from None
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
        from esbench.runtime.slurm import start_slurm_cluster

        try:
            cluster = start_slurm_cluster(cluster_cfg)
        except ImportError:
            raise ClusterError("cluster=slurm needs dask-jobqueue: pip install 'esbench[slurm]'") from None
        except ValueError as e:
            raise ClusterError(str(e)) from None
        client = Client(cluster)
        _announce(client, quiet)
        try:
            _wait_for_slurm_workers(client, cluster_cfg, quiet)
            yield client
        finally:
            client.close()
            cluster.close()
        return
    if kind == "processes":
        from esbench.runtime.processes import SpawnError, spawned_cluster

        n = int(cluster_cfg.n_workers or os.cpu_count() or 1)
        threads = int(cluster_cfg.threads_per_worker)
        config = _local_cluster_config(cluster_cfg)  # the same housekeeping as cluster=local
        try:
            with spawned_cluster(n, threads, config, str(cluster_cfg.memory_limit)) as address:
                client = Client(address, timeout=float(cluster_cfg.connect_timeout_s))
                try:
                    client.wait_for_workers(n, timeout=120)
                    _announce(client, quiet)
                    yield client
                finally:
                    client.close()
        except SpawnError as e:
            raise ClusterError(str(e)) from None
        return
    raise ClusterError(f"cluster.kind={kind!r}; allowed: local, address, slurm")


def _wait_for_slurm_workers(client: Client, cluster_cfg: Any, quiet: bool) -> None:
    """Wait until the first SLURM job's workers connect (jobs may queue); the ES loop picks up the
    others as they start. ``cluster.worker_wait_s`` bounds the wait (None: wait for the queue)."""
    if worker_count(client) > 0:
        return
    limit = cluster_cfg.worker_wait_s
    if not quiet:
        print("esbench: waiting for the first SLURM job's workers to connect", flush=True)
    try:
        client.wait_for_workers(1, timeout=None if limit is None else float(limit))
    except TimeoutError:
        raise ClusterError(
            f"no SLURM job started a worker within cluster.worker_wait_s={limit}; check `squeue --me` "
            "and the job logs (cluster.log_directory)"
        ) from None


def security_from_config(cluster_cfg: Any) -> Security | None:
    """Dask ``Security`` for ``cluster.security``, or None when no TLS is configured (then Dask's
    own configuration, e.g. ``distributed.comm.tls.*`` in ``~/.config/dask``, still applies).

    Raises :class:`ClusterError` (one line naming the key) for a certificate path that is not a
    readable file, a ``tcp://`` address with TLS configured, or a ``tls://`` address with no
    certificates anywhere: Dask would otherwise fail with a traceback, or not at all.
    """
    sec = getattr(cluster_cfg, "security", None)
    if sec is None:
        return None
    paths: dict[str, str] = {}
    for key in ("tls_ca_file", "tls_client_cert", "tls_client_key"):
        value = getattr(sec, key, None)
        if value:
            path = os.path.expanduser(str(value))
            if not (os.path.isfile(path) and os.access(path, os.R_OK)):
                raise ClusterError(f"cluster.security.{key}={value!r}: no readable file there")
            paths[key] = path
    address = str(cluster_cfg.address or "")
    if not paths and not getattr(sec, "require_encryption", False):
        if address.startswith("tls://") and not dask.config.get("distributed.comm.tls.ca-file", None):
            raise ClusterError(
                f"cluster.address={address!r} needs certificates; set cluster.security.tls_ca_file, "
                "cluster.security.tls_client_cert and cluster.security.tls_client_key"
            )
        return None
    if not address.startswith("tls://"):
        raise ClusterError(
            f"cluster.address={address!r} is not encrypted but cluster.security asks for TLS; "
            "allowed: tls://HOST:PORT (a scheduler started with --tls-ca-file/--tls-cert/--tls-key)"
        )
    return Security(require_encryption=True, **paths)


def _serve_no_http(cluster: LocalCluster) -> None:
    """Stop the in-process scheduler's HTTP server, which Dask starts even with no dashboard
    (Prometheus metrics, health, and ``/info`` pages with worker logs and call stacks), and drop
    it from the services the scheduler advertises, so no dashboard link is offered."""

    async def stop() -> None:
        scheduler = cluster.scheduler
        assert scheduler is not None
        scheduler.http_server.stop()
        scheduler.services.pop("dashboard", None)

    cluster.sync(stop)
    cluster.scheduler_info.get("services", {}).pop("dashboard", None)


def _local_cluster_config(cluster_cfg: Any) -> dict[str, Any]:
    """Dask settings for a LocalCluster's scheduler, nannies and workers (workers inherit them from
    their nanny), chosen so that housekeeping takes as little as possible from rollouts.

    * Dask's statistical profiler samples every worker thread's stack each 10 ms while holding the
      GIL: 5-10% of a rollout's time here.
    * The nannies' memory checks (every 100 ms), the system monitors (500 ms) and the event-loop
      health ticks (20 ms) cost the driver process about 4% of a core, which one worker shares:
      with 2 workers on 2 cores that worker finished each generation late and the other waited.
      Every ``cluster.monitor_interval_s`` is enough for memory limits and the dashboard.
    * Nannies start their workers with ``MALLOC_TRIM_THRESHOLD_=65536`` (Dask's default
      ``distributed.nanny.pre-spawn-environ``), to hand freed memory back to the system at once.
      Setting it also turns off glibc's adaptive mmap threshold, so every allocation over 128 kB
      (each Atari CNN activation, every step) becomes a fresh ``mmap`` whose pages fault in again:
      7x the page faults of a rollout here, 5-15% of an Atari worker's CPU time (measured with
      ``esbench bench atari``). A rollout's allocations repeat every step, so the memory trimming
      would return is the memory the next step takes back; None removes the variable. (Each worker
      also undoes it itself before its first rollout, :mod:`esbench.runtime.allocator`, since a
      process that once ran a default nanny passes the variable on to every later child.)
    """
    interval = f"{float(cluster_cfg.monitor_interval_s)}s"
    return {
        "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
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
