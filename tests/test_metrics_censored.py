"""Times to a score as censored data (esbench.analysis.metrics.censored): known answers computed by
hand on small arrays, and the coverage the intervals promise, measured by simulation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from esbench.analysis.metrics import restricted_mean_time, share_reached, survival_curve, time_to_score
from esbench.analysis.metrics.censored import time_ratio, time_ratio_level
from esbench.analysis.metrics.coverage import (
    restricted_mean_coverage,
    time_ratio_coverage,
    time_to_score_coverage,
    true_restricted_mean,
)
from esbench.analysis.metrics.intervals import median_interval_coverage

INF = float("inf")


def test_kaplan_meier_by_hand_with_a_tie_and_censoring() -> None:
    # Runs at 2, 3, 3 (one censored there), 5, 7, 8 (censored). At risk / events at each time:
    # 2: 6/1 -> S = 5/6; 3: 5/1 (the censored 3 is still at risk) -> 2/3; 5: 3/1 -> 4/9;
    # 7: 2/1 -> 2/9; 8 censored: S stays 2/9.
    times = np.array([2.0, 3.0, 3.0, 5.0, 7.0, 8.0])
    reached = np.array([True, True, False, True, True, False])
    t, s = survival_curve(times, reached)
    assert t.tolist() == [2.0, 3.0, 5.0, 7.0, 8.0]
    assert s == pytest.approx([5 / 6, 2 / 3, 4 / 9, 2 / 9, 2 / 9])
    # Median: first S <= 1/2, at 5. Six runs: k = 1 (rank 2 covers only 78%), so the interval runs
    # from the first time S <= 5/6 (2) to the first time S <= 0, which censoring leaves unbounded.
    assert time_to_score(times, reached) == (5.0, 2.0, INF)


def test_ties_at_the_interval_ends_match_the_order_statistics() -> None:
    # Ten runs, the last censored at 10. S: 1 -> 0.8 (two at 1), 2 -> 0.7, 4 -> 0.4 (three at 4),
    # 6 -> 0.3, 9 -> 0.1 (two at 9). k = 2 at 10 runs (97.9%): low at S <= 0.8, high at S <= 0.1.
    times = np.array([1.0, 1.0, 2.0, 4.0, 4.0, 4.0, 6.0, 9.0, 9.0, 10.0])
    reached = np.array([True] * 9 + [False])
    assert time_to_score(times, reached) == (4.0, 1.0, 9.0)
    # Every run reached: the interval is exactly the order-statistic one, [x_(2), x_(9)].
    assert time_to_score(times, np.ones(10, bool))[1:] == (1.0, 9.0)


def test_without_censoring_the_interval_is_the_order_statistic_one() -> None:
    rng = np.random.default_rng(4)
    for n in (3, 5, 8, 10):
        times = np.exp(rng.standard_normal(n))
        median, low, high = time_to_score(times, np.ones(n, bool))
        k = {3: 1, 5: 1, 8: 1, 10: 2}[n]  # the largest rank covering 95%, or 1
        assert (low, high) == (np.sort(times)[k - 1], np.sort(times)[n - k])
        assert median == np.sort(times)[(n + 1) // 2 - 1]  # the first time half the runs got there


def test_median_is_unbounded_when_half_the_runs_never_got_there() -> None:
    # 5 runs, 3 censored at the budget 100: at most 2/5 are known to reach the score by then.
    times = np.array([10.0, 20.0, 100.0, 100.0, 100.0])
    reached = np.array([True, True, False, False, False])
    assert time_to_score(times, reached) == (INF, 10.0, INF)
    # A run that stopped at its score counts; nothing changes estimator when none is censored.
    assert time_to_score(np.array([10.0, 20.0, 30.0]), np.ones(3, bool)) == (20.0, 10.0, 30.0)
    assert time_to_score(np.array([7.0]), np.array([True])) == (7.0, 0.0, INF)  # one run bounds nothing
    # No run got there: every time is above its budget, so the median is at least the budget.
    assert time_to_score(np.full(5, 50.0), np.zeros(5, bool)) == (INF, 50.0, INF)


def test_a_run_censored_early_lowers_the_low_end_and_opens_the_high_end() -> None:
    # Budgets differ: the run censored at 4 is known only to take longer than 4. Five runs (k = 1):
    # low = the smallest time, counting it at 4; high = the largest, inf since a run is censored.
    times = np.array([4.0, 6.0, 8.0, 9.0, 12.0])
    reached = np.array([False, True, True, True, True])
    median, low, high = time_to_score(times, reached)
    # Kaplan-Meier: 6 -> 3/4, 8 -> 1/2 (at risk 3, then 2 after 9 -> 1/4), so the median is 8.
    assert (median, low, high) == (8.0, 4.0, INF)


def test_bad_input_is_refused_with_what_is_allowed() -> None:
    with pytest.raises(ValueError, match="same length"):
        time_to_score(np.array([1.0, 2.0]), np.array([True]))
    with pytest.raises(ValueError, match="finite and >= 0"):
        time_to_score(np.array([1.0, -2.0]), np.array([True, True]))
    with pytest.raises(ValueError, match="finite and >= 0"):
        time_to_score(np.array([1.0, INF]), np.array([True, False]))
    with pytest.raises(ValueError, match="True/False"):
        time_to_score(np.array([1.0, 2.0]), np.array([1, 2]))
    with pytest.raises(ValueError, match=r"confidence=1\.5"):
        time_to_score(np.array([1.0, 2.0]), np.array([True, True]), confidence=1.5)
    with pytest.raises(ValueError, match="empty"):
        time_to_score(np.array([]), np.array([], bool))


def test_share_reached_is_the_clopper_pearson_interval() -> None:
    # 3 of 3: lower end 0.025^(1/3) = 0.2924; 0 of 3: upper end 1 - 0.025^(1/3) = 0.7076.
    share, low, high = share_reached(np.array([True, True, True]))
    assert (share, high) == (1.0, 1.0) and low == pytest.approx(0.025 ** (1 / 3), abs=1e-9)
    share, low, high = share_reached(np.array([False, False, False]))
    assert (share, low) == (0.0, 0.0) and high == pytest.approx(1 - 0.025 ** (1 / 3), abs=1e-9)
    # 2 of 5: the exact ends solve P(X >= 2 | p) = 0.025 and P(X <= 2 | p) = 0.025.
    _, low, high = share_reached(np.array([True, False, True, False, False]))
    assert stats.binom.sf(1, 5, low) == pytest.approx(0.025) and stats.binom.cdf(2, 5, high) == pytest.approx(
        0.025
    )
    with pytest.raises(ValueError, match="non-empty"):
        share_reached(np.array([], bool))


def test_restricted_mean_time_by_hand() -> None:
    # S = 1 on [0, 2), 2/3 on [2, 4), 1/3 on [4, 6]: area 2 + 4/3 + 2/3 = 4.
    rmst, low, high = restricted_mean_time(
        np.array([2.0, 4.0, 6.0]), np.array([True, True, False]), limit=6.0
    )
    assert rmst == pytest.approx(4.0) and 0.0 < low < 4.0 < high < 6.0
    # No censoring and a limit past every run: the mean time, with the variance of a mean
    # (sample sd / sqrt(n)), and Student's t on the logit of mean / limit.
    times = np.array([1.0, 2.0, 3.0])
    rmst, low, high = restricted_mean_time(times, np.ones(3, bool), limit=10.0)
    se, share = 1.0 / np.sqrt(3.0), 0.2
    half = stats.t.ppf(0.975, 2) * se / (10.0 * share * (1 - share))
    centre = np.log(share / (1 - share))
    assert rmst == pytest.approx(2.0)
    assert low == pytest.approx(10.0 / (1 + np.exp(-(centre - half))))
    assert high == pytest.approx(10.0 / (1 + np.exp(-(centre + half))))
    # Past the limit every run counts as the limit.
    assert restricted_mean_time(times, np.ones(3, bool), limit=1.5)[0] == pytest.approx(
        1.0 + 0.5 * 2 / 3 + 0.0
    )
    with pytest.raises(ValueError, match="past the longest follow-up"):
        restricted_mean_time(np.array([2.0, 4.0]), np.array([True, False]), limit=5.0)
    with pytest.raises(ValueError, match="positive, finite"):
        restricted_mean_time(times, np.ones(3, bool), limit=0.0)


def test_true_restricted_mean_is_the_area_under_the_survival_curve() -> None:
    u = np.linspace(0.0, 3.0, 300_001)
    area = float(np.sum(stats.lognorm.sf(u, 0.8)[:-1] * np.diff(u)))
    assert true_restricted_mean(0.8, 3.0) == pytest.approx(area, abs=1e-4)


@pytest.mark.parametrize("n", [5, 10])
@pytest.mark.parametrize("spread", [0.3, 0.8])
@pytest.mark.parametrize("censored", [0.0, 0.4])  # 20%: the table and the slow test
def test_time_to_score_interval_keeps_its_coverage(n: int, spread: float, censored: float) -> None:
    """2,000 simulated data sets per case: two-sided coverage at least 93%, each end missing at most
    3.5%, and agreement with the exact coverage of the order statistics (within 3 standard errors)."""
    coverage, low_miss, high_miss = time_to_score_coverage(n, spread, censored, n_datasets=2000, seed=n)
    assert coverage >= 0.93 and low_miss <= 0.035 and high_miss <= 0.035, (coverage, low_miss, high_miss)
    exact = median_interval_coverage(n)
    assert abs(coverage - exact) <= 3 * np.sqrt(exact * (1 - exact) / 2000)


@pytest.mark.parametrize("n", [5, 10])
def test_coverage_holds_when_the_runs_budgets_differ(n: int) -> None:
    """Budgets up to 1.65x either side of the common one, so some runs stop short of the median: the
    interval only widens (a censored run's time is above its budget), and still meets the targets."""
    for spread in (0.3, 0.8):
        for censored in (0.2, 0.4):
            coverage, low_miss, high_miss = time_to_score_coverage(
                n, spread, censored, n_datasets=2000, seed=n, budget_spread=0.5
            )
            assert coverage >= 0.93 and low_miss <= 0.035 and high_miss <= 0.035, (spread, censored)


@pytest.mark.parametrize("n", [5, 10])
def test_a_ratio_of_two_medians_keeps_its_coverage(n: int) -> None:
    """Both sides random (our TRPO): at 5 and 10 runs a side, 0-40% censored, two-sided coverage at
    least 93% and each end missing at most 3.5%, and agreement with the exact coverage by ranks of
    :func:`time_ratio_level` (within 3 standard errors; censoring only widens the interval)."""
    exact = time_ratio_level(n, n)
    for censored in (0.0, 0.4):
        coverage, low_miss, high_miss = time_ratio_coverage(n, 0.8, censored, n_datasets=2000, seed=n)
        assert coverage >= 0.93 and low_miss <= 0.035 and high_miss <= 0.035, (censored, coverage)
        assert coverage >= exact - 3 * np.sqrt(exact * (1 - exact) / 2000)


def test_a_ratio_interval_by_hand() -> None:
    """ES 3 runs at 2, 4, 6 (one censored at 6), baseline 2 runs at 1, 2: each side at sqrt(0.95)
    is first to last run, so the ratio runs from 2 / 2 to inf (ES's censored run) and its point is
    4 / 1 (KM medians: ES's S reaches 1/3 at 4, the baseline's 1/2 at 1)."""
    ratio, low, high = time_ratio(
        np.array([2.0, 4.0, 6.0]), np.array([True, True, False]), np.array([1.0, 2.0]), np.ones(2, bool)
    )
    assert (ratio, low, high) == (4.0, 1.0, INF)
    # P(max of 3 below min of 2 over a common distribution) = 1 / C(5, 2) = 0.1; the mirror 0.1.
    assert time_ratio_level(3, 2) == pytest.approx(0.8)
    assert time_ratio_level(5, 5) == pytest.approx(1 - 2 / 252)


def test_at_three_runs_the_interval_is_first_to_last_and_covers_75_percent() -> None:
    coverage, low_miss, high_miss = time_to_score_coverage(3, 0.8, 0.2, n_datasets=2000, seed=3)
    assert median_interval_coverage(3) == 0.75  # each end misses 1/8: all three runs above (below) it
    assert coverage == pytest.approx(0.75, abs=0.03)
    assert low_miss == pytest.approx(0.125, abs=0.02) and high_miss == pytest.approx(0.125, abs=0.02)


def test_the_kaplan_meier_band_interval_misses_its_upper_end_at_ten_runs() -> None:
    """Why the order statistics and not Brookmeyer-Crowley: inverted, the log-log band misses its
    upper end more than 3.5% of the time at 10 runs."""
    _, _, high_miss = time_to_score_coverage(10, 0.3, 0.0, n_datasets=1000, seed=10, method="log-log")
    assert high_miss > 0.035


@pytest.mark.parametrize("n", [5, 10])
def test_restricted_mean_interval_coverage_is_as_documented(n: int) -> None:
    """docs/statistics.md: 92-97% at 5 and 10 runs (1,000 data sets here: within about 2 points)."""
    for spread in (0.3, 0.8):
        for censored in (0.0, 0.4):
            coverage, _, _ = restricted_mean_coverage(n, spread, censored, n_datasets=1000, seed=n)
            assert 0.895 <= coverage <= 0.98, (spread, censored, coverage)


@pytest.mark.slow
@pytest.mark.parametrize("n", [5, 10])
def test_time_to_score_coverage_on_20000_data_sets(n: int) -> None:
    for spread in (0.3, 0.8):
        for censored in (0.0, 0.2, 0.4):
            coverage, low_miss, high_miss = time_to_score_coverage(n, spread, censored, 20_000, seed=100 + n)
            assert coverage >= 0.93 and max(low_miss, high_miss) <= 0.035


def test_the_documented_table_is_what_the_command_prints() -> None:
    """``python -m esbench.analysis.coverage times``: one row per interval, spread, censored share and
    budgets; its numbers are the simulations above (same seeds)."""
    from esbench.analysis.coverage import main, time_to_score_markdown, time_to_score_table

    table = time_to_score_table(seeds=(5,), n_datasets=40)
    assert len(table) == 5 * 2 * 3 + 2 * 2 and set(table["budgets"]) == {"common", "varied"}
    row = table[(table["method"] == "order") & (table["censored"] == 0.4) & (table["spread"] == 0.8)].iloc[0]
    assert (row["n=5"], row["n=5 low"], row["n=5 high"]) == time_to_score_coverage(5, 0.8, 0.4, 40, seed=5)
    text = time_to_score_markdown(table)
    assert text.startswith("| Interval | Log-sd of times | Censored | Budgets | n=5 |")
    with pytest.raises(SystemExit, match="allowed: none"):
        main(["everything"])
