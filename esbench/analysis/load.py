"""Load a results store into tidy tables (stage one of a report: aggregate, then draw).

A results directory is either one experiment (``results/runs/<experiment>/``) or any parent of
several; every directory below it holding a ``config.yaml`` is a run
(:mod:`esbench.tracking.schema`). A run with a ``summary.json`` is complete; one without is
*missing* and never contributes numbers, only a mention. Seeds are the replication unit.

Two tables come out:

* the run table (:func:`load_run_table`): one row per run, config columns + summary keys;
* the curve table (:func:`load_curves`): one row per (complete run, evaluation point), config
  columns + every metric column of :data:`~esbench.tracking.schema.METRIC_COLUMNS`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from omegaconf import OmegaConf

from esbench.tracking.schema import (
    CONFIG_FILE,
    ENV_FILE,
    METRIC_COLUMNS,
    METRICS_FILE,
    SUMMARY_FILE,
    SUMMARY_KEYS,
)

#: Config columns every row of both tables carries, in this order.
CONFIG_COLUMNS: tuple[str, ...] = (
    "run_id",
    "experiment",
    "algo",
    "env_id",
    "env_name",
    "env_kind",
    "seed",
    "frame_skip",
    "scale",
    "workers",
)

#: Columns that name one replicate: a seed of one condition. Two runs alike in all of them are the
#: same replicate run twice (say, before and after an esbench version that changed run ids), never
#: two seeds: counting both would shrink every confidence interval.
REPLICATE_COLUMNS: tuple[str, ...] = (
    "experiment",
    "algo",
    "env_id",
    "frame_skip",
    "scale",
    "workers",
    "seed",
)

#: Algorithms on the ES side of every comparison; everything else is an RL baseline.
ES_ALGOS: frozenset[str] = frozenset({"openai_es", "ars", "cma_es", "eggroll"})

_SKIP_DIRS = frozenset({"wandb", "__pycache__"})


@dataclass(frozen=True)
class Results:
    """Everything a report reads from one results directory.

    Attributes:
        root: The directory that was loaded.
        runs: The run table, one row per run (complete or not) that the report uses; see
            :func:`load_run_table` and :func:`split_superseded`.
        curves: The curve table, one row per (complete run, evaluation point).
        env_info: ``env.json`` of each complete run, keyed by run_id.
        superseded: Runs set aside because a newer complete run of the same replicate exists.
    """

    root: Path
    runs: pd.DataFrame
    curves: pd.DataFrame
    env_info: dict[str, dict[str, Any]] = field(default_factory=dict)
    superseded: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def complete(self) -> pd.DataFrame:
        """The run table restricted to complete runs."""
        return self.runs[self.runs["complete"]].reset_index(drop=True)


def iter_run_dirs(results_dir: str | Path) -> Iterator[Path]:
    """Yield every run directory under ``results_dir`` (itself included), sorted by path.

    A run directory is one holding ``config.yaml``; the search does not descend into a run
    directory (its ``wandb/`` files have config files of their own), nor into hidden folders
    (``.sweeps``).
    """
    root = Path(results_dir)
    if (root / CONFIG_FILE).is_file():
        yield root
        return
    if not root.is_dir():
        return
    for child in sorted(root.iterdir()):
        if child.is_dir() and not child.name.startswith(".") and child.name not in _SKIP_DIRS:
            yield from iter_run_dirs(child)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        with path.open() as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _as_int(value: Any) -> float | int:
    """An int where the value is an integer, else NaN (missing config keys)."""
    if value is None:
        return math.nan
    try:
        f = float(value)
    except (TypeError, ValueError):
        return math.nan
    return int(f) if math.isfinite(f) and f == int(f) else f


def _config_row(run_dir: Path) -> dict[str, Any]:
    """The config columns of one run, read from its ``config.yaml`` (and summary where set)."""
    cfg = OmegaConf.load(run_dir / CONFIG_FILE)

    def sel(key: str, default: Any = None) -> Any:
        return OmegaConf.select(cfg, key, default=default, throw_on_missing=False)

    summary = _read_json(run_dir / SUMMARY_FILE) if (run_dir / SUMMARY_FILE).is_file() else {}
    env_id = sel("env.id") or summary.get("env_id") or ""
    workers = summary.get("workers")
    if workers is None:
        workers = sel("cluster.n_workers")
    return {
        "run_id": str(sel("run_id") or summary.get("run_id") or run_dir.name),
        "experiment": str(sel("experiment") or summary.get("experiment") or run_dir.parent.name),
        "algo": str(sel("algo.name") or summary.get("algo") or ""),
        "env_id": str(env_id),
        "env_name": str(sel("env.name") or sel("env.game") or env_id),
        "env_kind": str(sel("env.kind") or ""),
        "seed": _as_int(sel("seed", summary.get("seed"))),
        "frame_skip": _as_int(sel("env.frame_skip")) if sel("env.kind") == "atari" else 1,
        "scale": str(sel("budget.scale") or summary.get("scale") or ""),
        "workers": _as_int(workers),
    }


def load_run_table(results_dir: str | Path) -> pd.DataFrame:
    """One row per run under ``results_dir``.

    Args:
        results_dir: An experiment directory, a parent of several, or one run directory.

    Returns:
        DataFrame with :data:`CONFIG_COLUMNS`, then ``complete`` (bool: summary.json present),
        ``path`` (str), then every key of :data:`~esbench.tracking.schema.SUMMARY_KEYS` not
        already a config column (NaN for incomplete runs). Sorted by (experiment, algo, env_id,
        frame_skip, workers, seed, run_id).
    """
    rows = []
    for run_dir in iter_run_dirs(results_dir):
        row = _config_row(run_dir)
        summary_path = run_dir / SUMMARY_FILE
        row["complete"] = summary_path.is_file()
        row["path"] = str(run_dir)
        summary = _read_json(summary_path) if row["complete"] else {}
        for key in SUMMARY_KEYS:
            if key not in row:
                row[key] = summary.get(key, math.nan)
        rows.append(row)
    columns = [*CONFIG_COLUMNS, "complete", "path", *(k for k in SUMMARY_KEYS if k not in CONFIG_COLUMNS)]
    table = pd.DataFrame(rows, columns=columns)
    if table.empty:
        return table
    table = table.sort_values(
        ["experiment", "algo", "env_id", "frame_skip", "workers", "seed", "run_id"], kind="stable"
    )
    return table.reset_index(drop=True)


def split_superseded(runs: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split a run table into the runs a report uses and the runs it sets aside.

    Runs alike in every :data:`REPLICATE_COLUMNS` are one replicate. Where a replicate has a
    complete run, its newest complete run (by the time its ``summary.json`` was written) is used
    and every other run of it, complete or not, is superseded. A replicate without a complete
    run keeps all its runs: they are missing.

    Returns:
        (used, superseded), both in the order of ``runs``.
    """
    used = pd.Series(True, index=runs.index)
    for _, group in runs.groupby(list(REPLICATE_COLUMNS), dropna=False, sort=False):
        done = group[group["complete"]]
        if len(group) > 1 and len(done):
            newest = max(done.index, key=lambda i: (Path(done.at[i, "path"]) / SUMMARY_FILE).stat().st_mtime)
            used[group.index.difference([newest])] = False
    return runs[used].reset_index(drop=True), runs[~used].reset_index(drop=True)


