"""A run's results as one W&B artifact: its name, its type, and the files it holds.

The artifact of run ``<run_id>`` is named ``run-<run_id>`` and has type ``run-results``; it holds
the run directory's data files, under the names the results store gives them:

* ``config.yaml``: the resolved config the run was made from,
* ``metrics.csv``: the metrics table, one row per evaluation point,
* ``summary.json``: the summary of the finished run,
* ``checkpoint.npz``: the final checkpoint (arrays and JSON only, no pickle),
* ``env.json``, ``snapshots.npz``, ``snapshot_drift.csv``, ``stage_states.npz``, ``probes.npz``,
  ``probe_states.npz`` when the run wrote them.

W&B names an artifact version by the digest of its files, so building the artifact again from the
same run directory (as ``esbench report`` does to declare a report's lineage) gives the same version.
The files are referenced in place (wandb's ``immutable`` policy), not copied to wandb's staging
directory: a sweep's checkpoints are not stored twice, and ``wandb sync`` uploads them from the
run directory (sync before running the same run again from scratch).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from esbench.tracking.schema import (
    CHECKPOINT_FILE,
    CONFIG_FILE,
    ENV_FILE,
    METRICS_FILE,
    PROBE_STATES_FILE,
    PROBES_FILE,
    SNAPSHOT_DRIFT_FILE,
    SNAPSHOTS_FILE,
    STAGE_STATES_FILE,
    SUMMARY_FILE,
)

#: The W&B artifact type of a run's results.
RUN_ARTIFACT_TYPE = "run-results"
#: The files every finished run's artifact holds.
REQUIRED_FILES = (CONFIG_FILE, METRICS_FILE, SUMMARY_FILE, CHECKPOINT_FILE)
#: Data files an artifact holds when the run wrote them.
OPTIONAL_FILES = (
    ENV_FILE,
    SNAPSHOTS_FILE,
    SNAPSHOT_DRIFT_FILE,
    STAGE_STATES_FILE,
    PROBES_FILE,
    PROBE_STATES_FILE,
)


def run_artifact_name(run_id: str) -> str:
    """``run-<run_id>``: the artifact name of run ``run_id`` (W&B allows ``[A-Za-z0-9_.-]``)."""
    return f"run-{run_id}"


def run_artifact_files(run_dir: Path) -> list[Path]:
    """The files of ``run_dir`` its artifact holds, in a fixed order.

    Raises:
        FileNotFoundError: A required file (config, metrics, summary, checkpoint) is missing:
            the run is not finished.
    """
    missing = [name for name in REQUIRED_FILES if not (run_dir / name).is_file()]
    if missing:
        raise FileNotFoundError(f"{run_dir} is not a finished run: no {', '.join(missing)}")
    return [run_dir / name for name in (*REQUIRED_FILES, *OPTIONAL_FILES) if (run_dir / name).is_file()]


def build_run_artifact(run_dir: Path, run_id: str) -> Any:
    """A draft ``wandb.Artifact`` of the finished run in ``run_dir`` (not logged yet)."""
    import wandb

    artifact = wandb.Artifact(run_artifact_name(run_id), type=RUN_ARTIFACT_TYPE)
    for path in run_artifact_files(run_dir):
        artifact.add_file(str(path), name=path.name, policy="immutable")
    return artifact
