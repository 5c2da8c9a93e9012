"""The Dask launcher's work: one Dask task per Hydra job, progress and failures on the driver.

Pattern of Hydra's joblib launcher: the driver ships the Hydra context, the sweep's base config,
the task function and Hydra's singleton state (``Singleton.get_state()``: ConfigStore, plugins) to
the worker, which restores the state, loads the job's sweep config and calls ``run_job``.

* **No deadlock.** A job that evaluates on the cluster (an ES run) reaches it through
  ``esbench.runtime.cluster.dask_client``, which inside a task uses ``worker_client()``: the job
  secedes from its worker's thread pool, so its rollout tasks can use that slot. 2 single-threaded
  workers run 4 ES jobs at once.
* **Failures and progress are collected on the driver.** A task returns its status, duration and,
  for a failed job, the formatted traceback; the driver prints it with the job's overrides, adds the
  job to ``esbench.sweep.FAILED_JOBS`` (the driver's, not the worker's), and the other jobs go on.
  Each task announces its start as a Dask event, so the driver can count running jobs and estimate
  the time left.
* **Resumable.** Jobs are plain runs: a complete run is skipped, a partial one resumes from its
  checkpoint (``esbench.runner.run``); relative ``results_dir`` values are resolved against the
  driver's working directory, so every worker writes to the same store.
"""

import logging
import os
import sys
import time
import traceback
import uuid
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from hydra.core.hydra_config import HydraConfig
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus, configure_log, filter_overrides, run_job, setup_globals
from hydra.errors import CompactHydraException
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, open_dict

from hydra_plugins.esbench_dask_launcher.progress import SweepProgress


class LauncherState(Protocol):
    """What :func:`launch` reads of the launcher (``DaskLauncher``; a protocol, so this module does
    not import the one that imports it)."""

    max_concurrent: int | None
    progress_interval_s: float
    config: DictConfig | None
    task_function: TaskFunction | None
    hydra_context: HydraContext | None


log = logging.getLogger(__name__)


class SweepClusterError(CompactHydraException):
    """The sweep's cluster cannot be reached or started (Hydra prints the message alone)."""


@dataclass
class JobContext:
    """What every job of a sweep needs on its worker (about 100 kB), sent inside every job's task.

    Not scattered: a scattered object lives in one worker's memory, and when that worker died the
    scheduler forgot it and cancelled every job that needed it, ending the whole sweep. A task that
    carries its own arguments is simply run again on another worker (``test_scale_out.py``).
    """

    hydra_context: HydraContext
    config: DictConfig
    task_function: TaskFunction
    singleton_state: dict[Any, Any]
    driver_cwd: str
    topic: str
    code_revision: dict[str, Any]


@dataclass
class JobReport:
    """How a job went, returned from the worker to the driver.

    Attributes:
        idx: Hydra job number.
        overrides: The job's overrides.
        status: ``complete``, ``skipped`` or ``failed``.
        seconds: Wall-clock seconds the job ran.
        error: Formatted traceback of a failed job.
        started: When the job started, epoch seconds on its worker (``None``: unknown).
    """

    idx: int
    overrides: list[str]
    status: str
    seconds: float
    error: str | None = None
    started: float | None = None


def _announce_start(topic: str, idx: int) -> None:
    """Tell the driver (through a Dask event) that job ``idx`` started."""
    try:
        from distributed import get_worker

        get_worker().log_event(topic, {"idx": idx})
    except Exception:  # progress is best effort
        pass


def execute_job(idx: int, overrides: Sequence[str], ctx: JobContext) -> tuple[JobReturn, JobReport]:
    """Run one Hydra job inside a Dask task (on a worker); never raises."""
    _announce_start(ctx.topic, idx)
    started = time.time()
    t0 = time.perf_counter()
    ret = JobReturn(overrides=list(overrides), status=JobStatus.FAILED)
    error: str | None = None
    try:
        from esbench.runner import load_components

        load_components()  # registry, env checks and resolvers, in a fresh worker process too
        setup_globals()
        Singleton.set_state(ctx.singleton_state)
        sweep_config = ctx.hydra_context.config_loader.load_sweep_config(ctx.config, list(overrides))
        with open_dict(sweep_config):
            sweep_config.hydra.job.id = f"{sweep_config.hydra.job.name}_{idx}"
            sweep_config.hydra.job.num = idx
            results_dir = sweep_config.get("results_dir")
            if isinstance(results_dir, str) and not os.path.isabs(results_dir):
                sweep_config.results_dir = str(Path(ctx.driver_cwd) / results_dir)
        HydraConfig.instance().set_config(sweep_config)
        from esbench.tracking.store import pinned_code_revision

        with pinned_code_revision(ctx.code_revision):  # every run names the sweep's starting commit
            ret = run_job(
                hydra_context=ctx.hydra_context,
                task_function=ctx.task_function,
                config=sweep_config,
                job_dir_key="hydra.sweep.dir",
                job_subdir_key="hydra.sweep.subdir",
            )
        if ret.status == JobStatus.FAILED:
            exc = ret._return_value
            error = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    except Exception as exc:
        error = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    seconds = time.perf_counter() - t0
    if error is not None or ret.return_value == "failed":
        # A failed job is reported by the driver; Hydra's sweeper must not abort the sweep on it.
        ret.status, ret._return_value = JobStatus.COMPLETED, "failed"
        return ret, JobReport(idx, list(overrides), "failed", seconds, error, started)
    status = ret.return_value if ret.return_value in ("complete", "skipped") else "complete"
    return ret, JobReport(idx, list(overrides), status, seconds, started=started)


