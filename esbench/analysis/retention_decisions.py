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
from typing import Any

import numpy as np
import pandas as pd

from esbench.analysis import figures
from esbench.analysis.claims.retention import RETENTION_CLAIMS
from esbench.analysis.claims.verdicts import NOT_DECIDED, NOT_TESTABLE, UNDECIDED
from esbench.analysis.conditions import base_algo, condition_label
from esbench.analysis.metrics.intervals import mean_ci
from esbench.analysis.metrics.planning import PLANNING_POWER
from esbench.analysis.retention_matched import (
    gain_paths,
    matched_gain_claims,
    matched_gain_table,
    transient_table,
)
from esbench.analysis.retention_measures import GainPath, mean_path
from esbench.analysis.retention_report import RetentionData
from esbench.analysis.tables import fmt_num, interval_cell, table_block, write_table
from esbench.config.registry import family_of

#: The display columns of a drop and its recovery, with the measures they show.
_DROP_COLUMNS = (("Early drop", "early_drop"), ("Late drop", "late_drop"), ("Recovery", "recovery"))

#: How the drop table's windows read in notes.
DROP_WINDOWS_TEXT = (
    "early drop: from the score the later stage started from to the mean over the first third of its "
    "budget; late drop: to the mean over its last third; recovery: the last third's mean minus the "
    "first third's (windows fixed in advance, the same statistic at both ends: a steady decline has a "
    "negative recovery)"
)


def transient_cells(transient: pd.DataFrame) -> dict[str, list[str]]:
    """The drop and recovery columns of a transient-or-permanent table
    (:func:`~esbench.analysis.retention_matched.transient_summary`'s rows) as display cells,
    "mean [low, high]"."""
    return {
        title: [interval_cell(*v) for v in transient[[col, f"{col}_low", f"{col}_high"]].to_numpy()]
        for title, col in _DROP_COLUMNS
    }


#: How a drop table's readings and verdicts read in notes.
DROP_READING_TEXT = (
    "Mean over seeds, 95% t intervals. Reading: transient when the early drop's and the recovery's "
    "intervals lie above 0 and the late drop's holds 0; partly transient when the late drop's and the "
    "recovery's lie above 0; permanent when the late drop's lies above 0 and the recovery's does not; "
    "no drop shown when neither drop's interval lies above 0; unclear otherwise. The drop recovers: "
    "supported when the recovery's interval lies above 0, contradicted below; not testable (no "
    "learning) where the condition did not learn the later stage."
)


def matched_cells(table: pd.DataFrame, gain: str, retention: str) -> dict[str, list[str]]:
    """The display columns of a matched-gain table
    (:func:`~esbench.analysis.retention_matched.matched_gain_table`): the condition, its seeds, its
    largest gain (headed ``gain``), its minimum effect, the matched gain and the retention there
    (headed ``retention``)."""
    return {
        "Condition": [condition_label(a) for a in table["algo"]],
        "Seeds": list(table["n_seeds"].astype(str)),
        gain: [fmt_num(v, 3) for v in table["max_gain"]],
        "Minimum effect": [fmt_num(v, 3) for v in table["min_effect"]],
        "Matched gain": [fmt_num(v, 3) for v in table["matched_gain"]],
        retention: [
            interval_cell(m, lo, hi)
            for m, lo, hi in zip(table["retention_at_matched_gain"], table["low"], table["high"], strict=True)
        ],
    }


def claim_cells(claims: pd.DataFrame, difference: str) -> dict[str, list[str]]:
    """The display columns of a matched-gain claims table
    (:func:`~esbench.analysis.retention_matched.matched_gain_claims`): the claim, the two conditions,
    the matched gain and its minimum effect, the difference (headed ``difference``; empty where not
    testable) and the verdict."""
    return {
        "Claim": [RETENTION_CLAIMS[c].text for c in claims["claim"]],
        "A": [condition_label(a) for a in claims["a"]],
        "B": [condition_label(b) for b in claims["b"]],
        "Matched gain": [fmt_num(v, 3) for v in claims["matched_gain"]],
        "Minimum effect": [fmt_num(v, 3) for v in claims["min_effect"]],
        difference: [
            "" if v == NOT_TESTABLE else interval_cell(d, lo, hi)
            for d, lo, hi, v in zip(
                claims["difference"], claims["low"], claims["high"], claims["verdict"], strict=True
            )
        ],
        "Verdict": list(claims["verdict"]),
    }


