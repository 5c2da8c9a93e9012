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
from esbench.analysis.figures import algo_label
from esbench.analysis.frameskip import frameskip_scores, frameskip_spread, write_frameskip
from esbench.analysis.load import Results, is_es, load_results
from esbench.analysis.scaling import scaling_table, write_scaling
from esbench.analysis.stats import check_seeds, mean_ci, partial_keys
from esbench.analysis.table1 import load_mujoco_reference, table1, write_table1
from esbench.analysis.table2 import count_wins, load_atari_reference, table2, write_table2
from esbench.analysis.tables import fmt_num, write_table
from esbench.analysis.time_to_score import time_to_common_score, write_time_to_score

#: Named targets (each one a recipe under experiments/ and an experiment under results/runs/).
TARGETS: tuple[str, ...] = ("table1", "table2", "frameskip", "scaling", "curves")

#: Hard MuJoCo tasks of the paper's "< 10x TRPO's timesteps" claim.
HARD_MUJOCO: tuple[str, ...] = ("Hopper-v5", "Walker2d-v5")

#: Efficiency (speedup / ideal) at or above which a speedup is called near-linear.
NEAR_LINEAR = 0.8

REPORT_FILE = "REPORT.md"


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

    Raises:
        UnknownTargetError: Not a named target, and not an existing directory.
    """
    if target in TARGETS:
        return target, Path(results_dir) / target, target
    path = Path(target)
    if path.is_dir():
        name = path.resolve().name or "results"
        return (f"{name}_curves" if name in TARGETS else name), path, "path"
    raise UnknownTargetError(valid_targets_message(target))


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
                results.curves, root / "figures" / f"curves_{x}", x=x, rng=rng, series=series
            )
            out.append(
                _figure_md(
                    paths, root, f"Evaluation return against {what}: mean over seeds, 95% bootstrap band"
                )
            )
    return out


def _summary_table(
    results: Results, root: Path, rng: np.random.Generator, by: Sequence[str], partial: set
) -> str:
    """Per-condition summary of the complete runs (seeds, final score with CI, budget, speed)."""
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
    """The claim row of one environment: < 10x on the hard tasks, <= 1x (at 100%) on the easy ones."""
    name = str(env["env_name"].iloc[0])
    hard = env_id in HARD_MUJOCO
    limit = 10.0 if hard else 1.0
    rows = env if hard else env.iloc[-1:]  # hard: every fraction; easy: TRPO's full progress
    cens = rows[rows["censored"]]
    measured = rows["ratio"].dropna()  # NaN and not censored: TRPO made no progress to measure against
    ok: bool | None
    if len(cens) and (cens["ratio_bound"] >= limit).any():
        ok = False
    elif len(cens) or measured.empty:
        ok = None  # ES stopped before the target (the ratio could still be below the limit), or no ratio
    else:
        ok = bool((measured < limit).all()) if hard else bool((measured <= limit).all())
    ours = ", ".join(f"{round(100 * r.progress_fraction)}%: {r.ratio_text}" for r in env.itertuples())
    paper = ", ".join(fmt_num(v, 3) for v in env["paper_ratio"]) if env["paper_ratio"].notna().any() else "—"
    if hard:
        claim = f"{name}: ES needs < 10x TRPO's timesteps (hard task)"
    else:
        claim = f"{name}: ES needs no more timesteps than TRPO at 100% (easy task)"
    return f"| {claim} | {paper} | {ours} | {_verdict(ok)} |"


def _section_table1(results: Results, root: Path, rng: np.random.Generator, partial: set) -> Section:
    sec = Section()
    table = table1(results.curves, load_mujoco_reference(), partial=partial)
    if table.empty:
        sec.body.append("No environment has both ES and TRPO runs: Table 1 cannot be computed.\n")
        return sec
    sec.body.append(
        "## Table 1: data efficiency against TRPO\n\n" + _table_md(write_table1(table, root / "tables"), root)
    )
    paths = figures.plot_data_efficiency(table, root / "figures" / "data_efficiency")
    sec.body.append(
        _figure_md(paths, root, "ES/TRPO timestep ratio per environment (log scale); crosses: paper")
    )
    for env_id, env in table.groupby("env_id", sort=True):
        sec.claims.append(_table1_claim(str(env_id), env))
    sec.body += _section_time_to_score(results, root).body
    return sec


def _section_table2(results: Results, root: Path, rng: np.random.Generator, partial: set) -> Section:
    sec = Section()
    table = table2(results.complete, load_atari_reference(), rng=rng, partial=partial)
    sec.body.append(
        "## Table 2: Atari final scores\n\n" + _table_md(write_table2(table, root / "tables"), root)
    )
    wins, losses = count_wins(table["es_score"].to_numpy(), table["rl_score"].to_numpy())
    scored = table.dropna(subset=["paper_es", "paper_a3c"])
    pw, pl = count_wins(scored["paper_es"].to_numpy(), scored["paper_a3c"].to_numpy())
    n, pn = wins + losses, pw + pl
    ok = None if n == 0 or pn == 0 else (wins / n >= 0.5) == (pw / pn >= 0.5)
    sec.claims.append(
        f"| ES beats A3C on 23 of 51 games (strictly higher final score) | {pw} of {pn} on these games | "
        f"{wins} of {n} (ES vs A2C) | {_verdict(ok)} (same side of 50%) |"
    )
    return sec


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
        series=("algo", "workers"),
    )
    sec.body.append(_figure_md(paths, root, "Learning curves per worker count against wall-clock seconds"))
    cores = sorted({int(i["cpu_count"]) for i in results.env_info.values() if i.get("cpu_count")})
    for (algo, _env_id), g in table.groupby(["algo", "env_id"], sort=True):
        if not is_es(str(algo)) or len(g) < 2:
            continue
        top = g.sort_values("workers").iloc[-1]
        eff = top["efficiency_time"] if np.isfinite(top["efficiency_time"]) else top["efficiency_throughput"]
        ok = bool(eff >= NEAR_LINEAR) if np.isfinite(eff) else None
        over = (
            f"; {int(top['workers'])} workers on {cores[-1]} cores (oversubscribed)"
            if cores and top["workers"] > cores[-1]
            else ""
        )
        claim = f"{g['env_name'].iloc[0]}: linear speedup with workers ({algo_label(str(algo))})"
        paper = "657 min on 18 cores -> 10 min on 1,440 cores"
        ours = (
            f"{fmt_num(top['speedup_time'], 3)}x (time to threshold), "
            f"{fmt_num(top['speedup_throughput'], 3)}x (throughput) at {int(top['workers'])} vs "
            f"{int(g['workers'].min())} workers; ideal {fmt_num(top['ideal_speedup'], 3)}x, "
            f"efficiency {fmt_num(eff, 2)}{over}"
        )
        verdict = f"{_verdict(ok)} (near-linear: efficiency >= {NEAR_LINEAR})"
        sec.claims.append(f"| {claim} | {paper} | {ours} | {verdict} |")
    sec.body.append(
        "Measured up to the workers actually run; projection past the machine's cores "
        "is not part of this report.\n"
    )
    return sec


def _section_time_to_score(results: Results, root: Path) -> Section:
    """The wall-clock comparison: time each algorithm needs to reach the score all of them reach."""
    sec = Section()
    table = time_to_common_score(results.curves)
    if table.empty:
        return sec
    sec.body.append(
        "## Time to a common score\n\n"
        "The paper's wall-clock argument: ES takes more timesteps than TRPO but, spread over "
        "workers, less time. Per environment, the score every algorithm's mean curve reaches, "
        "and the median timesteps and seconds to first reach it.\n\n"
        + _table_md(write_time_to_score(table, root / "tables"), root)
    )
    return sec


def _section_curves(results: Results, root: Path, rng: np.random.Generator, partial: set) -> Section:
    return _section_time_to_score(results, root)


_SECTIONS: dict[str, tuple[Sequence[str], Callable[[Results, Path, np.random.Generator, set], Section]]] = {
    "table1": (("algo", "env_id"), _section_table1),
    "table2": (("algo", "env_id"), _section_table2),
    "frameskip": (("algo", "env_id", "frame_skip"), _section_frameskip),
    "scaling": (("algo", "env_id", "workers"), _section_scaling),
    "curves": (("algo", "env_id"), _section_curves),
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
    lines.append(f"- Runs: {complete} complete, {len(results.runs) - complete} missing (no summary.json)")
    if len(results.superseded):
        ids = [str(r) for r in results.superseded["run_id"]]
        shown = ", ".join(ids[:6]) + (f" and {len(ids) - 6} more" if len(ids) > 6 else "")
        lines.append(
            f"- Superseded, not used: {len(ids)} run(s) of a seed that has a newer complete run "
            f"(same experiment, algorithm, environment, frame-skip, scale, workers and seed): {shown}"
        )
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
        seed: Seed of the Generator every bootstrap draws from.

    Returns:
        Path of the written ``REPORT.md``.

    Raises:
        UnknownTargetError: Bad target.
        FileNotFoundError: No runs where the target's runs should be.
        IncompleteResultsError: Missing runs or unequal seed counts, and not allow_partial.
    """
    name, runs_dir, kind = resolve_target(target, results_dir)
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
        else ("algo", "workers")
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
