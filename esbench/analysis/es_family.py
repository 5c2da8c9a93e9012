"""The ES family table: every variant's final score per environment, against a reference variant.

For each environment and algorithm: the mean final evaluation return over seeds with its Student-t
95% CI (:func:`esbench.analysis.metrics.intervals.mean_ci`), and the difference to the reference (OpenAI-ES by
default) with Welch's t interval of the difference of means (the two sides' seeds independent,
variances unequal: :func:`esbench.analysis.metrics.intervals.welch_ci`; both intervals' coverage is
measured by :mod:`esbench.analysis.coverage`). The comparison column says what the interval supports:
``better`` / ``worse`` when the difference's CI excludes 0, ``indistinguishable`` when it straddles
0, ``n/a`` with fewer than 2 seeds on either side (no interval).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from esbench.analysis.figures import algo_label
from esbench.analysis.load import is_es
from esbench.analysis.metrics.intervals import mean_ci, welch_ci
from esbench.analysis.tables import fmt_num, write_table

REFERENCE = "openai_es"


def difference_ci(
    a: np.ndarray, b: np.ndarray, rng: np.random.Generator | None = None, confidence: float = 0.95
) -> tuple[float, float, float]:
    """mean(a) - mean(b) and Welch's t interval (:func:`esbench.analysis.metrics.intervals.welch_ci`).

    A percentile bootstrap of the difference covers too rarely at a few seeds a side; Welch's
    interval covers 95% on normal data (``python -m esbench.analysis.coverage``).

    Args:
        a, b: The two samples.
        rng: Unused (Welch's interval draws nothing); kept so every interval function takes one.
        confidence: Confidence level.

    Returns:
        (difference, low, high); low/high NaN when either sample has fewer than 2 values.
    """
    del rng
    return welch_ci(a, b, confidence)


def compare(low: float, high: float) -> str:
    """What a difference CI supports (see the module docstring)."""
    if not (np.isfinite(low) and np.isfinite(high)):
        return "n/a"
    if low > 0:
        return "better"
    if high < 0:
        return "worse"
    return "indistinguishable"


def family_table(
    complete: pd.DataFrame, rng: np.random.Generator, reference: str = REFERENCE
) -> pd.DataFrame:
    """One row per (env, algorithm) of the complete runs, ES variants first then RL.

    Columns: env_id, env_name, algo, is_es, n_seeds, final, low, high, diff, diff_low, diff_high,
    versus (the reference's comparison word; empty for the reference itself).
    """
    rows = []
    for env_id, env in complete.groupby("env_id", sort=True):
        ref = env[env["algo"] == reference]["final_eval_return"].to_numpy(float)
        order = sorted(env["algo"].unique(), key=lambda a: (not is_es(str(a)), str(a) != reference, str(a)))
        for algo in order:
            values = env[env["algo"] == algo]["final_eval_return"].to_numpy(float)
            mean, low, high = mean_ci(values, rng)
            d, dlo, dhi = (np.nan, np.nan, np.nan)
            if algo != reference and len(ref):
                d, dlo, dhi = difference_ci(values, ref, rng)
            rows.append(
                {
                    "env_id": env_id,
                    "env_name": str(env["env_name"].iloc[0]),
                    "algo": str(algo),
                    "is_es": is_es(str(algo)),
                    "n_seeds": len(values),
                    "final": float(mean),
                    "low": float(low),
                    "high": float(high),
                    "diff": d,
                    "diff_low": dlo,
                    "diff_high": dhi,
                    "versus": "" if algo == reference or not len(ref) else compare(dlo, dhi),
                }
            )
    return pd.DataFrame(rows)


def write_family_table(table: pd.DataFrame, out_dir: Path, reference: str = REFERENCE) -> dict[str, Path]:
    """CSV / Markdown / LaTeX of :func:`family_table`."""

    def ci(m: float, lo: float, hi: float) -> str:
        return f"{fmt_num(m, 4)} [{fmt_num(lo, 3)}, {fmt_num(hi, 3)}]" if np.isfinite(lo) else fmt_num(m, 4)

    display = pd.DataFrame(
        {
            "Environment": table["env_name"],
            "Algorithm": [algo_label(a) for a in table["algo"]],
            "Seeds": table["n_seeds"].astype(str),
            "Final eval return [95% CI]": [
                ci(m, lo, hi) for m, lo, hi in zip(table["final"], table["low"], table["high"], strict=True)
            ],
            f"Difference to {algo_label(reference)} [95% CI]": [
                "—" if not np.isfinite(d) else ci(d, lo, hi)
                for d, lo, hi in zip(table["diff"], table["diff_low"], table["diff_high"], strict=True)
            ],
            "Supported": [v or "—" for v in table["versus"]],
        }
    )
    notes = (
        "Mean over seeds of each run's final evaluation (deterministic policy, fixed evaluation seeds); "
        "Student-t 95% CIs. Difference: mean minus the reference's mean, with Welch's t 95% interval "
        "(independent seeds, unequal variances). better / worse: the difference's CI excludes 0; "
        "indistinguishable: it does not; n/a: fewer than 2 seeds."
    )
    return write_table(
        table,
        display,
        out_dir / "es_family",
        caption=f"The ES family against {algo_label(reference)}: final evaluation return per environment",
        label="tab:es_family",
        notes=notes,
    )
