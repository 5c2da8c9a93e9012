"""Build a reproduction report: tables + figures + ``REPORT.md`` beside the published numbers.

``build_report("table1", "results/runs", "paper")`` reads the runs of ``results/runs/table1/``
(the experiment name equals the recipe name) and writes ``paper/table1/``::

    REPORT.md           scale, hardware, versions, git commit, the paper's claims checked
    tables/*.md|tex|csv
    figures/*.png|pdf
    data/               what it is computed from (:mod:`esbench.analysis.report_data`)

A target that is a path to any results directory gets learning curves and a summary table.
The runs are read once and written to ``data/``; everything else is rendered from ``data/`` alone
(:func:`render_report`), so ``esbench report --check`` (:mod:`esbench.analysis.report_check`) can
recompute it. The report contains no timestamps: the same data and seed give the same bytes.
"""

from __future__ import annotations

import functools
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from esbench.analysis import figures
from esbench.analysis.claims.plan import Plan, PlanCheck, check_plan, plan_of_recipe
from esbench.analysis.claims.verdicts import plan_changed
from esbench.analysis.env_versions import env_versions_line
from esbench.analysis.es_family import (
    aggregate_table,
    family_table,
    normalized_final_scores,
    performance_profiles,
    write_aggregate_table,
    write_family_table,
)
from esbench.analysis.figures import algo_label
from esbench.analysis.frameskip import (
    FRAMESKIP_CI_METHOD,
    MARGIN,
    PAPER_CLAIM,
    frameskip_scores,
    frameskip_spread,
    insensitivity_verdict,
    plot_frameskip_curves,
    write_frameskip,
)
from esbench.analysis.lm_retention import is_lm, lm_section
from esbench.analysis.load import Results, _read_json, is_es, load_results, read_config, stopped_runs
from esbench.analysis.metrics.coverage import (
    iqm_coverage,
    simulated_coverage,
    time_ratio_coverage,
    time_to_score_coverage,
)
from esbench.analysis.metrics.intervals import mean_ci
from esbench.analysis.plan_notice import plan_notice
from esbench.analysis.population import claim_rows as population_claim_rows
from esbench.analysis.population import claim_table as population_claims
from esbench.analysis.population import plot_population, population_table, write_population_table
from esbench.analysis.projection import (
    CALIBRATION_FILE,
    Calibration,
    local_table,
    plot_projection,
    projection_markdown,
)
from esbench.analysis.report_data import (
    CALIBRATION_DATA_FILE,
    DATA_DIR,
    Manifest,
    figure_versions,
    is_report_data,
    read_manifest,
    read_report_data,
    restamp_manifest,
    write_report_data,
)
from esbench.analysis.retention import retention_table, write_retention_table
from esbench.analysis.retention_behaviour import behaviour_table, write_behaviour_table
from esbench.analysis.retention_decisions import matched_gain_section
from esbench.analysis.retention_report import (
    RetentionData,
    analyse_retention,
    budget_table,
    scan_sequence_runs,
    wandb_summary,
)
from esbench.analysis.scaling import (
    EFFICIENCY_CI_METHOD,
    Efficiency,
    efficiency_interval,
    scaling_table,
    write_scaling,
)
from esbench.analysis.stats import check_seeds, coverage_sentence, partial_keys
from esbench.analysis.table1 import (
    claim_rows,
    claims_markdown,
    claims_table,
    load_mujoco_reference,
    table1,
    table1_paper,
    write_table1,
    write_table1_paper,
)
from esbench.analysis.table2 import (
    count_outcomes,
    eval_label,
    fmt_hns,
    load_atari_reference,
    median_hns,
    table2,
    win_share_interval,
    write_table2,
)
from esbench.analysis.tables import fmt_num, table_block, write_table
from esbench.analysis.time_to_score import coverage_text, time_to_common_score, write_time_to_score
from esbench.analysis.verdicts import (
    TIME_CI_METHOD,
    UNDECIDED,
    Verdict,
    interval_verdict,
)
from esbench.tracking.schema import (
    CONFIG_FILE,
    ENV_FILE,
    METRICS_FILE,
    PLAN_FILE,
    PROBES_FILE,
    SNAPSHOT_DRIFT_FILE,
    SNAPSHOTS_FILE,
    SUMMARY_FILE,
)
from esbench.tracking.store import code_revision
from esbench.utils.io import atomic_write_json, atomic_write_text

#: Named targets (each one a recipe under experiments/ and an experiment under results/runs/).
TARGETS: tuple[str, ...] = (
    "table1", "table2", "frameskip", "scaling", "curves", "es_family", "retention", "lm_retention",
    "population",
)  # fmt: skip
#: Targets whose report is another target's kind, on their own runs (``lm_retention``: the
#: retention report of a language model's sequence runs, ``results/runs/lm_retention``).
_KIND_OF: dict[str, str] = {"lm_retention": "retention"}

#: Hard MuJoCo tasks of the paper's "< 10x TRPO's timesteps" claim.
HARD_MUJOCO: tuple[str, ...] = ("Hopper-v5", "Walker2d-v5")

#: Efficiency (speedup / ideal) at or above which a speedup is called near-linear.
NEAR_LINEAR = 0.8

REPORT_FILE = "REPORT.md"
#: Flat W&B summary of a report (``esbench.analysis.wandb_report`` logs it as the run's summary).
WANDB_SUMMARY_FILE = "wandb_summary.json"


class UnknownTargetError(ValueError):
    """The report target is neither a named target nor an existing results directory."""


def valid_targets_message(target: str) -> str:
    """One line naming the bad target and listing the valid ones."""
    return (
        f"unknown report target {target!r}: valid targets are {', '.join(TARGETS)}, "
        "or a path to a results directory"
    )


@dataclass
class Section:
    """What a target contributes to the report.

    Attributes:
        claims: Markdown rows ``| claim | paper | ours | verdict |`` (without the header).
        body: Markdown blocks (tables, figures, notes), in order.
    """

    claims: list[str] = field(default_factory=list)
    body: list[str] = field(default_factory=list)


def resolve_target(target: str, results_dir: str | Path) -> tuple[str, Path, str]:
    """(report name, runs directory, kind) of a target.

    A named target's runs are ``results_dir/<target>`` (``results_dir=results/runs``), or
    ``results_dir`` itself when it already is that directory: named after the target
    (``results_dir=results/runs/retention``), or holding run directories and no ``<target>``
    subdirectory (a copy of one experiment's runs under another name).

    Raises:
        UnknownTargetError: Not a named target, and not an existing directory.
    """
    if target in TARGETS:
        root = Path(results_dir)
        kind = _KIND_OF.get(target, target)
        if root.name == target or (not (root / target).is_dir() and _holds_runs(root)):
            return target, root, kind
        return target, root / target, kind
    path = Path(target)
    if path.is_dir():
        name = path.resolve().name or "results"
        return (f"{name}_curves" if name in TARGETS else name), path, "path"
    raise UnknownTargetError(valid_targets_message(target))


def _holds_runs(path: Path) -> bool:
    """Whether ``path`` directly holds run directories (a subdirectory with ``config.yaml``)."""
    return path.is_dir() and any((child / CONFIG_FILE).is_file() for child in path.iterdir())


def _rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def _figure_md(paths: Sequence[Path], root: Path, caption: str) -> str:
    png, pdf = paths
    return f"![{caption}]({_rel(png, root)})\n\n*{caption}* ([PDF]({_rel(pdf, root)}))\n"


def _curve_figures(
    results: Results, root: Path, rng: np.random.Generator, series: Sequence[str] = ("algo",)
) -> list[str]:
    out = []
    for x, what in (("timesteps", "timesteps"), ("wall_clock_s", "wall-clock seconds")):
        if results.curves[x].notna().any():
            paths = figures.plot_learning_curves(
                results.curves,
                root / "figures" / f"curves_{x}",
                x=x,
                rng=rng,
                series=series,
                stopped=stopped_runs(results),
            )
            caption = (
                f"Evaluation return against {what}: mean over seeds with its 95% Student-t band "
                f"({_seeds_per_condition(results.complete, ['algo', 'env_id', *series[1:]])})"
            )
            if x == "wall_clock_s":
                caption += (
                    "; thin lines: each seed, to its own end. The mean and its band are drawn only "
                    "as far as every seed of the condition ran (the fastest seed's end); past it the "
                    "thin lines alone go on, so no seed is averaged where it has no data"
                )
            if results.curves["env_id"].nunique() > 1 and series == ("algo",):
                caption += (
                    ". Last panel: interquartile mean (IQM) over tasks of the normalized return, "
                    "(R - R_min) / (R_max - R_min) with R_min and R_max the lowest and highest "
                    "evaluation return any algorithm reached on the task (0 and 1), against the "
                    f"fraction of {_IQM_SPAN[x]}; stratified bootstrap band, "
                    + _iqm_coverage_text(results.complete, int(results.curves["env_id"].nunique()))
                )
            if stopped_runs(results):
                caption += (
                    "; a triangle marks each run that stopped at its target score "
                    "(budget.stop_at_return, confirmed on fresh evaluation seeds): nothing is drawn "
                    "or averaged for it past its stop, where the mean is over the runs still training"
                )
            out.append(_figure_md(paths, root, caption))
    return out


