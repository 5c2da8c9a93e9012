"""The population-size ablation: OpenAI-ES's timesteps to the paper's Table 1 target per population.

Our ES at population 40 reaches some Table 1 targets in a small fraction of the timesteps the
paper's ES needed; the paper does not publish its Table 1 population, and its reference code's
only MuJoCo configuration uses batches of at least 10,000 episodes. This analysis measures how
the timesteps to the target depend on the population, which is the likeliest cause of that gap.

Per task and population (one condition: the seeds of one ``algo.population_size``):

* the target is the paper's TRPO score at 100% of its learning progress (supplementary Table 3,
  ``trpo_score``), the score the recipe's runs stop at after a confirmation on fresh seeds;
* the timesteps to it (:func:`esbench.analysis.verdicts.time_to_target`): the Kaplan-Meier median
  of the runs' first confirmed times, a run that never got there censored at its budget, with its
  order-statistic interval, and the share of runs that reached it where any did not;
* the ratio to the paper's ES timesteps to the same target divides by that published constant
  (:func:`esbench.analysis.verdicts.ratio_interval`), and "reproduced" asks whether its interval
  contains 1 (:func:`esbench.analysis.verdicts.reproduce_verdict`).

The claim row per task compares the largest population with the smallest: "a larger population
needs more timesteps to the target" is **supported** when the ratio largest / smallest has its
whole interval above 1 (both sides' uncertainty, :func:`esbench.analysis.metrics.censored.time_ratio`),
**contradicted** when it lies wholly below 1 (the larger population needs *fewer* timesteps),
**undecided** otherwise (:func:`esbench.analysis.claims.decide`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.ticker import LogLocator, NullFormatter

from esbench.analysis.claims import CONTRADICTED, UNDECIDED, decide
from esbench.analysis.figures import (
    OKABE_ITO,
    _style,
    env_title,
    new_figure,
    panel_text,
    savefig,
    short_number,
)
from esbench.analysis.tables import fmt_num, write_table
from esbench.analysis.verdicts import (
    TIME_CI_METHOD,
    TimeToTarget,
    Verdict,
    ratio_interval,
    reproduce_verdict,
    time_to_target,
)

#: The progress fraction of the paper's target (100%: TRPO's score at 5M timesteps).
FRACTION = 1.0

#: The question the claim row answers, per task.
CLAIM = "A larger population needs more timesteps to the paper's target"

POPULATION_COLUMNS: tuple[str, ...] = (
    "env_id",
    "env_name",
    "algo",
    "population",
    "target",
    "paper_es_timesteps",
    "n_seeds",
    "n_reached",
    "timesteps",
    "timesteps_low",
    "timesteps_high",
    "last_timesteps",
    "timesteps_text",
    "ratio",
    "ratio_low",
    "ratio_high",
    "ratio_text",
    "reproduced",
    "reproduced_note",
)

CLAIM_COLUMNS: tuple[str, ...] = (
    "env_id",
    "env_name",
    "algo",
    "small",
    "large",
    "large_over_small",
    "verdict",
    "decide",
)


def population_table(
    curves: pd.DataFrame,
    reference: pd.DataFrame,
    stopped: set[object] | None = None,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """One row per (task, algorithm, population): timesteps to the paper's target and the ratio
    to the paper's ES.

    Args:
        curves: Curve table (:func:`esbench.analysis.load.load_curves`, complete runs) with a
            ``population`` column; rows without a population (RL) are left out.
        reference: :func:`esbench.analysis.table1.load_mujoco_reference`.
        stopped: run_ids that ended at their target (``budget.stop_at_return``).
        confidence: Level of the time interval.

    Returns:
        DataFrame with columns :data:`POPULATION_COLUMNS`, sorted by task, algorithm, population;
        tasks the paper did not run are left out.
    """
    ref = reference[reference["progress_fraction"] == FRACTION].set_index("gymnasium_id")
    rows = []
    evals = curves.dropna(subset=["eval_return_mean", "population"])
    for (env_id, algo, population), g in evals.groupby(["env_id", "algo", "population"], sort=True):
        if env_id not in ref.index:
            continue
        target = float(ref.loc[env_id, "trpo_score"])
        paper_es = float(ref.loc[env_id, "es_timesteps"])
        t = time_to_target(g, target, stopped=stopped, confidence=confidence)
        ri = ratio_interval(t, paper_es)
        rep = reproduce_verdict(ri, 1.0)
        rows.append(
            {
                "env_id": env_id,
                "env_name": env_title(str(env_id)),
                "algo": str(algo),
                "population": int(population),
                "target": target,
                "paper_es_timesteps": paper_es,
                "n_seeds": t.n_seeds,
                "n_reached": t.n_reached,
                "timesteps": t.point,
                "timesteps_low": t.low,
                "timesteps_high": t.high,
                "last_timesteps": t.last,
                "timesteps_text": t.cell_text(),
                "ratio": ri.point,
                "ratio_low": ri.low,
                "ratio_high": ri.high,
                "ratio_text": ri.text(),
                "reproduced": rep.word,
                "reproduced_note": rep.decide,
            }
        )
    return pd.DataFrame(rows, columns=list(POPULATION_COLUMNS))


def trend_verdict(small: TimeToTarget, large: TimeToTarget) -> tuple[Verdict, str]:
    """Verdict on "the larger population needs more timesteps to the target" and the ratio's text.

    The ratio largest / smallest of the two populations' median times, its interval over both
    sides' runs (:func:`esbench.analysis.verdicts.ratio_interval`), decided against 1 by
    :func:`esbench.analysis.claims.decide`.

    Returns:
        (verdict, "large / small [interval]" text, or "—" when neither median is bounded).
    """
    ri = ratio_interval(large, small)
    n = min(small.n_seeds, large.n_seeds)
    if np.isnan(ri.point):
        return Verdict(UNDECIDED, "neither population's median reached the target: longer runs"), "—"
    if np.isnan(ri.low):
        return Verdict(
            UNDECIDED, f"needs at least 2 seeds per population for an interval (has {n})"
        ), ri.text()
    word = decide(ri.low, ri.high, "above", 1.0)
    if word == CONTRADICTED:
        return Verdict(word, "the larger population needs fewer timesteps"), ri.text()
    if word == UNDECIDED:
        return Verdict(word, f"the interval straddles 1x: more seeds (now {n})"), ri.text()
    return Verdict(word), ri.text()


def claim_table(
    curves: pd.DataFrame, reference: pd.DataFrame, stopped: set[object] | None = None
) -> pd.DataFrame:
    """One row per (task, algorithm) with at least two populations: :func:`trend_verdict` of its
    largest population against its smallest. Columns :data:`CLAIM_COLUMNS`."""
    ref = reference[reference["progress_fraction"] == FRACTION].set_index("gymnasium_id")
    rows = []
    evals = curves.dropna(subset=["eval_return_mean", "population"])
    for (env_id, algo), g in evals.groupby(["env_id", "algo"], sort=True):
        pops = sorted(int(p) for p in g["population"].unique())
        if env_id not in ref.index or len(pops) < 2:
            continue
        target = float(ref.loc[env_id, "trpo_score"])
        small, large = (
            time_to_target(g[g["population"] == p], target, stopped=stopped) for p in (pops[0], pops[-1])
        )
        verdict, text = trend_verdict(small, large)
        rows.append(
            {
                "env_id": env_id,
                "env_name": env_title(str(env_id)),
                "algo": str(algo),
                "small": pops[0],
                "large": pops[-1],
                "large_over_small": text,
                "verdict": verdict.word,
                "decide": verdict.decide,
            }
        )
    return pd.DataFrame(rows, columns=list(CLAIM_COLUMNS))


def claim_rows(claims: pd.DataFrame) -> list[str]:
    """Rows ``| claim | paper | ours | verdict |`` of the report's claims table, one per task."""
    out = []
    for r in claims.itertuples():
        verdict = f"**{r.verdict}**" + (f": {r.decide}" if r.decide else "")
        out.append(
            f"| {r.env_name}: {CLAIM.lower()[0]}{CLAIM[1:]} (population {r.large} vs {r.small}) | "
            "not published (the paper's Table 1 population is not given) | "
            f"timesteps at {r.large} / at {r.small}: {r.large_over_small} | {verdict} |"
        )
    return out