def seeds_reading(claim: Any) -> str:
    """An undecided claim's plan in words, from its row of
    :func:`~esbench.analysis.retention_matched.matched_gain_claims`: the seeds a study needs
    (:func:`~esbench.analysis.metrics.planning.seeds_to_decide`), which way such a study would most
    likely go, and the spread of both over resampled pilots
    (:func:`~esbench.analysis.metrics.planning.study_outlook`)."""
    text = (
        f"a study of {int(claim.seeds_to_decide)} seeds per side decides it with {PLANNING_POWER:.0%} "
        "power at this effect and spread"
    )
    if np.isfinite(claim.supported_share):
        text += (
            f" ({claim.supported_share:.0%} of such studies would read supported, "
            f"{claim.contradicted_share:.0%} contradicted; over resampled pilots "
            f"{_seeds_span(claim.seeds_low, claim.seeds_high)} seeds, "
            f"{claim.same_side:.0%} pointing the same way)"
        )
    return text


def _seeds_span(low: float, high: float) -> str:
    """``5-40``; ``5->1000``-style ends where no study up to the planner's limit decides."""

    def end(v: float) -> str:
        return str(int(v)) if np.isfinite(v) else "more than 1000"

    return end(low) if low == high else f"{end(low)} to {end(high)}"


def _outlook_cell(claim: Any) -> str:
    """The "Larger study" cell of an undecided claim: the shares that would support and contradict it."""
    if claim.verdict not in PLANNED or not np.isfinite(claim.supported_share):
        return ""
    return f"{claim.supported_share:.0%} supported, {claim.contradicted_share:.0%} contradicted"


def no_learning_reading(gain: float, min_effect: float, measure: str = "gain") -> str:
    """Why a claim is not testable: its matched gain against its minimum effect, in words."""
    return (
        f"no learning: matched {measure} {fmt_num(gain, 3)}, minimum effect {fmt_num(min_effect, 3)} "
        "= 2 standard errors of one evaluation"
    )


#: The verdicts a plan for a larger study is shown for: undecided, or not decided because the plan
#: changed after the runs (a new study is then what decides it).
PLANNED: tuple[str, ...] = (UNDECIDED, NOT_DECIDED)


def _seeds_cell(seeds: float, verdict: str) -> str:
    """The "Seeds to decide" cell: only for an undecided claim, "—" when no number of seeds would."""
    if verdict not in PLANNED:
        return ""
    return str(int(seeds)) if np.isfinite(seeds) else "—"


