"""Frame-skip sensitivity (Salimans et al. 2017, Sec. 4.4, Fig. 2).

The paper's claim: ES learns about equally well at every frame-skip (Pong, frame-skip 1-4),
whereas RL's outcome depends on it. We measure the final evaluation score per (algorithm,
environment, frame-skip), mean over seeds with a 95% Student-t CI, and its spread across
frame-skips (range and standard deviation of those means) for ES and for RL.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from esbench.analysis.load import is_es
from esbench.analysis.stats import mean_ci
from esbench.analysis.tables import fmt_num, write_table


def frameskip_scores(
    runs: pd.DataFrame, rng: np.random.Generator, partial: set[tuple[object, ...]] | None = None
) -> pd.DataFrame:
    """Final score per (algo, env_id, frame_skip).

    Args:
        runs: Complete runs of the run table.
        rng: Unused by the Student-t CIs; kept so every table function takes one.
        partial: (algo, env_id, frame_skip) keys marked partial.

    Returns:
        DataFrame with columns algo, env_id, env_name, frame_skip, mean, low, high, n_seeds,
        partial; one row per condition.
    """
    partial = partial or set()
    rows = []
    for (algo, env_id, fs), group in runs.groupby(["algo", "env_id", "frame_skip"], sort=True):
        mean, low, high = mean_ci(group["final_eval_return"].to_numpy(float), rng)
        rows.append(
            {
                "algo": algo,
                "env_id": env_id,
                "env_name": str(group["env_name"].iloc[0]),
                "frame_skip": fs,
                "mean": float(mean),
                "low": float(low),
                "high": float(high),
                "n_seeds": len(group),
                "partial": (algo, env_id, fs) in partial,
            }
        )
    return pd.DataFrame(
        rows,
        columns=["algo", "env_id", "env_name", "frame_skip", "mean", "low", "high", "n_seeds", "partial"],
    )


def frameskip_spread(scores: pd.DataFrame) -> pd.DataFrame:
    """Spread across frame-skips of each algorithm's mean final score, per environment.

    Args:
        scores: Output of :func:`frameskip_scores`.

    Returns:
        DataFrame with columns algo, is_es, env_id, env_name, n_frame_skips, min, max, range
        (max - min), std (population std across frame-skips), rel_range (range divided by the
        span of all algorithms' means on that env; NaN where that span is 0).
    """
    rows = []
    for env_id, env in scores.groupby("env_id", sort=True):
        span = float(env["mean"].max() - env["mean"].min())
        for algo, group in env.groupby("algo", sort=True):
            means = group["mean"].to_numpy(float)
            rng_ = float(means.max() - means.min())
            rows.append(
                {
                    "algo": algo,
                    "is_es": is_es(str(algo)),
                    "env_id": env_id,
                    "env_name": str(group["env_name"].iloc[0]),
                    "n_frame_skips": len(group),
                    "min": float(means.min()),
                    "max": float(means.max()),
                    "range": rng_,
                    "std": float(means.std()),
                    "rel_range": rng_ / span if span > 0 else float("nan"),
                }
            )
    return pd.DataFrame(
        rows,
        columns=[
            "algo",
            "is_es",
            "env_id",
            "env_name",
            "n_frame_skips",
            "min",
            "max",
            "range",
            "std",
            "rel_range",
        ],
    )


def write_frameskip(scores: pd.DataFrame, spread: pd.DataFrame, out_dir: str | Path) -> dict[str, Path]:
    """Write ``frameskip.csv``/``.md``/``.tex`` (scores per frame-skip, then the spread per algo)."""
    wide = scores.pivot_table(
        index=["env_name", "algo"], columns="frame_skip", values="mean", aggfunc="first"
    )
    display_rows = []
    for (env_name, algo), row in wide.iterrows():
        s = spread[(spread["env_name"] == env_name) & (spread["algo"] == algo)].iloc[0]
        part = scores[(scores["env_name"] == env_name) & (scores["algo"] == algo)]["partial"].any()
        display_rows.append(
            {
                "Environment": f"{env_name}{' *' if part else ''}",
                "Algorithm": algo,
                **{f"skip {int(fs)}": fmt_num(v, 4) for fs, v in row.items()},
                "Range": fmt_num(s["range"], 3),
                "Std": fmt_num(s["std"], 3),
            }
        )
    notes = (
        "Mean final evaluation score over seeds at each frame-skip; Range/Std: spread of those means "
        "across frame-skips (smaller = less sensitive to frame-skip)."
    )
    if scores["partial"].any():
        notes += " *: partial results (missing runs or fewer seeds than other conditions)."
    data = scores.merge(spread, on=["algo", "env_id", "env_name"], how="left", suffixes=("", "_spread"))
    return write_table(
        data,
        pd.DataFrame(display_rows),
        Path(out_dir) / "frameskip",
        caption="Frame-skip sensitivity: final score per frame-skip, ES vs RL",
        label="tab:frameskip",
        notes=notes,
    )