#: The x axis of the IQM panel: what its 0 to 1 is a fraction of, per x column.
_IQM_SPAN: dict[str, str] = {
    "timesteps": "the timesteps every seed of the algorithm ran on the task (its budget, unless a "
    "run stopped early)",
    "frames": "the frames every seed of the algorithm ran on the task (its budget, unless a run "
    "stopped early)",
    "wall_clock_s": "the seconds every seed of the algorithm ran on the task (up to its fastest seed's end)",
}


@functools.lru_cache(maxsize=8)
def _iqm_coverage(n_seeds: int, n_tasks: int) -> float:
    """:func:`~esbench.analysis.metrics.coverage.iqm_coverage`, once per report build (two figures ask)."""
    return iqm_coverage(n_seeds, n_tasks)


def _iqm_coverage_text(runs: pd.DataFrame, n_tasks: int) -> str:
    """The IQM band's nominal level and its coverage simulated at the report's fewest seeds per
    condition and its number of tasks (:func:`esbench.analysis.metrics.coverage.iqm_coverage`, 200
    data sets)."""
    counts = _seed_counts(runs, ["algo", "env_id"])
    n_seeds = int(counts.min()) if len(counts) else 0
    if n_seeds < 2:
        return "95% nominal"
    coverage = _iqm_coverage(n_seeds, n_tasks)
    return (
        f"95% nominal; measured coverage at {n_seeds} seeds x {n_tasks} tasks: {100 * coverage:.0f}% "
        "on 200 simulated data sets"
    )


def _seed_counts(runs: pd.DataFrame, by: Sequence[str]) -> pd.Series:
    """Complete runs per condition of ``by`` (the columns of it that ``runs`` has)."""
    by = [c for c in by if c in runs.columns]
    return runs.groupby(by, sort=True).size() if len(runs) and by else pd.Series([], dtype=int)


def _seeds_per_condition(runs: pd.DataFrame, by: Sequence[str]) -> str:
    """Caption text for the seeds behind each curve: the complete runs per condition of ``by``,
    as "n = 3 seeds per condition" (or "n = 3 to 5 seeds per condition")."""
    counts = _seed_counts(runs, by)
    if counts.empty:
        return "no complete run"
    lo, hi = int(counts.min()), int(counts.max())
    return f"n = {lo} seeds per condition" if lo == hi else f"n = {lo} to {hi} seeds per condition"


def _final_scores(results: Results, runs: pd.DataFrame, stopped: set[object]) -> np.ndarray:
    """Each run's final score: its last evaluation, or for a run that stopped at its target, the
    mean of the confirmation that stopped it (fresh seeds; the evaluation that triggered the stop
    was selected for being at or above the target, so it overstates the policy)."""
    scores = runs["final_eval_return"].to_numpy(float).copy()
    curves = results.curves
    if not stopped or "confirm_return_mean" not in curves.columns:
        return scores
    confirmed = curves.dropna(subset=["confirm_return_mean"]).sort_values("timesteps", kind="stable")
    last = confirmed.groupby("run_id", sort=True)["confirm_return_mean"].last()
    for i, run_id in enumerate(runs["run_id"]):
        if run_id in stopped and run_id in last.index:
            scores[i] = float(last[run_id])
    return scores


def _final_stochastic(results: Results, runs: pd.DataFrame) -> np.ndarray:
    """Each run's last stochastic evaluation (``eval.also_stochastic``: the policy sampled, or ES
    with its training action noise), NaN for a run without one."""
    curves = results.curves
    out = np.full(len(runs), np.nan)
    if "eval_stochastic_return_mean" not in curves.columns:
        return out
    rows = curves.dropna(subset=["eval_stochastic_return_mean"]).sort_values("timesteps", kind="stable")
    last = rows.groupby("run_id", sort=True)["eval_stochastic_return_mean"].last()
    for i, run_id in enumerate(runs["run_id"]):
        if run_id in last.index:
            out[i] = float(last[run_id])
    return out


def _summary_table(
    results: Results, root: Path, rng: np.random.Generator, by: Sequence[str], partial: set
) -> str:
    """Per-condition summary of the complete runs (seeds, final score with CI, budget, speed), with
    how many runs stopped at their target score (their final score is their confirmation's:
    :func:`_final_scores`)."""
    stopped = stopped_runs(results)
    rows = []
    differs = False  # a stochastic evaluation that differs from the deterministic one somewhere
    for key, g in results.complete.groupby(list(by), sort=True):
        key = key if isinstance(key, tuple) else (key,)
        finals = _final_scores(results, g, stopped)
        mean, low, high = mean_ci(finals, rng)
        noisy = _final_stochastic(results, g)
        extra = {}
        if np.isfinite(noisy).all():
            s_mean, s_low, s_high = mean_ci(noisy, rng)
            extra = {"stochastic_return": float(s_mean), "stochastic_low": float(s_low),
                     "stochastic_high": float(s_high)}  # fmt: skip
            differs = differs or not np.array_equal(noisy, g["final_eval_return"].to_numpy(float))
        rows.append(
            {
                **dict(zip(by, key, strict=True)),
                "n_seeds": len(g),
                "final_eval_return": float(mean),
                "ci_low": float(low),
                "ci_high": float(high),
                **extra,
                "total_timesteps": float(g["total_timesteps"].astype(float).mean()),
                "wall_clock_s": float(g["wall_clock_s"].astype(float).mean()),
                "steps_per_s": float(g["steps_per_s"].astype(float).mean()),
                "n_stopped": int(g["run_id"].isin(stopped).sum()),
                "partial": tuple(key) in partial,
            }
        )
    data = pd.DataFrame(rows)
    display = pd.DataFrame(
        {
            **{
                c: [
                    f"{v}{' *' if p and c == by[-1] else ''}"
                    for v, p in zip(data[c], data["partial"], strict=True)
                ]
                for c in by
            },
            "Seeds": data["n_seeds"].astype(str),
            "Final eval return [95% CI]": [
                f"{fmt_num(m, 4)} [{fmt_num(lo, 3)}, {fmt_num(hi, 3)}]" if np.isfinite(lo) else fmt_num(m, 4)
                for m, lo, hi in zip(data["final_eval_return"], data["ci_low"], data["ci_high"], strict=True)
            ],
            "Timesteps": [fmt_num(v) for v in data["total_timesteps"]],
            "Wall-clock (s)": [fmt_num(v) for v in data["wall_clock_s"]],
            "Timesteps/s": [fmt_num(v) for v in data["steps_per_s"]],
        }
    )
    notes = "Mean over seeds of each run's final evaluation (deterministic policy, fixed evaluation seeds)."
    if differs:
        display["Final stochastic return [95% CI]"] = [
            "—" if not np.isfinite(m) else
            f"{fmt_num(m, 4)} [{fmt_num(lo, 3)}, {fmt_num(hi, 3)}]" if np.isfinite(lo) else fmt_num(m, 4)
            for m, lo, hi in zip(data["stochastic_return"], data["stochastic_low"], data["stochastic_high"],
                                 strict=True)
        ]  # fmt: skip
        notes += (
            " Final stochastic return: the same seeds with the policy acting stochastically "
            "(eval.also_stochastic: RL samples its policy, as the paper's TRPO scores were measured; "
            "ES adds its training action noise, algo.action_noise_std), shown where it differs."
        )
    else:
        data = data.drop(columns=[c for c in ("stochastic_return", "stochastic_low", "stochastic_high")
                                  if c in data.columns])  # fmt: skip
    if stopped:
        display["Stopped at target"] = [
            f"{k}/{n}" for k, n in zip(data["n_stopped"], data["n_seeds"], strict=True)
        ]
        notes += (
            " Stopped at target: runs that ended at their first evaluation at or above "
            "budget.stop_at_return that a confirmation on fresh evaluation seeds (at least 10 "
            "episodes) reached too (reached, not cut short); their timesteps are the stopping point "
            "and their final score is the confirmation's mean."
        )
    if data["partial"].any():
        notes += " *: partial results (missing runs or fewer seeds than other conditions)."
    paths = write_table(
        data,
        display,
        root / "tables" / "summary",
        caption="Final evaluation return, budget and speed per condition",
        label="tab:summary",
        notes=notes,
    )
    return table_block(paths, root)


def _verdict_text(v: Verdict) -> str:
    return v.word + (f": {v.decide}" if v.decide else "")


