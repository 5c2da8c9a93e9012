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

import csv
import io
import json
import logging
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from omegaconf import OmegaConf

from esbench.config.registry import family_of
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
    "cluster",  # cluster.kind: local (LocalCluster), processes (dask scheduler + workers), address, slurm
    "population",  # algo.population_size (ES); NaN for an algorithm without one
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
    "cluster",
    "population",
    "seed",
)

_SKIP_DIRS = frozenset({"wandb", "__pycache__"})

#: What a run's files must give for the run to count: config keys, summary keys, metric columns.
#: A file lacking them was cut short or is not esbench's, and the run is left out, never counted
#: with NaN numbers.
REQUIRED_CONFIG: tuple[str, ...] = ("algo.name", "env.id", "env.kind", "seed")
#: The summary.json key that stands in for a required config key the config lacks (or holds only
#: as an unresolved interpolation, which is never resolved: :func:`read_config`).
_SUMMARY_FALLBACK: dict[str, str] = {"algo.name": "algo", "env.id": "env_id", "seed": "seed"}
REQUIRED_SUMMARY: tuple[str, ...] = ("final_eval_return", "total_timesteps", "wall_clock_s")
REQUIRED_METRICS: tuple[str, ...] = ("generation", "timesteps", "wall_clock_s", "eval_return_mean")
_TEXT_COLUMNS = frozenset({"train_task", "eval_task"})
#: Columns of :attr:`Results.unreadable`.
UNREADABLE_COLUMNS: tuple[str, ...] = ("run_id", "path", "file", "reason")

log = logging.getLogger(__name__)


class UnreadableRunFile(ValueError):
    """A run's config.yaml, summary.json or metrics.csv that cannot be used.

    Attributes:
        path: The file.
        reason: Why, in a few words (``str(error)`` is one line with the path and what to do).
    """

    def __init__(self, path: Path, reason: str) -> None:
        self.path = Path(path)
        self.reason = reason
        super().__init__(
            f"{self.path} is unreadable ({reason}): the run is left out; run it again with "
            "resume=false, or delete its directory"
        )


