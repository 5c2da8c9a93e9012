"""Targets near a task's best known return are flagged in Table 1 (esbench.analysis.ceiling)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from esbench.analysis.ceiling import load_best_known, near_ceiling
from esbench.analysis.load import load_results
from esbench.analysis.table1 import load_mujoco_reference, table1_paper, write_table1_paper
from tests.synthetic_store import write_run


def test_the_best_known_returns_are_data_with_their_sources() -> None:
    best = load_best_known()
    assert set(best) == set(load_mujoco_reference()["gymnasium_id"])  # every Table 1 task has a row
    assert best["InvertedPendulum-v5"].value == 1000.0 and best["InvertedPendulum-v5"].kind == "ceiling"
    assert best["InvertedDoublePendulum-v5"].value == 9360.0  # 1000 steps x (10 - (1.2 - 2)^2)
    assert math.isnan(best["Swimmer-v5"].value) and best["Swimmer-v5"].kind == "none"
    assert all(b.source.strip() for b in best.values())


def test_the_ceiling_of_the_double_pendulum_is_what_its_reward_allows() -> None:
    """The reward at the upright rest state (tip at its highest, no velocity) is the most one step
    can earn: 9.36, so 9360 over the 1000-step episode."""
    import gymnasium as gym

    env = gym.make("InvertedDoublePendulum-v5").unwrapped
    env.reset(seed=0)
    env.set_state(np.zeros(env.model.nq), np.zeros(env.model.nv))
    _, reward, *_ = env.step(np.zeros(1))
    env.close()
    assert reward * 1000 == pytest.approx(load_best_known()["InvertedDoublePendulum-v5"].value)


def test_near_ceiling_is_within_five_percent() -> None:
    assert near_ceiling(9104.07, 9360.0)  # 97.3%
    assert near_ceiling(950.0, 1000.0) and not near_ceiling(949.0, 1000.0)
    assert not near_ceiling(2385.79, 9636.95)
    assert not near_ceiling(100.0, math.nan) and not near_ceiling(math.nan, 100.0)
    assert near_ceiling(-98.0, -100.0) and not near_ceiling(-106.0, -100.0)  # a negative best: 5% of |best|


def test_table1_against_the_papers_targets_flags_the_ones_near_the_ceiling(tmp_path: Path) -> None:
    """Inverted pendulum's paper targets 276.6, 519.2, 753.2, 1000: only 1000 (the reward's own
    ceiling) is within 5%; the row carries the flag, the Markdown marks it with † and says why."""
    for seed in (0, 1):
        write_run(
            tmp_path, "t", "openai_es", "InvertedPendulum-v5", seed, [0, 500, 1000], [0.0, 600.0, 1000.0]
        )
    table = table1_paper(load_results(tmp_path / "t").curves, load_mujoco_reference())
    assert table["near_ceiling"].tolist() == [False, False, False, True]
    assert table["best_known"].tolist() == [1000.0] * 4
    md = write_table1_paper(table, tmp_path / "out")["md"].read_text()
    assert "| 1000 † |" in md and "| 753.2 |" in md
    assert "†: target within 5% of the task's best known return" in md
    assert "InvertedPendulum-v5 1000 = 100.0% of 1000" in md