def _time_coverage_text(n_seeds: int) -> str:
    """Measured coverage of the time-to-target interval and of a ratio of two at ``n_seeds`` runs a
    side, with none and 40% of runs censored (docs/statistics.md has the full table)."""
    if n_seeds < 2:
        return f"none (with {n_seeds} seed{'' if n_seeds == 1 else 's'} there is no interval)"
    parts = []
    for what, measure in (("the time", time_to_score_coverage), ("a ratio of two", time_ratio_coverage)):
        runs = [measure(n_seeds, 0.3, share, seed=n_seeds) for share in (0.0, 0.4)]
        cover = sorted(100 * r[0] for r in runs)
        low, high = f"{cover[0]:.1f}", f"{cover[-1]:.1f}"
        tail = max(100 * max(r[1], r[2]) for r in runs)
        span = low if low == high else f"{low}-{high}"
        parts.append(f"{what} {span}% (each end misses at most {tail:.1f}%)")
    return f"at {n_seeds} runs a side, 0-40% censored, 2,000 simulated data sets: " + "; ".join(parts)


def _section_table1(results: Results, root: Path, rng: np.random.Generator, partial: set) -> Section:
    sec = Section()
    stopped = stopped_runs(results)
    paper = table1_paper(results.curves, load_mujoco_reference(), rng, stopped=stopped, partial=partial)
    table = table1(results.curves, load_mujoco_reference(), partial=partial, rng=rng, stopped=stopped)
    if not paper.empty:
        claims = claims_table(paper, table)
        seeds = int(paper["n_seeds_es"].min())
        sec.body.append(
            "## Claims in the paper's words\n\n"
            "Each claim is the paper's own sentence (results/reference/salimans2017_claims.csv) with two "
            "separate answers: does the claim hold here (against the paper's TRPO curve and, where we "
            "ran TRPO, against ours), and did we reproduce the paper's number (our ratio's interval "
            "contains the paper's). Each answer is supported, contradicted or undecided"
            + (
                " (or not tested, where no run covers the claim's tasks)"
                if (claims["holds_paper_trpo"] == "").any()
                else ""
            )
            + ".\n\n"
            + claims_markdown(claims)
            + f"\nTimes to a target: {TIME_CI_METHOD}, 95%; over our TRPO both sides' uncertainty "
            f"(each side at sqrt(0.95)). Measured coverage {_time_coverage_text(seeds)}.\n"
        )
        sec.claims += claim_rows(claims)
        sec.body.append(
            "## Table 1 against the paper's own TRPO curve\n\n"
            "*Question answered: does esbench's ES behave like the paper's ES?* The paper publishes "
            "TRPO's target score at each fraction of its learning progress and the timesteps its "
            "TRPO and its ES needed to reach it. Here our ES is timed to those same scores, and the "
            "ratio divides by the paper's TRPO timesteps, so no 2017 TRPO has to be re-run.\n\n"
            + table_block(write_table1_paper(paper, root / "tables"), root)
        )
        paths = figures.plot_ratio_intervals(
            paper,
            root / "figures" / "table1_headline",
            "Our ES's timesteps / the paper's TRPO timesteps to the same score (log)",
            hard=HARD_MUJOCO,
        )
        sec.body.append(
            _figure_md(
                paths,
                root,
                "The decisive result: per task, our ES's timesteps to the paper's TRPO score at p of "
                "TRPO's learning progress (target(p) = init + p (final - init) of the paper's TRPO curve, "
                "supplementary Table 3), divided by the timesteps the paper's TRPO needed; dots and bars: "
                "our ratio (Kaplan-Meier median over the paper's TRPO timesteps) and its 95% interval; "
                "black crosses: the paper's own ES/TRPO ratio; right-pointing triangles: never reached "
                "by half the runs within the budget (drawn at the longest censored run / TRPO timesteps); a "
                "left-pointing triangle on the left edge: a ratio of 0 (ES at the target at its first "
                "evaluation); dashed line 10x (the paper's bound on the hard tasks, marked hard), dotted "
                'line 1x, dash-dotted line 1/3x (the paper\'s "up to 3x better" on the simple tasks); '
                f"{_seed_count_text(paper['n_seeds_es'], 'ES')} per task",
            )
        )
    if table.empty:
        sec.body.append(
            "No environment has both ES and TRPO runs: the comparison with our TRPO is not computed.\n"
        )
    else:
        sec.body.append(
            "## Table 1 against a modern tuned TRPO\n\n"
            "*Question answered: how does ES compare with today's tuned TRPO on the same budget?* Our "
            "TRPO (sb3-contrib with rl-baselines3-zoo's tuned settings) is a stronger baseline than "
            "the paper's, so this ratio measures the baseline as much as ES; targets come from our "
            "TRPO's mean curve.\n\n" + table_block(write_table1(table, root / "tables"), root)
        )
        paths = figures.plot_data_efficiency(table, root / "figures" / "data_efficiency", hard=HARD_MUJOCO)
        sec.body.append(
            _figure_md(
                paths,
                root,
                "ES timesteps / our TRPO's timesteps to reach p of our TRPO's learning progress "
                "(target(p) = init + p (final - init) of our TRPO's mean curve), per task, with 95% "
                "intervals over both sides' seeds; black crosses: the paper's ratios (its ES over its TRPO); "
                "triangles: never reached (lower bound); dashed line 10x, dotted 1x, dash-dotted 1/3x "
                f"(as in the figure above); {_seed_count_text(table['n_seeds_es'], 'ES')} and "
                f"{_seed_count_text(table['n_seeds_rl'], 'TRPO')} per task",
            )
        )
    sec.body += _section_time_to_score(results, root).body
    return sec


def _seed_count_text(counts: pd.Series, side: str) -> str:
    """Caption text for a table's seed-count column: "n = 5 ES seeds" (or "n = 3 to 5 ES seeds")."""
    values = pd.to_numeric(counts, errors="coerce").dropna()
    if values.empty:
        return f"no {side} seed"
    lo, hi = int(values.min()), int(values.max())
    return f"n = {lo} {side} seeds" if lo == hi else f"n = {lo} to {hi} {side} seeds"


def _section_table2(results: Results, root: Path, rng: np.random.Generator, partial: set) -> Section:
    sec = Section()
    complete = results.complete
    labels = [eval_label(results.configs.get(str(i))) for i in complete["run_id"]]
    table = table2(complete.assign(eval_label=labels), load_atari_reference(), rng=rng, partial=partial)
    sec.body.append(
        "## Table 2: Atari final scores\n\n"
        "*Question answered: at our budget, does ES end up with a higher score than the synchronous "
        "A3C (A2C) on as many games as the paper's ES did against its A3C (23 of 51)?* Scores are each "
        "side's final evaluation, beside the published DQN, A3C FF and ES FF scores; our budgets are "
        "far below the paper's (ES 1B frames, A3C 320M), so this compares the two at an equal, "
        "small budget, not our ES with the paper's.\n\n"
        + table_block(write_table2(table, root / "tables"), root)
    )
    med = median_hns(table)
    below = {
        side: [str(r.game) for r in table.itertuples() if getattr(r, f"{col}_hns") < 0]
        for side, col in (("ES", "es_score"), ("A2C", "rl_score"))
    }
    sec.body.append(
        f"Median human-normalized score (HNS): ES (ours) {fmt_hns(med['es_score_hns'])}, "
        f"A2C (ours) {fmt_hns(med['rl_score_hns'])}; paper, on these games: ES FF "
        f"{fmt_hns(med['paper_es_hns'])}, A3C FF {fmt_hns(med['paper_a3c_hns'])}. Below random play "
        "(HNS < 0: a lower score than a uniformly random agent's): "
        + "; ".join(f"{side} on {', '.join(games) or 'no game'}" for side, games in below.items())
        + ".\n"
    )
    scored = table.dropna(subset=["paper_es", "paper_a3c"])
    pw, pl, _ = count_outcomes(scored["paper_es"].to_numpy(), scored["paper_a3c"].to_numpy())
    for es_algo in sorted({str(a) for a in table["es_algo"] if a}):
        sec.claims.append(_table2_claim(results.complete, es_algo, pw, pl))
    return sec


def _table2_claim(complete: pd.DataFrame, es_algo: str, pw: int, pl: int) -> str:
    """The win-count claim: ES wins on the same side of half the games as the paper's ES did
    against A3C on these games. Each of our games is decided by the Welch interval of its
    difference (a tie or an undecided game is neither a win nor a loss), and the claim by the
    bounds on the share won over every way the undecided games could go
    (:func:`~esbench.analysis.table2.win_share_interval`)."""
    ws = win_share_interval(complete, es_algo)
    pn = pw + pl
    if ws.n_games == 0 or pn == 0:
        verdict = Verdict(UNDECIDED, "needs games with both ES and A2C runs (and a published score)")
        interval = ""
    else:
        at_least = pw / pn >= 0.5  # the paper's side of half the games
        verdict = interval_verdict(ws.share, ws.low, ws.high, 0.5, at_least, ws.min_seeds, "seeds per game")
        interval = (
            f"; share of the games won {fmt_num(ws.low, 3)} to {fmt_num(ws.high, 3)} over the ways "
            "the undecided games could go"
            if np.isfinite(ws.low)
            else ""
        )
    side = "at least" if pn and pw / pn >= 0.5 else "fewer than"
    who = f" ({algo_label(es_algo)})" if es_algo != "openai_es" else ""

    def n(k: int, word: str) -> str:
        return f"{k} {word}{'' if k == 1 else ('es' if word.endswith('s') else 's')}"

    return (
        f"| ES beats A3C on 23 of 51 games, loses on 28 (Sec. 4.2, Table 2){who} | {n(pw, 'win')}, "
        f"{n(pl, 'loss')} on these games | {n(ws.wins, 'win')}, {n(ws.losses, 'loss')}, {n(ws.ties, 'tie')}, "
        f"{ws.undecided} undecided of {ws.n_games}{interval} "
        f"(ES vs A2C, each game by the 95% Welch interval of its difference; fewest seeds on a side "
        f"of a game: {ws.min_seeds}) | "
        f"{_verdict_text(verdict)} (claim: ES wins on {side} half the games not tied, as the paper's did) |"
    )


