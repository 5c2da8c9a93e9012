"""The ES family table and report on synthetic runs with known answers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from esbench.analysis.es_family import compare, difference_ci, family_table
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
