"""The retention report's decisions: tables, figure and claim rows of forgetting at matched gain,
transient against permanent drops, population size and Anchored Weight Decay.

The numbers come from :mod:`esbench.analysis.retention_matched`; this module writes them where the
report (:func:`esbench.analysis.report.build_report`, target ``retention``) links them:
``tables/retention_matched_gain.*`` (CSV column ``retention_at_matched_gain``, beside each
condition's unconditional Continual World average forgetting), ``tables/retention_claims.*`` (the
differences, their Welch t intervals and verdicts), ``tables/retention_transient.*`` and
``figures/retention_gain_paths.*``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from esbench.analysis import figures
from esbench.analysis.conditions import base_algo, condition_label
from esbench.analysis.metrics.intervals import mean_ci
from esbench.analysis.metrics.planning import PLANNING_POWER
from esbench.analysis.retention_matched import (
    MIN_MATCHED_GAIN,
    UNDECIDED,
    GainPath,
    gain_paths,
    matched_gain_claims,
    matched_gain_table,
    mean_path,
    transient_table,
)
from esbench.analysis.retention_report import RetentionData
from esbench.analysis.tables import fmt_num, write_table
from esbench.config.registry import family_of

#: What each claim says, for the report's "Claims checked" table.
CLAIM_TEXT = {
    "es_forgets_more": "ES forgets more than RL at matched new-stage gain",
    "larger_population_forgets_less": "a larger ES population forgets less at matched gain",
    "awd_keeps_retention": "Anchored Weight Decay keeps more retention at matched gain",
}
#: Where each claim comes from.
CLAIM_SOURCE = {
    "es_forgets_more": "Abdi, Gupta et al. 2026: ES loses more prior capability than GRPO at matched "
    "new-task reward (LLM fine-tuning)",
    "larger_population_forgets_less": "Schweighofer et al. 2026: larger populations reduce the drop",
    "awd_keeps_retention": "Schweighofer et al. 2026: decay toward the initial parameters removes most of it",
}


def _cell(mean: float, low: float, high: float) -> str:
    if np.isfinite(low):
        return f"{fmt_num(mean, 3)} [{fmt_num(low, 3)}, {fmt_num(high, 3)}]"
    return fmt_num(mean, 3)


def transient_cells(transient: pd.DataFrame) -> dict[str, list[str]]:
    """The drop and recovery columns of a transient-or-permanent table
    (:func:`~esbench.analysis.retention_matched.transient_summary`'s rows) as display cells,
    "mean [low, high]"."""
    columns = (("Drop to lowest", "drop_lowest"), ("Drop at end", "drop_end"), ("Recovery", "recovery"))
    return {
        title: [_cell(*v) for v in transient[[col, f"{col}_low", f"{col}_high"]].to_numpy()]
        for title, col in columns
    }


def seeds_reading(seeds: float) -> str:
    """An undecided claim's planning number in words (:func:`~esbench.analysis.stats.seeds_to_decide`)."""
    return (
        f"a study of {int(seeds)} seeds per side decides it with {PLANNING_POWER:.0%} power "
        "at this effect and spread"
    )


def _seeds_cell(seeds: float, verdict: str) -> str:
    """The "Seeds to decide" cell: only for an undecided claim, "—" when no number of seeds would."""
    if verdict != UNDECIDED:
        return ""
    return str(int(seeds)) if np.isfinite(seeds) else "—"


def _rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def _table_md(paths: dict[str, Path], root: Path) -> str:
    links = ", ".join(f"[{k.upper()}]({_rel(p, root)})" for k, p in paths.items())
    return paths["md"].read_text() + f"\n({links})\n"


def plot_gain_paths(
    paths: list[GainPath], table: pd.DataFrame, stem: Path, rng: np.random.Generator
) -> list[Path]:
    """Retention against new-stage gain along training, one panel per (sequence, stage, condition):
    each seed's path (thin), the condition's mean path (:func:`mean_path`: at each point of
    training progress, the mean gain against the mean change, with the change's 95% band), and the
    matched gain (dotted)."""
    keys = sorted({(p.sequence, p.stage_index, p.algo) for p in paths})
    fig, axes = figures.new_figure(len(keys), ncols=3)
    with figures._style():
        for ax, (sequence, j, algo) in zip(axes, keys, strict=True):
            mine = [p for p in paths if (p.sequence, p.stage_index, p.algo) == (sequence, j, algo)]
            color = figures.algo_color(base_algo(algo))
            for p in mine:
                ax.plot(p.gain, p.retention, color=color, alpha=0.35, linewidth=0.8)
            grid, gain = mean_path(mine)
            values = np.array([np.interp(grid, p.progress, p.retention) for p in mine])
            ax.plot(gain, values.mean(axis=0), color=color, linewidth=2.0)
            if len(mine) > 1:  # the band of the change, drawn along the mean path
                _, low, high = mean_ci(values, rng)
                ax.fill(np.r_[gain, gain[::-1]], np.r_[low, high[::-1]], color=color, alpha=0.2, linewidth=0)
            g_star = table[(table["sequence"] == sequence) & (table["stage_index"] == j)]["matched_gain"]
            if len(g_star) and np.isfinite(float(g_star.iloc[0])):
                ax.axvline(float(g_star.iloc[0]), color="0.3", linestyle=":", linewidth=1.0)
            figures.panel_text(
                ax,
                f"{sequence}, stage {j} ({mine[0].stage}): {condition_label(algo)} ({len(mine)} seeds)",
                "Gain on the current stage",
                "Change on earlier stages",
            )
            figures.compact_ticks(ax)
    return figures.savefig(fig, stem)


def matched_gain_section(
    data: RetentionData,
    root: Path,
    rng: np.random.Generator,
    family: Callable[[str], str | None] = family_of,
) -> tuple[list[str], list[str]]:
    """Write the decision tables and figure under ``root``; return (Markdown blocks, claim rows).

    Claim rows are ``| claim | source | ours | verdict |`` lines for the report's "Claims checked"
    table, one per (sequence, stage, pair of conditions).
    """
    body: list[str] = []
    claim_rows: list[str] = []
    paths = gain_paths(data.curves)
    if not paths:
        return ["### Forgetting at matched gain\n\nNo run has a later stage with evaluation points.\n"], []
    table = matched_gain_table(paths, rng, min_gain=MIN_MATCHED_GAIN)
    forgetting = data.per_run[data.per_run["metric"] == "average_forgetting"]
    unconditional = forgetting.groupby(["algo", "sequence"])["value"].mean().rename("average_forgetting")
    table = table.join(unconditional, on=["algo", "sequence"])
    display = pd.DataFrame(
        {
            "Sequence": table["sequence"],
            "Stage": [f"{j}: {s}" for j, s in zip(table["stage_index"], table["stage"], strict=True)],
            "Condition": [condition_label(a) for a in table["algo"]],
            "Seeds": table["n_seeds"].astype(str),
            "Max gain": [fmt_num(v, 3) for v in table["max_gain"]],
            "Matched gain": [fmt_num(v, 3) for v in table["matched_gain"]],
            "Change on earlier stages at matched gain": [
                _cell(m, lo, hi)
                for m, lo, hi in zip(
                    table["retention_at_matched_gain"], table["low"], table["high"], strict=True
                )
            ],
            "Average forgetting (unconditional)": [fmt_num(v, 3) for v in table["average_forgetting"]],
        }
    )
    notes = (
        "Gain: normalized score on the current stage minus its value when the stage began; change on "
        "earlier stages (the retention compared): their mean normalized score minus its value when the "
        "stage began (0: nothing lost), read for every seed at the point of training where the "
        "condition's mean gain over seeds first reaches the matched gain. Matched gain: the largest gain "
        "every condition's mean path reaches, over the conditions whose mean path gains at least "
        f"{MIN_MATCHED_GAIN:g} (5% of the way to the best reference); a condition below that has no gain "
        "to match (no value). Max gain: the largest gain of the condition's mean path. Mean over seeds, "
        "95% t intervals. Average forgetting: Continual World's, whatever the gain."
    )
    written = write_table(
        table,
        display,
        root / "tables" / "retention_matched_gain",
        caption="Retention at matched new-stage gain",
        label="tab:retention_matched_gain",
        notes=notes,
    )
    body.append("### Forgetting at matched gain\n\n" + _table_md(written, root))
    claims = matched_gain_claims(paths, family, per_pair=True, min_gain=MIN_MATCHED_GAIN)
    if len(claims):
        display = pd.DataFrame(
            {
                "Sequence": claims["sequence"],
                "Stage": [f"{j}: {s}" for j, s in zip(claims["stage_index"], claims["stage"], strict=True)],
                "Claim": [CLAIM_TEXT[c] for c in claims["claim"]],
                "A": [condition_label(a) for a in claims["a"]],
                "B": [condition_label(b) for b in claims["b"]],
                "Matched gain": [fmt_num(v, 3) for v in claims["matched_gain"]],
                "Change on earlier stages, A - B": [
                    _cell(d, lo, hi)
                    for d, lo, hi in zip(claims["difference"], claims["low"], claims["high"], strict=True)
                ],
                "Verdict": claims["verdict"],
                "Seeds to decide": [
                    _seeds_cell(v, r)
                    for v, r in zip(claims["seeds_to_decide"], claims["verdict"], strict=True)
                ],
            }
        )
        written = write_table(
            claims,
            display,
            root / "tables" / "retention_claims",
            caption="Claims decided at matched gain",
            label="tab:retention_claims",
            notes="Difference of the mean change on the earlier stages (since the stage began) at the "
            "matched gain of the two conditions compared (the largest gain both conditions' mean paths "
            "reach; each seed read where its condition's mean gain reaches it), "
            "Welch t 95% interval (independent seeds, unequal variances). ES forgets more: supported when "
            "the interval lies below 0. Population, AWD: supported when above 0. Undecided when it holds "
            f"0, or the matched gain is below {MIN_MATCHED_GAIN:g} (no gain to match). Seeds to decide "
            "(undecided rows): seeds per side a new study needs for its interval to exclude 0 with "
            f"{PLANNING_POWER:.0%} power, if the difference and each side's spread are as measured "
            "(a planning number for a fixed study, not a stopping rule).",
        )
        body.append(_table_md(written, root))
        for r in claims.itertuples():
            ours = (
                f"{r.sequence} stage {r.stage_index}: at gain {fmt_num(r.matched_gain, 3)}, "
                "change on earlier stages "
                f"{condition_label(r.a)} {fmt_num(r.retention_a, 3)} ({r.n_a} seeds) vs "
                f"{condition_label(r.b)} {fmt_num(r.retention_b, 3)} ({r.n_b} seeds); difference "
                f"{_cell(r.difference, r.low, r.high)}"
            )
            if r.verdict == UNDECIDED and np.isfinite(r.seeds_to_decide):
                ours += f"; {seeds_reading(r.seeds_to_decide)}"
            claim_rows.append(
                f"| {r.sequence}: {CLAIM_TEXT[r.claim]} | {CLAIM_SOURCE[r.claim]} | {ours} | {r.verdict} |"
            )
    stem = root / "figures" / "retention_gain_paths"
    written_fig = plot_gain_paths(paths, table, stem, rng)
    caption = (
        "Change of the mean normalized score on the earlier stages against the gain on the current "
        "stage, both since the stage began, along training, on the retention scale (0: the untrained "
        "policies, 1: the best single-stage reference run): each seed (thin); the mean path (at each "
        "point of training, the mean gain over seeds against the mean change, with the change's 95% "
        "Student-t band); matched gain dotted"
    )
    body.append(
        f"![{caption}]({_rel(written_fig[0], root)})\n\n*{caption}* ([PDF]({_rel(written_fig[1], root)}))\n"
    )
    transient = transient_table(data.curves, rng)
    if len(transient):
        display = pd.DataFrame(
            {
                "Sequence": transient["sequence"],
                "Condition": [condition_label(a) for a in transient["algo"]],
                "Stage": [
                    f"{i}: {s}" for i, s in zip(transient["stage_index"], transient["stage"], strict=True)
                ],
                "During": transient["during"].astype(str),
                "Seeds": transient["n_seeds"].astype(str),
                **transient_cells(transient),
                "Verdict": transient["verdict"],
            }
        )
        written = write_table(
            transient,
            display,
            root / "tables" / "retention_transient",
            caption="Transient against permanent drops",
            label="tab:retention_transient",
            notes="For an earlier stage during a later one: the drop from its score when the later stage "
            "began to the lowest point, and to the end of the later stage; recovery = their difference. "
            "Transient: the recovery's 95% t interval lies above 0 and the end drop's holds 0; permanent: "
            "the end drop's lies above 0 and the recovery's holds 0; partly transient: both above 0.",
        )
        body.append("### Transient or permanent\n\n" + _table_md(written, root))
    return body, claim_rows
