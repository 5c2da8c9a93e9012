"""Build a reproduction report: tables + figures + ``REPORT.md`` beside the published numbers.

``build_report("table1", "results/runs", "paper")`` reads the runs of ``results/runs/table1/``
(the experiment name equals the recipe name) and writes ``paper/table1/``::

    REPORT.md           scale, hardware, versions, git commit, the paper's claims checked
    tables/*.md|tex|csv
    figures/*.png|pdf

A target that is a path to any results directory gets learning curves and a summary table.
The report contains no timestamps: the same results and seed give the same bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from esbench.analysis import figures
from esbench.analysis.env_versions import env_versions_line
from esbench.analysis.es_family import family_table, write_family_table
from esbench.analysis.figures import algo_label
from esbench.analysis.frameskip import frameskip_scores, frameskip_spread, write_frameskip
from esbench.analysis.load import Results, _read_json, is_es, load_results, stopped_runs
from esbench.analysis.projection import (
    CALIBRATION_FILE,
    Calibration,
    local_table,
    plot_projection,
    projection_markdown,
)
from esbench.analysis.retention import LAST_K, retention_table, write_retention_table
from esbench.analysis.retention_decisions import matched_gain_section
from esbench.analysis.retention_report import (
    RetentionData,
    analyse_retention,
    budget_table,
    scan_sequence_runs,
    wandb_summary,
)
from esbench.analysis.scaling import scaling_table, time_to_threshold, write_scaling
from esbench.analysis.stats import check_seeds, mean_ci, partial_keys
from esbench.analysis.table1 import (
    claim_of,
    load_mujoco_reference,
    table1,
    table1_paper,
    write_table1,
    write_table1_paper,
)
from esbench.analysis.table2 import (
    count_wins,
    fmt_hns,
    load_atari_reference,
    median_hns,
    table2,
    win_count_interval,
    write_table2,
)
from esbench.analysis.tables import fmt_num, write_table
from esbench.analysis.time_to_score import time_to_common_score, write_time_to_score
from esbench.analysis.verdicts import (
    INCONCLUSIVE,
    Verdict,
    combine,
    interval_verdict,
    percentile_interval,
    resample_means,
    resample_medians,
)
from esbench.tracking.schema import CONFIG_FILE, ENV_FILE
from esbench.utils.io import atomic_write_json, atomic_write_text

#: Named targets (each one a recipe under experiments/ and an experiment under results/runs/).
TARGETS: tuple[str, ...] = ("table1", "table2", "frameskip", "scaling", "curves", "es_family", "retention")

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
        if root.name == target or (not (root / target).is_dir() and _holds_runs(root)):
            return target, root, target
        return target, root / target, target
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


def _table_md(paths: dict[str, Path], root: Path) -> str:
    links = ", ".join(f"[{k.upper()}]({_rel(p, root)})" for k, p in paths.items())
    return paths["md"].read_text() + f"\n({links})\n"


def _verdict(ok: bool | None) -> str:
    return {True: "supported", False: "not supported", None: "inconclusive"}[ok]


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
            caption = f"Evaluation return against {what}: mean over seeds, 95% bootstrap band"
            if stopped_runs(results):
                caption += (
                    "; a run that stopped at its target score (budget.stop_at_return) is held at that "
                    "score from its stop to the end of the other seeds"
                )
            out.append(_figure_md(paths, root, caption))
    return out


def _summary_table(
    results: Results, root: Path, rng: np.random.Generator, by: Sequence[str], partial: set
) -> str:
    """Per-condition summary of the complete runs (seeds, final score with CI, budget, speed), with
    how many runs stopped at their target score (their final evaluation is that score)."""
    stopped = stopped_runs(results)
    rows = []
    for key, g in results.complete.groupby(list(by), sort=True):
        key = key if isinstance(key, tuple) else (key,)
        mean, low, high = mean_ci(g["final_eval_return"].to_numpy(float), rng)
        rows.append(
            {
                **dict(zip(by, key, strict=True)),
                "n_seeds": len(g),
                "final_eval_return": float(mean),
                "ci_low": float(low),
                "ci_high": float(high),
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
    if stopped:
        display["Stopped at target"] = [
            f"{k}/{n}" for k, n in zip(data["n_stopped"], data["n_seeds"], strict=True)
        ]
        notes += (
            " Stopped at target: runs that ended at their first evaluation at or above "
            "budget.stop_at_return (reached, not cut short); their timesteps are the stopping point."
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
    return _table_md(paths, root)


def _table1_claim(env_id: str, env: pd.DataFrame) -> str:
    """The claim row of one environment against our TRPO: < 10x on the hard tasks at every
    fraction, <= 1x at 100% on the easy ones, decided from the bootstrap intervals over ES's seeds
    (each covered row's verdict of :func:`esbench.analysis.table1.table1`, combined)."""
    name = str(env["env_name"].iloc[0])
    covered = env[env["verdict"] != ""]
    verdict = combine([Verdict(w, d) for w, d in zip(covered["verdict"], covered["decide"], strict=True)])
    ours = ", ".join(f"{round(100 * r.progress_fraction)}%: {r.ratio_text}" for r in covered.itertuples())
    ours += (
        f" (ES over our TRPO's timesteps; {int(env['n_seeds_es'].max())} ES seeds, "
        f"{int(env['n_seeds_rl'].max())} TRPO seeds)"
    )
    paper = (
        ", ".join(fmt_num(v, 3) for v in covered["paper_ratio"])
        if covered["paper_ratio"].notna().any()
        else "—"
    )
    who = f" ({algo_label(str(env['es_algo'].iloc[0]))})" if env["es_algo"].nunique() == 1 else ""
    claim = _claim_text(env_id, name) + ", against our tuned TRPO" + who
    return f"| {claim} | {paper} | {ours} | {_verdict_text(verdict)} |"


def _claim_text(env_id: str, name: str) -> str:
    limit, _, every = claim_of(env_id)
    if every:
        return f"{name}: ES needs < {fmt_num(limit, 3)}x TRPO's timesteps (hard task)"
    return f"{name}: ES needs no more timesteps than TRPO at 100% (easy task)"


def _verdict_text(v: Verdict) -> str:
    return v.word + (f": {v.decide}" if v.decide else "")


def _paper_curve_claims(table: pd.DataFrame) -> list[str]:
    """One claim row per (env, ES algo) of :func:`table1_paper`, decided from its intervals."""
    rows = []
    for (env_id, es_algo), g in table.groupby(["env_id", "es_algo"], sort=True):
        covered = g[g["verdict"] != ""]
        verdict = combine([Verdict(w, d) for w, d in zip(covered["verdict"], covered["decide"], strict=True)])
        who = f" ({algo_label(str(es_algo))})" if table["es_algo"].nunique() > 1 else ""
        ours = ", ".join(
            f"{round(100 * r.progress_fraction)}%: "
            + (f"> {fmt_num(r.es_last_timesteps / r.paper_trpo_timesteps, 2)}" if np.isposinf(r.ratio)
               else fmt_num(r.ratio, 2))
            for r in covered.itertuples()
        )  # fmt: skip
        paper = ", ".join(fmt_num(v, 3) for v in covered["paper_ratio"])
        claim = _claim_text(str(env_id), str(g["env_name"].iloc[0])) + who
        ours += f" (our ES over the paper's TRPO timesteps; {int(g['n_seeds_es'].max())} seeds)"
        rows.append(f"| {claim} | {paper} | {ours} | {_verdict_text(verdict)} |")
    return rows


def _section_table1(results: Results, root: Path, rng: np.random.Generator, partial: set) -> Section:
    sec = Section()
    stopped = stopped_runs(results)
    paper = table1_paper(results.curves, load_mujoco_reference(), rng, stopped=stopped, partial=partial)
    if not paper.empty:
        sec.body.append(
            "## Table 1 against the paper's own TRPO curve\n\n"
            "*Question answered: does esbench's ES behave like the paper's ES?* The paper publishes "
            "TRPO's target score at each fraction of its learning progress and the timesteps its "
            "TRPO and its ES needed to reach it. Here our ES is timed to those same scores, and the "
            "ratio divides by the paper's TRPO timesteps, so no 2017 TRPO has to be re-run. The "
            "paper's claims are decided on this table, from bootstrap intervals over seeds.\n\n"
            + _table_md(write_table1_paper(paper, root / "tables"), root)
        )
        sec.claims += _paper_curve_claims(paper)
    table = table1(results.curves, load_mujoco_reference(), partial=partial, rng=rng, stopped=stopped)
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
            "TRPO's mean curve.\n\n" + _table_md(write_table1(table, root / "tables"), root)
        )
        paths = figures.plot_data_efficiency(table, root / "figures" / "data_efficiency")
        sec.body.append(
            _figure_md(paths, root, "ES/TRPO timestep ratio per environment (log scale); crosses: paper")
        )
        for (env_id, _), env in table.groupby(["env_id", "es_algo"], sort=True):
            sec.claims.append(_table1_claim(str(env_id), env))
    sec.body += _section_time_to_score(results, root, rng).body
    return sec


