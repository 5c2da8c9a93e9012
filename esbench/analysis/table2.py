"""Table 2 of Salimans et al. (2017): final Atari scores of ES and A2C (the synchronous A3C).

Our score per game is the mean over seeds of each run's final evaluation (deterministic policy,
fixed evaluation seeds), with a 95% bootstrap CI. Wins are counted as the paper counts them: ES
beats A3C on a game when its score is strictly higher; otherwise it is a loss. The published
DQN, A3C FF (1 day) and ES FF (1 hour) scores stand beside ours, matched on ``gymnasium_id``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from esbench.analysis.load import is_es
from esbench.analysis.stats import mean_ci
from esbench.analysis.table1 import REFERENCE_DIR
from esbench.analysis.tables import fmt_num, write_table

ATARI_REFERENCE = REFERENCE_DIR / "salimans2017_atari_table2.csv"

TABLE2_COLUMNS: tuple[str, ...] = (
    "game",
    "env_id",
    "es_algo",
    "rl_algo",
    "es_score",
    "es_low",
    "es_high",
    "rl_score",
    "rl_low",
    "rl_high",
    "es_wins",
    "paper_dqn",
    "paper_a3c",
    "paper_es",
    "paper_es_wins",
    "n_seeds_es",
    "n_seeds_rl",
    "partial",
)


def load_atari_reference(path: str | Path = ATARI_REFERENCE) -> pd.DataFrame:
    """The published Table 2 (51 games; DQN cells empty where the paper has none)."""
    return pd.read_csv(path)


def count_wins(es_scores: np.ndarray, rl_scores: np.ndarray) -> tuple[int, int]:
    """(wins, losses) of ES against the baseline, as the paper counts: a win is strictly higher.

    Args:
        es_scores: Shape (n_games,).
        rl_scores: Shape (n_games,). Games where either score is NaN are not counted.
    """
    es = np.asarray(es_scores, dtype=float)
    rl = np.asarray(rl_scores, dtype=float)
    valid = np.isfinite(es) & np.isfinite(rl)
    wins = int(np.sum(es[valid] > rl[valid]))
    return wins, int(valid.sum()) - wins


def published_wins(reference: pd.DataFrame) -> tuple[int, int]:
    """(wins, losses) of ES FF against A3C FF from the published table alone (paper: 23, 28)."""
    return count_wins(reference["es_ff_1hour"].to_numpy(), reference["a3c_ff_1day"].to_numpy())


def _game_name(env_id: str, env_name: str, ref: pd.DataFrame) -> str:
    match = ref[ref["gymnasium_id"] == env_id]
    return str(match["game"].iloc[0]) if len(match) else env_name


def table2(
    runs: pd.DataFrame,
    reference: pd.DataFrame | None = None,
    rl_algo: str = "a2c",
    rng: np.random.Generator | None = None,
    partial: set[tuple[object, ...]] | None = None,
) -> pd.DataFrame:
    """Final score per game for each ES algorithm and ``rl_algo``, beside the published ones.

    Args:
        runs: The complete runs of the run table (``final_eval_return`` per run).
        reference: :func:`load_atari_reference`; None leaves the paper columns NaN.
        rl_algo: The A3C stand-in (A2C, synchronous A3C).
        rng: Generator for the bootstrap CIs; default ``default_rng(0)``.
        partial: (algo, env_id) keys with missing runs or too few seeds.

    Returns:
        DataFrame with columns :data:`TABLE2_COLUMNS`, one row per (game, ES algo); games with
        only one side have NaN on the other and ``es_wins`` NaN.
    """
    rng = rng if rng is not None else np.random.default_rng(0)
    partial = partial or set()
    ref = reference if reference is not None else pd.DataFrame(columns=["game", "gymnasium_id"])
    rows = []
    for env_id, env in runs.groupby("env_id", sort=True):
        es_algos = sorted(a for a in env["algo"].unique() if is_es(a)) or [""]
        rl = env[env["algo"] == rl_algo]["final_eval_return"].to_numpy(float)
        rl_mean, rl_low, rl_high = mean_ci(rl, rng) if len(rl) else (np.nan, np.nan, np.nan)
        match = ref[ref["gymnasium_id"] == env_id]

        def paper(col: str, match: pd.DataFrame = match) -> float:
            return float(match[col].iloc[0]) if len(match) and col in match else float("nan")

        for es_algo in es_algos:
            es = env[env["algo"] == es_algo]["final_eval_return"].to_numpy(float)
            es_mean, es_low, es_high = mean_ci(es, rng) if len(es) else (np.nan, np.nan, np.nan)
            both = bool(len(es) and len(rl))
            rows.append(
                {
                    "game": _game_name(str(env_id), str(env["env_name"].iloc[0]), ref),
                    "env_id": env_id,
                    "es_algo": es_algo,
                    "rl_algo": rl_algo,
                    "es_score": float(es_mean),
                    "es_low": float(es_low),
                    "es_high": float(es_high),
                    "rl_score": float(rl_mean),
                    "rl_low": float(rl_low),
                    "rl_high": float(rl_high),
                    "es_wins": bool(es_mean > rl_mean) if both else np.nan,
                    "paper_dqn": paper("dqn"),
                    "paper_a3c": paper("a3c_ff_1day"),
                    "paper_es": paper("es_ff_1hour"),
                    "paper_es_wins": bool(paper("es_ff_1hour") > paper("a3c_ff_1day"))
                    if len(match)
                    else np.nan,
                    "n_seeds_es": len(es),
                    "n_seeds_rl": len(rl),
                    "partial": (es_algo, env_id) in partial or (rl_algo, env_id) in partial,
                }
            )
    return pd.DataFrame(rows, columns=list(TABLE2_COLUMNS))


def display_table2(table: pd.DataFrame) -> pd.DataFrame:
    """Formatted strings; the higher of our ES/A2C scores is marked with ``†``."""

    def score(mean: float, low: float, high: float, best: bool) -> str:
        text = fmt_num(mean, 4)
        if np.isfinite(low) and np.isfinite(high) and low != high:
            text += f" [{fmt_num(low, 3)}, {fmt_num(high, 3)}]"
        return text + (" †" if best else "")

    rows = []
    for r in table.itertuples():
        decided = not pd.isna(r.es_wins)
        rows.append(
            {
                "Game": f"{r.game}{' *' if r.partial else ''}",
                "ES (ours)": score(r.es_score, r.es_low, r.es_high, decided and bool(r.es_wins)),
                "A2C (ours)": score(r.rl_score, r.rl_low, r.rl_high, decided and not bool(r.es_wins)),
                "DQN (paper)": fmt_num(r.paper_dqn, 4) or "—",
                "A3C FF (paper)": fmt_num(r.paper_a3c, 4) or "—",
                "ES FF (paper)": fmt_num(r.paper_es, 4) or "—",
            }
        )
    return pd.DataFrame(rows)


def write_table2(table: pd.DataFrame, out_dir: str | Path) -> dict[str, Path]:
    """Write ``table2.csv``/``.md``/``.tex`` under ``out_dir``, with the win counts as a note."""
    wins, losses = count_wins(table["es_score"].to_numpy(), table["rl_score"].to_numpy())
    scored = table.dropna(subset=["paper_es", "paper_a3c"])
    pw, pl = count_wins(scored["paper_es"].to_numpy(), scored["paper_a3c"].to_numpy())
    notes = (
        f"Ours: ES beats A2C on {wins} of {wins + losses} games (strictly higher mean final score). "
        f"Paper, on these games: ES FF beats A3C FF on {pw} of {pw + pl}. "
        "Scores: mean over seeds of the final evaluation [95% bootstrap CI]; † marks the higher of ours. "
        "Our budgets are far below the paper's (ES 1B frames, A3C 320M)."
    )
    if table["partial"].any():
        notes += " *: partial results (missing runs or fewer seeds than other conditions)."
    return write_table(
        table,
        display_table2(table),
        Path(out_dir) / "table2",
        caption="Table 2: final Atari scores, ES vs A2C (synchronous A3C), beside the published scores",
        label="tab:table2",
        notes=notes,
    )
