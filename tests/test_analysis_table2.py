"""Table 2: the paper's wins counted as it counts them; ours decided by intervals."""

from __future__ import annotations

import numpy as np

from esbench.analysis.load import load_results
from esbench.analysis.table2 import (
    count_outcomes,
    count_wins,
    display_table2,
    game_outcome,
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
    ws = win_share_interval(res.complete, "openai_es")
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


def test_a_game_is_decided_by_the_interval_of_its_difference() -> None:
    """Hand-computed Welch intervals: ES [5, 6] against A2C [-3, -3] is 8.5 +- 12.706 x 0.5 (one
    degree of freedom): [2.15, 14.85], a win; [2, 4, 6] against [1, 3, 5] is 1 +- 2.776 x 1.633: undecided,
    though ES's mean is higher; the same score at every seed is a tie; one seed decides nothing."""
    assert game_outcome([5, 6], [-3, -3]) == "win"
    assert game_outcome([-3, -3], [5, 6]) == "loss"
    assert game_outcome([2, 4, 6], [1, 3, 5]) == "undecided"
    assert game_outcome([0, 0, 0], [0, 0, 0]) == "tie"
    assert game_outcome([2, 2], [9, 9]) == "loss"  # both constant, different: no spread to doubt
    assert game_outcome([7], [1, 2]) == "undecided"
    assert game_outcome([0], [0]) == "tie"
    assert game_outcome([], [1, 2]) == ""


def test_higher_means_whose_intervals_contain_zero_are_not_wins(tmp_path) -> None:
    """Four games where ES's mean is higher on every one but no interval excludes 0 (the committed
    mini's case): every game undecided, no dagger, and the claim's share runs from 0 (every game
    lost) to 1 (every game won), so the report cannot call it supported."""
    from esbench.analysis.report import _table2_claim

    t = [0, 1000]
    for g, game in enumerate(("Pong", "Seaquest", "Enduro", "SpaceInvaders")):
        for seed in (0, 1, 2):
            es, rl = 10.0 * g + [0.0, 4.0, 8.0][seed] + 1.0, 10.0 * g + [8.0, 0.0, 4.0][seed]
            write_run(tmp_path, "table2", "openai_es", f"ALE/{game}-v5", seed, t, [0, es], env_kind="atari")
            write_run(tmp_path, "table2", "a2c", f"ALE/{game}-v5", seed, t, [0, rl], env_kind="atari")
    res = load_results(tmp_path / "table2")
    table = table2(res.complete, load_atari_reference(), rng=np.random.default_rng(0))
    assert (table["diff"] == 1.0).all() and set(table["outcome"]) == {"undecided"}
    assert table["es_wins"].isna().all()
    shown = display_table2(table)
    assert not shown["ES (ours)"].str.contains("†").any() and not shown["A2C (ours)"].str.contains("†").any()
    ws = win_share_interval(res.complete, "openai_es")
    assert (ws.wins, ws.losses, ws.ties, ws.undecided) == (0, 0, 0, 4)
    assert np.isnan(ws.share) and (ws.low, ws.high) == (0.0, 1.0)
    row = _table2_claim(res.complete, "openai_es", 2, 2)
    assert "4 undecided of 4" in row and "| undecided" in row and "supported" not in row


def test_the_claim_is_decided_when_the_undecided_games_cannot_change_the_side() -> None:
    """Three decided wins and one undecided game: the share is at least 3/4 whichever way the
    undecided game goes, on the paper's side of one half (2 of 4 won there): supported."""
    import pandas as pd

    from esbench.analysis.report import _table2_claim

    rows = []
    games = {"A": ([5, 6, 7], [0, 1, 2]), "B": ([9, 9.5, 10], [1, 2, 1]),
             "C": ([3, 3.2, 3.4], [0, 0.1, 0]), "D": ([1, 5, 9], [2, 4, 6])}  # fmt: skip
    for game, (es, rl) in games.items():
        rows += [{"env_id": game, "algo": "openai_es", "final_eval_return": v} for v in es]
        rows += [{"env_id": game, "algo": "a2c", "final_eval_return": v} for v in rl]
    runs = pd.DataFrame(rows)
    ws = win_share_interval(runs, "openai_es")
    assert (ws.wins, ws.losses, ws.undecided, ws.share, ws.low, ws.high) == (3, 0, 1, 1.0, 0.75, 1.0)
    assert "| supported" in _table2_claim(runs, "openai_es", 2, 2)
    assert "| contradicted" in _table2_claim(runs, "openai_es", 1, 3)  # the paper's side: fewer than half
