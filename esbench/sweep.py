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
from typing import TYPE_CHECKING, Any

import hydra
from omegaconf import DictConfig

from esbench.config.compose import CONF_DIR, compose_run_config, exact_integers, explain_hydra_error
from esbench.config.errors import ConfigError
from esbench.config.schema import register_configs

if TYPE_CHECKING:
    from esbench.tracking.store import RunStore

FAILED_JOBS: list[list[str]] = []


def print_job_failure(overrides: list[str], exc: BaseException) -> None:
    """Report one failed sweep job with its overrides and traceback."""
    print(f"esbench: job FAILED: {' '.join(overrides)}", file=sys.stderr)
    traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)


#: Hydra's default sweeper: the cartesian product of the comma-separated values, known up front.
BASIC_SWEEPER = "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"


def expand_sweep(overrides: list[str]) -> list[list[str]]:
    """The jobs of a basic-sweeper sweep: one override list per job, in Hydra's order."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides(overrides)
    return [list(job) for batch in BasicSweeper.split_arguments(parsed, None) for job in batch]


def first_job(overrides: list[str]) -> list[str]:
    """One job of any sweep: each sweep override (``a,b``, ``range(..)``, ``interval(lo,hi)``,
    ``glob(..)``) replaced by its first value (an interval by its lower end)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import Glob, IntervalSweep, Override

    job = []
    for o in OverridesParser.create().parse_overrides(overrides):
        if not o.is_sweep_override():
            job.append(o.input_line or "")
            continue
        value = o.value()
        first: Any
        if isinstance(value, IntervalSweep):
            first = value.start
        elif isinstance(value, Glob):
            job.append(o.input_line or "")  # a group glob: Hydra resolves it against the options
            continue
        else:
            first = next(iter(o.sweep_iterator()))
        job.append(f"{o.get_key_element()}={Override._get_value_element_as_str(first)}")
    return job


def configured_sweeper(overrides: list[str]) -> str:
    """The ``_target_`` of the sweeper the sweep's config selects (``hydra/sweeper=optuna``, ...)."""
    from hydra import compose, initialize_config_dir

    register_configs()
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
            cfg = compose(config_name="config", overrides=first_job(overrides), return_hydra_config=True)
    except Exception as e:
        raise ConfigError(explain_hydra_error(e, overrides)) from None
    return str(cfg.hydra.sweeper.get("_target_", BASIC_SWEEPER))


def validate_sweep(overrides: list[str]) -> list[list[str]] | None:
    """Compose and check the jobs of the sweep before any starts; raises ConfigError naming the
    first bad one.

    Hydra's basic sweeper knows every job up front: all are checked, and returned. Any other sweeper
    (Optuna, Nevergrad, Ax) chooses its jobs as it goes: the first job is checked here (every key
    of the sweep, and every group option it names), each job again when it is launched, and
    ``None`` is returned.
    """
    checked = _checked_jobs(overrides)
    return None if checked is None else [job for job, _ in checked]


def sweep_run_stores(overrides: list[str]) -> list[RunStore] | None:
    """Check the sweep's jobs as :func:`validate_sweep` does, and return the run directory of each
    (None for a sweeper that chooses its jobs as it goes)."""
    from esbench.runner import run_store

    checked = _checked_jobs(overrides)
    return None if checked is None else [run_store(cfg) for _, cfg in checked]


def _checked_jobs(overrides: list[str]) -> list[tuple[list[str], DictConfig]] | None:
    """Each job of a basic sweep with its checked config; other sweepers: the first job checked, None."""
    overrides = exact_integers(overrides)
    if configured_sweeper(overrides) != BASIC_SWEEPER:
        compose_run_config(first_job(overrides))
        return None
    return [(job, compose_run_config(job)) for job in expand_sweep(overrides)]


def job_overrides_of(cfg: DictConfig) -> list[str]:
    """The overrides of the Hydra job running now (for failure reports)."""
    try:
        from hydra.core.hydra_config import HydraConfig

        return list(HydraConfig.get().overrides.task)
    except Exception:
        return []


def _optimizing() -> bool:
    """Whether the sweep running this job is driven by an optimizing sweeper (not the basic one)."""
    try:
        from hydra.core.hydra_config import HydraConfig

        return str(HydraConfig.get().sweeper.get("_target_", BASIC_SWEEPER)) != BASIC_SWEEPER
    except Exception:
        return False


def sweep_job(cfg: DictConfig) -> str | float:
    """One Hydra job: run the config; a failure is reported and recorded, not raised."""
    from esbench.config.validate import validate
    from esbench.runner import load_components, run

    try:
        load_components()  # a fresh Dask worker process has not registered the algorithms yet
        validate(cfg)
        outcome = run(cfg)
        if _optimizing():  # Optuna & co. minimize or maximize what the job returns
            return float(outcome.summary["final_eval_return"])
        return outcome.status
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
    overrides = exact_integers(overrides)
    jobs = validate_sweep(overrides)
    if jobs is None:
        print("esbench: sweep by the configured sweeper, first job valid; each job is checked as it starts")
    else:
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
        total = f" of {len(jobs)}" if jobs is not None else ""
        print(f"esbench: {len(FAILED_JOBS)}{total} job(s) failed", file=sys.stderr)
        return 1
    return 0


def hydra_passthrough(args: list[str], prog: str = "esbench run") -> int:
    """Hand ``args`` to esbench's Hydra app as-is: Hydra's own options (``--cfg hydra``, ``--info``,
    ``--shell-completion``) then behave as in any Hydra application."""
    import logging

    register_configs()
    root = logging.getLogger()
    handlers, root.handlers = root.handlers, []  # Hydra's logging config alone prints its output
    argv = sys.argv
    sys.argv = [prog, *args]
    try:
        _hydra_main()
    finally:
        sys.argv = argv
        root.handlers = handlers
    return 0


@hydra.main(config_path=str(Path(CONF_DIR)), config_name="config", version_base=None)
def _hydra_main(cfg: DictConfig) -> str | float:
    return sweep_job(cfg)
