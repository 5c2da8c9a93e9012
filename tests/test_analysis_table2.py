"""Table 2: wins counted as the paper counts them."""

from __future__ import annotations

import numpy as np

from esbench.analysis.load import load_results
from esbench.analysis.table2 import count_wins, load_atari_reference, published_wins, table2
from tests.synthetic_store import write_run


def test_published_counts_are_23_wins_28_losses() -> None:
    ref = load_atari_reference()
    assert len(ref) == 51
    assert published_wins(ref) == (23, 28)


def test_count_wins_is_strict_and_skips_missing() -> None:
    assert count_wins(np.array([2.0, 1.0, 1.0, np.nan]), np.array([1.0, 1.0, 2.0, 0.0])) == (1, 2)


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