def _section_table2(results: Results, root: Path, rng: np.random.Generator, partial: set) -> Section:
    sec = Section()
    table = table2(results.complete, load_atari_reference(), rng=rng, partial=partial)
    sec.body.append(
        "## Table 2: Atari final scores\n\n"
        "*Question answered: at our budget, does ES end up with a higher score than the synchronous "
        "A3C (A2C) on as many games as the paper's ES did against its A3C (23 of 51)?* Scores are each "
        "side's final evaluation, beside the published DQN, A3C FF and ES FF scores; our budgets are "
        "far below the paper's (ES 1B frames, A3C 320M), so this compares the two at an equal, "
        "small budget, not our ES with the paper's.\n\n"
        + _table_md(write_table2(table, root / "tables"), root)
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
    pw, pl = count_wins(scored["paper_es"].to_numpy(), scored["paper_a3c"].to_numpy())
    pn = pw + pl
    for es_algo in sorted({str(a) for a in table["es_algo"] if a}):
        sec.claims.append(_table2_claim(results.complete, rng, es_algo, pw, pn))
    return sec


def _table2_claim(complete: pd.DataFrame, rng: np.random.Generator, es_algo: str, pw: int, pn: int) -> str:
    """The win-count claim: ES wins on the same side of half the games as the paper's ES did against
    A3C on these games, decided from the bootstrap interval of our win count over seeds."""
    wins, low, high, n, min_seeds = win_count_interval(complete, rng, es_algo)
    if n == 0 or pn == 0:
        verdict = Verdict(INCONCLUSIVE, "needs games with both ES and A2C runs (and a published score)")
        interval = ""
    else:
        at_least = pw / pn >= 0.5  # the paper's side of half the games
        verdict = interval_verdict(wins / n, low / n, high / n, 0.5, at_least, min_seeds, "seeds per game")
        interval = f" [95% CI {fmt_num(low, 3)}, {fmt_num(high, 3)}]" if np.isfinite(low) else ""
    side = "at least" if pn and pw / pn >= 0.5 else "fewer than"
    who = f" ({algo_label(es_algo)})" if es_algo != "openai_es" else ""
    return (
        f"| ES beats A3C on 23 of 51 games (strictly higher final score){who} | {pw} of {pn} on these "
        f"games | {wins} of {n}{interval} (ES vs A2C; fewest seeds on a side of a game: {min_seeds}) | "
        f"{_verdict_text(verdict)} (claim: ES wins on {side} half the games, as the paper's did) |"
    )


def _improved(curves: pd.DataFrame, algo: str, env_id: str) -> bool:
    """Whether any run of ``algo`` on ``env_id`` evaluated above its own first evaluation."""
    rows = curves[(curves["algo"] == algo) & (curves["env_id"] == env_id)].dropna(subset=["eval_return_mean"])
    for _, run in rows.sort_values("timesteps", kind="stable").groupby("run_id"):
        values = run["eval_return_mean"].to_numpy()
        if len(values) > 1 and values[1:].max() > values[0]:
            return True
    return False


def _section_frameskip(results: Results, root: Path, rng: np.random.Generator, partial: set) -> Section:
    sec = Section()
    scores = frameskip_scores(results.complete, rng, partial=partial)
    spread = frameskip_spread(scores)
    sec.body.append(
        "## Frame-skip sensitivity\n\n" + _table_md(write_frameskip(scores, spread, root / "tables"), root)
    )
    paths = figures.plot_frameskip(scores, spread, root / "figures" / "frameskip")
    sec.body.append(
        _figure_md(paths, root, "Final score against frame-skip (95% CI over seeds) and its spread")
    )
    if results.curves["frames"].notna().any():
        paths = figures.plot_learning_curves(
            results.curves,
            root / "figures" / "frameskip_curves",
            x="frames",
            rng=rng,
            series=("algo", "frame_skip"),
        )
        sec.body.append(_figure_md(paths, root, "Learning curves per frame-skip against emulator frames"))
    for _env_id, env in spread.groupby("env_id", sort=True):
        es, rl = env[env["is_es"]], env[~env["is_es"]]
        if es.empty or rl.empty:
            continue
        es_range, rl_range = float(es["range"].max()), float(rl["range"].min())
        ok: bool | None = bool(es_range < rl_range)
        flat = sorted({a for a in env["algo"] if not _improved(results.curves, a, str(_env_id))})
        if flat:
            ok = None  # a flat score at every frame-skip is no evidence of (in)sensitivity
        factor = f"RL/ES spread = {fmt_num(rl_range / es_range, 2)}x" if es_range > 0 else "ES spread 0"
        claim = f"{env['env_name'].iloc[0]}: ES is less sensitive to frame-skip than RL"
        paper = "ES about equally good at every frame-skip"
        ours = f"ES range {fmt_num(es_range, 3)} vs RL range {fmt_num(rl_range, 3)} ({factor})"
        if flat:
            ours += f"; never above its first evaluation: {', '.join(flat)}"
        sec.claims.append(f"| {claim} | {paper} | {ours} | {_verdict(ok)} |")
    return sec


def _section_scaling(results: Results, root: Path, rng: np.random.Generator, partial: set) -> Section:
    sec = Section()
    table = scaling_table(results.complete, results.curves, partial=partial)
    sec.body.append("## Scaling with workers\n\n" + _table_md(write_scaling(table, root / "tables"), root))
    paths = figures.plot_scaling(table, root / "figures" / "scaling")
    sec.body.append(_figure_md(paths, root, "Speedup against workers; dotted: ideal linear speedup"))
    paths = figures.plot_learning_curves(
        results.curves,
        root / "figures" / "scaling_curves",
        x="wall_clock_s",
        rng=rng,
        series=("algo", "cluster", "workers"),
    )
    sec.body.append(_figure_md(paths, root, "Learning curves per worker count against wall-clock seconds"))
    cores = sorted({int(i["cpu_count"]) for i in results.env_info.values() if i.get("cpu_count")})
    for (algo, _env_id, cluster), g in table.groupby(["algo", "env_id", "cluster"], sort=True):
        if not is_es(str(algo)) or len(g) < 2:
            continue
        g = g.sort_values("workers")
        fits = g[g["workers"] <= cores[-1]] if cores else g  # the verdict: workers that have a core
        top = (fits if len(fits) >= 2 else g).iloc[-1]
        base = g.iloc[0]
        eff, low, high, n, basis = _efficiency_interval(results, g, base, top, rng)
        verdict = interval_verdict(eff, low, high, NEAR_LINEAR, True, n, "seeds per worker count")
        over = ""
        if cores and g["workers"].iloc[-1] > cores[-1]:
            last = g.iloc[-1]
            over = (
                f"; oversubscribed, {int(last['workers'])} workers on {cores[-1]} cores: "
                f"{fmt_num(last['speedup_throughput'], 3)}x throughput"
            )
        claim = f"{g['env_name'].iloc[0]}: linear speedup with workers ({algo_label(str(algo))}, {cluster})"
        paper = "657 min on 18 cores -> 10 min on 1,440 cores"
        interval = f" [95% CI {fmt_num(low, 2)}, {fmt_num(high, 2)}]" if np.isfinite(low) else ""
        ours = (
            f"{fmt_num(top['speedup_time'], 3)}x (time to threshold), "
            f"{fmt_num(top['speedup_throughput'], 3)}x (throughput) at {int(top['workers'])} vs "
            f"{int(base['workers'])} workers; ideal {fmt_num(top['ideal_speedup'], 3)}x, "
            f"efficiency ({basis}) {fmt_num(eff, 2)}{interval}; {n} seed(s) per worker count{over}"
        )
        verdict_text = f"{_verdict_text(verdict)} (near-linear: efficiency >= {NEAR_LINEAR})"
        sec.claims.append(f"| {claim} | {paper} | {ours} | {verdict_text} |")
    sec.body += _projection(results, table, root)
    return sec


def _efficiency_interval(
    results: Results, g: pd.DataFrame, base: pd.Series, top: pd.Series, rng: np.random.Generator
) -> tuple[float, float, float, int, str]:
    """Efficiency per worker of ``top`` against ``base`` (rows of the scaling table of one algo,
    env and cluster kind) with a 95% percentile bootstrap interval over seeds.

    On time to threshold: (median time at base / median time at top) / ideal speedup, the seeds of
    each worker count resampled independently; where the times are not measured, on throughput
    ((mean timesteps/s at top / at base) / ideal).

    Returns:
        (efficiency, low, high, n_seeds, basis): n_seeds is the fewer of the two worker counts',
        basis ``"time"`` or ``"throughput"``.
    """
    runs = results.complete
    key = (runs["algo"] == g["algo"].iloc[0]) & (runs["env_id"] == g["env_id"].iloc[0])
    if "cluster" in runs.columns:
        key &= runs["cluster"] == g["cluster"].iloc[0]
    picked = {w: runs[key & (runs["workers"] == w)] for w in (base["workers"], top["workers"])}
    n = min(len(r) for r in picked.values())
    ideal = float(top["ideal_speedup"])
    threshold = float(top["threshold"])
    if np.isfinite(top["efficiency_time"]):
        times = {}
        for w, r in picked.items():
            t = [
                time_to_threshold(results.curves[results.curves["run_id"] == i], threshold)
                for i in r["run_id"]
            ]
            times[w] = np.where(np.isnan(t), np.inf, t)
        with np.errstate(invalid="ignore", divide="ignore"):
            draws = resample_medians(times[base["workers"]], rng) / resample_medians(
                times[top["workers"]], rng
            )
        low, high = percentile_interval(draws / ideal) if n >= 2 else (float("nan"), float("nan"))
        return float(top["efficiency_time"]), low, high, n, "time"
    speed = {w: r["steps_per_s"].to_numpy(float) for w, r in picked.items()}
    draws = resample_means(speed[top["workers"]], rng) / resample_means(speed[base["workers"]], rng)
    low, high = percentile_interval(draws / ideal) if n >= 2 else (float("nan"), float("nan"))
    return float(top["efficiency_throughput"]), low, high, n, "throughput"


def _projection(results: Results, table: pd.DataFrame, root: Path) -> list[str]:
    """The scaling projection (:mod:`esbench.analysis.projection`), when this machine's costs have
    been measured (``esbench bench projection``); otherwise how to get it."""
    cal = Calibration.load()
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


def _section_time_to_score(results: Results, root: Path, rng: np.random.Generator) -> Section:
    """The wall-clock comparison: time each algorithm needs to reach the score all of them reach."""
    sec = Section()
    table = time_to_common_score(results.curves, rng=rng, stopped=stopped_runs(results))
    if table.empty:
        return sec
    sec.body.append(
        "## Time to a common score\n\n"
        "The paper's wall-clock argument: ES takes more timesteps than TRPO but, spread over "
        "workers, less time. Per environment, the score every improving algorithm's mean curve "
        "reaches, and the median over seeds of the timesteps and seconds to first reach it, with "
        "95% bootstrap intervals over seeds. An algorithm that never evaluated above its "
        "timestep-0 score does not set the common score (listed as did not improve).\n\n"
        + _table_md(write_time_to_score(table, root / "tables"), root)
    )
    return sec


def _section_curves(results: Results, root: Path, rng: np.random.Generator, partial: set) -> Section:
    return _section_time_to_score(results, root, rng)


def _section_es_family(results: Results, root: Path, rng: np.random.Generator, partial: set) -> Section:
    """Every ES variant against OpenAI-ES (and the RL baselines beside them), per environment."""
    sec = Section()
    table = family_table(results.complete, rng)
    sec.body.append(
        "## The ES family\n\n"
        "Every registered ES variant on the same runtime, budget, network and evaluation seeds as "
        "OpenAI-ES and the RL baselines. The last column says what the seeds support about each "
        "variant's final score against OpenAI-ES.\n\n"
        + _table_md(write_family_table(table, root / "tables"), root)
    )
    sec.body += _section_time_to_score(results, root, rng).body
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
        f"at timestep 0, averaged). R ref: the best final return (mean of the last {LAST_K} evaluations, "
        "averaged over seeds) that any algorithm's single-stage reference runs of the stage reached (which "
        "one: R ref from); sequence end: no algorithm has a reference run of the stage, the best "
        "end-of-stage return of any algorithm's sequence runs stands in. Own R ref: this algorithm's own "
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
    return _table_md(paths, root)


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
    return _table_md(paths, root)


def _section_retention(
    data: RetentionData, runs: pd.DataFrame, root: Path, rng: np.random.Generator
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
        f"Seeds per condition: {seeds_text}; intervals are percentile bootstrap 95% CIs over seeds "
        "(2,000 resamples, one seeded Generator), absent with fewer than 2 seeds.\n"
    )
    sec.body.append("### Seeds\n\n" + _seeds_markdown(data))
    sec.body.append("### Budgets and wall-clock\n\n" + _budget_markdown(runs, root))
    if data.per_run.empty:
        sec.body.append("No sequence run could be analysed: no metric is computed.\n")
    else:
        table = retention_table(data.per_run, rng, allow_partial=True)
        sec.body.append(
            "### Metrics\n\n"
            + _table_md(write_retention_table(table, root / "tables"), root)
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
                "Normalized score of each stage over the sequence (ES solid, RL dashed; mean over seeds, "
                "95% bootstrap band); dotted: stage boundaries; shaded: the stage's own training",
            )
        )
        if not data.drift.empty:
            paths = figures.plot_retention_drift(data.drift, root / "figures" / "retention_drift", rng=rng)
            sec.body.append(
                _figure_md(
                    paths,
                    root,
                    "Parameter drift from the sequence's starting parameters at each stage boundary (the "
                    "snapshots): relative L2 and update sparsity; mean over seeds, 95% bootstrap bars",
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
                    "policy visited (ES continuous actions: Gaussians of std 0.01 around them); mean over "
                    "seeds, 95% bootstrap band; dotted: stage boundaries",
                )
            )
        gains = data.per_run[data.per_run["metric"] == "new_stage_gain"]
        if not gains.empty:
            paths = figures.plot_gain_retention(data.per_run, root / "figures" / "retention_gain")
            sec.body.append(
                _figure_md(
                    paths,
                    root,
                    "New-stage gain against old-stage change over each later stage, one point per seed "
                    "and stage, one panel per algorithm (below 0: forgetting)",
                )
            )
        blocks, claim_rows = matched_gain_section(data, root, rng)
        sec.body += blocks
        sec.claims += claim_rows
    if data.problems:
        sec.body.append(
            "### Notes on individual runs\n\nRuns left out of some numbers, and numbers to read with "
            "care.\n\n" + "\n".join(f"- {p}" for p in data.problems) + "\n"
        )
    return sec


