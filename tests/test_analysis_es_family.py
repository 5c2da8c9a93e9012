"""The ES family table and report on synthetic runs with known answers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from esbench.analysis.es_family import (
    aggregate_table,
    compare,
    difference_ci,
    family_table,
    normalized_final_scores,
    performance_profiles,
)
from esbench.analysis.load import load_results
from esbench.analysis.report import build_report
from tests.synthetic_store import write_run


def test_difference_ci_of_constant_samples_is_the_point() -> None:
    d, lo, hi = difference_ci(np.array([3.0, 3.0, 3.0]), np.array([1.0, 1.0]), np.random.default_rng(0))
    assert (d, lo, hi) == (2.0, 2.0, 2.0)
    assert compare(lo, hi) == "better"


@pytest.mark.parametrize(
    ("a", "b", "word"),
    [
        ([10.0, 11.0, 12.0], [0.0, 1.0, 2.0], "better"),
        ([0.0, 1.0, 2.0], [10.0, 11.0, 12.0], "worse"),
        ([0.0, 10.0, 5.0], [5.0, 0.0, 10.0], "indistinguishable"),
        ([1.0], [0.0, 2.0], "n/a"),
    ],
)
def test_comparison_words_follow_the_interval(a: list, b: list, word: str) -> None:
    d, lo, hi = difference_ci(np.array(a), np.array(b), np.random.default_rng(1))
    assert d == pytest.approx(np.mean(a) - np.mean(b))
    assert compare(lo, hi) == word


def test_family_table_and_report(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    finals = {"openai_es": [100.0, 110.0, 120.0], "ars": [300.0, 310.0, 320.0], "trpo": [50.0, 60.0, 70.0]}
    for algo, values in finals.items():
        for seed, final in enumerate(values):
            write_run(runs, "es_family", algo, "Hopper-v5", seed, [0, 1000, 2000], [10.0, final / 2, final])
    table = family_table(load_results(runs / "es_family").complete, np.random.default_rng(0))
    assert list(table["algo"]) == ["openai_es", "ars", "trpo"]  # reference, other ES, then RL
    ars = table[table["algo"] == "ars"].iloc[0]
    assert ars["final"] == pytest.approx(310.0) and ars["diff"] == pytest.approx(200.0)
    assert ars["versus"] == "better"
    assert table[table["algo"] == "trpo"].iloc[0]["versus"] == "worse"
    report = build_report("es_family", results_dir=runs, out_dir=tmp_path / "paper").read_text()
    assert "## The ES family" in report and "Difference to ES (OpenAI)" in report
    assert (tmp_path / "paper" / "es_family" / "tables" / "es_family.tex").exists()
    # One task only: no aggregate across tasks.
    assert "## Across tasks" not in report


def _two_tasks() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Final scores of three algorithms on two tasks (3 seeds), and curves spanning 0..100 and 0..10."""
    finals = {
        ("openai_es", "A"): [20.0, 40.0, 60.0],
        ("ars", "A"): [80.0, 90.0, 100.0],
        ("trpo", "A"): [0.0, 10.0, 20.0],
        ("openai_es", "B"): [2.0, 4.0, 6.0],
        ("ars", "B"): [8.0, 9.0, 10.0],
        ("trpo", "B"): [0.0, 1.0, 2.0],
    }
    complete = pd.DataFrame(
        [
            {"algo": a, "env_id": e, "seed": s, "final_eval_return": v}
            for (a, e), values in finals.items()
            for s, v in enumerate(values)
        ]
    )
    curves = pd.DataFrame({"env_id": ["A", "A", "B", "B"], "eval_return_mean": [0.0, 100.0, 0.0, 10.0]})
    return complete, curves


def test_normalized_scores_and_aggregates_are_rliables() -> None:
    complete, curves = _two_tasks()
    scores, tasks = normalized_final_scores(complete, curves)
    assert tasks == ["A", "B"] and sorted(scores) == ["ars", "openai_es", "trpo"]
    np.testing.assert_allclose(scores["openai_es"], [[0.2, 0.2], [0.4, 0.4], [0.6, 0.6]])
    table = aggregate_table(scores, np.random.default_rng(0), reps=500).set_index("algo")
    assert table.loc["openai_es", "iqm"] == pytest.approx(0.4)  # middle half of 0.2,0.2,0.4,0.4,0.6,0.6
    assert table.loc["ars", "gap"] == pytest.approx(1 - 0.9)
    assert table.loc["ars", "poi"] == 1.0 and table.loc["trpo", "poi"] == pytest.approx((1 / 9 * 0.5) * 2 / 2)
    assert np.isnan(table.loc["openai_es", "poi"])  # no probability of improvement over itself
    assert table.loc["openai_es", "iqm_low"] <= 0.4 <= table.loc["openai_es", "iqm_high"]
    again = aggregate_table(scores, np.random.default_rng(0), reps=500).set_index("algo")
    pd.testing.assert_frame_equal(table, again)  # seeded
    profiles = performance_profiles(scores, np.random.default_rng(0), taus=np.array([0.3, 0.5]), reps=200)
    ours = profiles[profiles["algo"] == "openai_es"]
    assert ours["share"].tolist() == pytest.approx([4 / 6, 2 / 6])


def test_an_algorithm_with_unequal_seeds_across_tasks_is_left_out() -> None:
    complete, curves = _two_tasks()
    complete = complete.drop(
        complete.index[(complete["algo"] == "trpo") & (complete["seed"] == 2) & (complete["env_id"] == "B")]
    )
    scores, _ = normalized_final_scores(complete, curves)
    assert sorted(scores) == ["ars", "openai_es"]


def test_report_aggregates_across_tasks(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    for env_id, scale in (("Hopper-v5", 1.0), ("Swimmer-v5", 0.1)):
        for algo, values in {"openai_es": [100.0, 110.0, 120.0], "ars": [300.0, 310.0, 320.0]}.items():
            for seed, final in enumerate(values):
                curve = [10.0 * scale, final * scale / 2, final * scale]
                write_run(runs, "es_family", algo, env_id, seed, [0, 1000, 2000], curve)
    root = tmp_path / "paper"
    report = build_report("es_family", results_dir=runs, out_dir=root).read_text()
    assert "## Across tasks" in report and "P(better than ES (OpenAI))" in report
    aggregate = pd.read_csv(root / "es_family" / "tables" / "es_family_aggregate.csv").set_index("algo")
    assert aggregate.loc["ars", "poi"] == 1.0 and aggregate.loc["ars", "gap"] == pytest.approx(0.0, abs=0.04)
    assert (root / "es_family" / "figures" / "performance_profiles.png").exists()
