"""Which way a larger study would go (esbench.analysis.metrics.planning), against simulated studies."""

from __future__ import annotations

import numpy as np

from esbench.analysis.metrics.intervals import welch_ci
from esbench.analysis.metrics.planning import seeds_to_decide, study_outcomes, study_outlook


def test_study_outcomes_are_the_shares_of_simulated_welch_studies_on_each_side() -> None:
    rng = np.random.default_rng(1)
    diff, sd_a, sd_b, n = 0.6, 1.0, 1.5, 12
    below, above, holds = study_outcomes(diff, sd_a**2, sd_b**2, n)
    sides = []
    for _ in range(4000):
        _, low, high = welch_ci(rng.normal(diff, sd_a, n), rng.normal(0.0, sd_b, n))
        sides.append("below" if high < 0 else "above" if low > 0 else "holds")
    share = {s: sides.count(s) / len(sides) for s in ("below", "above", "holds")}
    assert abs(share["above"] - above) < 0.03 and abs(share["below"] - below) < 0.01
    assert abs(below + above + holds - 1.0) < 1e-12 and above > 0.15 > below


def test_a_pilot_drawn_from_a_known_effect_plans_a_study_that_goes_its_way() -> None:
    rng = np.random.default_rng(0)
    for effect in (0.8, -0.8):
        a, b = rng.normal(effect, 1.0, 10), rng.normal(0.0, 1.0, 10)
        outlook = study_outlook(a, b, np.random.default_rng(2))
        assert outlook.seeds == seeds_to_decide(a, b)
        assert outlook.side == ("above" if effect > 0 else "below")
        toward = outlook.above if effect > 0 else outlook.below
        assert toward >= 0.8 - 1e-9  # the planned size decides it that way with the planning power
        assert outlook.seeds_low <= outlook.seeds <= outlook.seeds_high and outlook.same_side > 0.9


def test_a_pilot_of_three_split_seeds_shows_a_wide_spread_and_no_pilot_no_outlook() -> None:
    a, b = np.array([3171.0, 3018.0, 1621.0]), np.array([2500.0, 2600.0, 2400.0])
    outlook = study_outlook(a, b, np.random.default_rng(0))
    assert outlook.pilots == 200 and outlook.seeds_high > 3 * outlook.seeds_low
    assert outlook.same_side < 0.9  # resampled pilots disagree on the direction
    none = study_outlook(np.array([1.0]), b, np.random.default_rng(0))
    assert none.pilots == 0 and np.isnan(none.seeds) and none.side == ""


def test_seeds_to_decide_is_the_smallest_study_a_full_scan_of_the_power_finds() -> None:
    from esbench.analysis.metrics.planning import PLANNING_POWER, welch_power

    rng = np.random.default_rng(3)
    for _ in range(40):
        a, b = rng.normal(rng.normal(0, 1), rng.uniform(0.2, 3), 3), rng.normal(0, rng.uniform(0.2, 3), 4)
        ns = np.arange(2, 301)
        diff = abs(a.mean() - b.mean())
        enough = np.flatnonzero(welch_power(diff, a.var(ddof=1), b.var(ddof=1), ns) >= PLANNING_POWER)
        expected = float(ns[enough[0]]) if enough.size else float("nan")
        got = seeds_to_decide(a, b, max_seeds=300)
        assert got == expected or (np.isnan(got) and np.isnan(expected)), (a, b, got, expected)