def _retention_report(name: str, runs_dir: Path, out_dir: str | Path, seed: int) -> Path:
    """The ``retention`` report: sequence runs and their single-stage references, read by
    :mod:`esbench.analysis.retention_report`. Missing seeds are reported, never fatal."""
    runs, superseded, unreadable = scan_sequence_runs(runs_dir)
    if runs.empty or not runs["complete"].any():
        raise FileNotFoundError(
            f"no complete sequence runs (with summary.json and sequence stages) under {runs_dir}"
        )
    root = Path(out_dir) / name
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    data = analyse_retention(runs)
    section = _section_retention(data, runs, root, rng)
    info = {
        str(r["run_id"]): _read_json(Path(r["path"]) / ENV_FILE) for _, r in runs[runs["complete"]].iterrows()
    }
    results = Results(runs_dir, runs, pd.DataFrame(), info, superseded, unreadable)
    text = [f"# Retention report: {name}\n"]
    text.append(
        "Retention and forgetting over task sequences (esbench issue #14), ES family against RL, from "
        f"the runs under `{runs_dir.as_posix()}`. Bootstrap seed: {seed}.\n"
    )
    text.append(provenance(results))
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
    "path": (("algo", "env_id", "frame_skip", "workers"), _section_curves),
}


def _unique(values: Any) -> list[str]:
    return sorted({str(v) for v in values if v is not None and str(v) != "nan"})


