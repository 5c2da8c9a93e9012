"""The retention report's data: sequence runs of a results store, per-run metrics, seeds, curves.

Reads what a sequence run writes (the data model of :mod:`esbench.analysis.retention`) and turns a
results directory (``results/runs/retention/``, the recipe ``experiments/retention.yaml``) into
the tidy tables the ``retention`` report section draws and tabulates
(:func:`esbench.analysis.report.build_report`):

* the run table of :func:`scan_sequence_runs`: one row per run with its sequence, its stages and
  ``only_stage`` (``-1`` for a sequence run, ``k`` for stage k's single-stage reference run);
* :func:`analyse_retention`: per complete sequence run, :func:`~esbench.analysis.retention.run_retention`
  (plus the new-stage gain and old-stage change of every later stage, for the scatter), the
  normalized curves, the drift of the stage-boundary snapshots from the first one, the drift and
  policy KL logged at every evaluation point (``metrics.csv``: :mod:`esbench.training.drift`),
  the normalization used, and which seeds are missing.

Normalization (stated in every report): ``p_i(t) = (R_i(t) - R_i^random) / (R_i^ref - R_i^random)``
on **one scale for every algorithm** of a sequence (:func:`common_scale`): R_i^ref is the best
final return (the score of the model a run ended with, averaged over seeds) that any algorithm's
single-stage reference runs of stage i reached, and R_i^random the mean
over every algorithm's sequence runs of their untrained policy's return on stage i (the evaluation
at timestep 0). A score of 0.7 then means the same return for ES and for RL. Where no algorithm has
a reference run of stage i, the best end-of-stage-i return of any algorithm's sequence runs stands
in (the report says so). Raw returns are kept beside the scores (``end_of_stage_return``,
``final_return``, the curves' ``return``). Forward transfer compares each algorithm's sequence
run with its **own** reference runs' mean curve (Continual World, Wołczyk et al. 2021), drawn on
the same common scale.

Seeds: the seeds of a sequence are every seed any run of it uses (any algorithm, sequence or
reference run, complete or not); a condition (algorithm, sequence) lacking a complete sequence run
of one of them has that seed *missing*, reported by name, and the report renders what it has.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from esbench.analysis.conditions import AWD_SUFFIX, POP_SEP
from esbench.analysis.load import (
    UnreadableRunFile,
    _config_row,
    config_value,
    iter_run_dirs,
    read_config,
    read_metrics,
    read_summary,
)
from esbench.analysis.report_data import MAX_SHIPPED_RUN_FILE_BYTES
from esbench.analysis.retention import (
    LAST_K,
    NONE,
    SequenceCurves,
    load_snapshots,
    normalized_scores,
    reference_curve,
    run_retention,
    score_matrix,
    sequence_curves,
)
from esbench.analysis.retention_behaviour import BEHAVIOUR_COLUMNS, behaviour_rows, load_probes
from esbench.analysis.retention_measures import evaluation_se, stage_end_value
from esbench.analysis.stats import interpolate_runs
from esbench.tracking.schema import (
    CONFIG_FILE,
    DRIFT_COLUMNS,
    KL_COLUMN,
    PROBES_FILE,
    SNAPSHOT_DRIFT_FILE,
    SNAPSHOTS_FILE,
    SUMMARY_FILE,
)
from esbench.tracking.snapshot_drift import SnapshotDrift, load_snapshot_drift

#: Columns of :func:`scan_sequence_runs`.
SEQUENCE_RUN_COLUMNS: tuple[str, ...] = (
    "run_id",
    "experiment",
    "algo",
    "sequence",
    "only_stage",  # -1: the sequence run; k: stage k's single-stage reference run
    "stages",  # tuple of stage names in training order
    "seed",
    "scale",
    "workers",
    "cluster",
    "complete",
    "path",
    "total_timesteps",  # summary.json: timesteps actually trained (NaN when not complete)
    "wall_clock_s",  # summary.json: seconds of training
    "population_size",  # ES: algo.population_size (None for RL)
    "l2_anchor",  # ES: algo.l2_anchor (zero, or stage_start: Anchored Weight Decay)
)
#: What makes two runs one replicate (the newest complete one is used, the others superseded).
_REPLICATE = ("experiment", "algo", "sequence", "only_stage", "scale", "workers", "cluster", "seed")


def _stage_names(cfg: dict[str, Any]) -> tuple[str, ...]:
    stages = config_value(cfg, "sequence.stages", default=None) or []
    return tuple(
        str(s.get("name", f"stage{k}")) if isinstance(s, dict) else str(s) for k, s in enumerate(stages)
    )


def scan_sequence_runs(results_dir: str | Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The sequence runs under ``results_dir`` (runs without stages are left out).

    A run is complete when its ``summary.json`` and ``metrics.csv`` are readable; a run with an
    unreadable file is listed in the third table and never counted. Of several runs of one
    replicate (same algorithm, sequence, ``only_stage``, scale, workers, cluster and seed) the
    newest complete one is used and the others are superseded.

    Returns:
        (runs, superseded, unreadable): runs with :data:`SEQUENCE_RUN_COLUMNS` plus the
        config columns of :func:`esbench.analysis.load.load_run_table` the provenance reads;
        the superseded runs alike; the unreadable runs (``run_id``, ``path``, ``file``, ``reason``).
    """
    rows, bad = [], []
    for run_dir in iter_run_dirs(results_dir):
        try:
            base = _config_row(run_dir)
            cfg = read_config(run_dir / CONFIG_FILE)
        except UnreadableRunFile as e:
            bad.append(
                {"run_id": run_dir.name, "path": str(run_dir), "file": e.path.name, "reason": e.reason}
            )
            continue
        stages = _stage_names(cfg)
        if not stages:
            continue
        only = config_value(cfg, "sequence.only_stage", default=None)
        complete = (run_dir / SUMMARY_FILE).is_file()
        summary: dict[str, Any] = {}
        if complete:
            try:
                summary = read_summary(run_dir)
                read_metrics(run_dir)
            except UnreadableRunFile as e:
                bad.append(
                    {"run_id": base["run_id"], "path": str(run_dir), "file": e.path.name, "reason": e.reason}
                )
                complete = False
        rows.append(
            {
                **base,
                "sequence": str(config_value(cfg, "sequence.name", default="") or ""),
                "only_stage": int(only) if only is not None else NONE,
                "stages": stages,
                "complete": complete,
                "population_size": config_value(cfg, "algo.population_size", default=None),
                "l2_anchor": str(config_value(cfg, "algo.l2_anchor", default="zero") or "zero"),
                "path": str(run_dir),
                "total_timesteps": float(summary.get("total_timesteps", math.nan)) if complete else math.nan,
                "wall_clock_s": float(summary.get("wall_clock_s", math.nan)) if complete else math.nan,
            }
        )
    columns = list(dict.fromkeys([*SEQUENCE_RUN_COLUMNS, *(rows[0] if rows else {})]))
    runs = pd.DataFrame(rows, columns=columns)
    unreadable = pd.DataFrame(bad, columns=["run_id", "path", "file", "reason"])
    if runs.empty:
        return runs, runs.copy(), unreadable
    runs["algo"] = condition_names(runs)
    runs = runs.sort_values(["algo", "sequence", "only_stage", "seed", "run_id"], kind="stable")
    runs = runs.reset_index(drop=True)
    used = pd.Series(True, index=runs.index)
    for _, group in runs.groupby(list(_REPLICATE), dropna=False, sort=False):
        done = group[group["complete"]]
        if len(group) > 1 and len(done):
            newest = max(done.index, key=lambda i: (Path(done.at[i, "path"]) / SUMMARY_FILE).stat().st_mtime)
            used[group.index.difference([newest])] = False
    return runs[used].reset_index(drop=True), runs[~used].reset_index(drop=True), unreadable