def _section_frameskip(results: Results, root: Path, rng: np.random.Generator, partial: set) -> Section:
    sec = Section()
    scores = frameskip_scores(results.complete, rng, partial=partial)
    spread = frameskip_spread(scores)
    sec.body.append(
        "## Frame-skip sensitivity\n\n" + table_block(write_frameskip(scores, spread, root / "tables"), root)
    )
    paths = figures.plot_frameskip(scores, spread, root / "figures" / "frameskip")
    sec.body.append(
        _figure_md(paths, root, "Final score against frame-skip (95% CI over seeds) and its spread")
    )
    if results.curves["frames"].notna().any():
        paths = plot_frameskip_curves(results.curves, root / "figures" / "frameskip_curves")
        sec.body.append(
            _figure_md(
                paths,
                root,
                "Learning curves per frame skip, drawn like the paper's Figure 2: evaluation score "
                "(mean over seeds, 95% Student-t band) against weight updates for ES, against emulator "
                "frames for the baseline",
            )
        )
    reference = load_atari_reference()
    span = dict(zip(reference["gymnasium_id"], reference["human"] - reference["random"], strict=True))
    verdicts = []
    for (env_id, algo), runs in results.complete.groupby(["env_id", "algo"], sort=True):
        curves = results.curves[(results.curves["env_id"] == env_id) & (results.curves["algo"] == algo)]
        margin = MARGIN * abs(float(span.get(env_id, float("nan"))))
        verdicts.append((str(env_id), str(algo), insensitivity_verdict(runs, curves, margin)))
    for env_id, algo, fv in verdicts:
        if not is_es(algo):
            continue
        others = "; ".join(
            f"{algo_label(a)} for contrast: {v.text()} ({v.verdict.word})"
            for e, a, v in verdicts
            if e == env_id and not is_es(a)
        )
        claim = f"{env_id.split('/')[-1]}: {algo_label(algo)} learns about equally at every frame skip"
        ours = f"{fv.text()}" + (f"; {others}" if others else "")
        sec.claims.append(f"| {claim} | {PAPER_CLAIM} | {ours} | {_verdict_text(fv.verdict)} |")
    if verdicts:
        sec.body.append(
            "The frame-skip claim is decided from intervals over seeds: "
            + FRAMESKIP_CI_METHOD
            + f"; supported when every pair lies within ±{fmt_num(100 * MARGIN, 2)}% of the game's human - "
            'random score span (Wang et al. 2016; the paper states no margin for "about equally", so '
            "this one is ours), contradicted when a pair lies wholly outside it, undecided otherwise. "
            "Final scores are compared at equal emulator frames.\n"
        )
    return sec


def _section_scaling(results: Results, root: Path, rng: np.random.Generator, partial: set) -> Section:
    sec = Section()
    table = scaling_table(results.complete, results.curves, partial=partial)
    sec.body.append("## Scaling with workers\n\n" + table_block(write_scaling(table, root / "tables"), root))
    paths = figures.plot_scaling(table, root / "figures" / "scaling")
    sec.body.append(_figure_md(paths, root, "Speedup against workers; dotted: ideal linear speedup"))
    paths = figures.plot_learning_curves(
        results.curves,
        root / "figures" / "scaling_curves",
        x="wall_clock_s",
        rng=rng,
        series=("algo", "cluster", "workers"),
    )
    sec.body.append(
        _figure_md(
            paths,
            root,
            "Learning curves per worker count against wall-clock seconds: mean over seeds with its 95% "
            "Student-t band, drawn as far as every seed of the condition ran; thin lines: each seed, to "
            "its own end",
        )
    )
    cores = sorted({int(i["cpu_count"]) for i in results.env_info.values() if i.get("cpu_count")})
    n_used = []
    for (algo, env_id, cluster), g in table.groupby(["algo", "env_id", "cluster"], sort=True):
        if not is_es(str(algo)) or len(g) < 2:
            continue
        g = g.sort_values("workers")
        fits = g[g["workers"] <= cores[-1]] if cores else g  # the verdict: workers that have a core
        top = (fits if len(fits) >= 2 else g).iloc[-1]
        base = g.iloc[0]
        eff = efficiency_interval(
            _runs_at(results.complete, algo, env_id, cluster, base["workers"]),
            _runs_at(results.complete, algo, env_id, cluster, top["workers"]),
            results.curves,
            float(top["ideal_speedup"]),
            float(top["threshold"]) if np.isfinite(top["efficiency_time"]) else None,
        )
        n_used.append(eff.n_seeds)
        sec.claims.append(_scaling_claim(g, base, top, eff, cores))
    if n_used:
        sec.body.append(_efficiency_note(min(n_used)))
    sec.body += _projection(results, table, root)
    return sec


#: The paper's scaling result (Sec. 4.3, Fig. 1), from results/reference/README.md.
PAPER_SCALING = (
    "Sec. 4.3, Fig. 1: 3D Humanoid, median time to 6000 over 7 runs: 657 min on 18 cores, 10 min on 1,440"
)
#: Its efficiency per core: (657 / 10) / (1,440 / 18).
PAPER_EFFICIENCY = (657.0 / 10.0) / (1440.0 / 18.0)


def _runs_at(complete: pd.DataFrame, algo: str, env_id: str, cluster: str, workers: object) -> pd.DataFrame:
    """Complete runs of one algorithm, environment and cluster kind at ``workers``."""
    key = (complete["algo"] == algo) & (complete["env_id"] == env_id) & (complete["workers"] == workers)
    if "cluster" in complete.columns:
        key &= complete["cluster"] == cluster
    return complete[key]


def _scaling_claim(
    g: pd.DataFrame, base: pd.Series, top: pd.Series, eff: Efficiency, cores: list[int]
) -> str:
    """The claim row: does near-linear speedup hold over the workers measured here, and did we
    reproduce the paper's own efficiency (an 80-fold range of cores this machine cannot reach)."""
    algo, cluster = str(g["algo"].iloc[0]), str(g["cluster"].iloc[0])
    verdict = interval_verdict(
        eff.point, eff.low, eff.high, NEAR_LINEAR, True, eff.n_seeds, "seeds per worker count"
    )
    w0, w1 = int(base["workers"]), int(top["workers"])
    interval = f" [95% CI {fmt_num(eff.low, 2)}, {fmt_num(eff.high, 2)}]" if np.isfinite(eff.low) else ""
    over = ""
    if cores and g["workers"].iloc[-1] > cores[-1]:
        last = g.iloc[-1]
        over = (
            f"; oversubscribed, {int(last['workers'])} workers on {cores[-1]} cores: "
            f"{fmt_num(last['speedup_throughput'], 3)}x throughput"
        )
    pairing = "seeds paired" if eff.paired else "seeds not paired"
    ours = (
        f"{fmt_num(top['speedup_time'], 3)}x (median time to threshold), "
        f"{fmt_num(top['speedup_throughput'], 3)}x (throughput) at {w1} vs {w0} workers; ideal "
        f"{fmt_num(top['ideal_speedup'], 3)}x; efficiency per worker ({eff.basis}, geometric mean over "
        f"{eff.n_seeds} {pairing}) {fmt_num(eff.point, 2)}{interval}{over}"
    )
    claim = (
        f"{g['env_name'].iloc[0]}: ES speeds up linearly with cores ({algo_label(algo)}, {cluster}; "
        f"here {w0} to {w1} workers)"
    )
    factor = w1 / w0
    reproduced = (
        f"reproduces the paper's number (efficiency {fmt_num(PAPER_EFFICIENCY, 2)} over 18 to 1,440 cores, "
        f"80x): undecided, not measured: {fmt_num(factor, 3)}x the workers here; see the projection"
    )
    holds = (
        f"holds here (near-linear: efficiency >= {NEAR_LINEAR} over {w0} to {w1} workers): "
        f"{_verdict_text(verdict)}"
    )
    return f"| {claim} | {PAPER_SCALING} | {ours} | {holds}; {reproduced} |"


