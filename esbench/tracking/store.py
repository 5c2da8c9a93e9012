"""The local results store: one directory per run, every file written atomically.

The report reads only this store, so a paper never depends on a tracking server. Layout and
columns are fixed in :mod:`esbench.tracking.schema`. A run directory whose ``summary.json`` exists
is complete; one with only a checkpoint is resumable.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import platform
import socket
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from esbench.tracking import schema
from esbench.utils.io import atomic_write_json, atomic_write_pickle, atomic_write_text, read_pickle

_PACKAGES = (
    "esbench", "numpy", "torch", "gymnasium", "mujoco", "ale-py", "stable-baselines3", "sb3-contrib",
    "hydra-core", "omegaconf", "dask", "distributed", "wandb", "pandas", "scipy", "matplotlib",
)  # fmt: skip


class RunStore:
    """The files of one run: ``<root>/<experiment>/<run_id>/``."""

    def __init__(self, root: str | os.PathLike[str], experiment: str, run_id: str) -> None:
        self.dir = Path(root) / experiment / run_id
        self.run_id = run_id
        self.experiment = experiment

    def path(self, name: str) -> Path:
        """A file of this run."""
        return self.dir / name

    @property
    def is_complete(self) -> bool:
        """Whether the run finished (its summary exists)."""
        return self.path(schema.SUMMARY_FILE).exists()

    @property
    def has_checkpoint(self) -> bool:
        """Whether a checkpoint exists to resume from."""
        return self.path(schema.CHECKPOINT_FILE).exists()

    def write_config(self, cfg: DictConfig) -> None:
        """The resolved config, as YAML."""
        atomic_write_text(self.path(schema.CONFIG_FILE), OmegaConf.to_yaml(cfg, resolve=True))

    def write_env_record(self, workers: int) -> None:
        """Package versions, git commit, cores and host: what produced these numbers."""
        atomic_write_json(self.path(schema.ENV_FILE), environment_record(workers))

    def write_metrics(self, rows: list[dict[str, Any]]) -> None:
        """All rows so far, columns :data:`schema.METRIC_COLUMNS` (rewritten whole, atomically)."""
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(schema.METRIC_COLUMNS)
        for row in rows:
            writer.writerow([_fmt(row.get(c)) for c in schema.METRIC_COLUMNS])
        atomic_write_text(self.path(schema.METRICS_FILE), buf.getvalue())

    def write_summary(self, summary: dict[str, Any]) -> None:
        """The summary; marks the run complete."""
        missing = [k for k in schema.SUMMARY_KEYS if k not in summary]
        if missing:
            raise ValueError(f"summary lacks keys {missing}")
        atomic_write_json(self.path(schema.SUMMARY_FILE), summary)

    def read_summary(self) -> dict[str, Any]:
        """The summary of a complete run."""
        return json.loads(self.path(schema.SUMMARY_FILE).read_text())

    def save_checkpoint(self, obj: Any) -> None:
        """Replace the checkpoint atomically."""
        atomic_write_pickle(self.path(schema.CHECKPOINT_FILE), obj)

    def load_checkpoint(self) -> Any:
        """The latest checkpoint."""
        return read_pickle(self.path(schema.CHECKPOINT_FILE))

    def clear(self) -> None:
        """Remove the run's files (a fresh start with ``resume=false``)."""
        if self.dir.exists():
            for p in sorted(self.dir.rglob("*"), reverse=True):
                p.unlink() if p.is_file() or p.is_symlink() else p.rmdir()


def _fmt(v: Any) -> str:
    """CSV cell: empty for None/NaN, shortest round-trip repr for floats."""
    if v is None:
        return ""
    if isinstance(v, float):
        return "" if math.isnan(v) else repr(v)
    if hasattr(v, "item"):
        return _fmt(v.item())
    return str(v)


def environment_record(workers: int) -> dict[str, Any]:
    """Versions, commit, hardware: stored with every run and quoted by reports."""
    versions: dict[str, str | None] = {}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    repo = Path(__file__).resolve().parents[2]
    commit, dirty = _git(repo, "rev-parse", "HEAD"), _git(repo, "status", "--porcelain")
    return {
        "packages": versions,
        "git_commit": commit,
        "git_dirty": bool(dirty) if commit else None,
        "cpu_count": os.cpu_count(),
        "workers": workers,
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "python": sys.version.split()[0],
    }


def _git(repo: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None
