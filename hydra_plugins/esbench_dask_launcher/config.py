"""The launcher's config, registered in Hydra's ConfigStore as ``hydra/launcher=dask``."""

from dataclasses import dataclass

from hydra.core.config_store import ConfigStore


@dataclass
class DaskLauncherConf:
    """Settings of the Dask launcher (``hydra.launcher.*``); the cluster itself is ``cluster.*``.

    Attributes:
        max_concurrent: Jobs running at once; ``null``: one per Dask worker. ES jobs secede from
            their worker slot and share all workers for their rollouts, so more concurrent jobs
            only add interleaving, not throughput.
        progress_interval_s: Seconds between progress lines when nothing else happened.
    """

    _target_: str = "hydra_plugins.esbench_dask_launcher.dask_launcher.DaskLauncher"
    max_concurrent: int | None = None
    progress_interval_s: float = 30.0


ConfigStore.instance().store(
    group="hydra/launcher", name="dask", node=DaskLauncherConf, provider="esbench_dask_launcher"
)