def condition_names(runs: pd.DataFrame) -> pd.Series:
    """The condition each run belongs to: its algorithm, ``+awd`` with Anchored Weight Decay, and
    ``@pop<N>`` when one algorithm's runs of one sequence (with or without AWD) use more than one
    population size (the population-size comparison); the plain algorithm key otherwise, so reports of one
    configuration per algorithm read as before."""
    if runs.empty or "population_size" not in runs:
        return runs.get("algo", pd.Series(dtype=str))
    names = runs["algo"].astype(str).where(runs["l2_anchor"] != "stage_start", runs["algo"] + AWD_SUFFIX)
    pops = runs["population_size"]
    out = names.copy()
    for (_, _), group in runs.assign(_name=names).groupby(["algo", "sequence"], sort=False):
        sizes = {int(v) for v in group["population_size"] if v is not None and not pd.isna(v)}
        if len(sizes) > 1:
            out[group.index] = [
                f"{n}{POP_SEP}{int(v)}" for n, v in zip(group["_name"], pops[group.index], strict=True)
            ]
    return out


def read_snapshot_drift(run_dir: str | Path, n_stages: int) -> tuple[SnapshotDrift | None, str]:
    """The drift between a complete run's K + 1 stage-boundary snapshots.

    Read from the table the run wrote beside its snapshots
    (:data:`~esbench.tracking.schema.SNAPSHOT_DRIFT_FILE`, which a report's ``data/`` ships), or
    computed from the snapshots themselves
    (:data:`~esbench.tracking.schema.SNAPSHOTS_FILE`) when the table is missing or older than them.

    Returns:
        (drift, "") or (None, why not): neither file, unreadable, or not K + 1 rows.
    """
    table_path = Path(run_dir) / SNAPSHOT_DRIFT_FILE
    why = ""
    if table_path.is_file():
        try:
            drift = load_snapshot_drift(table_path)
        except ValueError as e:
            why = str(e)
        else:
            if drift.n_rows == n_stages + 1:
                return drift, ""
            why = f"{SNAPSHOT_DRIFT_FILE} is about {drift.n_rows} snapshot rows, expected {n_stages + 1}"
    path = Path(run_dir) / SNAPSHOTS_FILE
    if not path.is_file():
        return None, why or (
            f"no {SNAPSHOT_DRIFT_FILE} and no {SNAPSHOTS_FILE}; a report's data/ ships no snapshots "
            f"over {MAX_SHIPPED_RUN_FILE_BYTES / 1e6:g} MB, the run directory keeps them"
        )
    try:
        snaps = load_snapshots(path)
    except ValueError as e:
        return None, str(e)
    if snaps.params.shape[0] != n_stages + 1:
        return None, f"{SNAPSHOTS_FILE} holds {snaps.params.shape[0]} rows, expected {n_stages + 1} (K + 1)"
    return SnapshotDrift.of(snaps.params, snaps.layout, snaps.names), ""