def _reason(e: BaseException) -> str:
    """The first line of an exception's message (or its type name), at most 200 characters."""
    lines = str(e).strip().splitlines()
    return (lines[0] if lines else type(e).__name__)[:200]


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
        unreadable: Runs with a file that cannot be used, one row each: ``run_id`` (the
            directory name where the config is unreadable), ``path`` (the run directory),
            ``file`` and ``reason``. One with an unreadable summary.json or metrics.csv is also in
            ``runs``, as not complete (it contributes no numbers); one with an unreadable
            config.yaml cannot be placed, and is only here.
        configs: ``config.yaml`` of each run of ``runs`` as plain data (:func:`read_config`),
            keyed by run_id: what made the run, shipped with a report.
    """

    root: Path
    runs: pd.DataFrame
    curves: pd.DataFrame
    env_info: dict[str, dict[str, Any]] = field(default_factory=dict)
    superseded: pd.DataFrame = field(default_factory=pd.DataFrame)
    unreadable: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=list(UNREADABLE_COLUMNS)))
    configs: dict[str, dict[str, Any]] = field(default_factory=dict)

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


def read_config(path: Path) -> dict[str, Any]:
    """A run's ``config.yaml`` as plain data, its interpolations never resolved.

    esbench writes every config resolved, so a ``${...}`` in one was put there by hand or by
    another tool. Resolving it would run resolvers on the reader's machine: ``${oc.env:VAR}``
    would copy an environment variable (an API key, say) into the report's tables. The text is
    kept as it is, and :func:`config_value` treats it as absent.
    """
    data = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    return {str(k): v for k, v in data.items()} if isinstance(data, dict) else {}


#: Top-level keys every esbench config.yaml holds, after every group (so a cut file lacks them).
WRITTEN_LAST = ("seed", "experiment")


def config_value(config: dict[str, Any], key: str, default: Any = None) -> Any:
    """The value at dotted ``key`` of a :func:`read_config` mapping; ``default`` where the key is
    absent, left mandatory (``???``) or an unresolved interpolation (``${...}``)."""
    node: Any = config
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    if isinstance(node, str) and ("${" in node or node == "???"):
        return default
    return node


def _config_row(run_dir: Path) -> dict[str, Any]:
    """The config columns of one run, read from its ``config.yaml`` (and summary where set).

    Raises:
        UnreadableRunFile: the config does not parse, is cut short (no final newline), or lacks
            one of :data:`REQUIRED_CONFIG`.
    """
    path = run_dir / CONFIG_FILE
    try:
        text = path.read_text()
        cfg = read_config(path)
    except Exception as e:  # YAML, OmegaConf and decoding errors alike: the file is the problem
        raise UnreadableRunFile(path, _reason(e)) from None
    if not text.endswith("\n"):  # esbench writes it whole, newline-terminated, atomically
        raise UnreadableRunFile(path, "truncated: no final newline")
    # A file cut at a line end still parses: the top-level keys esbench writes last must be there
    # (as keys: their value may be an interpolation, which the summary then supplies).
    absent = [k for k in WRITTEN_LAST if not (isinstance(cfg, dict) and k in cfg)]
    if absent:
        raise UnreadableRunFile(path, f"truncated: no {', '.join(absent)} key")
    summary = _read_json(run_dir / SUMMARY_FILE) if (run_dir / SUMMARY_FILE).is_file() else {}
    lacking = [
        k for k in REQUIRED_CONFIG
        if config_value(cfg, k) is None and summary.get(_SUMMARY_FALLBACK.get(k, "")) is None
    ]  # fmt: skip
    if lacking:
        raise UnreadableRunFile(path, f"no {', '.join(lacking)}")

    def sel(key: str, default: Any = None) -> Any:
        return config_value(cfg, key, default)

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
        "cluster": str(sel("cluster.kind") or "local"),
        "population": _as_int(sel("algo.population_size")),
    }


def load_run_table(results_dir: str | Path) -> pd.DataFrame:
    """One row per run under ``results_dir``; a run with an unreadable file is warned about and
    left out (its numbers never count; see :func:`scan_runs`).

    Args:
        results_dir: An experiment directory, a parent of several, or one run directory.

    Returns:
        DataFrame with :data:`CONFIG_COLUMNS`, then ``complete`` (bool: summary.json and
        metrics.csv present and readable), ``path`` (str), then every key of
        :data:`~esbench.tracking.schema.SUMMARY_KEYS` not already a config column (NaN for
        incomplete runs). Sorted by (experiment, algo, env_id, frame_skip, workers, seed, run_id).
    """
    return scan_runs(results_dir)[0]


def scan_runs(results_dir: str | Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The run table of :func:`load_run_table` and the table of runs with an unreadable file.

    Every file a complete run's numbers come from is checked here, before anything is counted:
    config.yaml (:func:`_config_row`), summary.json (:func:`read_summary`) and metrics.csv
    (:func:`read_metrics`). Each unreadable one logs one warning naming it. A run whose config is
    unreadable is left out of the run table (nothing says which condition and seed it is); one
    whose summary or metrics are unreadable stays in it as not complete, so that a report counts
    it as a missing run of its condition.

    Returns:
        (runs, unreadable): the run table, and one row per unreadable run with
        :data:`UNREADABLE_COLUMNS`.
    """
    rows, bad = [], []
    for run_dir in iter_run_dirs(results_dir):
        try:
            row = _config_row(run_dir)
        except UnreadableRunFile as e:
            log.warning("%s", e)
            bad.append(
                {"run_id": run_dir.name, "path": str(run_dir), "file": e.path.name, "reason": e.reason}
            )
            continue
        summary: dict[str, Any] = {}
        complete = (run_dir / SUMMARY_FILE).is_file()
        if complete:
            try:
                summary = read_summary(run_dir)
                read_metrics(run_dir)
            except UnreadableRunFile as e:
                log.warning("%s", e)
                bad.append(
                    {"run_id": row["run_id"], "path": str(run_dir), "file": e.path.name, "reason": e.reason}
                )
                complete, summary = False, {}
        row["complete"] = complete
        row["path"] = str(run_dir)
        for key in SUMMARY_KEYS:
            if key not in row:
                row[key] = summary.get(key, math.nan)
        rows.append(row)
    columns = [*CONFIG_COLUMNS, "complete", "path", *(k for k in SUMMARY_KEYS if k not in CONFIG_COLUMNS)]
    table = pd.DataFrame(rows, columns=columns)
    unreadable = pd.DataFrame(bad, columns=list(UNREADABLE_COLUMNS))
    if table.empty:
        return table, unreadable
    table = table.sort_values(
        ["experiment", "algo", "env_id", "frame_skip", "workers", "seed", "run_id"], kind="stable"
    )
    return table.reset_index(drop=True), unreadable