def _efficiency_note(n_seeds: int) -> str:
    """The interval method of the efficiency claims, the seeds, and its measured coverage."""
    if n_seeds < 2:
        return (
            f"Efficiency intervals: {EFFICIENCY_CI_METHOD}; with {n_seeds} seed per worker count there is "
            "no interval, so the scaling claim is not decided.\n"
        )
    normal = simulated_coverage("t", n_seeds, "normal")
    skewed = simulated_coverage("t", n_seeds, "lognormal")
    return (
        f"Efficiency intervals: {EFFICIENCY_CI_METHOD} (95% nominal), {n_seeds} seeds; measured coverage at "
        f"{n_seeds} seeds on 2,000 simulated data sets: {100 * normal:.1f}% when the log efficiencies are "
        f"normal, {100 * skewed:.1f}% when they are skewed (lognormal, sigma 1).\n"
    )


def _projection(results: Results, table: pd.DataFrame, root: Path) -> list[str]:
    """The scaling projection (:mod:`esbench.analysis.projection`), when this machine's costs have
    been measured (``esbench bench projection``); otherwise how to get it."""
    cal = Calibration.load(root / DATA_DIR / CALIBRATION_DATA_FILE)
    if cal is None:
        return [
            "Measured up to the workers actually run. The projection past this machine's cores needs "
            f"its measured costs: run `esbench bench projection` (writes `{CALIBRATION_FILE}`), then "
            "this report again.\n"
        ]
    local = local_table(cal, table, results.curves)
    paths = plot_projection(cal, local, root / "figures" / "scaling_projection")
    caption = (
        "Left: minutes to 6000 on Humanoid against cores, model (calibrated on the paper's 18-core point) "
        "and the paper's points. Right: this machine, measured and predicted seconds to the threshold"
    )
    return [projection_markdown(cal, local), _figure_md(paths, root, caption)]


def _section_time_to_score(results: Results, root: Path) -> Section:
    """The wall-clock comparison: time each algorithm needs to reach the score all of them reach."""
    sec = Section()
    table = time_to_common_score(results.curves, stopped=stopped_runs(results))
    if table.empty:
        return sec
    sec.body.append(
        "## Time to a common score\n\n"
        "The paper's wall-clock argument: ES takes more timesteps than TRPO but, spread over "
        "workers, less time. Per environment, the score every improving algorithm's mean curve "
        "reaches, and the Kaplan-Meier median over seeds of the timesteps and seconds to first "
        "reach it (a run that never did censored at its budget), with its order-statistic "
        f"interval: {coverage_text(table)}. An algorithm that "
        "never evaluated above its timestep-0 score does not set the common score (listed as did "
        "not improve).\n\n" + table_block(write_time_to_score(table, root / "tables"), root)
    )
    return sec


def _section_curves(results: Results, root: Path, rng: np.random.Generator, partial: set) -> Section:
    return _section_time_to_score(results, root)


def _section_es_family(results: Results, root: Path, rng: np.random.Generator, partial: set) -> Section:
    """Every ES variant against OpenAI-ES (and the RL baselines beside them), per environment."""
    sec = Section()
    table = family_table(results.complete, rng)
    sec.body.append(
        "## The ES family\n\n"
        "Every registered ES variant on the same runtime, budget, network and evaluation seeds as "
        "OpenAI-ES and the RL baselines. The last column says what the seeds support about each "
        "variant's final score against OpenAI-ES.\n\n"
        + table_block(write_family_table(table, root / "tables"), root)
    )
    sec.body += _es_family_aggregates(results, root, rng.spawn(1)[0])
    sec.body += _section_time_to_score(results, root).body
    return sec


def _es_family_aggregates(results: Results, root: Path, rng: np.random.Generator) -> list[str]:
    """rliable's aggregates across tasks, from their own Generator (``rng``, spawned from the report's:
    the other tables and figures draw exactly what they drew before)."""
    scores, tasks = normalized_final_scores(results.complete, results.curves)
    if len(tasks) < 2 or len(scores) < 2:
        return []
    table = aggregate_table(scores, rng)
    profiles = performance_profiles(scores, rng)
    caption = (
        "Performance profiles: the share of runs (over seeds and tasks) whose normalized final score is "
        "above tau, with stratified-bootstrap 95% bands (runs resampled within each task)"
    )
    n_seeds = int(table["n_seeds"].min())
    coverage = _iqm_coverage(n_seeds, len(tasks)) if n_seeds >= 2 else float("nan")
    return [
        "## Across tasks\n\n"
        f"rliable's aggregates of the final scores over {len(tasks)} tasks "
        f"({', '.join(tasks)}), each task normalized to its lowest and highest return. Intervals: "
        "stratified bootstrap, 95% nominal"
        + (
            f"; the IQM's measured coverage at {n_seeds} seeds x {len(tasks)} tasks: "
            f"{100 * coverage:.0f}% on 200 simulated data sets.\n\n"
            if np.isfinite(coverage)
            else ".\n\n"
        )
        + table_block(write_aggregate_table(table, root / "tables"), root),
        _figure_md(
            figures.plot_performance_profiles(profiles, root / "figures" / "performance_profiles"),
            root,
            caption,
        ),
    ]


def _section_population(results: Results, root: Path, rng: np.random.Generator, partial: set) -> Section:
    """Timesteps to the paper's Table 1 target per task and ES population, beside the paper's ES."""
    del rng, partial
    sec = Section()
    stopped = stopped_runs(results)
    reference = load_mujoco_reference()
    table = population_table(results.curves, reference, stopped=stopped)
    if table.empty:
        sec.body.append("No ES run on a task of the paper's Table 1: nothing to compare.\n")
        return sec
    claims = population_claims(results.curves, reference, stopped=stopped)
    sec.claims += population_claim_rows(claims)
    seeds = int(table["n_seeds"].min())
    sec.body.append(
        "## Timesteps to the paper's target by population\n\n"
        "*Question answered: does the population explain the gap between our ES's timesteps and "
        "the paper's?* Each task's target is the paper's TRPO score at 100% of its learning "
        "progress; the paper's ES needed the timesteps beside it. The claim row compares the "
        "largest population with the smallest: their ratio of timesteps, with both sides' "
        "uncertainty (each side at sqrt(0.95)).\n\n"
        + table_block(write_population_table(table, root / "tables"), root)
        + f"\nTimes to the target: {TIME_CI_METHOD}, 95%. Measured coverage {_time_coverage_text(seeds)}.\n"
    )
    paths = plot_population(table, root / "figures" / "population")
    sec.body.append(
        _figure_md(
            paths,
            root,
            "Timesteps to the paper's TRPO score at 100% of its learning progress against the ES "
            "population (log-log), per task: dots and bars, the Kaplan-Meier median of the runs' first "
            "confirmed times and its 95% interval; triangles, a median unbounded within the budget "
            "(drawn at the longest censored run); arrows, an interval open above; "
            "dashed line, the paper's ES timesteps to the same score (supplementary Table 3); "
            f"{_seed_count_text(table['n_seeds'], 'ES')} per population",
        )
    )
    return sec


def _seeds_markdown(data: RetentionData) -> str:
    """Which seeds each (algorithm, sequence) used and which are missing, as a table and lines."""
    lines = [
        "| Algorithm | Sequence | Seeds used | Seeds missing | Incomplete runs | Reference runs missing |",
        "|---|---|---|---|---|---|",
    ]
    for r in data.seeds.itertuples():
        n = len([s for s in str(r.used).split(", ") if s])
        lines.append(
            f"| {algo_label(str(r.algo))} | {r.sequence} | {n} ({r.used or 'none'}) | {r.missing or '—'} | "
            f"{r.incomplete_runs or '—'} | {r.references_missing or '—'} |"
        )
    out = "\n".join(lines) + "\n"
    short = data.seeds[data.seeds["missing"] != ""]
    for r in short.itertuples():
        out += (
            f"\n**{algo_label(str(r.algo))} / {r.sequence}: seeds missing: {r.missing}** (of {r.expected})."
        )
    return out + ("\n" if len(short) else "")


