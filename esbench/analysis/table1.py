"""Table 1 of Salimans et al. (2017): ES timesteps / TRPO timesteps to reach TRPO's progress.

For each environment, TRPO's mean evaluation curve over seeds gives ``init`` (its first point)
and ``final`` (its last); the target for fraction p is ``init + p * (final - init)`` (the
paper's "percentage of TRPO's learning progress", not ``p * final``). Each algorithm's time to a
target is the first timestep at which its mean curve reaches it. Where ES never reaches a target
the ratio is censored: ``> X`` with X = ES's last timestep / TRPO's timesteps (a lower bound,
never an invented number). The published ratio (supplementary Table 3) stands beside ours,
matched on ``gymnasium_id`` and ``progress_fraction``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from esbench.analysis.curves import first_reach, mean_curve
from esbench.analysis.load import is_es
from esbench.analysis.tables import fmt_num, write_table
from esbench.utils.resources import reference_dir

PROGRESS_FRACTIONS: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0)
REFERENCE_DIR = reference_dir()  # results/reference, shipped in the package
MUJOCO_REFERENCE = REFERENCE_DIR / "salimans2017_mujoco_table3.csv"

TABLE1_COLUMNS: tuple[str, ...] = (
    "env_name",
    "env_id",
    "es_algo",
    "rl_algo",
    "progress_fraction",
    "init",
    "final",
    "target",
    "rl_timesteps",
    "es_timesteps",
    "es_low",
    "es_high",
    "es_last_timesteps",
    "censored",
    "ratio",
    "ratio_low",
    "ratio_high",
    "ratio_bound",
    "ratio_text",
    "paper_ratio",
    "n_seeds_es",
    "n_seeds_rl",
    "stopped_below",
    "verdict",
    "decide",
    "partial",
)


#: The paper's claim per environment: (bound on ES/TRPO timesteps, inclusive, fractions it covers).
HARD_LIMIT, EASY_LIMIT = 10.0, 1.0


def claim_of(env_id: str, hard: tuple[str, ...] = ("Hopper-v5", "Walker2d-v5")) -> tuple[float, bool, bool]:
    """(limit, inclusive, every_fraction) of the paper's Table 1 claim on ``env_id``: ES needs < 10x
    TRPO's timesteps at every fraction on the hard tasks, and no more than TRPO (<= 1x) at 100% on
    the easy ones (Sec. 4.1)."""
    if env_id in hard:
        return HARD_LIMIT, False, True
    return EASY_LIMIT, True, False


def load_mujoco_reference(path: str | Path = MUJOCO_REFERENCE) -> pd.DataFrame:
    """The published Table 1 / supplementary Table 3 (one row per env and progress fraction)."""
    return pd.read_csv(path)


def progress_targets(
    init: float, final: float, fractions: Sequence[float] = PROGRESS_FRACTIONS
) -> np.ndarray:
    """Targets ``init + p * (final - init)``, with p = 1 exactly ``final``.

    Returns:
        Array of shape (len(fractions),).
    """
    out = np.array([init + p * (final - init) for p in fractions], dtype=float)
    out[np.asarray(fractions) == 1.0] = final
    return out


def ratio_entry(es_t: float, rl_t: float, es_last: float) -> tuple[float, float, bool, str]:
    """One Table 1 cell.

    Args:
        es_t: ES's first timestep at the target (NaN if never reached).
        rl_t: TRPO's first timestep at the target (NaN if never reached).
        es_last: ES's last observed timestep (the censoring point).

    Returns:
        (ratio, bound, censored, text). A censored cell has ratio NaN, bound es_last / rl_t and
        text ``"> bound"``; a cell TRPO never reached has text ``"n/a"``.
    """
    if not np.isfinite(rl_t) or rl_t <= 0:
        return float("nan"), float("nan"), False, "n/a"
    if not np.isfinite(es_t):
        bound = es_last / rl_t
        return float("nan"), bound, True, f"> {fmt_num(bound, 2)}"
    ratio = es_t / rl_t
    return ratio, float("nan"), False, fmt_num(ratio, 2)


def table1(
    curves: pd.DataFrame,
    reference: pd.DataFrame | None = None,
    rl_algo: str = "trpo",
    fractions: Sequence[float] = PROGRESS_FRACTIONS,
    partial: set[tuple[object, ...]] | None = None,
    rng: np.random.Generator | None = None,
    stopped: set[object] | None = None,
) -> pd.DataFrame:
    """Compute Table 1 for every environment with both an ES algorithm and ``rl_algo``.

    ES's time to each target is read off its mean curve over seeds, with a percentile bootstrap
    interval over ES's seeds (:func:`esbench.analysis.verdicts.time_to_target`); TRPO's time is
    read off TRPO's mean curve, which also defines the targets (the paper's definition), so it is
    the fixed denominator. Each row the paper's claim covers (< 10x at every fraction on Hopper and
    Walker2d, <= 1x at 100% elsewhere: :func:`claim_of`) gets a verdict from that interval.

    Runs in ``stopped`` ended at a target score (``budget.stop_at_return``): they count as having
    reached every target up to their stopping score, at their stopping timestep, and are censored at
    their stop for higher targets (``stopped_below``); they never cut the other seeds short.

    Args:
        curves: The curve table (:func:`esbench.analysis.load.load_curves`).
        reference: Published table (:func:`load_mujoco_reference`); None leaves paper_ratio NaN.
        rl_algo: The baseline whose curve defines the targets.
        fractions: Progress fractions p.
        partial: (algo, env_id) keys with missing runs or too few seeds (marked in ``partial``).
        rng: Generator of the bootstrap resamples; default ``default_rng(0)``.
        stopped: run_ids of runs that ended at their target score.

    Returns:
        DataFrame with columns :data:`TABLE1_COLUMNS`, one row per (env, ES algo, p).
        ``es_timesteps`` is NaN where ES's mean curve never reached the target; ``es_low`` /
        ``es_high`` are +inf where a bootstrap tail did not reach it.
    """
    from esbench.analysis.verdicts import INCONCLUSIVE, Verdict, ratio_verdict, time_to_target

    rng = rng if rng is not None else np.random.default_rng(0)
    partial = partial or set()
    stopped = stopped or set()
    ref: dict[tuple[str, float], float] = {}
    names: dict[str, str] = {}
    if reference is not None:
        names = dict(zip(reference["gymnasium_id"], reference["env"], strict=True))
        ref = {
            (r.gymnasium_id, round(float(r.progress_fraction), 6)): float(r.es_over_trpo)
            for r in reference.itertuples()
        }
    rows = []
    for env_id, env in curves.groupby("env_id", sort=True):
        rl = env[env["algo"] == rl_algo]
        es_algos = sorted(a for a in env["algo"].unique() if is_es(a))
        if rl.empty or not es_algos:
            continue
        rl_curve = mean_curve(rl, stopped=stopped)
        if rl_curve.empty:
            continue
        rl_x, rl_y = rl_curve["x"].to_numpy(), rl_curve["mean"].to_numpy()
        init, final = float(rl_y[0]), float(rl_y[-1])
        targets = progress_targets(init, final, fractions)
        progressed = final > init
        limit, inclusive, every = claim_of(str(env_id))
        for es_algo in es_algos:
            runs = env[env["algo"] == es_algo]
            for p, target in zip(fractions, targets, strict=True):
                tt = time_to_target(runs, float(target), rng, stopped=stopped)
                rl_t = first_reach(rl_x, rl_y, target) if progressed else float("nan")
                es_t = tt.point if progressed and tt.reached else float("nan")
                ratio, bound, censored, text = ratio_entry(es_t, rl_t, tt.last)
                covered = every or float(p) == 1.0
                verdict: Verdict | None = None
                if not progressed:
                    text = "n/a (no TRPO progress)"
                    verdict = Verdict(INCONCLUSIVE, "TRPO's mean curve made no progress") if covered else None
                elif covered:
                    verdict = ratio_verdict(tt, float(target), rl_t, limit, inclusive)
                rows.append(
                    {
                        "env_name": names.get(str(env_id), str(env["env_name"].iloc[0])),
                        "env_id": env_id,
                        "es_algo": es_algo,
                        "rl_algo": rl_algo,
                        "progress_fraction": float(p),
                        "init": init,
                        "final": final,
                        "target": float(target),
                        "rl_timesteps": rl_t,
                        "es_timesteps": es_t,
                        "es_low": tt.low,
                        "es_high": tt.high,
                        "es_last_timesteps": tt.last,
                        "censored": censored,
                        "ratio": ratio,
                        "ratio_low": tt.low / rl_t if progressed else float("nan"),
                        "ratio_high": tt.high / rl_t if progressed else float("nan"),
                        "ratio_bound": bound,
                        "ratio_text": text,
                        "paper_ratio": ref.get((env_id, round(float(p), 6)), float("nan")),
                        "n_seeds_es": tt.n_seeds,
                        "n_seeds_rl": int(rl_curve["n_seeds"].iloc[0]),
                        "stopped_below": tt.stopped_below,
                        "verdict": verdict.word if verdict else "",
                        "decide": verdict.decide if verdict else "",
                        "partial": (es_algo, env_id) in partial or (rl_algo, env_id) in partial,
                    }
                )
    return pd.DataFrame(rows, columns=list(TABLE1_COLUMNS))


def _es_cell(point: float, low: float, high: float, last: float) -> str:
    """ES timesteps ``point [low, high]``, ``> last`` for an end (or point) that was not reached."""

    def one(v: float) -> str:
        return f"> {fmt_num(last)}" if not np.isfinite(v) else fmt_num(v)

    if not (np.isfinite(low) or np.isposinf(low)):
        return one(point)
    return f"{one(point)} [{one(low)}, {one(high)}]"


def display_table1(table: pd.DataFrame) -> pd.DataFrame:
    """Formatted strings for Markdown/LaTeX; partial conditions get a ``*`` mark on the env."""
    out = pd.DataFrame(
        {
            "Environment": [f"{r.env_name}{' *' if r.partial else ''}" for r in table.itertuples()],
            "% TRPO progress": [f"{round(100 * p)}%" for p in table["progress_fraction"]],
            "Target score": [fmt_num(v, 4) for v in table["target"]],
            "TRPO timesteps": [fmt_num(v) for v in table["rl_timesteps"]],
            "ES timesteps [95% CI]": [
                _es_cell(r.es_timesteps, r.es_low, r.es_high, r.es_last_timesteps) for r in table.itertuples()
            ],
            "ES/TRPO (ours) [95% CI]": [
                _ratio_text(r.ratio, r.ratio_low, r.ratio_high, r.es_last_timesteps / r.rl_timesteps)
                if np.isfinite(r.rl_timesteps)
                else r.ratio_text
                for r in table.itertuples()
            ],
            "ES/TRPO (paper)": [fmt_num(v, 3) or "—" for v in table["paper_ratio"]],
            "Verdict": [v or "—" for v in table["verdict"]],
        }
    )
    if table["es_algo"].nunique() > 1:
        out.insert(1, "ES", table["es_algo"].tolist())
    return out


def write_table1(table: pd.DataFrame, out_dir: str | Path) -> dict[str, Path]:
    """Write ``table1.csv``/``.md``/``.tex`` under ``out_dir``."""
    notes = (
        "Target = init + p (final - init) of TRPO's mean evaluation curve; time = first evaluation "
        "at which the mean curve over seeds reaches the target. ES: 95% percentile bootstrap interval "
        "over ES's seeds; TRPO's time is read off the mean curve that defines the targets. '> X': not "
        "reached by timestep X, the last all ES seeds cover (a lower bound on the ratio, never an "
        "invented number). A run that stopped at a target score (budget.stop_at_return) counts as "
        "having reached every target up to it, at its stopping timestep. Verdict: the paper's claim "
        "(< 10x on Hopper and Walker2d at every fraction, <= 1x elsewhere at 100%), from the interval."
    )
    if (table["stopped_below"] > 0).any():
        notes += (
            " Where a run stopped at a score below a target, it is censored at its stop for that "
            "target (X is then that stop)."
        )
    if table["partial"].any():
        notes += " *: partial results (missing runs or fewer seeds than other conditions)."
    return write_table(
        table,
        display_table1(table),
        Path(out_dir) / "table1",
        caption="Table 1: ES timesteps / TRPO timesteps to reach a fraction of TRPO's learning progress",
        label="tab:table1",
        notes=notes,
    )


# --- Table 1 against the paper's own TRPO curve ---------------------------------------------------

PAPER_COLUMNS: tuple[str, ...] = (
    "env_name",
    "env_id",
    "es_algo",
    "progress_fraction",
    "target",
    "paper_trpo_timesteps",
    "paper_es_timesteps",
    "paper_ratio",
    "es_timesteps",
    "es_low",
    "es_high",
    "es_last_timesteps",
    "es_text",
    "ours_over_paper_es",
    "ratio",
    "ratio_low",
    "ratio_high",
    "n_seeds_es",
    "stopped_below",
    "verdict",
    "decide",
    "partial",
)


def table1_paper(
    curves: pd.DataFrame,
    reference: pd.DataFrame,
    rng: np.random.Generator,
    stopped: set[object] | None = None,
    partial: set[tuple[object, ...]] | None = None,
) -> pd.DataFrame:
    """Our ES against the paper's TRPO targets (supplementary Table 3), per env, ES algo and p.

    The paper publishes, for every environment and fraction p, TRPO's target score and the
    timesteps TRPO and ES needed to reach it. This table reads our ES's time to that same score
    off its mean curve over seeds (bootstrap interval, :func:`esbench.analysis.verdicts.time_to_target`),
    and gives ours / the paper's ES timesteps (does esbench's ES behave like the paper's?) and
    ours / the paper's TRPO timesteps (the paper's Table 1 ratio, with our ES in it), with the
    verdict on the paper's claim at that fraction.

    Returns:
        DataFrame with columns :data:`PAPER_COLUMNS`.
    """
    from esbench.analysis.verdicts import ratio_verdict, time_to_target

    partial = partial or set()
    rows = []
    for env_id, env in curves.groupby("env_id", sort=True):
        ref = reference[reference["gymnasium_id"] == env_id]
        if ref.empty:
            continue
        limit, inclusive, every = claim_of(str(env_id))
        for es_algo in sorted(a for a in env["algo"].unique() if is_es(a)):
            runs = env[env["algo"] == es_algo]
            for r in ref.sort_values("progress_fraction").itertuples():
                tt = time_to_target(runs, float(r.trpo_score), rng, stopped=stopped)
                trpo_t, es_t = float(r.trpo_timesteps), float(r.es_timesteps)
                covered = every or float(r.progress_fraction) == 1.0
                verdict = (
                    ratio_verdict(tt, float(r.trpo_score), trpo_t, limit, inclusive) if covered else None
                )
                rows.append(
                    {
                        "env_name": str(r.env),
                        "env_id": env_id,
                        "es_algo": es_algo,
                        "progress_fraction": float(r.progress_fraction),
                        "target": float(r.trpo_score),
                        "paper_trpo_timesteps": trpo_t,
                        "paper_es_timesteps": es_t,
                        "paper_ratio": float(r.es_over_trpo),
                        "es_timesteps": tt.point,
                        "es_low": tt.low,
                        "es_high": tt.high,
                        "es_last_timesteps": tt.last,
                        "es_text": tt.text(),
                        "ours_over_paper_es": tt.point / es_t,
                        "ratio": tt.point / trpo_t,
                        "ratio_low": tt.low / trpo_t,
                        "ratio_high": tt.high / trpo_t,
                        "n_seeds_es": tt.n_seeds,
                        "stopped_below": tt.stopped_below,
                        "verdict": verdict.word if verdict else "",
                        "decide": verdict.decide if verdict else "",
                        "partial": (es_algo, env_id) in partial,
                    }
                )
    return pd.DataFrame(rows, columns=list(PAPER_COLUMNS))


def _ratio_text(point: float, low: float, high: float, last_over: float) -> str:
    def one(v: float) -> str:
        return f"> {fmt_num(last_over, 2)}" if np.isposinf(v) else fmt_num(v, 2)

    if not (np.isfinite(low) or np.isposinf(low)):
        return one(point)
    return f"{one(point)} [{one(low)}, {one(high)}]"


def display_table1_paper(table: pd.DataFrame) -> pd.DataFrame:
    """Formatted strings for Markdown/LaTeX of :func:`table1_paper`."""
    out = pd.DataFrame(
        {
            "Environment": [f"{r.env_name}{' *' if r.partial else ''}" for r in table.itertuples()],
            "% TRPO progress": [f"{round(100 * p)}%" for p in table["progress_fraction"]],
            "Target (paper's TRPO)": [fmt_num(v, 4) for v in table["target"]],
            "ES timesteps, ours [95% CI]": table["es_text"].tolist(),
            "ES timesteps, paper": [fmt_num(v) for v in table["paper_es_timesteps"]],
            "Ours / paper ES": [
                f"> {fmt_num(r.es_last_timesteps / r.paper_es_timesteps, 2)}"
                if np.isposinf(r.es_timesteps)
                else fmt_num(r.ours_over_paper_es, 2)
                for r in table.itertuples()
            ],
            "ES/TRPO, ours over paper's TRPO [95% CI]": [
                _ratio_text(r.ratio, r.ratio_low, r.ratio_high, r.es_last_timesteps / r.paper_trpo_timesteps)
                for r in table.itertuples()
            ],
            "ES/TRPO (paper)": [fmt_num(v, 3) for v in table["paper_ratio"]],
            "Verdict": [v or "—" for v in table["verdict"]],
        }
    )
    if table["es_algo"].nunique() > 1:
        out.insert(1, "ES", table["es_algo"].tolist())
    return out


def write_table1_paper(table: pd.DataFrame, out_dir: str | Path) -> dict[str, Path]:
    """Write ``table1_paper.csv``/``.md``/``.tex`` under ``out_dir``."""
    notes = (
        "Targets are the paper's TRPO scores (supplementary Table 3). Our ES's time = first evaluation at "
        "which its mean curve over seeds reaches the target; 95% percentile bootstrap interval over "
        "seeds; '> X': not reached by timestep X (the last all seeds cover). Ratios divide by the "
        "paper's TRPO timesteps. Verdict: the paper's claim at this fraction (< 10x on Hopper and "
        "Walker2d at every fraction, <= 1x elsewhere at 100%), decided from the interval. A run that "
        "stopped at a target score (budget.stop_at_return) counts as having reached every target up "
        "to it, at its stopping timestep."
    )
    if (table["stopped_below"] > 0).any():
        notes += (
            " Where a run stopped at a score below a target, it is censored at its stop for that "
            "target (X is then that stop)."
        )
    if table["partial"].any():
        notes += " *: partial results (missing runs or fewer seeds than other conditions)."
    return write_table(
        table,
        display_table1_paper(table),
        Path(out_dir) / "table1_paper",
        caption="Table 1 against the paper's own TRPO curve: our ES's timesteps to the paper's TRPO targets",
        label="tab:table1_paper",
        notes=notes,
    )
