"""Table 2: wins counted as the paper counts them."""

from __future__ import annotations

import numpy as np

from esbench.analysis.load import load_results
from esbench.analysis.table2 import (
    count_outcomes,
    count_wins,
    display_table2,
    load_atari_reference,
    outcome,
    published_wins,
    table2,
    win_share_interval,
)
from tests.synthetic_store import write_run


def test_published_counts_are_23_wins_28_losses() -> None:
    ref = load_atari_reference()
    assert len(ref) == 51
    assert published_wins(ref) == (23, 28)


def test_count_wins_is_strict_and_skips_missing() -> None:
    """A tie (1 vs 1) is neither a win nor a loss; a NaN game is not counted."""
    es, rl = np.array([2.0, 1.0, 1.0, np.nan]), np.array([1.0, 1.0, 2.0, 0.0])
    assert count_outcomes(es, rl) == (1, 1, 1)
    assert count_wins(es, rl) == (1, 1)
    assert [outcome(a, b) for a, b in zip(es, rl, strict=True)] == ["win", "tie", "loss", ""]


def test_published_count_uses_the_tie_rule() -> None:
    """The published 23/28 is recomputed with the same rule; a planted tie moves out of both."""
    ref = load_atari_reference()
    assert count_outcomes(ref["es_ff_1hour"], ref["a3c_ff_1day"]) == (23, 28, 0)
    tied = ref.copy()
    won = tied.index[tied["es_ff_1hour"] > tied["a3c_ff_1day"]][0]
    lost = tied.index[tied["es_ff_1hour"] < tied["a3c_ff_1day"]][0]
    tied.loc[[won, lost], "es_ff_1hour"] = tied.loc[[won, lost], "a3c_ff_1day"]
    assert count_outcomes(tied["es_ff_1hour"], tied["a3c_ff_1day"]) == (22, 27, 2)
    assert published_wins(tied) == (22, 27)


def test_a_tie_is_neither_in_the_table_nor_the_claim(tmp_path) -> None:
    """Both sides score 0 on Breakout at every seed: a tie in the table (no dagger on either side,
    es_wins NaN), in the counts and in the win share's interval (never a win, never a loss)."""
    t = [0, 1000]
    for seed in (0, 1, 2):
        write_run(tmp_path, "table2", "openai_es", "ALE/Breakout-v5", seed, t, [0, 0], env_kind="atari")
        write_run(tmp_path, "table2", "a2c", "ALE/Breakout-v5", seed, t, [0, 0], env_kind="atari")
        write_run(tmp_path, "table2", "openai_es", "ALE/Pong-v5", seed, t, [-21, -5 + seed], env_kind="atari")
        write_run(tmp_path, "table2", "a2c", "ALE/Pong-v5", seed, t, [-21, -20 + seed], env_kind="atari")
    res = load_results(tmp_path / "table2")
    table = table2(res.complete, load_atari_reference(), rng=np.random.default_rng(0)).set_index("game")
    assert table.loc["Breakout", "outcome"] == "tie" and np.isnan(table.loc["Breakout", "es_wins"])
    assert table.loc["Pong", "outcome"] == "win" and table.loc["Pong", "es_wins"]
    assert table.loc["Pong", "diff"] == 15.0 and table.loc["Pong", "diff_low"] < 15.0
    shown = display_table2(table.reset_index()).set_index("Game")
    assert "†" not in shown.loc["Breakout", "ES (ours)"] + shown.loc["Breakout", "A2C (ours)"]
    assert shown.loc["Breakout", "ES outcome"] == "tie"
    ws = win_share_interval(res.complete, np.random.default_rng(0), "openai_es")
    assert (ws.wins, ws.losses, ws.ties, ws.n_games, ws.min_seeds) == (1, 0, 1, 2, 3)
    assert ws.share == 1.0 and ws.low == 1.0 and ws.high == 1.0  # the tie never counts as a loss


def test_table2_from_runs(tmp_path) -> None:
    t = [0, 1000, 2000]
    for seed in (0, 1):
        write_run(
            tmp_path, "table2", "openai_es", "ALE/Pong-v5", seed, t, [-21, -10, 5 + seed], env_kind="atari"
        )
        write_run(tmp_path, "table2", "a2c", "ALE/Pong-v5", seed, t, [-21, -15, -3], env_kind="atari")
        write_run(tmp_path, "table2", "openai_es", "ALE/Breakout-v5", seed, t, [0, 1, 2], env_kind="atari")
        write_run(tmp_path, "table2", "a2c", "ALE/Breakout-v5", seed, t, [0, 5, 9], env_kind="atari")
    res = load_results(tmp_path / "table2")
    table = table2(res.complete, load_atari_reference(), rng=np.random.default_rng(0)).set_index("game")
    assert table.loc["Pong", "es_score"] == 5.5 and table.loc["Pong", "rl_score"] == -3
    assert table.loc["Pong", "es_wins"] and not table.loc["Breakout", "es_wins"]
    assert table.loc["Pong", "paper_a3c"] == 11.4 and table.loc["Pong", "paper_es"] == 21.0
    assert table.loc["Breakout", "paper_dqn"] == 303.9
    assert count_wins(table["es_score"].to_numpy(), table["rl_score"].to_numpy()) == (1, 1)


def test_the_win_share_interval_keeps_its_promise_with_ties() -> None:
    """Ten games ES truly wins half of, plus two games tied at every seed: the 95% interval of the
    share of decided games won covers the true 1/2 at least 95% of the time at 3 seeds (it is
    conservative, like the win count's)."""
    from esbench.analysis.coverage import win_share_coverage

    assert win_share_coverage(3, n_datasets=40) >= 0.95
