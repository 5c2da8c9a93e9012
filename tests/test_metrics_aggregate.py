"""rliable's measures across tasks (esbench.analysis.metrics.aggregate) and the stratified bootstrap
(esbench.analysis.metrics.bootstrap): rliable's own numbers, known answers, and resampling within
each task only.

``tests/golden/rliable_reference.json`` is a copy of ``../shared/reference/rliable_reference.json``:
what rliable 1.2.0 computed (in a separate venv, ``rliable_reference.py`` beside it) on fixed
runs x tasks score matrices.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pytest

from esbench.analysis.metrics import aggregate
from esbench.analysis.metrics.bootstrap import interval_estimate, interval_estimates

REFERENCE = json.loads((Path(__file__).parent / "golden" / "rliable_reference.json").read_text())
CASES = {name: np.array(scores) for name, scores in REFERENCE["inputs"].items()}


def _four(scores: np.ndarray) -> np.ndarray:
    """rliable's reference aggregate: median, IQM, mean, optimality gap (last axis)."""
    return np.stack(
        [
            aggregate.median_score(scores),
            aggregate.iqm(scores),
            aggregate.mean_score(scores),
            aggregate.optimality_gap(scores),
        ],
        axis=-1,
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_point_estimates_match_rliable_to_1e9(name: str) -> None:
    expected = REFERENCE["point"][name]
    got = dict(zip(["median", "iqm", "mean", "optimality_gap"], _four(CASES[name]).tolist(), strict=True))
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, abs=1e-9), key
    profile = aggregate.performance_profile(CASES[name], REFERENCE["performance_profile"]["taus"])
    np.testing.assert_allclose(profile, REFERENCE["performance_profile"]["point"][name], atol=1e-9, rtol=0)


@pytest.mark.parametrize("pair", sorted(REFERENCE["probability_of_improvement"]))
def test_probability_of_improvement_matches_rliable_to_1e9(pair: str) -> None:
    x, y = (CASES[name] for name in pair.split(","))
    expected = REFERENCE["probability_of_improvement"][pair]["point"]
    assert float(aggregate.probability_of_improvement(x, y)) == pytest.approx(expected, abs=1e-9)


def test_stratified_intervals_agree_with_rliable_within_monte_carlo_error() -> None:
    """rliable's intervals are Monte Carlo (50,000 resamples of its global RNG): ours, from a seeded
    Generator, agree to about 0.01."""
    _, intervals = interval_estimates(CASES, _four, np.random.default_rng(0), reps=20_000)
    for name, by_measure in REFERENCE["interval_95_stratified_bootstrap_reps50000"].items():
        for j, key in enumerate(["median", "iqm", "mean", "optimality_gap"]):
            np.testing.assert_allclose(
                intervals[name][:, j], by_measure[key], atol=0.01, err_msg=f"{name} {key}"
            )
    pairs = {p: tuple(CASES[n] for n in p.split(",")) for p in REFERENCE["probability_of_improvement"]}
    _, intervals = interval_estimates(
        pairs, aggregate.probability_of_improvement, np.random.default_rng(0), reps=5000
    )
    for pair, value in REFERENCE["probability_of_improvement"].items():
        np.testing.assert_allclose(intervals[pair], value["interval_95"], atol=0.015, err_msg=pair)


def test_known_answers_on_small_arrays() -> None:
    scores = np.array([[0.0, 2.0], [1.0, 3.0], [4.0, 5.0], [6.0, 7.0]])  # 4 runs x 2 tasks
    assert float(aggregate.iqm(scores)) == pytest.approx((2 + 3 + 4 + 5) / 4)  # middle half of the 8 scores
    assert float(aggregate.optimality_gap(scores, gamma=3.0)) == pytest.approx(
        3.0 - (0 + 2 + 1 + 3 + 3 * 4) / 8
    )
    assert float(aggregate.mean_score(scores)) == pytest.approx(3.5) and float(
        aggregate.median_score(scores)
    ) == pytest.approx(3.5)
    # Run-score distribution: share of the 8 scores strictly above tau; average-score: share of
    # the task means (2.75, 4.25) above tau.
    assert aggregate.performance_profile(scores, [0.0, 3.0, 7.0]).tolist() == [7 / 8, 4 / 8, 0.0]
    assert aggregate.average_score_distribution(scores, [3.0, 4.0, 5.0]).tolist() == [0.5, 0.5, 0.0]
    # P(X > Y) + P(X = Y) / 2 per task, averaged: task 0 (1, 3) vs (1, 2): 1/4 * (0.5 + 0 + 1 + 1) = 0.625;
    # task 1 (5, 5) vs (5, 5): 0.5.
    x, y = np.array([[1.0, 5.0], [3.0, 5.0]]), np.array([[1.0, 5.0], [2.0, 5.0]])
    assert float(aggregate.probability_of_improvement(x, y)) == pytest.approx((0.625 + 0.5) / 2)
    assert float(aggregate.probability_of_improvement(x, x)) == 0.5
    # A stack of arrays (leading axes) gives one value each.
    assert aggregate.iqm(np.stack([scores, scores + 1.0])).tolist() == pytest.approx([3.5, 4.5])


def test_bootstrap_resamples_runs_within_each_task_only() -> None:
    # Task 0's runs are all 0 and task 1's all 10: any resample mixing tasks would move the mean.
    scores = np.column_stack([np.zeros(5), np.full(5, 10.0)])
    point, low, high = interval_estimate(aggregate.mean_score, scores, rng=np.random.default_rng(1), reps=200)
    assert float(point) == float(low) == float(high) == 5.0
    # Seeded: the same Generator seed, the same interval; a profile's interval has one pair per tau.
    taus = np.linspace(0.0, 1.5, 7)
    profile = functools.partial(aggregate.performance_profile, taus=taus)
    a = interval_estimate(profile, CASES["es"], rng=np.random.default_rng(5), reps=300)
    b = interval_estimate(profile, CASES["es"], rng=np.random.default_rng(5), reps=300)
    assert all(np.array_equal(u, v) for u, v in zip(a, b, strict=True)) and a[1].shape == (7,)
    assert np.all(a[1] <= a[0]) and np.all(a[0] <= a[2])
    one_run = interval_estimate(aggregate.iqm, CASES["es"][:1], rng=np.random.default_rng(0))
    assert np.isnan(one_run[1]) and np.isnan(one_run[2])


def test_bad_shapes_are_refused() -> None:
    with pytest.raises(ValueError, match=r"shape \(\.\.\., n_runs, n_tasks\)"):
        aggregate.iqm(np.arange(4.0))
    with pytest.raises(ValueError, match="same tasks"):
        aggregate.probability_of_improvement(np.zeros((3, 2)), np.zeros((3, 4)))
    with pytest.raises(ValueError, match="taus"):
        aggregate.performance_profile(np.zeros((3, 2)), [])
    with pytest.raises(ValueError, match=r"shape \(n_runs, n_tasks\)"):
        interval_estimate(aggregate.iqm, np.zeros((2, 3, 4)), rng=np.random.default_rng(0))