def provenance(results: Results) -> str:
    """Markdown: scale, hardware, Python, git commit and package versions of the runs."""
    info = list(results.env_info.values())
    lines = ["## Provenance\n"]
    lines.append(f"- Scale: {', '.join(_unique(results.runs['scale'])) or 'unknown'}")
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


def build_report(
    target: str,
    results_dir: str | Path = "results/runs",
    out_dir: str | Path = "paper",
    allow_partial: bool = False,
    seed: int = 0,
) -> Path:
    """Write the tables, figures and ``REPORT.md`` of one target.

    Args:
        target: One of :data:`TARGETS`, or a path to any results directory.
        results_dir: Root of the results store (named targets read ``results_dir/target``).
        out_dir: Reports go to ``out_dir/<target name>/``.
        allow_partial: Report missing runs / unequal seed counts (marked ``*``) instead of failing.
            The ``retention`` target always reports them (which seeds, which runs) and never fails
            on them: a sequence with some seeds missing still renders what it has.
        seed: Seed of the Generator every bootstrap draws from.

    Returns:
        Path of the written ``REPORT.md``.

    Raises:
        UnknownTargetError: Bad target.
        FileNotFoundError: No runs where the target's runs should be.
        IncompleteResultsError: Missing runs or unequal seed counts, and not allow_partial.
    """
    name, runs_dir, kind = resolve_target(target, results_dir)
    if kind == "retention":
        return _retention_report(name, runs_dir, out_dir, seed)
    results = load_results(runs_dir)
    by, make_section = _SECTIONS[kind]
    counts = check_seeds(results.runs, by, allow_partial=allow_partial)
    partial = partial_keys(counts, by)
    if results.complete.empty:
        raise FileNotFoundError(f"no complete runs (with summary.json) under {runs_dir}")
    root = Path(out_dir) / name
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)

    section = make_section(results, root, rng, partial)
    body = [*section.body]
    body.append("## Learning curves\n")
    series = (
        ("algo", "frame_skip")
        if kind == "frameskip"
        else ("algo", "cluster", "workers")
        if kind == "scaling"
        else ("algo",)
    )
    body += _curve_figures(results, root, rng, series=series)
    body.append("## Summary per condition\n\n" + _summary_table(results, root, rng, by, partial))

    text = [f"# Reproduction report: {name}\n"]
    text.append(
        "Salimans et al. (2017), *Evolution Strategies as a Scalable Alternative to Reinforcement Learning* "
        "(arXiv:1703.03864), reproduced with esbench from the runs under "
        f"`{runs_dir.as_posix()}`. Bootstrap seed: {seed}.\n"
    )
    text.append(provenance(results))
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
    path = root / REPORT_FILE
    path.write_text("\n".join([*text, *body]))
    return path