def write_population_table(table: pd.DataFrame, out_dir: str | Path) -> dict[str, Path]:
    """``population.{csv,md,tex}`` under ``out_dir``."""
    display = pd.DataFrame(
        {
            "Task": table["env_name"].tolist(),
            "Population": [str(p) for p in table["population"]],
            "Target": [fmt_num(v, 4) for v in table["target"]],
            "Seeds reached": [f"{k}/{n}" for k, n in zip(table["n_reached"], table["n_seeds"], strict=True)],
            "Timesteps to target [95% CI]": table["timesteps_text"].tolist(),
            "Paper's ES timesteps": [fmt_num(v) for v in table["paper_es_timesteps"]],
            "Ours / paper's ES [95% CI]": table["ratio_text"].tolist(),
            "Paper's ES reproduced": [
                f"**{w}**" + (f": {n}" if n else "")
                for w, n in zip(table["reproduced"], table["reproduced_note"], strict=True)
            ],
        }
    )
    notes = (
        "Target: the paper's TRPO score at 100% of its learning progress (supplementary Table 3), "
        "where each run stops once a confirmation on fresh evaluation seeds reaches it too. "
        f"Timesteps to target: {TIME_CI_METHOD} (95%); '> x': unbounded by runs censored by x. "
        "Reproduced: our ratio to the paper's ES timesteps has an interval containing 1."
    )
    return write_table(
        table,
        display,
        Path(out_dir) / "population",
        caption="Timesteps to the paper's target per task and population",
        label="tab:population",
        notes=notes,
    )