def read_summary(run_dir: str | Path) -> dict[str, Any]:
    """The ``summary.json`` of a complete run.

    Raises:
        UnreadableRunFile: it is not a JSON object (truncated, garbage) or lacks one of
            :data:`REQUIRED_SUMMARY`.
    """
    path = Path(run_dir) / SUMMARY_FILE
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise UnreadableRunFile(path, _reason(e)) from None
    if not isinstance(data, dict):
        raise UnreadableRunFile(path, "not a JSON object")
    lacking = [k for k in REQUIRED_SUMMARY if k not in data]
    if lacking:
        raise UnreadableRunFile(path, f"no {', '.join(lacking)}")
    return data


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

    The file is checked before a number of it is used: esbench writes it whole and atomically, so
    a missing final newline means it was cut short, a row with another number of fields than the
    header was damaged, and a number column holding text is not esbench's. Pandas alone would fill
    the gaps with NaN and the run would count with a curve that stops early.

    Returns:
        DataFrame of shape (n_steps, len(METRIC_COLUMNS)).

    Raises:
        UnreadableRunFile: the file is missing, truncated or corrupt, or lacks one of
            :data:`REQUIRED_METRICS`.
    """
    path = Path(run_dir) / METRICS_FILE
    try:
        text = path.read_text()
    except (OSError, ValueError) as e:  # missing, unreadable, not UTF-8
        raise UnreadableRunFile(path, _reason(e)) from None
    if not text.endswith("\n"):
        raise UnreadableRunFile(path, "truncated: no final newline")
    lines = list(csv.reader(io.StringIO(text)))
    header = lines[0]
    lacking = [c for c in REQUIRED_METRICS if c not in header]
    if lacking:
        raise UnreadableRunFile(path, f"no column {', '.join(lacking)}")
    for number, fields in enumerate(lines[1:], start=2):
        if len(fields) != len(header):
            raise UnreadableRunFile(path, f"line {number} has {len(fields)} fields, the header {len(header)}")
    try:
        frame = pd.read_csv(io.StringIO(text))
    except (ValueError, pd.errors.ParserError) as e:
        raise UnreadableRunFile(path, _reason(e)) from None
    for col in frame.columns:
        if (
            col in METRIC_COLUMNS
            and col not in _TEXT_COLUMNS
            and not pd.api.types.is_numeric_dtype(frame[col])
        ):
            raise UnreadableRunFile(path, f"column {col} holds text")
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
    """Load the run table, the curve table, each run's config and each complete run's ``env.json``;
    runs superseded by a newer complete run of the same replicate are set aside
    (:func:`split_superseded`).

    Runs with an unreadable file are warned about, never counted, and listed in
    :attr:`Results.unreadable` (:func:`scan_runs`).

    Raises:
        FileNotFoundError: ``results_dir`` holds no readable run directory.
    """
    root = Path(results_dir)
    runs, unreadable = scan_runs(root)
    if runs.empty:
        some = f" ({len(unreadable)} with an unreadable {CONFIG_FILE})" if len(unreadable) else ""
        raise FileNotFoundError(f"no runs (directories with {CONFIG_FILE}) under {root}{some}")
    runs, superseded = split_superseded(runs)
    env_info = {
        str(r["run_id"]): _read_json(Path(r["path"]) / ENV_FILE) for _, r in runs[runs["complete"]].iterrows()
    }
    return Results(
        root=root,
        runs=runs,
        curves=load_curves(runs),
        env_info=env_info,
        configs={str(r["run_id"]): read_config(Path(r["path"]) / CONFIG_FILE) for _, r in runs.iterrows()},
        superseded=superseded,
        unreadable=unreadable,
    )


def is_es(algo: str) -> bool:
    """Whether ``algo`` is an ES variant (the other side of every comparison is RL), from the
    registry; an unregistered name (an old results store) counts as ES when it ends in ``_es``."""
    family = family_of(algo)
    return family == "es" if family is not None else algo.endswith("_es")


def stopped_runs(results: Results) -> set[object]:
    """run_ids of complete runs that ended at their target score (``budget.stop_at_return``):
    they reached it, and reports must not treat their end as censoring."""
    runs = results.complete
    if "stopped_at_return" not in runs.columns:
        return set()
    flags = runs["stopped_at_return"].fillna(False).astype(bool)
    return set(runs.loc[flags, "run_id"])
