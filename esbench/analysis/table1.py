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

PROGRESS_FRACTIONS: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0)
REFERENCE_DIR = Path(__file__).resolve().parents[2] / "results" / "reference"
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
    "es_last_timesteps",
    "censored",
    "ratio",
    "ratio_bound",
    "ratio_text",
    "paper_ratio",
    "n_seeds_es",
    "n_seeds_rl",
    "partial",
)


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
) -> pd.DataFrame:
    """Compute Table 1 for every environment with both an ES algorithm and ``rl_algo``.

    Args:
        curves: The curve table (:func:`esbench.analysis.load.load_curves`).
        reference: Published table (:func:`load_mujoco_reference`); None leaves paper_ratio NaN.
        rl_algo: The baseline whose curve defines the targets.
        fractions: Progress fractions p.
        partial: (algo, env_id) keys with missing runs or too few seeds (marked in ``partial``).

    Returns:
        DataFrame with columns :data:`TABLE1_COLUMNS`, one row per (env, ES algo, p).
    """
    partial = partial or set()
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
        rl_curve = mean_curve(rl)
        if rl_curve.empty:
            continue
        rl_x, rl_y = rl_curve["x"].to_numpy(), rl_curve["mean"].to_numpy()
        init, final = float(rl_y[0]), float(rl_y[-1])
        targets = progress_targets(init, final, fractions)
        for es_algo in es_algos:
            es_curve = mean_curve(env[env["algo"] == es_algo])
            es_x, es_y = es_curve["x"].to_numpy(), es_curve["mean"].to_numpy()
            es_last = float(es_x[-1]) if len(es_x) else float("nan")
            for p, target in zip(fractions, targets, strict=True):
                progressed = final > init
                rl_t = first_reach(rl_x, rl_y, target) if progressed else float("nan")
                es_t = first_reach(es_x, es_y, target) if progressed else float("nan")
                ratio, bound, censored, text = ratio_entry(es_t, rl_t, es_last)
                if not progressed:
                    text = "n/a (no TRPO progress)"
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
                        "es_last_timesteps": es_last,
                        "censored": censored,
                        "ratio": ratio,
                        "ratio_bound": bound,
                        "ratio_text": text,
                        "paper_ratio": ref.get((env_id, round(float(p), 6)), float("nan")),
                        "n_seeds_es": int(es_curve["n_seeds"].iloc[0]) if len(es_curve) else 0,
                        "n_seeds_rl": int(rl_curve["n_seeds"].iloc[0]),
                        "partial": (es_algo, env_id) in partial or (rl_algo, env_id) in partial,
                    }
                )
    return pd.DataFrame(rows, columns=list(TABLE1_COLUMNS))


def display_table1(table: pd.DataFrame) -> pd.DataFrame:
    """Formatted strings for Markdown/LaTeX; partial conditions get a ``*`` mark on the env."""
    out = pd.DataFrame(
        {
            "Environment": [f"{r.env_name}{' *' if r.partial else ''}" for r in table.itertuples()],
            "% TRPO progress": [f"{round(100 * p)}%" for p in table["progress_fraction"]],
            "Target score": [fmt_num(v, 4) for v in table["target"]],
            "TRPO timesteps": [fmt_num(v) for v in table["rl_timesteps"]],
            "ES timesteps": [
                f"> {fmt_num(r.es_last_timesteps)}" if r.censored else fmt_num(r.es_timesteps)
                for r in table.itertuples()
            ],
            "ES/TRPO (ours)": table["ratio_text"].tolist(),
            "ES/TRPO (paper)": [fmt_num(v, 3) or "—" for v in table["paper_ratio"]],
        }
    )
    if table["es_algo"].nunique() > 1:
        out.insert(1, "ES", table["es_algo"].tolist())
    return out


def write_table1(table: pd.DataFrame, out_dir: str | Path) -> dict[str, Path]:
    """Write ``table1.csv``/``.md``/``.tex`` under ``out_dir``."""
    notes = (
        "Target = init + p (final - init) of TRPO's mean evaluation curve; time = first evaluation "
        "at which the mean curve over seeds reaches the target. '> X': ES never reached the target "
        "within its budget; X = ES's last timestep / TRPO's timesteps is a lower bound on the ratio."
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