def _normalization_table(data: RetentionData, root: Path) -> str:
    norm = data.normalization
    display = pd.DataFrame(
        {
            "Algorithm": [algo_label(str(a)) for a in norm["algo"]],
            "Sequence": norm["sequence"].astype(str),
            "Stage": [f"{i}: {n}" for i, n in zip(norm["stage_index"], norm["stage"], strict=True)],
            "R random": [fmt_num(v, 4) for v in norm["r_random"]],
            "R ref": [fmt_num(v, 4) for v in norm["r_ref"]],
            "R ref from": [
                str(src) + (" *" if ref < rand else "")
                for src, ref, rand in zip(norm["source"], norm["r_ref"], norm["r_random"], strict=True)
            ],
            "Own R ref": [fmt_num(v, 4) for v in norm.get("r_ref_own", pd.Series(np.nan, index=norm.index))],
            "Own reference seeds": [str(int(n)) for n in norm["n_reference_seeds"]],
        }
    )
    notes = (
        "p_i(t) = (R_i(t) - R_random) / (R_ref - R_random), one scale for every algorithm of a sequence. "
        "R random: the untrained policies' return on the stage (every algorithm's sequence runs, evaluated "
        "at timestep 0, averaged). R ref: the best final return (the score of the model each run ended "
        "with, averaged over seeds: one model's score, never a mean over points) that any algorithm's "
        "single-stage reference runs of the stage reached (which one: R ref from); sequence end: no "
        "algorithm has a reference run of the stage, the best end-of-stage return (the model each "
        "sequence run ended the stage with) of any algorithm's sequence "
        "runs stands in. Own R ref: this algorithm's own "
        "reference (its forward transfer is measured against that curve, on the common scale)."
    )
    if (norm["r_ref"] < norm["r_random"]).any():
        notes += (
            " *: R ref below R random (the reference ended below the untrained policy): scores upside down."
        )
    paths = write_table(
        norm,
        display,
        root / "tables" / "retention_normalization",
        caption="Normalization of each stage's return",
        label="tab:retention_normalization",
        notes=notes,
    )
    return table_block(paths, root)


def _budget_markdown(runs: pd.DataFrame, root: Path) -> str:
    """Timesteps (matched across algorithms) and wall-clock seconds of each kind of run."""
    table = budget_table(runs)
    display = pd.DataFrame(
        {
            "Algorithm": [algo_label(str(a)) for a in table["algo"]],
            "Sequence": table["sequence"].astype(str),
            "Run": ["sequence" if k < 0 else f"reference, stage {k}" for k in table["only_stage"]],
            "Runs": table["n_runs"].astype(str),
            "Timesteps": [fmt_num(v) for v in table["timesteps"]],
            "Wall-clock (s)": [fmt_num(v) for v in table["wall_clock_s"]],
        }
    )
    paths = write_table(
        table,
        display,
        root / "tables" / "retention_budget",
        caption="Budget per run: timesteps trained and wall-clock seconds (means over complete runs)",
        label="tab:retention_budget",
        notes="Budgets are matched across algorithms in timesteps; wall-clock is what each one spent.",
    )
    return table_block(paths, root)


def _section_retention(
    data: RetentionData, runs: pd.DataFrame, root: Path, rng: np.random.Generator, lm: bool = False
) -> Section:
    """Forgetting, forward transfer and drift over task sequences, ES family against RL (issue #14)."""
    sec = Section()
    n_used = [len([s for s in str(u).split(", ") if s]) for u in data.seeds["used"]]
    seeds_text = ", ".join(sorted({str(n) for n in n_used})) or "0"
    sec.body.append(
        "## Retention over task sequences\n\n"
        "*Question answered: after training stage after stage, how much of each earlier stage does "
        "an algorithm keep, how much does an earlier stage help a later one, and how far do its "
        "parameters move?* Every stage is evaluated at every evaluation point of the sequence "
        "(deterministic policy, fixed evaluation seeds). Scores are normalized per stage on one scale "
        "for every algorithm (0: the untrained policies, 1: the best single-stage reference run of any "
        "algorithm; raw returns in the CSVs); the metrics follow "
        "Continual World (Wołczyk et al. 2021) and, for drift and sparsity, Abdi, Gupta et al. (2026). "
        f"Seeds per condition: {seeds_text}; intervals are Student-t 95% CIs over seeds "
        "(differences: Welch's t), absent with fewer than 2 seeds. "
        + coverage_sentence(min(n_used, default=0))
        + "\n"
    )
    sec.body.append("### Seeds\n\n" + _seeds_markdown(data))
    sec.body.append("### Budgets and wall-clock\n\n" + _budget_markdown(runs, root))
    if data.per_run.empty:
        sec.body.append("No sequence run could be analysed: no metric is computed.\n")
    else:
        table = retention_table(data.per_run, rng, allow_partial=True)
        sec.body.append(
            "### Metrics\n\n"
            + table_block(write_retention_table(table, root / "tables"), root)
            + "\nThe CSV holds every metric (per later stage, per layer, new-stage gain and old-stage "
            "change) with `n_seeds`, `mean`, `low`, `high`.\n"
        )
        sec.body.append("### Normalization\n\n" + _normalization_table(data, root))
        atomic_write_json(root / WANDB_SUMMARY_FILE, wandb_summary(table))
        paths = figures.plot_retention_curves(
            data.curves, data.boundaries, root / "figures" / "retention_curves", rng=rng
        )
        sec.body.append(
            _figure_md(
                paths,
                root,
                "Normalized score of each stage over the sequence, per stage (R - R_0) / (R_ref - R_0): "
                "0 (R_0) the untrained policies' return on the stage (mean at timestep 0), 1 (R_ref) "
                "the best final return of any algorithm's single-stage reference runs on it (where none "
                "ran, the best end-of-stage return in the sequences; Normalization table above). ES "
                "solid, RL dashed; "
                "mean over seeds, 95% Student-t band (seeds in the legend); dotted: stage boundaries; "
                "shaded: the stage's own training",
            )
        )
        if not data.drift.empty:
            paths = figures.plot_retention_drift(data.drift, root / "figures" / "retention_drift", rng=rng)
            sec.body.append(
                _figure_md(
                    paths,
                    root,
                    "Parameter drift from the sequence's starting parameters at each stage boundary (the "
                    "snapshots): relative L2 and update sparsity; mean over seeds, 95% Student-t bars",
                )
            )
        else:
            sec.body.append("No run has stage-boundary snapshots: drift is not drawn.\n")
        if data.drift_curves["drift_rel"].notna().any():
            paths = figures.plot_retention_drift_curves(
                data.drift_curves, data.boundaries, root / "figures" / "retention_drift_curves", rng=rng
            )
            sec.body.append(
                _figure_md(
                    paths,
                    root,
                    "Drift at every evaluation point: relative L2 and update sparsity of the parameters "
                    "since the stage began, and the policy KL on the states each ended stage's final "
                    "policy visited (for runs whose probes mark a deterministic policy, ES and DQN: none "
                    "drawn; older runs without probes: ES continuous actions as Gaussians of std 0.01); "
                    "mean over seeds, 95% Student-t band; dotted: stage boundaries",
                )
            )
        sec.body.append(_behaviour_markdown(data, root))
        gains = data.per_run[data.per_run["metric"] == "new_stage_gain"]
        if not gains.empty:
            paths = figures.plot_gain_retention(data.per_run, root / "figures" / "retention_gain")
            sec.body.append(
                _figure_md(
                    paths,
                    root,
                    "New-stage gain against old-stage change over each later stage, on the normalized "
                    "scale of the curves above (0: untrained, 1: best single-stage reference): x the "
                    "stage's own score gain over its training, y the change of the earlier stages' mean "
                    "score over the same span (below 0: forgetting); one point per seed and stage, one "
                    "panel per algorithm",
                )
            )
        elsewhere = (
            "A language model's claims at matched gain are decided on its primary measure, the task-B "
            "solve rate, in the language-model section above; the tables here are on the common scale of "
            "its reward (format score included) and decide nothing."
            if lm
            else ""
        )
        blocks, claim_rows = matched_gain_section(data, root, rng, decided_elsewhere=elsewhere)
        sec.body += blocks
        sec.claims += claim_rows
    if data.problems:
        sec.body.append(
            "### Notes on individual runs\n\nRuns left out of some numbers, and numbers to read with "
            "care.\n\n" + "\n".join(f"- {p}" for p in data.problems) + "\n"
        )
    return sec


def _behaviour_markdown(data: RetentionData, root: Path) -> str:
    """The behavioural-distance subsection: each stage's own update and the drift after it as
    separate rows, on one scale for ES and RL (:mod:`esbench.analysis.retention_behaviour`)."""
    head = "### Behavioural distance on one scale\n\n"
    if data.behaviour.empty:
        return head + "No run recorded behavioural probes (`probes.npz`): no behavioural distance.\n"
    table = behaviour_table(data.behaviour)
    return (
        head + "*How far did the policy's behaviour move, the same ruler for ES and RL?* Per stage, on up "
        "to 256 states the policy the stage started from visited there: the stage's **own update** "
        "(start to end of the stage) and the **drift after** it (end of the stage to the end of the "
        "sequence), as separate rows. The KL column is filled only where both policies sample their "
        "actions; a deterministic policy (ES, DQN) has none.\n\n"
        + table_block(write_behaviour_table(table, root / "tables"), root)
        + "\nThe CSV also holds the drift after each stage up to every later stage's end (`to_index`).\n"
    )


#: The files of a complete run every report ships in its data/runs/<run_id>/ (the plan it was made
#: under, when it records one, among them): a run directory the
#: results store reads back as complete. Copied into ``<results_dir>/<experiment>/``, they let a
#: later sweep skip those runs and a report be rebuilt with more seeds or tasks, without the
#: original results store (nothing here survives a lost machine but what is committed).
RUN_FILES: tuple[str, ...] = (CONFIG_FILE, METRICS_FILE, SUMMARY_FILE, ENV_FILE, PLAN_FILE)

