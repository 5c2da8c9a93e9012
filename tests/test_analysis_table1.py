"""Table 1 on synthetic curves with known targets, ratios and censoring."""

from __future__ import annotations

import numpy as np
import pytest

from esbench.analysis.curves import first_reach
from esbench.analysis.load import load_results
from esbench.analysis.table1 import load_mujoco_reference, progress_targets, ratio_entry, table1
from tests.synthetic_store import write_run

TRPO_T = np.arange(0, 1001, 250)  # 0, 250, 500, 750, 1000
ES_T = np.arange(0, 2001, 250)


def test_targets_are_fractions_of_progress_not_of_final() -> None:
    np.testing.assert_allclose(progress_targets(-100.0, 300.0), [0.0, 100.0, 200.0, 300.0])
    # The published Hopper targets match init 35.45 (reference README) to the paper's rounding.
    ref = load_mujoco_reference()
    hop = ref[ref["env"] == "Hopper"]["trpo_score"].to_numpy()
    np.testing.assert_allclose(progress_targets(35.45, 3403.46)[:3], hop[:3], rtol=1e-3)  # published, rounded


def test_first_reach_and_censoring() -> None:
    assert first_reach(np.array([0, 1, 2]), np.array([0.0, 5.0, 10.0]), 5.0) == 1
    assert np.isnan(first_reach(np.array([0, 1]), np.array([0.0, 1.0]), 2.0))
    assert ratio_entry(500.0, 250.0, 2000.0) == (2.0, pytest.approx(np.nan, nan_ok=True), False, "2")
    ratio, bound, censored, text = ratio_entry(np.nan, 800.0, 2000.0)
    assert np.isnan(ratio) and censored and bound == 2.5 and text == "> 2.5"


def test_table1_known_answers(tmp_path) -> None:
    for seed, off in ((0, 5.0), (1, -5.0)):  # offsets cancel in the mean over seeds
        write_run(tmp_path, "table1", "trpo", "Hopper-v5", seed, TRPO_T, 0.1 * TRPO_T + off)
        write_run(tmp_path, "table1", "openai_es", "Hopper-v5", seed, ES_T, np.minimum(0.2 * ES_T, 60) + off)
    res = load_results(tmp_path / "table1")
    table = table1(res.curves, load_mujoco_reference())
    assert table["progress_fraction"].tolist() == [0.25, 0.5, 0.75, 1.0]
    np.testing.assert_allclose(table["target"], [25, 50, 75, 100])
    assert table["init"].iloc[0] == pytest.approx(0.0) and table["final"].iloc[0] == pytest.approx(100.0)
    np.testing.assert_allclose(table["rl_timesteps"], [250, 500, 750, 1000])
    assert table["es_timesteps"].iloc[:2].tolist() == [250, 250]
    assert table["ratio"].iloc[:2].tolist() == [1.0, 0.5]
    # ES plateaus at 60: 75 and 100 are never reached -> censored at ES's budget / TRPO's time.
    assert table["censored"].tolist() == [False, False, True, True]
    assert np.isnan(table["ratio"].iloc[2:]).all()
    np.testing.assert_allclose(table["ratio_bound"].iloc[2:], [2000 / 750, 2000 / 1000])
    assert table["ratio_text"].tolist() == ["1", "0.5", "> 2.7", "> 2"]
    assert table["paper_ratio"].tolist() == [0.53, 3.64, 6.05, 6.94]
    assert table["n_seeds_es"].iloc[0] == 2 and not table["partial"].any()
