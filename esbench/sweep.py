"""``esbench run -m``: a Hydra multirun whose every job is validated before the first starts.

Hydra expands the sweep (``algo=openai_es,trpo seed=0,1,2``) into jobs; each job runs
:func:`esbench.runner.run`. A failing job is reported with its overrides and traceback, the other
jobs go on, and the command exits non-zero when any job failed. Jobs whose run is already complete
are skipped by the runner, so a sweep run again recomputes nothing.
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path

import hydra
from omegaconf import DictConfig

from esbench.config.compose import CONF_DIR, compose_run_config
from esbench.config.schema import register_configs

FAILED_JOBS: list[list[str]] = []


def print_job_failure(overrides: list[str], exc: BaseException) -> None:
    """Report one failed sweep job with its overrides and traceback."""
    print(f"esbench: job FAILED: {' '.join(overrides)}", file=sys.stderr)
    traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)


def expand_sweep(overrides: list[str]) -> list[list[str]]:
    """The jobs of a sweep: one override list per job, in Hydra's order."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides(overrides)
    return [list(job) for batch in BasicSweeper.split_arguments(parsed, None) for job in batch]


def validate_sweep(overrides: list[str]) -> list[list[str]]:
    """Compose and check every job of the sweep; raises ConfigError naming the first bad one."""
    jobs = expand_sweep(overrides)
    for job in jobs:
        compose_run_config([o for o in job if not o.lstrip("+~").startswith("hydra")])
    return jobs


def job_overrides_of(cfg: DictConfig) -> list[str]:
    """The overrides of the Hydra job running now (for failure reports)."""
    try:
        from hydra.core.hydra_config import HydraConfig

        return list(HydraConfig.get().overrides.task)
    except Exception:
        return []


def sweep_job(cfg: DictConfig) -> str:
    """One Hydra job: run the config; a failure is reported and recorded, not raised."""
    from esbench.config.validate import validate
    from esbench.runner import load_components, run

    try:
        load_components()  # a fresh Dask worker process has not registered the algorithms yet
        validate(cfg)
        return run(cfg).status
    except Exception as e:
        from esbench.runtime.cluster import in_dask_task

        if in_dask_task():  # the Dask launcher reports it on the driver, with this traceback
            raise
        overrides = job_overrides_of(cfg)
        FAILED_JOBS.append(overrides)
        print_job_failure(overrides, e)
        return "failed"


def run_sweep(overrides: list[str]) -> int:
    """Validate all jobs, then hand the sweep to Hydra (and its configured launcher)."""
    jobs = validate_sweep(overrides)
    print(f"esbench: sweep of {len(jobs)} job(s), all configs valid", flush=True)
    FAILED_JOBS.clear()
    register_configs()
    argv = sys.argv
    sys.argv = ["esbench-run", "--multirun", *overrides]
    try:
        _hydra_main()
    finally:
        sys.argv = argv
    if FAILED_JOBS:
        print(f"esbench: {len(FAILED_JOBS)} of {len(jobs)} job(s) failed", file=sys.stderr)
        return 1
    return 0


@hydra.main(config_path=str(Path(CONF_DIR)), config_name="config", version_base=None)
def _hydra_main(cfg: DictConfig) -> str:
    return sweep_job(cfg)