#: The files of a sequence run the retention analysis reads, shipped in the report's data/.
RETENTION_RUN_FILES: tuple[str, ...] = (
    *RUN_FILES,
    SNAPSHOTS_FILE,
    SNAPSHOT_DRIFT_FILE,
    PROBES_FILE,
)


def _retention_results(runs_dir: Path) -> Results:
    """The sequence runs and their single-stage references under ``runs_dir``, read by
    :mod:`esbench.analysis.retention_report` (no curve table: the analysis reads each run's files)."""
    runs, superseded, unreadable = scan_sequence_runs(runs_dir)
    if runs.empty or not runs["complete"].any():
        raise FileNotFoundError(
            f"no complete sequence runs (with summary.json and sequence stages) under {runs_dir}"
        )
    info = {
        str(r["run_id"]): _read_json(Path(r["path"]) / ENV_FILE) for _, r in runs[runs["complete"]].iterrows()
    }
    configs = {str(r["run_id"]): read_config(Path(r["path"]) / CONFIG_FILE) for _, r in runs.iterrows()}
    return Results(
        runs_dir, runs, pd.DataFrame(), info, configs=configs, superseded=superseded, unreadable=unreadable
    )


def _render_retention(root: Path, results: Results, manifest: Manifest, notice: str) -> Path:
    """The ``retention`` report from its data: sequence runs and their single-stage references.
    Missing seeds are reported, never fatal."""
    runs = results.runs
    rng = np.random.default_rng(manifest.seed)
    data = analyse_retention(runs)
    lm = is_lm(runs)
    section = _section_retention(data, runs, root, rng, lm=lm)
    if lm:
        # A language model's claims are decided on its own measures (task-A accuracy kept against
        # task-B reward); the common scale's decisions stay in their tables below, not in the claims.
        blocks, claims = lm_section(runs, root, rng)
        section.body[:0] = blocks
        section.claims = claims
    text = [f"# Retention report: {manifest.name}\n", notice]
    text.append(
        "Retention and forgetting over task sequences, ES family against RL, from "
        f"the runs under `{manifest.runs_dir}`. Bootstrap seed: {manifest.seed}.\n"
    )
    text += _revision_warnings(manifest)
    text.append(provenance(results, manifest))
    partial = data.seeds[(data.seeds["missing"] != "") | (data.seeds["references_missing"] != "")]
    if len(partial):
        flagged = "; ".join(f"{r.algo}/{r.sequence}" for r in partial.itertuples())
        text.append(f"**Partial results** (seeds or reference runs missing): {flagged}.\n")
    text.append("## Claims checked\n")
    if section.claims:
        text.append(
            "| claim | paper | ours | verdict |\n|---|---|---|---|\n" + "\n".join(section.claims) + "\n"
        )
    else:
        text.append("No claim could be checked (it needs ES and RL runs of one sequence).\n")
    path = root / REPORT_FILE
    atomic_write_text(path, "\n".join([*text, *section.body]))
    return path


_SECTIONS: dict[str, tuple[Sequence[str], Callable[[Results, Path, np.random.Generator, set], Section]]] = {
    "table1": (("algo", "env_id"), _section_table1),
    "table2": (("algo", "env_id"), _section_table2),
    "frameskip": (("algo", "env_id", "frame_skip"), _section_frameskip),
    "scaling": (("algo", "env_id", "cluster", "workers"), _section_scaling),
    "curves": (("algo", "env_id"), _section_curves),
    "es_family": (("algo", "env_id"), _section_es_family),
    "population": (("algo", "env_id", "population"), _section_population),
    "path": (("algo", "env_id", "frame_skip", "workers"), _section_curves),
}


def _unique(values: Any) -> list[str]:
    return sorted({str(v) for v in values if v is not None and str(v) != "nan"})


def provenance(results: Results, manifest: Manifest | None = None) -> str:
    """Markdown: scale, hardware, Python, git commit and package versions of the runs, and (from
    the report's ``manifest``) the commit the report itself was made from."""
    info = list(results.env_info.values())
    lines = ["## Provenance\n"]
    if manifest is not None:
        state = {True: "with uncommitted changes", False: "clean tree", None: "tree state unknown"}
        lines.append(
            f"- Report made from: esbench commit {manifest.report_commit or 'unknown'} "
            f"({state[manifest.report_dirty]}); its data: `data/` (`esbench report --check` recomputes it)"
        )
    presets = ", ".join(_unique(results.runs["scale"])) or "unknown"
    recipe_scale = manifest.recipe_scale if manifest is not None else None
    if recipe_scale is not None and presets != recipe_scale:
        lines.append(
            f"- Scale: {recipe_scale} (`esbench reproduce ... scale={recipe_scale}`); "
            f"the runs' budget preset (budget.scale): {presets}"
        )
    else:
        lines.append(f"- Scale: {presets}")
    lines.append(f"- Experiments: {', '.join(_unique(results.runs['experiment']))}")
    complete = int(results.runs["complete"].sum())
    unreadable = set(results.unreadable["path"])
    missing = int((~results.runs["complete"] & ~results.runs["path"].isin(unreadable)).sum())
    runs_line = f"- Runs: {complete} complete, {missing} missing (no summary.json)"
    lines.append(runs_line + (f", {len(unreadable)} unreadable" if unreadable else ""))
    if len(results.superseded):
        ids = [str(r) for r in results.superseded["run_id"]]
        shown = ", ".join(ids[:6]) + (f" and {len(ids) - 6} more" if len(ids) > 6 else "")
        lines.append(
            f"- Superseded, not used: {len(ids)} run(s) of a seed that has a newer complete run "
            f"(same experiment, algorithm, environment, frame-skip, scale, workers and seed): {shown}"
        )
    if len(results.unreadable):
        bad = [f"{r.run_id} ({r.file}: {r.reason})" for r in results.unreadable.itertuples()]
        shown = "; ".join(bad[:6]) + (f"; and {len(bad) - 6} more" if len(bad) > 6 else "")
        lines.append(f"- Unreadable, not used: {len(bad)} run(s) with a truncated or corrupt file: {shown}")
    lines.append(env_versions_line(results.runs, info))
    lines.append(f"- Hosts: {', '.join(_unique(i.get('host') for i in info)) or 'unknown'}")
    lines.append(f"- CPU cores: {', '.join(_unique(i.get('cpu_count') for i in info)) or 'unknown'}")
    lines.append(f"- Platform: {', '.join(_unique(i.get('platform') for i in info)) or 'unknown'}")
    lines.append(f"- Python: {', '.join(_unique(i.get('python') for i in info)) or 'unknown'}")
    commits = _unique(i.get("git_commit") for i in info)
    dirty = any(bool(i.get("git_dirty")) for i in info)
    lines.append(
        f"- Git commit: {', '.join(commits) or 'unknown'}{' (with uncommitted changes)' if dirty else ''}"
    )
    packages: dict[str, set[str]] = {}
    for i in info:
        for name, version in (i.get("packages") or {}).items():
            packages.setdefault(str(name), set()).add(str(version))
    if packages:
        lines.append("\n| package | version |\n|---|---|")
        lines += [f"| {n} | {', '.join(sorted(v))} |" for n, v in sorted(packages.items())]
    return "\n".join(lines) + "\n"


#: Where the checkout keeps its committed reports: their changes are outputs, not code, so a report
#: rendered after another one (``reproduce all``, re-rendering every report) still names a clean tree.
REPORT_OUTPUTS: tuple[str, ...] = ("paper",)


def report_revision() -> tuple[str | None, bool | None]:
    """(commit, dirty) of the esbench checkout making a report now (None where not a git checkout);
    changed reports under :data:`REPORT_OUTPUTS` do not count as uncommitted code."""
    revision = code_revision(outputs=REPORT_OUTPUTS)
    return revision["git_commit"], revision["git_dirty"]


