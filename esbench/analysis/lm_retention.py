"""The language-model study's own section of the ``lm_retention`` report: task-B gain against
task-A retention in the model's own measures, the matched-gain verdict on "ES forgets more than
GRPO", and the curves against completions and wall-clock.

The retention report's common scale (:mod:`esbench.analysis.retention_report`) normalizes each
stage by the best end-of-stage return, and the prior's stage (the pretraining, two points: the
initial weights and the task-A model) makes a poor normalizer. Here the measures are the ones a
reader of the ES-for-LLM papers expects, on the trained stage ``j`` (the sequence's last; task B)
of each run:

* **task-B gain** ``x(t) = s_B(t) - s_B(t_0)``: the primary measure, the held-out task-B **solve
  rate** (exact solves; never the reward, whose format score rises without a single solve) since
  the stage began, ``t_0`` the stage's first point (the task-A model);
* **task-A retention** ``y(t) = acc_A(t) / acc_A(t_0)``: the held-out task-A accuracy
  (``prior_accuracy``) as a fraction of the task-A model's (1: all of it kept; retention as a
  ratio, :func:`~esbench.analysis.retention_measures.gain_and_retention`);
* the x axes: **completions** since the stage began (the ruler's ``timesteps``: decoded
  training sequences, each one forward pass over a sequence of a member or a GRPO sample), and
  **wall-clock** seconds since the stage began.

The verdict reuses :func:`esbench.analysis.retention_matched.matched_gain_table` and
:func:`~esbench.analysis.retention_matched.matched_gain_claims` on these paths (matched gain
``g*``: the largest task-B gain both compared conditions' mean paths reach, each seed read at the
evaluation point where its condition's mean gain reaches it; ES minus GRPO retention there, Welch t
interval; supported when the interval lies below 0), with their minimum effect: ``g*`` must exceed
twice the standard error of one evaluation of the solve rate (``sqrt(s (1 - s) / n)``, ``n`` the
held-out prompts, ``lm.decoding.eval_prompts``), else the claim is "not testable: no learning".

The other side (Schweighofer et al. 2026) is decided on the same measures, one row each in
``tables/lm_decisions.*``:

* **transient or permanent** (:func:`lm_transient`): per run, task-A retention's early drop,
  late drop and recovery (the one definition,
  :func:`~esbench.analysis.retention_measures.drop_and_recovery`: means over the first and the
  last third of task B's budget), summarized by
  :func:`~esbench.analysis.retention_matched.transient_summary`. "The drop recovers" is
  supported when the recovery's interval lies above 0, contradicted below, not testable where the
  condition did not learn task B;
* **population size**: conditions ``<es>@pop<N>`` of one learner (larger minus smaller population,
  retention at their matched gain); supported when the interval lies above 0;
* **Anchored Weight Decay**: ``<es>+awd`` against the same learner without it; supported above 0.

A decision whose conditions the runs lack is listed as ``not tested``, naming what is missing.

**Parameter drift per layer** (:func:`lm_layer_drift`, Abdi, Gupta et al. 2026's per-layer
view): task B's own update, from the task-A model to the model the stage ends with, per
transformer layer (its tensors pooled: the Frobenius norm over the layer, relative to the layer's
norm in the task-A model, and the update sparsity), from the drift table each run writes beside
its snapshots (:data:`~esbench.tracking.schema.SNAPSHOT_DRIFT_FILE`, shipped in the report's
``data/``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from esbench.analysis import figures
from esbench.analysis.claims.retention import RETENTION_CLAIMS
from esbench.analysis.claims.verdicts import NOT_TESTABLE, NOT_TESTED, in_force
from esbench.analysis.conditions import AWD_SUFFIX, POP_SEP, condition_label
from esbench.analysis.drift import pool_blocks
from esbench.analysis.load import config_value, read_config
from esbench.analysis.metrics.intervals import mean_ci
from esbench.analysis.retention_decisions import (
    DROP_READING_TEXT,
    DROP_WINDOWS_TEXT,
    PLANNED,
    claim_cells,
    matched_cells,
    no_learning_reading,
    seeds_reading,
    transient_cells,
)
from esbench.analysis.retention_matched import (
    learned_by_condition,
    matched_gain_claims,
    matched_gain_table,
    path_of_run,
    transient_summary,
)
from esbench.analysis.retention_measures import GainPath, drop_and_recovery
from esbench.analysis.retention_report import read_snapshot_drift
from esbench.analysis.tables import fmt_num, interval_cell, table_block, write_table
from esbench.config.registry import family_of
from esbench.tracking.schema import CONFIG_FILE, METRICS_FILE, SUMMARY_FILE
from esbench.tracking.snapshot_drift import WHOLE_VECTOR

#: Columns of :func:`lm_points`.
POINT_COLUMNS: tuple[str, ...] = (
    "algo", "sequence", "seed", "run_id", "stage", "point", "completions", "fraction", "wall_clock_s",
    "task_b_reward", "task_b_solve_rate", "task_b_solve_se", "task_a_accuracy", "task_a_retention",
)  # fmt: skip


def is_lm(runs: pd.DataFrame) -> bool:
    """Whether the sequence runs are language-model runs (their metrics fill ``prior_accuracy``)."""
    for path in runs.loc[runs["complete"], "path"]:
        metrics = pd.read_csv(Path(path) / METRICS_FILE, usecols=lambda c: c == "prior_accuracy")
        return "prior_accuracy" in metrics and bool(metrics["prior_accuracy"].notna().any())
    return False


def lm_points(runs: pd.DataFrame) -> pd.DataFrame:
    """Every complete LM sequence run's evaluation points of its last (trained) stage.

    Returns:
        Columns :data:`POINT_COLUMNS`, one row per (run, point), ``point`` 0 the stage's start;
        ``fraction`` its completions over the stage's budget, ``task_b_solve_se`` the standard error
        of that evaluation's solve rate (``sqrt(s (1 - s) / n)``, ``n`` = ``lm.decoding.eval_prompts``).
    """
    rows: list[dict[str, object]] = []
    for r in runs[runs["complete"]].itertuples():  # ``algo``: the condition (scan_sequence_runs)
        run_dir = Path(str(r.path))
        summary = json.loads((run_dir / SUMMARY_FILE).read_text())
        stages, bounds = list(summary["stages"]), list(summary["stage_boundaries"])
        if len(stages) < 2:
            continue
        stage, start = stages[-1], bounds[-2]
        metrics = pd.read_csv(run_dir / METRICS_FILE)
        points = metrics[
            (metrics["eval_task"] == stage)
            & metrics["eval_return_mean"].notna()
            & (metrics["timesteps"] >= start)
        ].drop_duplicates("timesteps", keep="last")
        if points.empty:
            continue
        first = points.iloc[0]
        acc0 = float(first["prior_accuracy"])
        budget = float(bounds[-1]) - float(start)
        n_prompts = config_value(read_config(run_dir / CONFIG_FILE), "lm.decoding.eval_prompts", default=None)
        for k, p in enumerate(points.itertuples()):
            solve = float(p.solve_rate)
            rows.append(
                {
                    "algo": str(r.algo),
                    "sequence": str(r.sequence),
                    "seed": int(r.seed),
                    "run_id": str(r.run_id),
                    "stage": stage,
                    "point": k,
                    "completions": int(p.timesteps) - int(start),
                    "fraction": (float(p.timesteps) - float(start)) / budget if budget > 0 else math.nan,
                    "wall_clock_s": float(p.wall_clock_s) - float(first["wall_clock_s"]),
                    "task_b_reward": float(p.eval_return_mean),
                    "task_b_solve_rate": solve,
                    "task_b_solve_se": math.sqrt(solve * (1.0 - solve) / float(n_prompts))
                    if n_prompts
                    else math.nan,
                    "task_a_accuracy": float(p.prior_accuracy),
                    "task_a_retention": float(p.prior_accuracy) / acc0 if acc0 > 0 else math.nan,
                }
            )
    return pd.DataFrame(rows, columns=list(POINT_COLUMNS))


#: ``model.layers.3.self_attn.q_proj.weight`` (Llama), ``transformer.h.3.attn.c_attn.weight`` (GPT-2).
_LAYER_RE = re.compile(r"(?:^|\.)(?:layers|h|blocks?)\.(\d+)\.")


def layer_group(name: str) -> str:
    """The transformer layer a parameter tensor belongs to (``"layer 3"``), or, outside the layers,
    its module (``"embed_tokens"``, ``"norm"``, ``"lm_head"``)."""
    m = _LAYER_RE.search(name)
    if m:
        return f"layer {int(m.group(1))}"
    module = re.sub(r"\.(weight|bias)$", "", name)
    return re.sub(r"^(model|transformer)\.", "", module) or name


#: Columns of :func:`lm_layer_drift`.
LAYER_DRIFT_COLUMNS: tuple[str, ...] = (
    "algo", "sequence", "seed", "group", "size", "l2", "rel", "sparsity@1e-06", "sparsity@0.0001",
)  # fmt: skip


def lm_layer_drift(runs: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """Task B's own update per transformer layer, per complete LM sequence run.

    The pair of snapshot rows is (K - 1, K): the start of the last (trained) stage, the task-A
    model, to the run's final parameters; each run's per-tensor rows pooled by
    :func:`layer_group` (:func:`~esbench.analysis.drift.pool_blocks`), plus the whole vector
    (``group`` "all").

    Returns:
        (rows with columns :data:`LAYER_DRIFT_COLUMNS`, one line per run without per-layer drift
        and why).
    """
    rows: list[pd.DataFrame] = []
    missing: list[str] = []
    for r in runs[runs["complete"]].itertuples():
        run_dir = Path(str(r.path))
        stages = list(json.loads((run_dir / SUMMARY_FILE).read_text())["stages"])
        if len(stages) < 2:
            continue
        drift, why = read_snapshot_drift(run_dir, len(stages))
        if drift is None:
            missing.append(f"{r.run_id}: {why}")
            continue
        k = len(stages)
        blocks = drift.layers(k - 1, k)
        if blocks.empty:
            missing.append(f"{r.run_id}: its snapshots have no layer layout")
            continue
        whole = drift.table[
            (drift.table["from_row"] == k - 1)
            & (drift.table["to_row"] == k)
            & (drift.table["layer"] == WHOLE_VECTOR)
        ]
        pooled = pd.concat(
            [pool_blocks(blocks, [layer_group(str(n)) for n in blocks["name"]]), pool_blocks(whole, ["all"])],
            ignore_index=True,
        )
        rows.append(pooled.assign(algo=str(r.algo), sequence=str(r.sequence), seed=int(r.seed)))
    if not rows:
        return pd.DataFrame(columns=list(LAYER_DRIFT_COLUMNS)), missing
    return pd.concat(rows, ignore_index=True)[list(LAYER_DRIFT_COLUMNS)], missing


def layer_drift_table(per_run: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    """Mean over seeds and 95% Student-t interval (:func:`~esbench.analysis.metrics.intervals.mean_ci`) of
    each layer's Frobenius (``l2``) and relative (``rel``) update, per (sequence, condition, layer).

    Returns:
        Columns ``sequence``, ``algo``, ``group``, ``size``, ``n_seeds``, then ``<m>_mean``,
        ``<m>_low``, ``<m>_high`` for ``m`` in ``l2``, ``rel``, ``sparsity@1e-06``; layers in
        model order.
    """
    out: list[dict[str, object]] = []
    for (sequence, algo), group in per_run.groupby(["sequence", "algo"], sort=True):
        for name, rows in group.groupby("group", sort=False):
            row: dict[str, object] = {
                "sequence": sequence,
                "algo": algo,
                "group": name,
                "size": int(rows["size"].iloc[0]),
                "n_seeds": int(rows["seed"].nunique()),
            }
            for m in ("l2", "rel", "sparsity@1e-06"):
                mean, low, high = mean_ci(rows[m].to_numpy(dtype=float), rng)
                row.update({f"{m}_mean": mean, f"{m}_low": low, f"{m}_high": high})
            out.append(row)
    return pd.DataFrame(out)


def lm_transient(
    points: pd.DataFrame, learned: Mapping[tuple[str, str], bool], rng: np.random.Generator
) -> pd.DataFrame:
    """Transient against permanent drop of task A during task B, per condition.

    Per run, with ``y`` task-A retention at the stage's points (``y[0] = 1``, the task-A model):
    :func:`~esbench.analysis.retention_measures.drop_and_recovery` of ``y`` over the stage's
    budget fractions, then :func:`~esbench.analysis.retention_matched.transient_summary` per
    (sequence, condition).

    Args:
        points: :func:`lm_points`.
        learned: Per (sequence, condition), whether it learned task B (its solve rate's matched-gain
            table, :func:`~esbench.analysis.retention_matched.matched_gain_table`).
        rng: For the intervals.

    Returns:
        ``sequence``, ``algo``, ``n_seeds``, the three measures with ``_low``/``_high``, ``reading``,
        ``verdict`` (empty without a run of at least one point after the start).
    """
    rows = []
    for (algo, sequence, seed, _), run in points.groupby(["algo", "sequence", "seed", "run_id"], sort=True):
        run = run.sort_values("point")
        y = run["task_a_retention"].to_numpy(float)
        if len(y) < 2 or not np.isfinite(y).all():
            continue
        early, late, recovery = drop_and_recovery(run["fraction"].to_numpy(float), y, float(y[0]))
        rows.append(
            {
                "sequence": str(sequence),
                "algo": str(algo),
                "seed": int(seed),
                "early_drop": early,
                "late_drop": late,
                "recovery": recovery,
                "learned": learned.get((str(sequence), str(algo)), False),
            }
        )
    return transient_summary(pd.DataFrame(rows), ["sequence", "algo"], rng)


#: Columns of :func:`lm_decisions`.
DECISION_COLUMNS: tuple[str, ...] = (
    "decision", "sequence", "a", "b", "measure", "matched_gain", "value", "low", "high", "n_a", "n_b",
    "reading", "verdict",
)  # fmt: skip
#: The decisions of the LM section, in the order the report lists them.
DECISIONS: tuple[str, ...] = (
    "es_forgets_more", "drop_recovers", "larger_population_forgets_less", "awd_keeps_retention",
)  # fmt: skip


def lm_decisions(claims: pd.DataFrame, transient: pd.DataFrame) -> pd.DataFrame:
    """Every decision of the LM section, one row each: "ES forgets more than GRPO" and the other
    side's three (the drop recovers, a larger population forgets less, AWD keeps retention).

    Args:
        claims: :func:`~esbench.analysis.retention_matched.matched_gain_claims` of the runs.
        transient: :func:`lm_transient` of the runs.

    Returns:
        Columns :data:`DECISION_COLUMNS`; a decision without its conditions is one row with the
        verdict :data:`NOT_TESTED` and the reason in ``reading``.
    """
    rows: list[dict[str, object]] = []
    for r in claims.itertuples():
        reading = ""
        if r.verdict == NOT_TESTABLE:
            reading = no_learning_reading(r.matched_gain, r.min_effect, "solve-rate gain")
        elif r.verdict in PLANNED and np.isfinite(r.seeds_to_decide):
            reading = seeds_reading(r)
        rows.append(
            {
                "decision": r.claim, "sequence": r.sequence, "a": r.a, "b": r.b,
                "measure": "task-A retention at matched solve-rate gain, a - b",
                "matched_gain": r.matched_gain,
                "value": r.difference, "low": r.low, "high": r.high, "n_a": r.n_a, "n_b": r.n_b,
                "reading": reading, "verdict": r.verdict,
            }
        )  # fmt: skip
    for r in transient.itertuples():
        reading = str(r.reading) + ("; task B not learned" if r.verdict == NOT_TESTABLE else "")
        rows.append(
            {
                "decision": "drop_recovers", "sequence": r.sequence, "a": r.algo, "b": "",
                "measure": "recovery of task-A retention: last third's mean minus first third's",
                "matched_gain": math.nan, "value": r.recovery, "low": r.recovery_low, "high": r.recovery_high,
                "n_a": r.n_seeds, "n_b": 0, "reading": reading, "verdict": r.verdict,
            }
        )  # fmt: skip
    have = {str(row["decision"]) for row in rows}
    missing = {
        "drop_recovers": "no run with a point after task B began",
        "larger_population_forgets_less": "no ES learner at two population sizes (conditions <algo>"
        f"{POP_SEP}<N>: algo.population_size)",
        "awd_keeps_retention": f"no ES learner with and without Anchored Weight Decay (conditions <algo>"
        f"{AWD_SUFFIX}: algo.l2_anchor=stage_start)",
    }
    for decision, why in missing.items():
        if decision not in have:
            rows.append(
                {
                    "decision": decision, "sequence": "", "a": "", "b": "", "measure": "",
                    "matched_gain": math.nan, "value": math.nan, "low": math.nan, "high": math.nan,
                    "n_a": 0, "n_b": 0, "reading": why, "verdict": in_force(NOT_TESTED),
                }
            )  # fmt: skip
    order = {d: k for k, d in enumerate(DECISIONS)}
    frame = pd.DataFrame(rows, columns=list(DECISION_COLUMNS))
    return frame.sort_values("decision", key=lambda c: c.map(order), kind="stable").reset_index(drop=True)


def lm_gain_paths(points: pd.DataFrame) -> list[GainPath]:
    """One :class:`~esbench.analysis.retention_measures.GainPath` per run
    (:func:`~esbench.analysis.retention_matched.path_of_run`): task-B solve-rate gain and task-A
    accuracy kept, as a ratio, at each point."""
    out: list[GainPath] = []
    for (algo, sequence, seed, _), run in points.groupby(["algo", "sequence", "seed", "run_id"], sort=True):
        run = run.sort_values("point")
        out.append(
            path_of_run(
                str(algo),
                str(sequence),
                int(seed),
                str(run["stage"].iloc[0]),
                run["point"].to_numpy(float),
                run["task_b_solve_rate"].to_numpy(float),
                run["task_a_accuracy"].to_numpy(float),
                run["task_b_solve_se"].to_numpy(float),
                "ratio",
            )
        )
    return out


def plot_lm_curves(points: pd.DataFrame, stem: Path, rng: np.random.Generator) -> list[Path]:
    """Task-B solve rate (the primary measure), task-B reward and task-A retention (rows) against
    completions and wall-clock (columns),
    per condition: the mean over seeds at each evaluation point every seed reached, with its 95%
    Student-t band (on the wall-clock axis a point sits at its mean time over seeds), and each
    seed's own curve, thin, to its own last point. Each condition has its colour of
    :func:`esbench.analysis.figures.condition_colors`, as in every retention figure; one legend
    below the panels."""
    measures = (
        ("task_b_solve_rate", "Task-B solve rate (held out)"),
        ("task_b_reward", "Task-B reward (with format score)"),
        ("task_a_retention", "Task-A accuracy kept"),
    )
    fig, axes = figures.new_figure(2 * len(measures), ncols=2)
    clocks = (
        ("completions", "Completions since task B began"),
        ("wall_clock_s", "Wall-clock since task B began (s)"),
    )
    colors = figures.condition_colors(points["algo"].astype(str).unique())
    with figures._style():
        for algo, group in points.groupby("algo", sort=True):
            color = colors[str(algo)]
            label = f"{condition_label(str(algo))} ({group['seed'].nunique()} seeds)"
            wide = {
                c: group.pivot_table(index="seed", columns="point", values=c) for c, _ in (*measures, *clocks)
            }
            n = min(w.shape[1] for w in wide.values())
            for i, (measure, _) in enumerate(measures):
                values = wide[measure].to_numpy(float)[:, :n]
                mean, low, high = mean_ci(values, rng)
                for k, (clock, _) in enumerate(clocks):
                    ax = axes[2 * i + k]
                    for _, run in group.sort_values("point", kind="stable").groupby("seed", sort=True):
                        ax.plot(run[clock].to_numpy(float), run[measure].to_numpy(float), color=color,
                                linewidth=0.6, alpha=0.45)  # fmt: skip
                    x = wide[clock].to_numpy(float)[:, :n].mean(axis=0)
                    ax.plot(x, mean, color=color, linewidth=1.6, label=label)
                    if values.shape[0] > 1:
                        ax.fill_between(x, low, high, color=color, alpha=0.2, linewidth=0)
        for i, (_, ylabel) in enumerate(measures):
            for k, (_, xlabel) in enumerate(clocks):
                figures.panel_text(axes[2 * i + k], xlabel=xlabel, ylabel=ylabel if k == 0 else None)
                figures.compact_ticks(axes[2 * i + k])
        figures.figure_legend(fig, axes, ncols=2)
    return figures.savefig(fig, stem)


def _seed_range(counts: pd.Series) -> str:
    """Caption text from per-condition seed counts: "3 seeds" or "3-5 seeds"."""
    lo, hi = (int(counts.min()), int(counts.max())) if len(counts) else (0, 0)
    return f"{lo} seeds" if lo == hi else f"{lo}-{hi} seeds"


def lm_section(runs: pd.DataFrame, root: Path, rng: np.random.Generator) -> tuple[list[str], list[str]]:
    """Write the LM section's tables and figure under ``root``; return (Markdown blocks, claim rows
    for the report's "Claims checked" table)."""
    points = lm_points(runs)
    if points.empty:
        return [
            "## Language model: task-B gain against task-A retention\n\nNo complete LM sequence run.\n"
        ], []
    body = [
        "## Language model: task-B gain against task-A retention\n\n"
        "In the model's own measures, on the trained stage (task B). The primary measure is the held-out "
        "task-B **solve rate** (exact solves): task-B gain is the solve rate minus its value when the stage "
        "began (the reward, which adds a format score for a well-formed answer, is shown but decides "
        "nothing). Task-A retention is the held-out task-A accuracy as a fraction of the task-A model's "
        "(1: all kept). A claim is decided only where the matched solve-rate gain exceeds its minimum "
        "effect, twice the standard error of one evaluation of the solve rate; below it the verdict is "
        '"not testable: no learning". Completions are the ruler\'s timesteps since task B began (decoded '
        "training sequences: one per ES member and prompt, one per GRPO sample). Mean over seeds, 95% "
        "Student-t intervals.\n"
    ]
    (root / "tables").mkdir(parents=True, exist_ok=True)
    points.to_csv(root / "tables" / "lm_points.csv", index=False)
    paths = lm_gain_paths(points)
    table = matched_gain_table(paths, rng)
    display = pd.DataFrame(matched_cells(table, "Max solve-rate gain", "Task-A retention at matched gain"))
    written = write_table(
        table,
        display,
        root / "tables" / "lm_matched_gain",
        caption="Task-A retention at matched task-B solve-rate gain",
        label="tab:lm_matched_gain",
        notes="Minimum effect: twice the standard error of one evaluation of the solve rate "
        "(sqrt(s (1 - s) / n) over the held-out prompts, pooled over every run's points); a learner whose "
        "max gain (the largest of its mean path over seeds) does not exceed it learned nothing to match "
        "(no value). Matched gain: the largest solve-rate gain every learner that learned reaches; each "
        "run's retention read where its learner's mean gain first reaches it (linear between points). "
        "Mean over seeds, 95% t intervals.",
    )
    body.append("### Retention at matched task-B gain\n\n" + table_block(written, root))
    claims = matched_gain_claims(paths, family_of, per_pair=True)
    if len(claims):
        display = pd.DataFrame(claim_cells(claims, "Retention A - B"))
        written = write_table(
            claims,
            display,
            root / "tables" / "lm_claims",
            caption="Comparisons at matched task-B solve-rate gain",
            label="tab:lm_claims",
            notes="Difference of mean task-A retention at the matched solve-rate gain of the two conditions "
            "compared (the largest gain both mean paths over seeds reach), Welch t 95% interval (independent "
            "seeds, unequal variances). ES forgets more: supported when the interval lies below 0, "
            "contradicted above. Larger population, AWD: supported when it lies above 0. Undecided "
            "when it holds 0. Not testable (no learning) when the matched gain does not exceed the minimum "
            "effect.",
        )
        body.append("### Comparisons at matched gain\n\n" + table_block(written, root))
    learned = learned_by_condition(table)
    transient = lm_transient(points, learned, rng)
    if len(transient):
        display = pd.DataFrame(
            {
                "Condition": [condition_label(a) for a in transient["algo"]],
                "Seeds": transient["n_seeds"].astype(str),
                **transient_cells(transient),
                "Reading": transient["reading"],
                "Verdict: the drop recovers": transient["verdict"],
            }
        )
        written = write_table(
            transient,
            display,
            root / "tables" / "lm_transient",
            caption="Task A's drop during task B: transient or permanent",
            label="tab:lm_transient",
            notes="Task-A retention during task B: " + DROP_WINDOWS_TEXT + ". " + DROP_READING_TEXT,
        )
        body.append("### Transient or permanent\n\n" + table_block(written, root))
    decisions = lm_decisions(claims, transient)
    display = pd.DataFrame(
        {
            "Decision": [RETENTION_CLAIMS[d].text for d in decisions["decision"]],
            "A": [condition_label(a) if a else "" for a in decisions["a"]],
            "B": [condition_label(b) if b else "" for b in decisions["b"]],
            "Measure": decisions["measure"],
            "Value [95% CI]": [
                interval_cell(v, lo, hi)
                if np.isfinite(v) and not (d != "drop_recovers" and w == NOT_TESTABLE)
                else ""
                for v, lo, hi, d, w in zip(
                    decisions["value"],
                    decisions["low"],
                    decisions["high"],
                    decisions["decision"],
                    decisions["verdict"],
                    strict=True,
                )
            ],
            "Verdict": [
                f"{v} ({r})" if r and r != v else v
                for v, r in zip(decisions["verdict"], decisions["reading"], strict=True)
            ],
        }
    )
    written = write_table(
        decisions,
        display,
        root / "tables" / "lm_decisions",
        caption="Both sides of the disagreement on the language model",
        label="tab:lm_decisions",
        notes="Supported or contradicted when the 95% interval excludes 0 on the claim's side or the "
        "other; undecided when it holds 0; not testable (no learning) when the learners' matched solve-rate "
        "gain does not exceed twice the standard error of one evaluation; not tested when the runs lack the "
        "conditions the decision compares.",
    )
    body.insert(
        1,
        "### Decisions\n\n*Does ES forget more than GRPO for the same task-B gain, and does the other "
        "side hold: does task A's drop recover later in task B, does a larger population forget less, "
        "does Anchored Weight Decay keep more?*\n\n" + table_block(written, root),
    )
    claim_rows: list[str] = []
    for r in decisions.itertuples():
        if r.verdict == NOT_TESTED:
            ours = str(r.reading)
        elif r.decision == "drop_recovers":
            ours = f"{condition_label(r.a)} ({r.n_a} seeds): recovery {interval_cell(r.value, r.low, r.high)}"
            ours += f" ({r.reading})" if r.reading != r.verdict else ""
        elif r.verdict == NOT_TESTABLE:
            ours = f"{condition_label(r.a)} against {condition_label(r.b)}: {r.reading}"
        else:
            ours = (
                f"solve-rate gain {fmt_num(r.matched_gain, 3)}: task-A retention {condition_label(r.a)} "
                f"({r.n_a} seeds) minus {condition_label(r.b)} ({r.n_b} seeds) "
                f"{interval_cell(r.value, r.low, r.high)}" + (f" ({r.reading})" if r.reading else "")
            )
        where = f"{r.sequence} (task-A accuracy kept, task-B solve rate)" if r.sequence else "language model"
        claim = RETENTION_CLAIMS[str(r.decision)]
        claim_rows.append(f"| {where}: {claim.text} | {claim.cited} | {ours} | {r.verdict} |")
    figure = plot_lm_curves(points, root / "figures" / "lm_curves", rng)
    seeds = points.groupby("algo")["seed"].nunique()
    caption = (
        "Task-B solve rate (the primary measure), task-B reward (with its format score) and task-A "
        "accuracy kept (divided by its value when task B began: 1 is nothing lost), "
        "against completions and wall-clock since task B began: mean over "
        f"seeds at the points every seed reached, 95% Student-t band ({_seed_range(seeds)} per "
        "condition); thin lines: each seed, to its own last point"
    )
    rel = [p.relative_to(root).as_posix() for p in figure]
    body.append(
        f"![{caption}]({rel[0]})\n\n*{caption}* ([PDF]({rel[1]}); data: [CSV](tables/lm_points.csv))\n"
    )
    body.append(_layer_drift_block(runs, root, rng))
    return body, claim_rows


