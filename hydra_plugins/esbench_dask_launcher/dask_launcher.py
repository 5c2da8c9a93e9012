"""``DaskLauncher``: Hydra's launcher interface, delegating to :mod:`._core`."""

from collections.abc import Sequence

from hydra.core.utils import JobReturn
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig

from hydra_plugins.esbench_dask_launcher import _core
from hydra_plugins.esbench_dask_launcher import config as _config  # noqa: F401  (registers the config)


class DaskLauncher(Launcher):
    """Run every job of a Hydra sweep as a Dask task on the configured cluster."""

    def __init__(self, max_concurrent: int | None = None, progress_interval_s: float = 30.0) -> None:
        self.max_concurrent = max_concurrent
        self.progress_interval_s = float(progress_interval_s)
        self.config: DictConfig | None = None
        self.task_function: TaskFunction | None = None
        self.hydra_context: HydraContext | None = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        """Keep what each job needs (Hydra calls this once per sweep)."""
        self.config = config
        self.hydra_context = hydra_context
        self.task_function = task_function

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        """Run the jobs; returns their ``JobReturn`` in input order."""
        return _core.launch(self, job_overrides, initial_job_idx)