def report_failure(report: JobReport) -> None:
    """Print a failed job's overrides and traceback on the driver; record it for the exit code."""
    try:
        from esbench.sweep import FAILED_JOBS

        FAILED_JOBS.append(report.overrides)
    except ImportError:  # pragma: no cover - the launcher used outside esbench
        pass
    print(f"esbench: job FAILED: {' '.join(report.overrides)}", file=sys.stderr)
    if report.error:
        print(report.error.rstrip(), file=sys.stderr)
    sys.stderr.flush()


def launch(
    launcher: LauncherState, job_overrides: Sequence[Sequence[str]], initial_job_idx: int
) -> Sequence[JobReturn]:
    """Run the jobs on the configured cluster; returns their ``JobReturn`` in input order."""
    from esbench.runtime.cluster import ClusterError, dask_client

    setup_globals()
    assert launcher.config is not None
    assert launcher.task_function is not None
    assert launcher.hydra_context is not None
    config = launcher.config
    configure_log(config.hydra.hydra_logging, config.hydra.verbose)
    Path(str(config.hydra.sweep.dir)).mkdir(parents=True, exist_ok=True)
    jobs = [(initial_job_idx + i, list(o)) for i, o in enumerate(job_overrides)]
    try:
        with dask_client(config.cluster) as client:
            return _run_jobs(client, launcher, jobs)
    except ClusterError as e:
        raise SweepClusterError(str(e)) from None


def _job_weights(jobs: list[tuple[int, list[str]]]) -> dict[int, float]:
    """Each job's estimated core-seconds (its relative cost for the sweep's ETA)."""
    from esbench.recipes import estimated_core_seconds

    return {idx: estimated_core_seconds(overrides) for idx, overrides in jobs}


def _run_jobs(client: Any, launcher: LauncherState, jobs: list[tuple[int, list[str]]]) -> list[JobReturn]:
    from distributed import wait

    from esbench.runtime.cluster import worker_count
    from esbench.tracking.store import code_revision

    workers = max(worker_count(client), 1)
    limit = int(launcher.max_concurrent or workers)
    topic = f"esbench-sweep-{uuid.uuid4().hex[:12]}"
    ctx = JobContext(
        hydra_context=launcher.hydra_context,  # type: ignore[arg-type]
        config=launcher.config,  # type: ignore[arg-type]
        task_function=launcher.task_function,  # type: ignore[arg-type]
        singleton_state=Singleton.get_state(),
        driver_cwd=os.getcwd(),
        topic=topic,
        code_revision=code_revision(),  # once, at sweep start (see pinned_code_revision)
    )
    print(
        f"esbench: Dask launcher: {len(jobs)} job(s) on {workers} worker(s), up to {limit} at once",
        flush=True,
    )
    for idx, overrides in jobs:
        log.info("\t#%d : %s", idx, " ".join(filter_overrides(overrides)))
    progress = SweepProgress(len(jobs), weights=_job_weights(jobs))
    pending = deque(jobs)
    running: dict[Any, tuple[int, list[str]]] = {}
    returns: dict[int, JobReturn] = {}
    interval = float(launcher.progress_interval_s)
    last_print = time.monotonic()
    seen_events = 0
    while pending or running:
        while pending and len(running) < limit:
            idx, overrides = pending.popleft()
            key = f"{topic}-job{idx}"
            future = client.submit(execute_job, idx, overrides, ctx, pure=False, key=key)
            running[future] = (idx, overrides)
        try:
            done, _ = wait(list(running), timeout=1.0, return_when="FIRST_COMPLETED")
        except TimeoutError:
            done = set()
        changed = False
        events = client.get_events(topic)
        for _, msg in events[seen_events:]:
            changed |= progress.start(int(msg["idx"]))
        seen_events = len(events)
        for future in done:
            idx, overrides = running.pop(future)
            try:
                ret, report = future.result()
            except Exception as exc:  # the task itself failed (e.g. its worker died too often)
                text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
                ret = JobReturn(overrides=overrides, status=JobStatus.COMPLETED, _return_value="failed")
                report = JobReport(idx, overrides, "failed", 0.0, text)
            progress.finish(idx, report.status, report.seconds, report.started)
            if report.status == "failed":
                report_failure(report)
            else:
                print(
                    f"esbench: job {report.status} ({report.seconds:.1f} s): "
                    f"{' '.join(filter_overrides(overrides))}",
                    flush=True,
                )
            returns[idx] = ret
            changed = True
        if changed or time.monotonic() - last_print >= interval:
            print(progress.line(), flush=True)
            last_print = time.monotonic()
    print(progress.summary(), flush=True)
    return [returns[idx] for idx, _ in jobs]