#: Columns of :attr:`RetentionData.behaviour`.
BEHAVIOUR_RUN_COLUMNS: list[str] = ["algo", "sequence", "seed", *BEHAVIOUR_COLUMNS]


def read_behaviour(run_dir: str | Path, drift: SnapshotDrift | None) -> tuple[pd.DataFrame | None, bool, str]:
    """The behavioural distances of a complete run from its :data:`~esbench.tracking.schema.PROBES_FILE`
    (:func:`~esbench.analysis.retention_behaviour.behaviour_rows`; the parameter change from
    ``drift``).

    Returns:
        (rows, whether the policy samples its actions, "") or (None, False, why not): ``why not``
        is "" when the run has no probes file (a run from before probes, or a learner that records
        none), else the reason it cannot be read.
    """
    path = Path(run_dir) / PROBES_FILE
    if not path.is_file():
        return None, False, ""
    try:
        probes = load_probes(path)
    except ValueError as e:
        return None, False, str(e)
    return behaviour_rows(probes, drift), probes.stochastic, ""


@dataclass
class RetentionData:
    """What the retention section draws and tabulates.

    Attributes:
        per_run: :func:`~esbench.analysis.retention.run_retention` rows of every analysed sequence
            run, with ``algo``, ``sequence``, ``seed`` (plus ``new_stage_gain`` and
            ``old_stage_change`` rows per later stage j, ``stage_index`` = j).
        curves: Normalized curves, one row per (run, evaluated stage, point): ``algo``,
            ``sequence``, ``seed``, ``run_id``, ``stage_index``, ``stage``, ``timesteps``,
            ``train_stage``, ``p`` (normalized), ``se`` (the standard error of that evaluation's mean,
            on the normalized scale: :func:`evaluation_se_curves`), ``return`` (raw).
        boundaries: One row per (run, stage): ``algo``, ``sequence``, ``seed``, ``stage_index``,
            ``stage``, ``end_timesteps`` (T_k).
        drift: One row per (run, boundary k = 1..K): ``algo``, ``sequence``, ``seed``,
            ``boundary`` (k), ``timesteps`` (T_{k-1}), ``l2``, ``rel``, ``sparsity@<τ>`` of
            the snapshot at that boundary from the first snapshot (the parameters the sequence
            started from).
        normalization: One row per (algo, sequence, stage): the common ``r_random`` and ``r_ref``
            (the same on every algorithm's row of a sequence), ``source`` (where R^ref came from:
            :func:`common_scale`), ``r_ref_own`` (this algorithm's own reference final return,
            NaN without one) and ``n_reference_seeds``.
        seeds: One row per (algo, sequence): ``expected`` / ``used`` / ``missing`` seed lists
            (comma-separated), ``incomplete_runs`` and ``references_missing`` (text).
        drift_curves: One row per (run, evaluation point) (:func:`drift_curve_frame`): ``algo``,
            ``sequence``, ``seed``, ``run_id``, ``timesteps``, ``train_stage``, the drift columns
            of ``metrics.csv`` (from the start of the stage trained) and ``policy_kl`` (mean over
            the ended stages).
        behaviour: One row per (run, stage k, later-or-same stage j)
            (:func:`~esbench.analysis.retention_behaviour.behaviour_rows`): ``algo``,
            ``sequence``, ``seed`` and the behavioural distances of stage k's own update and of the
            drift after it, on stage k's probe states (runs with ``probes.npz`` only).
        problems: One line per run left out of some numbers (and why), or whose numbers need a
            caveat (too few evaluation points per stage, an upside-down normalization).
        stages: Stage names per sequence.
    """

    per_run: pd.DataFrame
    curves: pd.DataFrame
    boundaries: pd.DataFrame
    drift: pd.DataFrame
    normalization: pd.DataFrame
    seeds: pd.DataFrame
    drift_curves: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=DRIFT_CURVE_COLUMNS))
    behaviour: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=BEHAVIOUR_RUN_COLUMNS))
    problems: list[str] = field(default_factory=list)
    stages: dict[str, tuple[str, ...]] = field(default_factory=dict)