def build_report(
    target: str,
    results_dir: str | Path = "results/runs",
    out_dir: str | Path = "paper",
    allow_partial: bool = False,
    seed: int = 0,
    recipe_scale: str | None = None,
    recipes_dir: Path | None = None,
) -> Path:
    """Write the data, tables, figures and ``REPORT.md`` of one target.

    The runs are read once and written to ``out_dir/<name>/data/`` (:mod:`esbench.analysis.report_data`);
    the report is then rendered from that directory alone (:func:`render_report`), so that
    ``esbench report --check`` can recompute it later from the same bytes.

    Args:
        target: One of :data:`TARGETS`, or a path to any results directory.
        results_dir: Root of the results store (named targets read ``results_dir/target``), or a
            report's ``data/`` directory (the report is rendered again from it).
        out_dir: Reports go to ``out_dir/<target name>/``.
        allow_partial: Report missing runs / unequal seed counts (marked ``*``) instead of failing.
            The ``retention`` target always reports them (which seeds, which runs) and never fails
            on them: a sequence with some seeds missing still renders what it has.
        seed: Seed of the Generator every bootstrap draws from.
        recipe_scale: The ``esbench reproduce`` scale the runs were made at, when it made the
            report: the provenance names it beside the runs' budget preset where the two differ
            (the decisive retention scale runs the mini's budget preset at more seeds).
        recipes_dir: Where the target's recipe is, whose claims are the plan in force
            (:func:`current_plan`; the shipped recipes by default).

    Returns:
        Path of the written ``REPORT.md``.

    Raises:
        UnknownTargetError: Bad target.
        FileNotFoundError: No runs where the target's runs should be.
        IncompleteResultsError: Missing runs or unequal seed counts, and not allow_partial.
    """
    if is_report_data(results_dir):
        return _report_from_data(target, Path(results_dir), Path(out_dir), recipes_dir)
    name, runs_dir, kind = resolve_target(target, results_dir)
    if kind == "retention":
        results = _retention_results(runs_dir)
    else:
        results = load_results(runs_dir)
        check_seeds(results.runs, _SECTIONS[kind][0], allow_partial=allow_partial)  # fail before writing
        if results.complete.empty:
            raise FileNotFoundError(f"no complete runs (with summary.json) under {runs_dir}")
    root = Path(out_dir) / name
    # The code that makes the report, taken before the old report is removed: removing a committed
    # report's files is not a change to the code.
    commit, dirty = report_revision()
    for old in (root / "tables", root / "figures", root / DATA_DIR, root / WANDB_SUMMARY_FILE):
        if old.is_dir():  # a report is one build's output: nothing of an older one lingers
            shutil.rmtree(old)
        elif old.is_file():
            old.unlink()
    manifest = Manifest(
        name=name,
        target=target,
        kind=kind,
        runs_dir=runs_dir.as_posix(),
        seed=seed,
        allow_partial=allow_partial,
        scales=_unique(results.runs["scale"]),
        recipe_scale=recipe_scale,
        report_commit=commit,
        report_dirty=dirty,
        run_commits=_unique(i.get("git_commit") for i in results.env_info.values()),
        figure_versions=figure_versions(),
        plan=current_plan(target, recipes_dir).record(),
    )
    calibration = CALIBRATION_FILE if kind == "scaling" and CALIBRATION_FILE.is_file() else None
    run_files = RETENTION_RUN_FILES if kind == "retention" else RUN_FILES
    write_report_data(
        results,
        root / DATA_DIR,
        manifest,
        calibration=calibration,
        run_files=run_files,
        replaced_by={SNAPSHOTS_FILE: SNAPSHOT_DRIFT_FILE},  # the drift table is all the report reads of them
    )
    return render_report(root)


def _report_from_data(target: str, data_dir: Path, out_dir: Path, recipes_dir: Path | None = None) -> Path:
    """A report rendered from another report's ``data/`` (``results_dir=paper/table1/data``): the
    data are copied to ``out_dir/<name>/data/`` (unless they are already there), the manifest records
    the commit rendering it now and the plan in force now
    (:func:`~esbench.analysis.report_data.restamp_manifest`), then it is rendered.

    Raises:
        UnknownTargetError: ``target`` is neither the report's target nor its name.
    """
    manifest = read_manifest(data_dir)
    if target not in (manifest.target, manifest.name):
        raise UnknownTargetError(
            f"{data_dir} holds the data of report {manifest.name!r} (target {manifest.target!r}), "
            f"not of {target!r}"
        )
    root = out_dir / manifest.name
    commit, dirty = report_revision()  # before the old report is removed, as in build_report
    if (root / DATA_DIR).resolve() != data_dir.resolve():
        for old in (root / "tables", root / "figures", root / DATA_DIR, root / WANDB_SUMMARY_FILE):
            if old.is_dir():
                shutil.rmtree(old)
            elif old.is_file():
                old.unlink()
        shutil.copytree(data_dir, root / DATA_DIR)
    plan = current_plan(manifest.target, recipes_dir).record()
    restamp_manifest(root / DATA_DIR, commit, dirty, figure_versions(), plan)
    return render_report(root)


def render_report(root: str | Path) -> Path:
    """Write ``REPORT.md``, ``tables/`` and ``figures/`` of the report in ``root`` from ``root/data/``
    alone: a pure function of that directory (same data, same bytes).

    Returns:
        Path of the written ``REPORT.md``.

    Raises:
        ReportDataError: ``root/data`` is not a report's data directory.
        IncompleteResultsError: Missing runs or unequal seed counts the report did not allow.
    """
    root = Path(root)
    results, manifest = read_report_data(root / DATA_DIR)
    check = runs_plan_check(results, manifest)
    notice = plan_notice(check, manifest.recipe_scale or ", ".join(manifest.scales) or None)
    with plan_changed(check.changed):  # runs not made under the plan in force decide nothing
        if manifest.kind == "retention":
            return _render_retention(root, results, manifest, notice)
        return _render_named(root, results, manifest, notice)


def current_plan(target: str, recipes_dir: Path | None = None) -> Plan:
    """The plan of the recipe behind ``target`` now (a named target is a recipe, under
    ``recipes_dir``, the shipped recipes by default); the empty plan of no recipe for a results path."""
    return plan_of_recipe(target, recipes_dir) if target in TARGETS else Plan("")


def runs_plan_check(results: Results, manifest: Manifest) -> PlanCheck:
    """The report's plan (its manifest's) against the plan each complete run records in its shipped
    ``plan.json``: runs of data that ship no run files (or no plan file) record none."""
    complete = results.runs[results.runs["complete"].astype(bool)]
    shipped = PLAN_FILE in manifest.run_files
    recorded = {}
    for run_id, path in zip(complete["run_id"], complete["path"], strict=True):
        file = Path(str(path)) / PLAN_FILE
        recorded[str(run_id)] = _read_json(file) if shipped and file.is_file() else None
    return check_plan(manifest.plan, recorded)


def _render_named(root: Path, results: Results, manifest: Manifest, notice: str) -> Path:
    """A named target's report (not retention) from its data; see :func:`render_report`."""
    kind, seed = manifest.kind, manifest.seed
    by, make_section = _SECTIONS[kind]
    counts = check_seeds(results.runs, by, allow_partial=manifest.allow_partial)
    partial = partial_keys(counts, by)
    (root / "tables").mkdir(parents=True, exist_ok=True)
    (root / "figures").mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)

    section = make_section(results, root, rng, partial)
    body = [*section.body]
    body.append("## Learning curves\n")
    series = (
        ("algo", "frame_skip")
        if kind == "frameskip"
        else ("algo", "cluster", "workers")
        if kind == "scaling"
        else ("algo", "population")
        if kind == "population"
        else ("algo",)
    )
    body += _curve_figures(results, root, rng, series=series)
    body.append("## Summary per condition\n\n" + _summary_table(results, root, rng, by, partial))

    text = [f"# Reproduction report: {manifest.name}\n", notice]
    text.append(
        "Salimans et al. (2017), *Evolution Strategies as a Scalable Alternative to Reinforcement Learning* "
        "(arXiv:1703.03864), reproduced with esbench from the runs under "
        f"`{manifest.runs_dir}`. Bootstrap seed: {seed}.\n"
    )
    text += _revision_warnings(manifest)
    text.append(provenance(results, manifest))
    if partial:
        flagged = "; ".join("/".join(map(str, k)) for k in sorted(partial, key=str))
        text.append(f"**Partial results** (marked `*`): {flagged}.\n")
    text.append("## The paper's claims\n")
    if section.claims:
        text.append(
            "| claim | paper | ours | verdict |\n|---|---|---|---|\n" + "\n".join(section.claims) + "\n"
        )
    else:
        text.append("No claim of the paper is tied to this target: learning curves and a summary only.\n")
    seeds = int(counts["n_seeds"].min()) if len(counts) else 0
    text.append(
        coverage_sentence(seeds) + " Every interval method with its measured coverage: docs/statistics.md "
        "(`python -m esbench.analysis.coverage`).\n"
    )
    path = root / REPORT_FILE
    atomic_write_text(path, "\n".join([*text, *body]))
    return path


def _revision_warnings(manifest: Manifest) -> list[str]:
    """Loud lines at the top of REPORT.md when the report or its runs cannot be tied to one clean commit."""
    out = []
    if manifest.report_commit is None or manifest.report_dirty is None:
        made = f" ({manifest.report_commit})" if manifest.report_commit else ""
        out.append(
            f"> **Warning: this report was not made from a git checkout**{made}: no commit reproduces it.\n"
        )
    elif manifest.report_dirty:
        out.append(
            f"> **Warning: this report was made from a working tree with uncommitted changes** (on "
            f"commit {manifest.report_commit}): no commit is known to reproduce it. Regenerate it "
            "from a clean checkout.\n"
        )
    if len(manifest.run_commits) > 1:
        out.append(
            f"> **Warning: the runs came from {len(manifest.run_commits)} different commits** "
            f"({', '.join(manifest.run_commits)}): their numbers may not be comparable.\n"
        )
    return out
