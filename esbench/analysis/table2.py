"""Table 2 of Salimans et al. (2017): final Atari scores of ES and A2C (the synchronous A3C).

Our score per game is the mean over seeds of each run's final evaluation (fixed evaluation seeds;
by default ES acts deterministically and A2C samples its policy, as A3C's published scores were
obtained: :mod:`esbench.config.eval_protocol`; the notes say how the runs did), with a 95%
Student-t CI, and ES minus A2C with its 95% Welch interval. Each of our games' outcomes is
decided by that interval (:func:`game_outcome`): ES wins when the interval lies above 0, loses
when it lies below, ties when both sides score the same at every seed (e.g. 0 on a game neither
learns), and the game is undecided otherwise: a higher mean over a few seeds is not a win. A tie
and an undecided game are neither a win nor a loss, in the table, the counts and the claim
(:data:`OUTCOMES`); the claim's interval bounds the share of games won over every way the
undecided games could go (:func:`win_share_interval`). The published scores have no intervals,
so the paper's count, 23 wins and 28 losses of 51, compares them directly (:func:`outcome`: a
strictly higher score wins; the published table has no tie). The published DQN, A3C FF (1 day)
and ES FF (1 hour) scores stand beside ours, matched on ``gymnasium_id``.

Every score, ours and the paper's, is also given human-normalized,
``(score - random) / (human - random)`` (:func:`human_normalized`): 0 is random play, 1 the human
tester, with the random and human scores of Wang et al. (2016) under no-op starts
(``results/reference/wang2016_atari_random_human.csv``). A raw 0 on Enduro is random play; a raw
0 on Space Invaders is far below it (random: 148): only the normalized score says which.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from esbench.analysis.load import config_value, is_es, read_config
from esbench.analysis.metrics.intervals import mean_ci, welch_ci
from esbench.analysis.table1 import REFERENCE_DIR
from esbench.analysis.tables import fmt_num, write_table
from esbench.config.eval_protocol import eval_protocol
from esbench.tracking.schema import CONFIG_FILE

ATARI_REFERENCE = REFERENCE_DIR / "salimans2017_atari_table2.csv"
HUMAN_RANDOM_REFERENCE = REFERENCE_DIR / "wang2016_atari_random_human.csv"

#: A game's outcome for ES against the baseline: higher, lower, equal, or (ours only: the interval of
#: the difference contains 0) undecided; "" where a side has no score.
WIN, LOSS, TIE, UNDECIDED_GAME = "win", "loss", "tie", "undecided"
OUTCOMES: tuple[str, ...] = (WIN, LOSS, TIE, UNDECIDED_GAME)

#: Scores that get a human-normalized twin ``<name>_hns`` in :func:`table2`.
HNS_SCORES: tuple[str, ...] = ("es_score", "rl_score", "paper_dqn", "paper_a3c", "paper_es")

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
    "outcome",
    "diff",
    "diff_low",
    "diff_high",
    "paper_dqn",
    "paper_a3c",
    "paper_es",
    "paper_es_wins",
    "paper_outcome",
    "n_seeds_es",
    "n_seeds_rl",
    "partial",
    "random",
    "human",
    "es_score_hns",
    "rl_score_hns",
    "paper_dqn_hns",
    "paper_a3c_hns",
    "paper_es_hns",
    "rl_eval",
)


def load_atari_reference(
    path: str | Path = ATARI_REFERENCE, human_random: str | Path | None = HUMAN_RANDOM_REFERENCE
) -> pd.DataFrame:
    """The published Table 2 (51 games; DQN cells empty where the paper has none), with each
    game's published ``random`` and ``human`` scores and their ``random_human_source``.

    Args:
        path: The Table 2 CSV (``game, gymnasium_id, dqn, a3c_ff_1day, es_ff_1hour``).
        human_random: The random/human CSV (``game, gymnasium_id, random, human, source``), joined
            on ``gymnasium_id``; None leaves those columns out.
    """
    reference = pd.read_csv(path)
    if human_random is None:
        return reference
    scores = pd.read_csv(human_random)[["gymnasium_id", "random", "human", "source"]]
    scores = scores.rename(columns={"source": "random_human_source"})
    return reference.merge(scores, on="gymnasium_id", how="left")


def human_normalized(score: ArrayLike, random: ArrayLike, human: ArrayLike) -> np.ndarray:
    """``(score - random) / (human - random)``, elementwise: 0 is random play, 1 the human tester.

    Args:
        score: Shape (n,) (or a scalar): raw game scores.
        random: Shape (n,): the random agent's score per game.
        human: Shape (n,): the human tester's score per game.

    Returns:
        Shape (n,) float; NaN where any input is NaN or ``human == random`` (no scale).
    """
    s, r, h = (np.asarray(x, dtype=float) for x in (score, random, human))
    scale = h - r
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(scale != 0, (s - r) / np.where(scale != 0, scale, 1.0), np.nan)


def median_hns(table: pd.DataFrame) -> dict[str, float]:
    """Median human-normalized score over the games of ``table`` with a finite value, per column.

    Args:
        table: :func:`table2`'s output.

    Returns:
        ``{"es_score_hns": ..., "rl_score_hns": ..., "paper_a3c_hns": ..., ...}`` (NaN where no
        game has one).
    """
    out = {}
    for name in HNS_SCORES:
        values = table[f"{name}_hns"].to_numpy(dtype=float)
        values = values[np.isfinite(values)]
        out[f"{name}_hns"] = float(np.median(values)) if len(values) else float("nan")
    return out


def eval_label(config: dict | None) -> str:
    """How a run acted at evaluation (``sampled``, ``deterministic``, ...), from its config as
    plain data (:func:`esbench.analysis.load.read_config`); "" where it does not say."""
    if config is None or config_value(config, "algo.name") is None:
        return ""
    return eval_protocol(config).label


def run_eval_labels(runs: pd.DataFrame) -> pd.Series:
    """How each run acted at evaluation (``sampled``, ``deterministic``, ``epsilon-greedy (0.05)``):
    the run table's ``eval_label`` column where it has one (a report's runs, labelled from their
    shipped configs with :func:`eval_label`), else read from each run's ``config.yaml``; "" where
    the run table has neither or the config is unreadable.

    Args:
        runs: The run table (one row per run, with ``eval_label`` or ``path``).

    Returns:
        Strings indexed like ``runs``.
    """
    if "eval_label" in runs.columns:
        return runs["eval_label"].fillna("").astype(str).astype(object)
    labels = []
    for path in runs["path"] if "path" in runs.columns else [None] * len(runs):
        config = None
        if isinstance(path, str) and (Path(path) / CONFIG_FILE).is_file():
            try:
                config = read_config(Path(path) / CONFIG_FILE)
            except Exception:  # the loader already reported an unreadable config
                config = None
        labels.append(eval_label(config))
    return pd.Series(labels, index=runs.index, dtype=object)


def game_outcome(es: ArrayLike, rl: ArrayLike) -> str:
    """One game's outcome for ES from our runs, decided by the 95% Welch interval of ES minus the
    baseline over seeds (:func:`~esbench.analysis.metrics.intervals.welch_ci`): ``"win"`` when it
    lies above 0, ``"loss"`` below 0, ``"tie"`` when both sides score the same at every seed (one seed
    included), ``"undecided"`` when it contains 0 or a side has fewer than 2 seeds; ``""`` when a
    side has no run.

    Args:
        es, rl: Final evaluation returns, one per seed, of ES and of the baseline.
    """
    es, rl = np.asarray(es, dtype=float), np.asarray(rl, dtype=float)
    if not len(es) or not len(rl):
        return ""
    if np.all(es == es[0]) and np.all(rl == es[0]):  # one score on both sides, at every seed
        return TIE
    _, low, high = welch_ci(es, rl)
    if not (np.isfinite(low) and np.isfinite(high)):
        return UNDECIDED_GAME
    return WIN if low > 0 else LOSS if high < 0 else UNDECIDED_GAME


def outcome(es_score: float, rl_score: float) -> str:
    """The published scores' outcome for ES (no intervals): ``"win"`` (strictly higher),
    ``"loss"`` (strictly lower), ``"tie"`` (equal: neither a win nor a loss), ``""`` where either
    score is NaN."""
    if not (np.isfinite(es_score) and np.isfinite(rl_score)):
        return ""
    return WIN if es_score > rl_score else LOSS if es_score < rl_score else TIE


def count_outcomes(es_scores: ArrayLike, rl_scores: ArrayLike) -> tuple[int, int, int]:
    """(wins, losses, ties) of ES against the baseline, as the paper counts: a win is strictly
    higher, a loss strictly lower, and a tie neither.

    Args:
        es_scores: Shape (n_games,).
        rl_scores: Shape (n_games,). Games where either score is NaN are not counted.
    """
    es = np.asarray(es_scores, dtype=float)
    rl = np.asarray(rl_scores, dtype=float)
    valid = np.isfinite(es) & np.isfinite(rl)
    wins = int(np.sum(es[valid] > rl[valid]))
    losses = int(np.sum(es[valid] < rl[valid]))
    return wins, losses, int(valid.sum()) - wins - losses


def count_wins(es_scores: ArrayLike, rl_scores: ArrayLike) -> tuple[int, int]:
    """(wins, losses) of :func:`count_outcomes`: ties are neither."""
    wins, losses, _ = count_outcomes(es_scores, rl_scores)
    return wins, losses


@dataclass(frozen=True)
class WinShare:
    """ES's share of the games won (wins over wins + losses; ties are neither), with the interval
    every way the undecided games could go leaves it in.

    Attributes:
        wins, losses, ties, undecided: Games by :func:`game_outcome`.
        share: ``wins / (wins + losses)``, over the decided games; NaN when none is decided.
        low, high: ``wins / (wins + losses + undecided)`` (every undecided game a loss) and
            ``(wins + undecided) / (wins + losses + undecided)`` (every one a win); NaN when every
            game is a tie. It covers the true share whenever each decided game's interval is on
            the side of its true difference (simulated coverage: docs/statistics.md).
        n_games: Games with runs on both sides.
        min_seeds: Fewest seeds any of those games has on either side.
    """

    wins: int
    losses: int
    ties: int
    undecided: int
    share: float
    low: float
    high: float
    n_games: int
    min_seeds: int


def win_share_interval(runs: pd.DataFrame, es_algo: str, rl_algo: str = "a2c") -> WinShare:
    """ES's share of the games won against ``rl_algo``, and its bounds over the undecided games.

    Each game with runs on both sides is decided by :func:`game_outcome` (its Welch interval). The
    share of the games won among those not tied lies between "every undecided game lost" and
    "every undecided game won", so the claim is decided only when both ends are on one side of it.

    Args:
        runs: Complete runs (``env_id``, ``algo``, ``final_eval_return``).
        es_algo: The ES algorithm.
        rl_algo: The baseline.
    """
    nan = float("nan")
    counts = dict.fromkeys(OUTCOMES, 0)
    seeds: list[int] = []
    for _, env in runs.groupby("env_id", sort=True):
        es = env[env["algo"] == es_algo]["final_eval_return"].to_numpy(float)
        rl = env[env["algo"] == rl_algo]["final_eval_return"].to_numpy(float)
        if not len(es) or not len(rl):
            continue
        counts[game_outcome(es, rl)] += 1
        seeds += [len(es), len(rl)]
    if not seeds:
        return WinShare(0, 0, 0, 0, nan, nan, nan, 0, 0)
    wins, losses, open_ = counts[WIN], counts[LOSS], counts[UNDECIDED_GAME]
    decided, open_games = wins + losses, wins + losses + open_
    share = wins / decided if decided else nan
    low = wins / open_games if open_games else nan
    high = (wins + open_) / open_games if open_games else nan
    return WinShare(wins, losses, counts[TIE], open_, share, low, high, len(seeds) // 2, min(seeds))


def published_wins(reference: pd.DataFrame) -> tuple[int, int]:
    """(wins, losses) of ES FF against A3C FF from the published table alone (paper: 23, 28;
    counted with :func:`outcome`'s rule, so a tie would be neither)."""
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
        reference: :func:`load_atari_reference`; None leaves the paper columns (and the
            random / human scores, hence every human-normalized one) NaN.
        rl_algo: The A3C stand-in (A2C, synchronous A3C).
        rng: Generator for the bootstrap CIs; default ``default_rng(0)``.
        partial: (algo, env_id) keys with missing runs or too few seeds.

    Returns:
        DataFrame with columns :data:`TABLE2_COLUMNS`, one row per (game, ES algo); games with
        only one side have NaN on the other, ``outcome`` "" and ``es_wins`` NaN. ``outcome`` is
        ``win``/``loss``/``tie``/``undecided`` (:func:`game_outcome`, from the interval of the
        difference; ``es_wins`` True/False, NaN on a tie or an undecided game), ``diff`` ES minus
        the baseline with its 95% Welch interval ``diff_low``/``diff_high``, and
        ``paper_outcome``/``paper_es_wins`` the same for the published scores (:func:`outcome`:
        they have no intervals). ``<score>_hns`` is the
        human-normalized twin of each of :data:`HNS_SCORES` (from the reference's ``random`` and
        ``human``); ``rl_eval`` says how ``rl_algo``'s runs acted at evaluation
        (:func:`run_eval_labels`, distinct labels joined by ", ").
    """
    rng = rng if rng is not None else np.random.default_rng(0)
    partial = partial or set()
    ref = reference if reference is not None else pd.DataFrame(columns=["game", "gymnasium_id"])
    rows = []
    labels = run_eval_labels(runs)
    for env_id, env in runs.groupby("env_id", sort=True):
        es_algos = sorted(a for a in env["algo"].unique() if is_es(a)) or [""]
        rl = env[env["algo"] == rl_algo]["final_eval_return"].to_numpy(float)
        rl_eval = ", ".join(sorted({str(x) for x in labels[env.index[env["algo"] == rl_algo]] if x}))
        rl_mean, rl_low, rl_high = mean_ci(rl, rng) if len(rl) else (np.nan, np.nan, np.nan)
        match = ref[ref["gymnasium_id"] == env_id]

        def paper(col: str, match: pd.DataFrame = match) -> float:
            return float(match[col].iloc[0]) if len(match) and col in match else float("nan")

        for es_algo in es_algos:
            es = env[env["algo"] == es_algo]["final_eval_return"].to_numpy(float)
            es_mean, es_low, es_high = mean_ci(es, rng) if len(es) else (np.nan, np.nan, np.nan)
            both = bool(len(es) and len(rl))
            result = game_outcome(es, rl) if both else ""
            diff, diff_low, diff_high = welch_ci(es, rl) if both else (np.nan, np.nan, np.nan)
            paper_result = outcome(paper("es_ff_1hour"), paper("a3c_ff_1day")) if len(match) else ""
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
                    "es_wins": (result == WIN) if result in (WIN, LOSS) else np.nan,
                    "outcome": result,
                    "diff": float(diff),
                    "diff_low": float(diff_low),
                    "diff_high": float(diff_high),
                    "paper_dqn": paper("dqn"),
                    "paper_a3c": paper("a3c_ff_1day"),
                    "paper_es": paper("es_ff_1hour"),
                    "paper_es_wins": (paper_result == WIN) if paper_result in (WIN, LOSS) else np.nan,
                    "paper_outcome": paper_result,
                    "n_seeds_es": len(es),
                    "n_seeds_rl": len(rl),
                    "partial": (es_algo, env_id) in partial or (rl_algo, env_id) in partial,
                    "random": paper("random"),
                    "human": paper("human"),
                    "rl_eval": rl_eval,
                }
            )
    table = pd.DataFrame(rows, columns=list(TABLE2_COLUMNS))
    for name in HNS_SCORES:
        table[f"{name}_hns"] = human_normalized(table[name], table["random"], table["human"])
    return table


def fmt_hns(value: float) -> str:
    """A human-normalized score as a percentage with 3 significant digits (``"—"`` for NaN)."""
    return f"{fmt_num(100.0 * value, 3)}%" if np.isfinite(value) else "—"


def display_table2(table: pd.DataFrame) -> pd.DataFrame:
    """Formatted strings; the winner of a game decided by its interval is marked with ``†``
    (neither on a tie or an undecided game); the outcome (win, loss, tie or undecided) and ES minus
    A2C with its 95% Welch interval; human-normalized scores (HNS) in percent beside the raw ones."""

    def score(mean: float, low: float, high: float, best: bool) -> str:
        text = fmt_num(mean, 4)
        if np.isfinite(low) and np.isfinite(high) and low != high:
            text += f" [{fmt_num(low, 3)}, {fmt_num(high, 3)}]"
        return text + (" †" if best else "")

    rows = []
    for r in table.itertuples():
        rows.append(
            {
                "Game": f"{r.game}{' *' if r.partial else ''}",
                "ES (ours)": score(r.es_score, r.es_low, r.es_high, r.outcome == WIN),
                "A2C (ours)": score(r.rl_score, r.rl_low, r.rl_high, r.outcome == LOSS),
                "ES outcome": r.outcome or "—",
                "ES - A2C": score(r.diff, r.diff_low, r.diff_high, False) if np.isfinite(r.diff) else "—",
                "ES HNS": fmt_hns(r.es_score_hns),
                "A2C HNS": fmt_hns(r.rl_score_hns),
                "DQN (paper)": fmt_num(r.paper_dqn, 4) or "—",
                "A3C FF (paper)": fmt_num(r.paper_a3c, 4) or "—",
                "ES FF (paper)": fmt_num(r.paper_es, 4) or "—",
                "A3C FF HNS (paper)": fmt_hns(r.paper_a3c_hns),
                "ES FF HNS (paper)": fmt_hns(r.paper_es_hns),
            }
        )
    return pd.DataFrame(rows)


def hns_note(table: pd.DataFrame) -> str:
    """One sentence: what HNS is, and the median HNS of each side over the table's games."""
    med = median_hns(table)
    return (
        "HNS: human-normalized score (score - random) / (human - random), in %: 0% plays like a random "
        "agent, 100% like the human tester (random and human scores: Wang et al. 2016, no-op starts). "
        f"Median HNS over these games: ES (ours) {fmt_hns(med['es_score_hns'])}, "
        f"A2C (ours) {fmt_hns(med['rl_score_hns'])}; paper: ES FF {fmt_hns(med['paper_es_hns'])}, "
        f"A3C FF {fmt_hns(med['paper_a3c_hns'])}."
    )


def eval_note(table: pd.DataFrame) -> str:
    """One sentence on how the baseline's runs acted at evaluation ("" when no run says)."""
    labels = sorted({part for cell in table["rl_eval"] for part in str(cell).split(", ") if part})
    if not labels:
        return ""
    return (
        f" Evaluation: ES deterministic; A2C {' / '.join(labels)} "
        "(eval.policy; A3C's published scores come from sampling its policy)."
    )


def write_table2(table: pd.DataFrame, out_dir: str | Path) -> dict[str, Path]:
    """Write ``table2.csv``/``.md``/``.tex`` under ``out_dir``, with the win counts as a note."""
    counts = {k: int((table["outcome"] == k).sum()) for k in OUTCOMES}
    scored = table.dropna(subset=["paper_es", "paper_a3c"])
    pw, pl, pt = count_outcomes(scored["paper_es"].to_numpy(), scored["paper_a3c"].to_numpy())
    notes = (
        f"Ours: ES beats A2C on {counts[WIN]}, loses on {counts[LOSS]}, ties on {counts[TIE]} and is "
        f"undecided on {counts[UNDECIDED_GAME]} of {sum(counts.values())} games (win: the 95% Welch "
        "interval of ES - A2C lies above 0; loss: below 0; tie: the same score at every seed; "
        "undecided: the interval contains 0, so a higher mean alone is not a win). "
        f"Paper, on these games: ES FF beats A3C FF on {pw}, loses on {pl}, ties on {pt} (published "
        "scores, compared directly). Scores: mean over seeds of the final evaluation [95% Student-t "
        "CI]; † marks the winner of a decided game; ES - A2C: difference of the means [95% Welch CI]. "
        "Our budgets are far below the paper's (ES 1B frames, A3C 320M). "
        + hns_note(table)
        + eval_note(table)
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