def _seed_list(values: Sequence[Any]) -> str:
    return ", ".join(str(int(v)) for v in sorted({int(v) for v in values if not pd.isna(v)}))


def mean_reference(curves: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Mean over seeds of reference curves, on their common grid.

    ES evaluates at the first generation past each interval, so seeds' evaluation timesteps
    differ: each curve is interpolated linearly onto the union of the seeds' timesteps inside the
    range every seed covers (:func:`esbench.analysis.stats.interpolate_runs`), then averaged.

    Args:
        curves: One (timesteps, returns) per reference seed, timesteps sorted.

    Returns:
        (timesteps, mean returns), shape (n_grid,) each.
    """
    frame = pd.concat(
        [
            pd.DataFrame(
                {"seed": n, "run_id": str(n), "timesteps": np.asarray(t, float), "r": np.asarray(r, float)}
            )
            for n, (t, r) in enumerate(curves)
        ],
        ignore_index=True,
    )
    grid, values, _ = interpolate_runs(frame, x="timesteps", y="r")
    return grid, values.mean(axis=0) if len(values) else np.empty(0)


def _gain_rows(e: np.ndarray, stages: tuple[str, ...]) -> list[tuple[int, str, int, int, str, float]]:
    """New-stage gain ``E[j, j] - E[j, j-1]`` and old-stage change ``mean_{i<j} (E[i, j] - E[i, j-1])``
    per later stage j (the scatter's axes; both in normalized score)."""
    rows = []
    for j in range(1, len(stages)):
        gain = e[j, j] - e[j, j - 1]
        change = float(np.mean(e[:j, j] - e[:j, j - 1]))
        for metric, value in (("new_stage_gain", gain), ("old_stage_change", change)):
            if np.isfinite(value):
                rows.append((j, stages[j], NONE, NONE, metric, float(value)))
    return rows


def common_scale(
    r_ref_own: Mapping[str, np.ndarray],
    curves: Mapping[str, Sequence[SequenceCurves]],
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """One normalization per stage, the same for every algorithm of a sequence.

    ``R_i^ref`` is the best final return any algorithm's single-stage reference runs of stage i
    reached (the score of the model each run ended with, each algorithm's mean over its reference
    seeds; the largest of those), so 1 means "as good as the best algorithm trained on stage i
    alone" whichever algorithm is scored. Where no algorithm has a reference run of stage i, the
    best end-of-stage-i return of any algorithm's sequence runs stands in (the model each run ended
    stage i with, :func:`~esbench.analysis.retention_measures.stage_end_value`; mean over seeds).
    Always a model's score: never a mean over points of one run, which at a stage of two points
    would average the untrained model with the trained one. ``R_i^random`` is the untrained policies' return
    on stage i: the mean, over every algorithm's sequence runs, of their evaluation at timestep 0.

    Args:
        r_ref_own: Per algorithm, its own reference final return per stage, shape (K,) (NaN: none).
        curves: Per algorithm, its sequence runs' curves.

    Returns:
        (r_random, r_ref, source): arrays of shape (K,), and per stage where R^ref came from
        (``reference (<algo>)`` or ``sequence end (<algo>)``; ``none`` when nothing gives one).
    """
    k_stages = len(next(iter(r_ref_own.values()))) if r_ref_own else 0
    starts = [c.returns[:, 0] for runs in curves.values() for c in runs]
    r_random = np.mean(starts, axis=0) if starts else np.full(k_stages, np.nan)
    r_ref = np.full(k_stages, np.nan)
    source = ["none"] * k_stages
    for k in range(k_stages):
        refs = {a: float(v[k]) for a, v in r_ref_own.items() if np.isfinite(v[k])}
        kind = "reference"
        if not refs:
            kind = "sequence end"
            refs = {
                a: float(np.mean([stage_end_value(c.returns, c.train_stage, k)[k] for c in runs]))
                for a, runs in curves.items()
                if runs
            }
            refs = {a: v for a, v in refs.items() if np.isfinite(v)}
        if refs:
            best = max(sorted(refs), key=lambda a: refs[a])
            r_ref[k], source[k] = refs[best], f"{kind} ({best})"
    return np.asarray(r_random, dtype=float), r_ref, source


def analyse_retention(runs: pd.DataFrame, last_k: int = LAST_K, scale_tol: float = 1e-9) -> RetentionData:
    """Every retention number of a results store's sequence runs (see the module docstring).

    Args:
        runs: The run table of :func:`scan_sequence_runs`.
        last_k: Evaluations averaged "at the end".
        scale_tol: A stage whose ``|R^ref - R^random|`` is at most this has no scale to normalize
            by; its run is left out (listed in ``problems``).

    Returns:
        The :class:`RetentionData`.
    """
    per_run: list[pd.DataFrame] = []
    curve_rows: list[pd.DataFrame] = []
    bound_rows: list[dict[str, Any]] = []
    drift_rows: list[dict[str, Any]] = []
    drift_curve_rows: list[pd.DataFrame] = []
    behaviour_rows_: list[pd.DataFrame] = []
    norm_rows: list[dict[str, Any]] = []
    seed_rows: list[dict[str, Any]] = []
    problems: list[str] = []
    stages_of: dict[str, tuple[str, ...]] = {}
    for sequence, seq_runs in runs.groupby("sequence", sort=True):
        expected = sorted({int(s) for s in seq_runs["seed"] if not pd.isna(s)})
        main = seq_runs[seq_runs["only_stage"] == NONE]
        stages = tuple(main["stages"].iloc[0]) if len(main) else tuple(seq_runs["stages"].iloc[0])
        stages_of[str(sequence)] = stages
        # Pass 1, per algorithm: its reference runs and its complete sequence runs' curves.
        algos: dict[str, dict[str, Any]] = {}
        for algo, group in seq_runs.groupby("algo", sort=True):
            seq = group[group["only_stage"] == NONE]
            done = seq[seq["complete"]]
            used_seeds = {int(s) for s in done["seed"]}
            missing = [s for s in expected if s not in used_seeds]
            incomplete = [str(r) for r in seq.loc[~seq["complete"], "run_id"]]
            # References: per stage, the complete single-stage runs of this algorithm.
            refs: list[tuple[np.ndarray, np.ndarray] | None] = []
            r_ref_of: list[float] = []
            ref_missing: list[str] = []
            n_ref: list[int] = []
            for k, name in enumerate(stages):
                rr = group[(group["only_stage"] == k) & group["complete"]]
                ref_curves = []
                for _, run in rr.sort_values("seed").iterrows():
                    t, r = reference_curve(read_metrics(run["path"]), name)
                    if len(r):
                        ref_curves.append((t, r))
                n_ref.append(len(ref_curves))
                have = {int(s) for s in rr["seed"]}
                lacking = [s for s in expected if s not in have]
                if lacking:
                    ref_missing.append(f"stage {k} ({name}): seed(s) {_seed_list(lacking)}")
                if ref_curves:
                    refs.append(mean_reference(ref_curves))
                    r_ref_of.append(float(np.mean([r[-1] for _, r in ref_curves])))
                else:
                    refs.append(None)
                    r_ref_of.append(math.nan)
            seed_rows.append(
                {
                    "algo": str(algo),
                    "sequence": str(sequence),
                    "expected": _seed_list(expected),
                    "used": "",
                    "missing": _seed_list(missing),
                    "incomplete_runs": ", ".join(incomplete),
                    "references_missing": "; ".join(ref_missing),
                }
            )
            loaded: list[tuple[int, pd.Series, pd.DataFrame, SequenceCurves, np.ndarray]] = []
            for _, run in done.sort_values("seed").iterrows():
                seed = int(run["seed"])
                where = f"{algo}/{sequence} seed {seed} ({run['run_id']})"
                metrics = read_metrics(run["path"])
                try:
                    curves = sequence_curves(metrics, stages)
                except ValueError as e:
                    problems.append(f"{where}: {e}")
                    continue
                if not len(curves.timesteps) or curves.timesteps[0] != 0:
                    problems.append(f"{where}: no evaluation at timestep 0 (the untrained policy)")
                    continue
                loaded.append(
                    (seed, run, metrics, curves, evaluation_se_curves(run["path"], metrics, stages))
                )
            algos[str(algo)] = {
                "refs": refs,
                "r_ref_own": np.asarray(r_ref_of, dtype=float),
                "n_ref": n_ref,
                "loaded": loaded,
                "seed_row": seed_rows[-1],
            }
        r_random, r_ref, source = common_scale(
            {a: v["r_ref_own"] for a, v in algos.items()},
            {a: [c for _, _, _, c, _ in v["loaded"]] for a, v in algos.items()},
        )
        # Pass 2: every run on the one scale.
        for algo, info in algos.items():
            analysed: list[int] = []
            for seed, run, metrics, curves, se_raw in info["loaded"]:
                where = f"{algo}/{sequence} seed {seed} ({run['run_id']})"
                flat = np.flatnonzero(~(np.abs(r_ref - r_random) > scale_tol))
                if len(flat):
                    k = int(flat[0])
                    problems.append(
                        f"{where}: stage {k} ({stages[k]}) has no scale to normalize by "
                        f"(R_ref {r_ref[k]:.6g} = R_random {r_random[k]:.6g})"
                    )
                    continue
                for k in map(int, np.flatnonzero(r_ref < r_random)):
                    problems.append(
                        f"{where}: stage {k} ({stages[k]}): R_ref {r_ref[k]:.6g} is below R_random "
                        f"{r_random[k]:.6g} (the untrained policy did better than the reference's end): "
                        "its normalized scores run upside down; kept, read them with care"
                    )
                counts = np.bincount(curves.train_stage, minlength=len(stages))
                counts[0] -= int(counts[0] > 1)  # the untrained policy is no end-of-stage point
                short = [f"{k} ({stages[k]}): {int(n)}" for k, n in enumerate(counts) if n < last_k]
                if short:
                    problems.append(
                        f"{where}: fewer than the {last_k} evaluation points averaged at a stage's end "
                        f"(stage: points) {', '.join(short)}; its end values average the points it has "
                        "(evaluate more often: eval.interval_timesteps)"
                    )
                drift, why = read_snapshot_drift(run["path"], len(stages))
                if drift is None:
                    problems.append(f"{where}: no drift ({why})")
                behaviour, stochastic, why_not = read_behaviour(run["path"], drift)
                if behaviour is not None:
                    behaviour_rows_.append(behaviour.assign(algo=algo, sequence=str(sequence), seed=seed))
                elif why_not:
                    problems.append(f"{where}: no behavioural distance ({why_not})")
                refs = info["refs"]
                references = refs if any(r is not None for r in refs) else None
                kl = final_policy_kl(metrics, stages)
                table = run_retention(
                    curves,
                    r_random,
                    r_ref,
                    references=references,
                    drift=drift,
                    kl=kl.tolist() if np.isfinite(kl).any() else None,
                    last_k=last_k,
                )
                p = normalized_scores(curves.returns, r_random, r_ref)
                e_matrix = score_matrix(p, curves.train_stage, last_k)
                extra = pd.DataFrame(_gain_rows(e_matrix, stages), columns=list(table.columns))
                table = pd.concat([table, extra], ignore_index=True) if len(extra) else table
                per_run.append(table.assign(algo=algo, sequence=str(sequence), seed=seed))
                se = se_raw / np.abs(r_ref - r_random)[:, None]
                curve_rows.append(_curve_frame(curves, p, se, algo, str(sequence), seed, str(run["run_id"])))
                drift_curve_rows.append(
                    drift_curve_frame(metrics, stages, show_kl=behaviour is None or stochastic).assign(
                        algo=algo, sequence=str(sequence), seed=seed, run_id=str(run["run_id"])
                    )
                )
                for k, name in enumerate(stages):
                    bound_rows.append(
                        {
                            "algo": algo,
                            "sequence": str(sequence),
                            "seed": seed,
                            "stage_index": k,
                            "stage": name,
                            "end_timesteps": float(curves.boundaries[k]),
                        }
                    )
                if drift is not None:
                    starts = np.concatenate([[0.0], curves.boundaries])
                    for k in range(1, len(stages) + 1):
                        drift_rows.append(
                            {
                                "algo": algo,
                                "sequence": str(sequence),
                                "seed": seed,
                                "boundary": k,
                                "timesteps": float(starts[k]),
                                **drift.whole(0, k),
                            }
                        )
                analysed.append(seed)
            info["seed_row"]["used"] = _seed_list(analysed)
            for k, name in enumerate(stages):
                norm_rows.append(
                    {
                        "algo": algo,
                        "sequence": str(sequence),
                        "stage_index": k,
                        "stage": name,
                        "r_random": float(r_random[k]),
                        "r_ref": float(r_ref[k]),
                        "source": source[k],
                        "r_ref_own": float(info["r_ref_own"][k]),
                        "n_reference_seeds": info["n_ref"][k],
                    }
                )
    columns = ["algo", "sequence", "seed", "stage_index", "stage", "during", "layer", "metric", "value"]
    return RetentionData(
        per_run=pd.concat(per_run, ignore_index=True)[columns] if per_run else pd.DataFrame(columns=columns),
        curves=pd.concat(curve_rows, ignore_index=True)
        if curve_rows
        else pd.DataFrame(columns=_CURVE_COLUMNS),
        boundaries=pd.DataFrame(
            bound_rows, columns=["algo", "sequence", "seed", "stage_index", "stage", "end_timesteps"]
        ),
        drift=pd.DataFrame(drift_rows),
        drift_curves=pd.concat(drift_curve_rows, ignore_index=True)[DRIFT_CURVE_COLUMNS]
        if drift_curve_rows
        else pd.DataFrame(columns=DRIFT_CURVE_COLUMNS),
        behaviour=pd.concat(behaviour_rows_, ignore_index=True)[BEHAVIOUR_RUN_COLUMNS]
        if behaviour_rows_
        else pd.DataFrame(columns=BEHAVIOUR_RUN_COLUMNS),
        normalization=pd.DataFrame(norm_rows),
        seeds=pd.DataFrame(
            seed_rows,
            columns=[
                "algo",
                "sequence",
                "expected",
                "used",
                "missing",
                "incomplete_runs",
                "references_missing",
            ],
        ),
        problems=problems,
        stages=stages_of,
    )


#: Columns of :attr:`RetentionData.drift_curves`.
DRIFT_CURVE_COLUMNS: list[str] = [
    "algo",
    "sequence",
    "seed",
    "run_id",
    "timesteps",
    "train_stage",
    *DRIFT_COLUMNS,
    KL_COLUMN,
]


def _points(metrics: pd.DataFrame, stages: Sequence[str]) -> pd.DataFrame:
    """The evaluation rows of ``metrics`` about a stage of ``stages``, in file order."""
    return metrics[metrics["eval_return_mean"].notna() & metrics["eval_task"].isin(list(stages))]


def final_policy_kl(metrics: pd.DataFrame, stages: Sequence[str]) -> np.ndarray:
    """Per stage k, ``KL(π_k || π_final)``: the ``policy_kl`` of the last evaluation of stage k
    (NaN where the run did not record it: the last stage, or a run from before the column).

    Returns:
        Shape (K,).
    """
    rows = _points(metrics, stages)
    out = np.full(len(stages), np.nan)
    for k, name in enumerate(stages):
        own = rows.loc[rows["eval_task"] == name, KL_COLUMN]
        if len(own):
            out[k] = float(own.iloc[-1])
    return out


def drift_curve_frame(metrics: pd.DataFrame, stages: Sequence[str], show_kl: bool = True) -> pd.DataFrame:
    """Drift at every evaluation point of one run: the drift columns of the row evaluating the
    stage trained (the same on every row of a point), ``train_stage`` its index, and ``policy_kl``
    the mean over the stages with a recorded value at that point (NaN before the first boundary).

    ``show_kl=False`` leaves ``policy_kl`` NaN: a run whose probes say its policy is deterministic (ES,
    DQN), whose logged KL scores made-up Gaussians or Q-values as logits and is not shown beside
    a sampling policy's.

    Returns:
        Columns ``timesteps``, ``train_stage``, :data:`~esbench.tracking.schema.DRIFT_COLUMNS`,
        ``policy_kl``; one row per point.
    """
    rows = _points(metrics, stages)
    index = {name: k for k, name in enumerate(stages)}
    out = []
    for (t, train), point in rows.groupby(["timesteps", "train_task"], sort=False):
        own = point[point["eval_task"] == train].iloc[0]
        kl = point[KL_COLUMN].to_numpy(float)
        out.append(
            {
                "timesteps": float(t),
                "train_stage": index.get(str(train), NONE),
                **{c: float(own[c]) for c in DRIFT_COLUMNS},
                KL_COLUMN: float(np.nanmean(kl)) if np.isfinite(kl).any() else math.nan,
            }
        )
    frame = pd.DataFrame(out, columns=["timesteps", "train_stage", *DRIFT_COLUMNS, KL_COLUMN])
    return frame if show_kl else frame.assign(**{KL_COLUMN: math.nan})


_CURVE_COLUMNS = [
    "algo",
    "sequence",
    "seed",
    "run_id",
    "stage_index",
    "stage",
    "timesteps",
    "train_stage",
    "p",
    "se",
    "return",
]


def evaluation_se_curves(run_dir: str | Path, metrics: pd.DataFrame, stages: Sequence[str]) -> np.ndarray:
    """The standard error of each evaluation's mean return, per stage and point, shape (K, n_points)
    (:func:`~esbench.analysis.retention_measures.evaluation_se`: ``eval_return_std`` over the square
    root of the episodes it averages: ``eval.episodes``, or a language model's held-out prompts,
    ``lm.decoding.eval_prompts``), aligned with :func:`~esbench.analysis.retention.sequence_curves`;
    all NaN when the run logged no standard deviation or names no episode count."""
    std = metrics.get("eval_return_std")
    aligned = metrics.assign(eval_return_std=np.nan) if std is None else metrics
    spread = aligned.assign(
        eval_return_mean=aligned["eval_return_std"].where(aligned["eval_return_mean"].notna())
    )
    cfg = read_config(Path(run_dir) / CONFIG_FILE)
    n = config_value(cfg, "lm.decoding.eval_prompts", default=None) or config_value(
        cfg, "eval.episodes", default=None
    )
    shape = sequence_curves(metrics, stages).returns.shape
    try:
        values = sequence_curves(spread, stages).returns
    except ValueError:  # no standard deviation at some point
        return np.full(shape, np.nan)
    if values.shape != shape or n is None:
        return np.full(shape, np.nan)
    return evaluation_se(values, float(n))


def _curve_frame(
    curves: SequenceCurves, p: np.ndarray, se: np.ndarray, algo: str, sequence: str, seed: int, run_id: str
) -> pd.DataFrame:
    n = len(curves.timesteps)
    parts = []
    for i, name in enumerate(curves.stages):
        parts.append(
            pd.DataFrame(
                {
                    "algo": algo,
                    "sequence": sequence,
                    "seed": seed,
                    "run_id": run_id,
                    "stage_index": i,
                    "stage": name,
                    "timesteps": curves.timesteps,
                    "train_stage": curves.train_stage,
                    "p": p[i, :n],
                    "se": se[i, :n],
                    "return": curves.returns[i, :n],
                }
            )
        )
    return pd.concat(parts, ignore_index=True)[_CURVE_COLUMNS]


def budget_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Timesteps and wall-clock of the complete runs per (algo, sequence, kind): budgets are matched
    in timesteps across algorithms; seconds show what that costs each of them.

    Returns:
        One row per (algo, sequence, only_stage): ``n_runs``, ``timesteps`` and ``wall_clock_s``
        (means over the runs).
    """
    done = runs[runs["complete"]]
    rows = []
    for (algo, seq, only), g in done.groupby(["algo", "sequence", "only_stage"], sort=True):
        rows.append(
            {
                "algo": str(algo),
                "sequence": str(seq),
                "only_stage": int(only),
                "n_runs": len(g),
                "timesteps": float(g["total_timesteps"].astype(float).mean()),
                "wall_clock_s": float(g["wall_clock_s"].astype(float).mean()),
            }
        )
    return pd.DataFrame(
        rows, columns=["algo", "sequence", "only_stage", "n_runs", "timesteps", "wall_clock_s"]
    )


def wandb_summary(table: pd.DataFrame) -> dict[str, float]:
    """The headline numbers of :func:`~esbench.analysis.retention.retention_table` as a flat W&B
    summary, one namespace per stage: ``retention/<sequence>/<algo>/<stage>/<metric>`` (mean over
    seeds; ``.../low`` and ``.../high`` beside it where the CI exists), ``<stage>`` being
    ``<index>_<name>`` or ``all`` for the sequence averages. Per-span and per-layer rows are left to
    the CSV.
    """
    out: dict[str, float] = {}
    flat = table[(table["during"] == NONE) & (table["layer"] == NONE)]
    for r in flat.itertuples():
        stage = "all" if r.stage_index == NONE else f"{r.stage_index}_{r.stage}"
        key = f"retention/{r.sequence}/{r.algo}/{stage}/{r.metric}"
        if not np.isfinite(r.mean):
            continue
        out[key] = float(r.mean)
        if np.isfinite(r.low):
            out[f"{key}/low"] = float(r.low)
            out[f"{key}/high"] = float(r.high)
    return dict(sorted(out.items()))
