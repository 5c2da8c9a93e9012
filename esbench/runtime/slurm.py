"""``cluster=slurm``: Dask workers as SLURM jobs, through dask-jobqueue's ``SLURMCluster``.

The client process (on a login node, or inside an allocation) runs the Dask scheduler; every SLURM
job runs ``cluster.processes`` single-threaded ``dask worker`` processes (default: one per
``cluster.cores``) that connect back to it. The cluster either has a fixed size (``cluster.jobs``)
or adapts between ``cluster.minimum_jobs`` and ``cluster.maximum_jobs`` to the tasks waiting; the
ES loop reads the worker count every generation, so jobs that start late, end at their walltime
or are preempted change the split of the next generation, never its numbers.

Every option a cluster user typically needs maps to one config key (``conf/cluster/slurm.yaml``):
partition (``queue``), ``account``, ``cores``, ``memory``, ``walltime``, extra ``#SBATCH`` lines
(``job_extra_directives``), modules and environment (``job_script_prologue``), node-local scratch
(``local_directory``), the network ``interface`` (e.g. ``ib0``), worker options such as
``--lifetime`` (``worker_extra_args``), the job name, log directory and the nodes' ``python``.
:func:`slurm_job_script` renders the batch script those settings give, without submitting it.
"""

from __future__ import annotations

from typing import Any

#: The scheduler's HTTP server (and dashboard) stays on the login node's loopback: ``ssh -L`` to it.
DASHBOARD_ADDRESS = "127.0.0.1:0"
#: The workers' HTTP servers (health, metrics) stay on their node's loopback too.
WORKER_HTTP_ARGS = ("--no-dashboard", "--dashboard-address", DASHBOARD_ADDRESS)


def slurm_job_kwargs(cluster_cfg: Any) -> dict[str, Any]:
    """dask-jobqueue job keywords (``SLURMJob``/``SLURMCluster``) for ``cluster.*`` settings."""
    cores = int(cluster_cfg.cores)
    processes = int(cluster_cfg.processes or cores)
    if processes > cores:
        raise ValueError(
            f"cluster.processes={processes} is more than cluster.cores={cores}; allowed: <= cores"
        )
    kwargs: dict[str, Any] = {
        "queue": cluster_cfg.queue,
        "account": cluster_cfg.account,
        "cores": cores,
        "processes": processes,
        "memory": str(cluster_cfg.memory),
        "walltime": cluster_cfg.walltime,
        "job_name": str(cluster_cfg.job_name),
        "job_extra_directives": list(cluster_cfg.job_extra_directives or []),
        "job_script_prologue": list(cluster_cfg.job_script_prologue or []),
        # A worker's (and its nanny's) HTTP server binds every interface unless told where: on the
        # node's loopback, as the scheduler's; its comm address follows ``interface``.
        "worker_extra_args": [*WORKER_HTTP_ARGS, *list(cluster_cfg.worker_extra_args or [])],
        "local_directory": cluster_cfg.local_directory,
        "log_directory": cluster_cfg.log_directory,
        "interface": cluster_cfg.interface,
        "python": cluster_cfg.python,
    }
    return {k: v for k, v in kwargs.items() if v is not None}


def slurm_job_script(cluster_cfg: Any, scheduler_address: str = "tcp://SCHEDULER:8786") -> str:
    """The batch script ``cluster=slurm`` submits, for a scheduler at ``scheduler_address``.

    Rendered by dask-jobqueue's own ``SLURMJob`` (nothing is submitted, no scheduler is started),
    so what it shows is what ``sbatch`` receives.
    """
    from dask_jobqueue.slurm import SLURMJob

    kwargs = slurm_job_kwargs(cluster_cfg)
    kwargs.pop("interface", None)  # the scheduler address is given; interface only picks an address
    if cluster_cfg.interface:
        kwargs["worker_extra_args"] = [
            *kwargs["worker_extra_args"],
            "--interface",
            str(cluster_cfg.interface),
        ]
    return str(SLURMJob(scheduler=scheduler_address, name="esbench-render", **kwargs).job_script())


def start_slurm_cluster(cluster_cfg: Any) -> Any:
    """A started ``SLURMCluster``, scaled to ``cluster.jobs`` or adaptive between
    ``cluster.minimum_jobs`` and ``cluster.maximum_jobs``.

    Raises:
        ImportError: dask-jobqueue is not installed (``pip install 'esbench[slurm]'``).
        ValueError: ``cluster.processes`` > ``cluster.cores``, or ``minimum_jobs`` >
            ``maximum_jobs``.
    """
    from dask_jobqueue import SLURMCluster

    kwargs = slurm_job_kwargs(cluster_cfg)
    # Dask's scheduler serves HTTP even without a dashboard, on every interface unless told where.
    options: dict[str, Any] = {
        "dashboard_address": DASHBOARD_ADDRESS,
        "dashboard": bool(cluster_cfg.dashboard),
    }
    cluster = SLURMCluster(scheduler_options=options, **kwargs)
    try:
        if cluster_cfg.maximum_jobs is not None:
            lo, hi = int(cluster_cfg.minimum_jobs), int(cluster_cfg.maximum_jobs)
            if lo > hi:
                raise ValueError(f"cluster.minimum_jobs={lo} is more than cluster.maximum_jobs={hi}")
            cluster.adapt(minimum_jobs=lo, maximum_jobs=hi)
        else:
            cluster.scale(jobs=int(cluster_cfg.jobs))
    except BaseException:
        cluster.close()
        raise
    return cluster