def _rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


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
    decided_elsewhere: str = "",
) -> tuple[list[str], list[str]]:
    """Write the decision tables and figure under ``root``; return (Markdown blocks, claim rows).

    Claim rows are ``| claim | source | ours | verdict |`` lines for the report's "Claims checked"
    table, one per (sequence, stage, pair of conditions) and per (sequence, condition, drop).

    Args:
        decided_elsewhere: When not empty, the claims are decided on another primary measure in
            another section (a language model's solve rate): the tables stay descriptive (no verdict
            column, no claim rows), and this sentence says where.
    """
    body: list[str] = []
    claim_rows: list[str] = []
    paths = gain_paths(data.curves)
    if not paths:
        return ["### Forgetting at matched gain\n\nNo run has a later stage with evaluation points.\n"], []
    table = matched_gain_table(paths, rng)
    forgetting = data.per_run[data.per_run["metric"] == "average_forgetting"]
    unconditional = forgetting.groupby(["algo", "sequence"])["value"].mean().rename("average_forgetting")
    table = table.join(unconditional, on=["algo", "sequence"])
    display = pd.DataFrame(
        {
            "Sequence": table["sequence"],
            "Stage": [f"{j}: {s}" for j, s in zip(table["stage_index"], table["stage"], strict=True)],
            **matched_cells(table, "Max gain", "Change on earlier stages at matched gain"),
            "Average forgetting (unconditional)": [fmt_num(v, 3) for v in table["average_forgetting"]],
        }
    )
    notes = (
        "Gain: normalized score on the current stage minus its value when the stage began; change on "
        "earlier stages (the retention compared): their mean normalized score minus its value when the "
        "stage began (0: nothing lost), read for every seed at the point of training where the "
        "condition's mean gain over seeds first reaches the matched gain. Minimum effect: twice the "
        "standard error of one evaluation of the stage's normalized score (the evaluation's episode "
        "spread over the square root of its episodes, pooled over every run's points of the stage); a "
        "condition whose max gain (the largest gain of its mean path) does not exceed it learned "
        "nothing to match (no value). Matched gain: the largest gain every condition that learned "
        "reaches. Mean over seeds, 95% t intervals. Average forgetting: Continual World's, whatever the gain."
    )
    written = write_table(
        table,
        display,
        root / "tables" / "retention_matched_gain",
        caption="Retention at matched new-stage gain",
        label="tab:retention_matched_gain",
        notes=notes,
    )
    body.append("### Forgetting at matched gain\n\n" + table_block(written, root))
    claims = matched_gain_claims(paths, family, per_pair=True)
    if len(claims) and decided_elsewhere:
        body.append(decided_elsewhere + "\n")
    elif len(claims):
        display = pd.DataFrame(
            {
                "Sequence": claims["sequence"],
                "Stage": [f"{j}: {s}" for j, s in zip(claims["stage_index"], claims["stage"], strict=True)],
                **claim_cells(claims, "Change on earlier stages, A - B"),
                "Seeds to decide": [
                    _seeds_cell(v, r)
                    for v, r in zip(claims["seeds_to_decide"], claims["verdict"], strict=True)
                ],
                "Larger study": [_outlook_cell(r) for r in claims.itertuples()],
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
            "the interval lies below 0, contradicted above. Population, AWD: supported when above 0. "
            "Undecided when it holds 0. Not testable (no learning) when the matched gain does not exceed "
            "the minimum effect, twice the standard error of one evaluation of the stage's score (pooled "
            "over every run of the stage). Seeds to decide (undecided rows): seeds per side a new study "
            f"needs for its interval to exclude 0 with {PLANNING_POWER:.0%} power, if the difference and "
            "each side's spread are as measured (a planning number for a fixed study, not a stopping rule); "
            "Larger study: the shares of such studies that would support and contradict the claim.",
        )
        body.append(table_block(written, root))
        for r in claims.itertuples():
            ours = (
                f"{r.sequence} stage {r.stage_index}: at gain {fmt_num(r.matched_gain, 3)}, "
                "change on earlier stages "
                f"{condition_label(r.a)} {fmt_num(r.retention_a, 3)} ({r.n_a} seeds) vs "
                f"{condition_label(r.b)} {fmt_num(r.retention_b, 3)} ({r.n_b} seeds); difference "
                f"{interval_cell(r.difference, r.low, r.high)}"
            )
            if r.verdict == NOT_TESTABLE:
                ours = (
                    f"{r.sequence} stage {r.stage_index}: {no_learning_reading(r.matched_gain, r.min_effect)}"
                )
            elif r.verdict in PLANNED and np.isfinite(r.seeds_to_decide):
                ours += f"; {seeds_reading(r)}"
            claim = RETENTION_CLAIMS[str(r.claim)]
            claim_rows.append(f"| {r.sequence}: {claim.text} | {claim.cited} | {ours} | {r.verdict} |")
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
    transient = transient_table(data.per_run, table, rng)
    if len(transient) and decided_elsewhere:
        transient = transient.drop(columns="verdict")  # decided on the primary measure, elsewhere
    if len(transient):
        verdicts = {} if decided_elsewhere else {"Verdict: the drop recovers": transient["verdict"]}
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
                "Reading": transient["reading"],
                **verdicts,
            }
        )
        written = write_table(
            transient,
            display,
            root / "tables" / "retention_transient",
            caption="Transient against permanent drops",
            label="tab:retention_transient",
            notes="For an earlier stage during a later one, on the normalized scale: "
            + DROP_WINDOWS_TEXT
            + ". "
            + DROP_READING_TEXT,
        )
        body.append("### Transient or permanent\n\n" + table_block(written, root))
        if not decided_elsewhere:
            claim = RETENTION_CLAIMS["drop_recovers"]
            for r in transient.itertuples():
                recovery = interval_cell(r.recovery, r.recovery_low, r.recovery_high)
                ours = (
                    f"{r.sequence}, stage {r.stage_index} during stage {r.during}: "
                    f"{condition_label(str(r.algo))} ({r.n_seeds} seeds): recovery {recovery} ({r.reading})"
                )
                claim_rows.append(f"| {r.sequence}: {claim.text} | {claim.cited} | {ours} | {r.verdict} |")
    return body, claim_rows