def plot_population(table: pd.DataFrame, stem: str | Path) -> list[Path]:
    """Timesteps to target against population (log-log), one panel per task and algorithm.

    Dots and bars: the time and its 95% interval; a triangle: never reached, drawn at the last
    timestep every seed covers; an interval open above ends in an arrow; dashed line: the paper's
    ES timesteps to the same target.

    Args:
        table: :func:`population_table`.
        stem: Output path without suffix.
    """
    panels = sorted({(str(r.env_id), str(r.algo)) for r in table.itertuples()})
    several = len({a for _, a in panels}) > 1
    fig, axes = new_figure(max(1, len(panels)), ncols=2, panel_size=(3.4, 2.6))
    color = OKABE_ITO[0]
    with _style():
        for ax, (env_id, algo) in zip(axes, panels, strict=False):
            rows = table[(table["env_id"] == env_id) & (table["algo"] == algo)].sort_values("population")
            for r in rows.itertuples():
                x = float(r.population)
                point, low, high, last = (float(r.timesteps), float(r.timesteps_low),
                                          float(r.timesteps_high), float(r.last_timesteps))  # fmt: skip
                top = high if np.isfinite(high) else last
                if np.isfinite(low) and np.isfinite(top):
                    ax.plot([x, x], [max(low, 1.0), top], color=color, linewidth=1.2)
                    if not np.isfinite(high):
                        ax.annotate(
                            "", (x, top * 1.6), (x, top), arrowprops={"arrowstyle": "->", "color": color}
                        )
                if np.isfinite(point):
                    ax.plot(x, max(point, 1.0), marker="o", color=color, linestyle="none")
                elif np.isfinite(last):
                    ax.plot(x, last, marker="^", color=color, linestyle="none")
            paper = float(rows["paper_es_timesteps"].iloc[0])
            ax.axhline(paper, color="#000000", linestyle="--", linewidth=0.8)
            ax.set_xscale("log")
            ax.set_yscale("log")
            pops = rows["population"].to_numpy(float)
            ax.set_xlim(pops.min() / 1.6, pops.max() * 1.6)
            ax.set_xticks(pops)
            ax.set_xticks([], minor=True)
            ax.xaxis.set_major_formatter(short_number)
            # Ticks at 1, 2 and 5 per decade, all in the same short form: matplotlib otherwise labels
            # a panel spanning less than a decade with minor ticks in scientific notation (6x10^5)
            # beside its major ones in short form (1M).
            ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0), numticks=6))
            ax.yaxis.set_minor_formatter(NullFormatter())
            ax.yaxis.set_major_formatter(short_number)
            panel_text(ax, env_title(env_id) + (f" ({algo})" if several else ""), "Population",
                       "Timesteps to target")  # fmt: skip
        handles = [
            Line2D([], [], color=color, marker="o", label="ours, 95% CI"),
            Line2D([], [], color=color, marker="^", linestyle="none", label="not reached (last timestep)"),
            Line2D([], [], color="#000000", linestyle="--", label="paper's ES"),
        ]
        fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), frameon=False)
    return savefig(fig, stem)