def read_metrics(run_dir: str | Path) -> pd.DataFrame:
    """The ``metrics.csv`` of one run, with exactly the schema's columns (absent ones as NaN).

    Returns:
        DataFrame of shape (n_steps, len(METRIC_COLUMNS)).
    """
    path = Path(run_dir) / METRICS_FILE
    frame = pd.read_csv(path) if path.is_file() else pd.DataFrame(columns=list(METRIC_COLUMNS))
    for col in METRIC_COLUMNS:
        if col not in frame.columns:
            frame[col] = math.nan
    return frame[list(METRIC_COLUMNS)]


def load_curves(run_table: pd.DataFrame, eval_only: bool = True) -> pd.DataFrame:
    """The tidy curve table of the complete runs of ``run_table``.

    Args:
        run_table: Output of :func:`load_run_table`.
        eval_only: Keep only rows with an evaluation (``eval_return_mean`` not NaN).

    Returns:
        DataFrame with one row per (run, step): :data:`CONFIG_COLUMNS` then every metric column
        (the metric ``workers`` is dropped in favour of the run's config column).
    """
    frames = []
    metric_cols = [c for c in METRIC_COLUMNS if c not in CONFIG_COLUMNS]
    for _, run in run_table[run_table["complete"]].iterrows():
        metrics = read_metrics(run["path"])
        if eval_only:
            metrics = metrics[metrics["eval_return_mean"].notna()]
        metrics = metrics[metric_cols].reset_index(drop=True)
        for col in reversed(CONFIG_COLUMNS):
            metrics.insert(0, col, [run[col]] * len(metrics))
        frames.append(metrics)
    if not frames:
        return pd.DataFrame(columns=[*CONFIG_COLUMNS, *metric_cols])
    return pd.concat(frames, ignore_index=True)


def load_results(results_dir: str | Path) -> Results:
    """Load the run table, the curve table and each complete run's ``env.json``; runs superseded
    by a newer complete run of the same replicate are set aside (:func:`split_superseded`).

    Raises:
        FileNotFoundError: ``results_dir`` holds no run directory.
    """
    root = Path(results_dir)
    runs = load_run_table(root)
    if runs.empty:
        raise FileNotFoundError(f"no runs (directories with {CONFIG_FILE}) under {root}")
    runs, superseded = split_superseded(runs)
    env_info = {
        str(r["run_id"]): _read_json(Path(r["path"]) / ENV_FILE) for _, r in runs[runs["complete"]].iterrows()
    }
    return Results(root=root, runs=runs, curves=load_curves(runs), env_info=env_info, superseded=superseded)


def is_es(algo: str) -> bool:
    """Whether ``algo`` is an ES variant (the other side of every comparison is RL)."""
    return algo in ES_ALGOS or algo.endswith("_es")
