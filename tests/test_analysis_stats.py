"""Statistics of esbench.analysis: intervals whose coverage is measured, IQM, grids, and loud seed
checks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from esbench.analysis.load import load_results
from esbench.analysis.metrics.aggregate import iqm
from esbench.analysis.metrics.bootstrap import interval_estimate
from esbench.analysis.metrics.coverage import simulated_coverage
from esbench.analysis.metrics.intervals import bootstrap_ci, mean_ci
from esbench.analysis.stats import IncompleteResultsError, check_seeds, common_grid, interpolate_runs
from tests.synthetic_store import write_run

T = [0, 250, 500, 750, 1000]


def test_mean_ci_is_the_student_t_interval_by_hand() -> None:
    # (1, 2, 3): mean 2, sd 1, t(0.975, 2) = 4.3027 -> half-width 4.3027 / sqrt(3) = 2.4841.
    mean, low, high = mean_ci(np.array([1.0, 2.0, 3.0]), np.random.default_rng(0))
    assert (
        mean == 2.0 and low == pytest.approx(2 - 2.4841, abs=1e-4) and high == pytest.approx(4.4841, abs=1e-4)
    )
    # Not the seeds' range (what a percentile bootstrap gives at 3 seeds): wider, as it must be.
    assert low < 1.0 and high > 3.0
    _, low, high = mean_ci(np.array([[1.0, 5.0], [3.0, 5.0]]))  # (n_seeds, n_points) form
    assert high[0] - 2.0 == pytest.approx(12.7062 * 1.0, abs=1e-3) and low[1] == high[1] == 5.0
    assert all(np.isnan(v) for v in mean_ci(np.array([3.0]))[1:])  # one seed: no interval


@pytest.mark.parametrize("n_seeds", [3, 5, 10])
def test_mean_ci_covers_the_true_mean_95_percent_on_normal_data(n_seeds: int) -> None:
    """2,000 normal data sets of n seeds as the columns of one (n_seeds, 2000) call: the 95%
    interval must contain the true mean (0) in 93-97% of them."""
    data = np.random.default_rng(100 + n_seeds).normal(size=(n_seeds, 2000))
    _, low, high = mean_ci(data, np.random.default_rng(0), confidence=0.95)
    coverage = float(np.mean((low <= 0.0) & (high >= 0.0)))
    assert 0.93 <= coverage <= 0.97, coverage


def test_simulated_coverage_measures_what_the_report_states() -> None:
    assert simulated_coverage("t", 5, "normal") == simulated_coverage("t", 5, "normal")  # seeded
    assert 0.93 <= simulated_coverage("t", 3, "normal") <= 0.97
    # The percentile bootstrap esbench no longer prints for a mean: about 75% at 3 seeds.
    assert simulated_coverage("percentile", 3, "normal", n_datasets=1000, n_resamples=500) < 0.8
    # Skewed data: the t interval falls short too, and the report says by how much.
    assert 0.75 < simulated_coverage("t", 5, "lognormal") < 0.9
    with pytest.raises(ValueError, match="method='wald' is unknown; allowed: t, percentile, bca"):
        simulated_coverage("wald", 5)
    with pytest.raises(ValueError, match="dist='cauchy' is unknown; allowed: normal, lognormal"):
        simulated_coverage("t", 5, "cauchy")


def test_coverage_sentence_states_method_seeds_and_coverage() -> None:
    from esbench.analysis.stats import coverage_sentence

    text = coverage_sentence(5)
    normal = f"{100 * simulated_coverage('t', 5, 'normal'):.1f}%"
    assert text.startswith("Intervals: Student-t interval of the mean over seeds (95% nominal), 5 seeds")
    assert f"{normal} on normal data" in text and "on a skewed (lognormal, sigma 1) case" in text
    assert "with 1 seed there is no interval" in coverage_sentence(1)
    assert "with 0 seeds there is no interval" in coverage_sentence(0)


def test_iqm_stratified_bootstrap_coverage_is_measured() -> None:
    from esbench.analysis.metrics.coverage import iqm_coverage

    assert 0.85 <= iqm_coverage(5, n_datasets=200, n_resamples=300) <= 0.99


def test_bootstrap_ci_identical_for_same_seed_and_brackets_the_mean() -> None:
    data = np.random.default_rng(1).normal(size=(6, 20))
    a = bootstrap_ci(data, np.random.default_rng(7))
    b = bootstrap_ci(data, np.random.default_rng(7))
    assert a[0].tobytes() == b[0].tobytes() and a[1].tobytes() == b[1].tobytes()
    mean, low, high = mean_ci(data, np.random.default_rng(7))
    assert np.all(low <= mean) and np.all(mean <= high)
    c = bootstrap_ci(data, np.random.default_rng(8))
    assert not np.array_equal(a[0], c[0])


def test_bootstrap_ci_degenerate_cases() -> None:
    low, high = bootstrap_ci(np.array([3.0]), np.random.default_rng(0))
    assert np.isnan(low) and np.isnan(high)
    low, high = bootstrap_ci(np.array([2.0, 2.0, 2.0]), np.random.default_rng(0))
    assert low == high == 2.0


def test_iqm_known_answer_and_reproducible_ci() -> None:
    assert float(iqm(np.arange(1.0, 9.0).reshape(4, 2))) == pytest.approx(4.5)  # mean of 3, 4, 5, 6
    scores = np.random.default_rng(3).uniform(size=(5, 4))
    first = interval_estimate(iqm, scores, rng=np.random.default_rng(0))
    assert first == interval_estimate(iqm, scores, rng=np.random.default_rng(0))
    point, low, high = first
    assert low <= point <= high


def test_common_grid_and_interpolation() -> None:
    grid = common_grid([np.array([0.0, 100.0, 200.0, 300.0]), np.array([50.0, 150.0, 250.0])])
    assert grid.tolist() == [50.0, 100.0, 150.0, 200.0, 250.0]
    curves = pd.DataFrame(
        {
            "run_id": ["a"] * 3 + ["b"] * 3,
            "seed": [0] * 3 + [1] * 3,
            "timesteps": [0.0, 100.0, 200.0, 0.0, 50.0, 150.0],
            "eval_return_mean": [0.0, 10.0, 20.0, 0.0, 5.0, 15.0],
        }
    )
    grid, values, run_ids = interpolate_runs(curves)
    assert run_ids == ["a", "b"]
    assert grid.tolist() == [0.0, 50.0, 100.0, 150.0]
    np.testing.assert_allclose(values, [[0, 5, 10, 15], [0, 5, 10, 15]])
    _, values, _ = interpolate_runs(curves, grid=np.array([175.0, 200.0]))
    assert values[0].tolist() == [17.5, 20.0] and np.isnan(values[1]).all()  # no extrapolation


def _store(tmp_path, seeds_es=(0, 1), seeds_trpo=(0, 1), missing=()):
    for s in seeds_es:
        write_run(tmp_path, "table1", "openai_es", "Hopper-v5", s, T, [0, 1, 2, 3, 4])
    for s in seeds_trpo:
        write_run(tmp_path, "table1", "trpo", "Hopper-v5", s, T, [0, 1, 2, 3, 4], complete=s not in missing)
    return load_results(tmp_path / "table1")


def test_load_results_tidy(tmp_path) -> None:
    res = _store(tmp_path)
    assert len(res.runs) == 4 and res.runs["complete"].all()
    assert len(res.curves) == 4 * len(T)  # training-only rows (eval NaN) are dropped
    for col in (
        "run_id",
        "experiment",
        "algo",
        "env_id",
        "env_name",
        "seed",
        "frame_skip",
        "scale",
        "workers",
    ):
        assert col in res.curves.columns
    assert set(res.curves["algo"]) == {"openai_es", "trpo"}
    assert res.env_info and all(i["cpu_count"] == 2 for i in res.env_info.values())


def test_unequal_seeds_raise_naming_each_condition(tmp_path) -> None:
    res = _store(tmp_path, seeds_es=(0, 1, 2), seeds_trpo=(0, 1))
    with pytest.raises(IncompleteResultsError) as err:
        check_seeds(res.runs, ["algo", "env_id"])
    msg = str(err.value)
    assert "openai_es/Hopper-v5: 3 seed(s)" in msg and "trpo/Hopper-v5: 2 seed(s)" in msg
    counts = check_seeds(res.runs, ["algo", "env_id"], allow_partial=True)
    flagged = counts.set_index("algo")["partial"]
    assert not flagged["openai_es"] and flagged["trpo"]


def test_missing_runs_raise(tmp_path) -> None:
    res = _store(tmp_path, missing=(1,))
    with pytest.raises(IncompleteResultsError, match=r"trpo/Hopper-v5: 1 seed\(s\), 1 missing run"):
        check_seeds(res.runs, ["algo", "env_id"])
    assert len(res.complete) == 3


def test_welch_ci_matches_scipy_and_covers_95_percent() -> None:
    from scipy import stats as sps

    from esbench.analysis.metrics.coverage import difference_coverage
    from esbench.analysis.metrics.intervals import welch_ci

    a, b = np.array([1.0, 2.0, 3.0]), np.array([0.0, 3.0, 6.0])  # df = (10/3)^2 / (1/18 + 9/2) = 2.44
    diff, low, high = welch_ci(a, b)
    ci = sps.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert diff == -1.0 and (low, high) == (pytest.approx(ci.low), pytest.approx(ci.high))
    assert welch_ci(np.array([3.0, 3.0]), np.array([1.0, 1.0])) == (2.0, 2.0, 2.0)
    assert np.isnan(welch_ci(np.array([1.0]), b)[1])
    for n in (3, 5, 10):
        assert 0.93 <= difference_coverage(n) <= 0.97


def _sample(n: int, mean: float, sd: float) -> np.ndarray:
    """n values with exactly this mean and sample standard deviation."""
    z = np.linspace(-1.0, 1.0, n)
    return mean + sd * (z - z.mean()) / z.std(ddof=1)


def _simulated_welch_power(diff: float, sd_a: float, sd_b: float, n: int, n_datasets: int = 4000) -> float:
    """The fraction of simulated normal studies (n seeds per side) whose Welch interval excludes 0."""
    from esbench.analysis.metrics.intervals import welch_ci

    rng = np.random.default_rng(7)
    a = rng.normal(0.0, sd_a, size=(n_datasets, n))
    b = rng.normal(diff, sd_b, size=(n_datasets, n))
    decided = [not (lo <= 0.0 <= hi) for _, lo, hi in (welch_ci(x, y) for x, y in zip(a, b, strict=True))]
    return float(np.mean(decided))


@pytest.mark.parametrize(
    ("diff", "sd_a", "sd_b", "n"), [(0.5, 1.0, 2.0, 12), (1.0, 1.0, 1.0, 5), (0.3, 0.5, 0.2, 8)]
)
def test_welch_power_matches_simulated_studies(diff: float, sd_a: float, sd_b: float, n: int) -> None:
    """The noncentral-t power is what simulated studies give (4,000 per case: standard error ~0.008)."""
    from esbench.analysis.metrics.planning import welch_power

    predicted = float(welch_power(diff, sd_a**2, sd_b**2, n))
    assert 0.1 < predicted < 0.99  # a case that can tell a wrong formula from a right one
    assert predicted == pytest.approx(_simulated_welch_power(diff, sd_a, sd_b, n), abs=0.03)


def test_seeds_to_decide_is_the_first_n_with_80_percent_power() -> None:
    from esbench.analysis.metrics.intervals import welch_ci
    from esbench.analysis.metrics.planning import seeds_to_decide, welch_power

    a, b = _sample(3, 1.0, 1.0), _sample(3, 1.5, 2.0)
    n = seeds_to_decide(a, b)
    assert np.isfinite(n) and n > 3
    n = int(n)
    assert welch_power(0.5, 1.0, 4.0, n) >= 0.8 > welch_power(0.5, 1.0, 4.0, n - 1)
    assert _simulated_welch_power(0.5, 1.0, 2.0, n) >= 0.77  # simulated studies of n seeds decide 80%
    # At power 0.5 it is where the measured difference itself is just decided, give or take a seed.
    half = int(seeds_to_decide(a, b, power=0.5))
    assert half < n
    _, low, high = welch_ci(_sample(half + 1, 1.0, 1.0), _sample(half + 1, 1.5, 2.0))
    assert high < 0
    _, low, high = welch_ci(_sample(half - 2, 1.0, 1.0), _sample(half - 2, 1.5, 2.0))
    assert low <= 0 <= high
    assert np.isnan(seeds_to_decide(a, a))  # no difference: no number of seeds decides it
    assert np.isnan(seeds_to_decide(a[:1], b))  # one seed: no spread measured
    assert seeds_to_decide(np.ones(3), np.zeros(3)) == 2  # no spread: decided at once