def _layer_drift_block(runs: pd.DataFrame, root: Path, rng: np.random.Generator) -> str:
    """The "Parameter drift per layer" block: task B's own update per layer, conditions side by side."""
    head = "### Parameter drift per layer\n\n"
    per_run, missing = lm_layer_drift(runs)
    note = "".join(f"- {m}\n" for m in missing)
    if per_run.empty:
        return head + "No run has per-layer drift:\n\n" + note
    per_run.to_csv(root / "tables" / "lm_layer_drift_runs.csv", index=False)
    table = layer_drift_table(per_run, rng)
    algos = sorted(table["algo"].unique(), key=condition_label)
    groups = list(dict.fromkeys(table["group"]))  # model order: embedding, layers, head, all
    display = pd.DataFrame({"Layer": groups})
    for algo in algos:
        cells = table[table["algo"] == algo].set_index("group")
        display[condition_label(algo)] = [
            interval_cell(
                float(cells.loc[g, "rel_mean"]),
                float(cells.loc[g, "rel_low"]),
                float(cells.loc[g, "rel_high"]),
            )
            if g in cells.index
            else ""
            for g in groups
        ]
    written = write_table(
        table,
        display,
        root / "tables" / "lm_layer_drift",
        caption="Task B's own update per layer, relative to the task-A model",
        label="tab:lm_layer_drift",
        notes="Per transformer layer (its weight tensors pooled) and outside the layers: the Frobenius norm "
        "of the parameter change from the task-A model to the end of task B, divided by the layer's norm in "
        "the task-A model; all: the whole vector. Mean over seeds, 95% Student-t intervals. The CSV adds the "
        "Frobenius norm itself and the update sparsity (share of parameters that moved by at most 1e-6).",
    )
    text = (
        head
        + "*Where in the network did task B's training move the weights?*\n\n"
        + table_block(written, root)
    )
    return text + ("\nRuns without per-layer drift:\n\n" + note if note else "")
