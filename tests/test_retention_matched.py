"""Forgetting at matched gain, the Welch interval, transient drops and the common scale, against
values computed by hand on small synthetic curves."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from esbench.analysis.claims.verdicts import NOT_TESTABLE
from esbench.analysis.retention import SequenceCurves, run_retention
from esbench.analysis.retention_matched import (
    gain_paths,
    matched_gain_claims,
    matched_gain_table,
    transient_table,
)
from esbench.analysis.retention_measures import crossing, welch_diff_ci
from esbench.analysis.retention_report import common_scale, condition_names

FAMILY = {"openai_es": "es", "ppo": "rl"}.get


#: The standard error of one evaluation in the synthetic runs: a minimum effect of 0.02.
SE = 0.01


def _curves(algo: str, seed: int, old: list[float], new: list[float]) -> pd.DataFrame:
    """A two-stage run: stage 0 points (old rises to 1, new stays 0), then stage 1's points, every
    evaluation with a standard error of :data:`SE`."""
    t0 = [0.0, 10.0, 20.0]
    rows = []
    for n, t in enumerate(t0):
        rows += [(algo, "ab", seed, f"{algo}{seed}", 0, "a", t, 0, [0.0, 0.5, 1.0][n])]
        rows += [(algo, "ab", seed, f"{algo}{seed}", 1, "b", t, 0, 0.0)]
    for n, (y, x) in enumerate(zip(old, new, strict=True)):
        t = 30.0 + 10.0 * n
        rows += [(algo, "ab", seed, f"{algo}{seed}", 0, "a", t, 1, y)]
        rows += [(algo, "ab", seed, f"{algo}{seed}", 1, "b", t, 1, x)]
    cols = ["algo", "sequence", "seed", "run_id", "stage_index", "stage", "timesteps", "train_stage", "p"]
    return pd.DataFrame(rows, columns=cols).assign(se=SE)


def test_crossing_interpolates_at_the_first_crossing() -> None:
    """Where a path first reaches a value: here the retention where the gain first reaches g."""
    gain = np.array([0.0, 0.4, 0.8, 0.2, 1.0])
    ret = np.array([1.0, 0.8, 0.4, 0.9, 0.0])
    assert crossing(ret, gain, 0.6) == pytest.approx(0.6)  # between 0.4 and 0.8
    assert crossing(ret, gain, 0.0) == 1.0
    # 0.9 is first reached between (0.2, 0.9) and (1.0, 0.0): 0.9 - 0.7 / 0.8 * 0.9.
    assert crossing(ret, gain, 0.9) == pytest.approx(0.1125)
    assert np.isnan(crossing(ret, gain, 1.5))


def test_welch_interval_by_hand() -> None:
    a, b = np.array([1.0, 2.0, 3.0]), np.array([2.0, 4.0, 6.0, 8.0])
    va, vb = 1.0 / 3, (20.0 / 3) / 4  # sample variances 1 and 20/3, over n
    se = np.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / 2 + vb**2 / 3)
    d, low, high = welch_diff_ci(a, b)
    assert d == pytest.approx(-3.0)
    half = stats.t.ppf(0.975, df) * se
    assert (low, high) == pytest.approx((-3.0 - half, -3.0 + half))
    assert np.isnan(welch_diff_ci([1.0], b)[1])


def test_matched_gain_decides_es_forgets_more_at_the_gain_both_reach() -> None:
    # ES gains up to 0.9 on b while a falls; PPO gains only 0.6 but keeps a. g* = 0.6.
    es = [_curves("openai_es", s, [0.8 - d, 0.4 - d], [0.3, 0.9]) for s, d in enumerate([0.0, 0.02, 0.04])]
    rl = [_curves("ppo", s, [1.0 - d, 0.95 - d], [0.3, 0.6]) for s, d in enumerate([0.0, 0.01, 0.02])]
    curves = pd.concat([*es, *rl], ignore_index=True)
    paths = gain_paths(curves)
    assert len(paths) == 6 and all(p.stage_index == 1 for p in paths)
    first = next(p for p in paths if p.algo == "openai_es" and p.seed == 0)
    np.testing.assert_allclose(first.gain, [0.0, 0.3, 0.9])  # from the point stage b starts at
    np.testing.assert_allclose(first.retention, [0.0, -0.2, -0.6])  # a's change since b began (at 1.0)
    table = matched_gain_table(paths, np.random.default_rng(0))
    np.testing.assert_allclose(table["matched_gain"], 0.6)
    es_row = table[table["algo"] == "openai_es"].iloc[0]
    # ES seed 0 at gain 0.6: halfway from (0.3, 0.8) to (0.9, 0.4): 0.6; seeds 1, 2: 0.58, 0.56 (minus 1).
    assert es_row["retention_at_matched_gain"] == pytest.approx(0.58 - 1.0)
    rl_row = table[table["algo"] == "ppo"].iloc[0]
    assert rl_row["retention_at_matched_gain"] == pytest.approx(np.mean([0.95, 0.94, 0.93]) - 1.0)
    claims = matched_gain_claims(paths, FAMILY)
    row = claims.iloc[0]
    assert (row["claim"], row["a"], row["b"]) == ("es_forgets_more", "openai_es", "ppo")
    d, low, high = welch_diff_ci([0.6, 0.58, 0.56], [0.95, 0.94, 0.93])
    assert (row["difference"], row["low"], row["high"]) == pytest.approx((d, low, high))
    assert row["verdict"] == "supported" and high < 0
    assert row["seeds_to_decide"] <= 3  # decided already: a planning number within the seeds run
    # The same effect with much more spread between seeds: undecided at 3, and how many would do.
    noisy = [_curves("openai_es", s, [0.8 - d, 0.4 - d], [0.3, 0.9]) for s, d in enumerate([0.0, 0.3, -0.3])]
    row = matched_gain_claims(gain_paths(pd.concat([*noisy, *rl], ignore_index=True)), FAMILY).iloc[0]
    assert row["verdict"] == "undecided" and row["seeds_to_decide"] > 3


def test_one_seed_that_never_gains_does_not_pin_the_matched_gain() -> None:
    """ES seeds 0, 1 gain 0.3 then 0.9 on b, seed 2 never gains: ES's mean gain is 0, 0.2, 0.6 at
    progress 0, 10, 20, PPO's 0, 0.3, 0.6. The largest gain every *run* reaches is 0 (no gain to
    match); both mean paths reach 0.6, at progress 20, where every seed is read: ES a's change
    0.4 - 1, 0.38 - 1 and 0.9 - 1 (seed 2 lost little), PPO 0.95 - 1, 0.94 - 1, 0.93 - 1."""
    es = [
        _curves("openai_es", 0, [0.8, 0.4], [0.3, 0.9]),
        _curves("openai_es", 1, [0.78, 0.38], [0.3, 0.9]),
        _curves("openai_es", 2, [0.95, 0.9], [0.0, 0.0]),
    ]
    rl = [_curves("ppo", s, [1.0 - d, 0.95 - d], [0.3, 0.6]) for s, d in enumerate([0.0, 0.01, 0.02])]
    paths = gain_paths(pd.concat([*es, *rl], ignore_index=True))
    np.testing.assert_allclose(
        next(p for p in paths if p.seed == 2 and p.algo == "ppo").progress, [0, 10, 20]
    )
    table = matched_gain_table(paths, np.random.default_rng(0)).set_index("algo")
    assert table.loc["openai_es", "matched_gain"] == pytest.approx(0.6)
    assert table.loc["openai_es", "max_gain"] == pytest.approx(0.6) and table.loc["ppo", "max_gain"] == 0.6
    assert table.loc["openai_es", "n_seeds"] == 3
    es_at, rl_at = [-0.6, -0.62, -0.1], [-0.05, -0.06, -0.07]
    assert table.loc["openai_es", "retention_at_matched_gain"] == pytest.approx(np.mean(es_at))
    row = matched_gain_claims(paths, FAMILY).iloc[0]
    assert (row["n_a"], row["n_b"]) == (3, 3)
    assert (row["difference"], row["low"], row["high"]) == pytest.approx(welch_diff_ci(es_at, rl_at))
    # Against a PPO that reaches only 0.4, ES's mean path crosses 0.4 halfway between progress 10
    # (0.2) and 20 (0.6): every ES seed is read at 15, halfway along its own retention path.
    short = [_curves("ppo", s, [1.0, 0.95], [0.3, 0.4]) for s in range(2)]
    es_paths = [p for p in paths if p.algo == "openai_es"]
    row = matched_gain_claims(es_paths + gain_paths(pd.concat(short, ignore_index=True)), FAMILY).iloc[0]
    assert row["matched_gain"] == pytest.approx(0.4)
    assert row["retention_a"] == pytest.approx(np.mean([-0.4, -0.42, -0.075]))


def test_no_gain_to_match_is_not_testable_and_awd_and_population_pairs_are_compared() -> None:
    flat = [_curves("openai_es", s, [0.5, 0.2], [0.0, -0.1]) for s in range(2)]
    awd = [_curves("openai_es+awd", s, [0.9, 0.9], [0.0, -0.1]) for s in range(2)]
    rl = [_curves("ppo", s, [0.9, 0.9], [0.2, 0.3]) for s in range(2)]
    claims = matched_gain_claims(gain_paths(pd.concat([*flat, *awd, *rl])), FAMILY)
    assert set(claims["claim"]) == {"es_forgets_more", "awd_keeps_retention"}
    assert (claims["matched_gain"] <= 0).all() and set(claims["verdict"]) == {NOT_TESTABLE}
    assert claims["seeds_to_decide"].isna().all()  # no study is planned for a claim that cannot be tested
    big = [_curves("openai_es@pop40", s, [0.9, 0.8 + 0.01 * s], [0.3, 0.6]) for s in range(3)]
    small = [_curves("openai_es@pop10", s, [0.5, 0.2 + 0.01 * s], [0.3, 0.6]) for s in range(3)]
    pop = matched_gain_claims(gain_paths(pd.concat([*big, *small])), FAMILY)
    assert list(pop["claim"]) == ["larger_population_forgets_less"]
    assert pop.iloc[0]["a"] == "openai_es@pop40" and pop.iloc[0]["verdict"] == "supported"


def _two_levels(algo: str, seed: int, level: float, old: list[float], new: list[float]) -> pd.DataFrame:
    """:func:`_curves` with stage a learned to ``level`` instead of 1 (its points scaled)."""
    frame = _curves(algo, seed, old, new)
    first = (frame["stage_index"] == 0) & (frame["train_stage"] == 0)
    frame.loc[first, "p"] *= level
    return frame


def test_a_higher_earlier_level_is_not_less_forgetting() -> None:
    """RL learned stage a to 2.0, ES to 1.0; both lose the same 0.3 of it on the way to the same
    gain. The level differs by 1.0, the forgetting not at all: the claim compares the change."""
    es = [_two_levels("openai_es", s, 1.0, [0.85 - 0.01 * s, 0.7 - 0.01 * s], [0.3, 0.6]) for s in range(3)]
    rl = [_two_levels("ppo", s, 2.0, [1.85 - 0.01 * s, 1.7 - 0.01 * s], [0.3, 0.6]) for s in range(3)]
    row = matched_gain_claims(gain_paths(pd.concat([*es, *rl], ignore_index=True)), FAMILY).iloc[0]
    assert row["matched_gain"] == pytest.approx(0.6)
    assert row["difference"] == pytest.approx(0.0, abs=1e-12) and row["verdict"] == "undecided"


def test_matched_gain_per_pair_and_the_minimum_effect() -> None:
    """A condition that never gains leaves the other pair decidable with ``per_pair``; a matched
    gain not above twice the standard error of one evaluation (0.02 here) is not testable, and the
    table matches only the conditions that learned."""
    es = [_curves("openai_es", s, [0.8 - 0.01 * s, 0.4 - 0.01 * s], [0.3, 0.9]) for s in range(3)]
    rl = [_curves("ppo", s, [1.0 - 0.01 * s, 0.95 - 0.01 * s], [0.3, 0.6]) for s in range(3)]
    stuck = [_curves("openai_es@pop8", s, [0.9, 0.9], [0.0, 0.01]) for s in range(3)]
    paths = gain_paths(pd.concat([*es, *rl, *stuck], ignore_index=True))
    family = {"openai_es": "es", "ppo": "rl"}.get
    shared = matched_gain_claims(paths, family)
    assert shared["matched_gain"].to_numpy() == pytest.approx([0.01, 0.01])  # the stuck condition pins g*
    assert set(shared["verdict"]) == {NOT_TESTABLE} and shared["min_effect"].to_numpy() == pytest.approx(0.02)
    pair = matched_gain_claims(paths, family, per_pair=True).set_index(["a", "b"])
    assert pair.loc[("openai_es", "ppo"), "matched_gain"] == pytest.approx(0.6)
    assert pair.loc[("openai_es", "ppo"), "verdict"] == "supported"
    assert pair.loc[("openai_es@pop8", "ppo"), "verdict"] == NOT_TESTABLE  # 0.01 <= 0.02: no learning
    assert np.isnan(pair.loc[("openai_es@pop8", "ppo"), "seeds_to_decide"])
    table = matched_gain_table(paths, np.random.default_rng(0)).set_index("algo")
    assert not table.loc["openai_es@pop8", "learned"] and table.loc["ppo", "learned"]
    assert table.loc["ppo", "matched_gain"] == pytest.approx(0.6)
    assert table.loc["openai_es@pop8", "n_seeds"] == 0 and np.isnan(table.loc["openai_es@pop8", "low"])


def _recovering_run(seed: int, end: float) -> pd.DataFrame:
    """Stage a learned to 1 over t 0..20; during b (t 20..50, points at fractions 1/3, 2/3, 1) it
    drops to 0.2 + 0.01 seed in b's first third, then comes back to ``end``."""
    returns = np.array([[0.0, 0.5, 1.0, 0.2 + 0.01 * seed, 0.8, end], [0.0, 0.0, 0.0, 0.1, 0.5, 0.6]])
    curves = SequenceCurves(
        ("a", "b"), np.array([0.0, 10, 20, 30, 40, 50]), np.array([0, 0, 0, 1, 1, 1]), returns,
        np.array([20.0, 50.0]),
    )  # fmt: skip
    table = run_retention(curves, np.zeros(2), np.ones(2))
    return table.assign(algo="openai_es", sequence="ab", seed=seed)


def test_transient_drop_against_permanent() -> None:
    """The one definition: the start 1.0 against the mean over b's first third (one point, 0.2 + 0.01
    seed) and its last third (one point: 0.95, 1.0, 1.05 over the seeds): the late drop holds 0, the
    recovery lies above it: transient; where the learner did not learn b, not testable."""
    per_run = pd.concat([_recovering_run(s, end) for s, end in enumerate([0.95, 1.0, 1.05])])
    learned = pd.DataFrame({"sequence": ["ab"], "algo": ["openai_es"], "stage_index": [1], "learned": [True]})
    row = transient_table(per_run, learned, np.random.default_rng(0)).iloc[0]
    assert row["early_drop"] == pytest.approx(1.0 - 0.21)
    assert row["late_drop"] == pytest.approx(0.0, abs=1e-12)
    assert row["recovery"] == pytest.approx(1.0 - 0.21)
    assert (row["reading"], row["verdict"]) == ("transient", "supported")
    row = transient_table(per_run, learned.assign(learned=False), np.random.default_rng(0)).iloc[0]
    assert (row["reading"], row["verdict"]) == ("transient", NOT_TESTABLE)


def test_common_scale_takes_the_best_reference_and_the_mean_untrained_return() -> None:
    def run(start: float, end: float) -> SequenceCurves:
        returns = np.array([[start, end, end], [start, start, end]])
        return SequenceCurves(
            ("a", "b"), np.array([0.0, 1, 2]), np.array([0, 0, 1]), returns, np.array([1.0, 2])
        )

    r_random, r_ref, source = common_scale(
        {"openai_es": np.array([100.0, np.nan]), "ppo": np.array([300.0, np.nan])},
        {"openai_es": [run(0.0, 50.0)], "ppo": [run(10.0, 80.0)]},
    )
    np.testing.assert_allclose(r_random, [5.0, 5.0])
    assert r_ref[0] == 300.0 and source[0] == "reference (ppo)"
    assert r_ref[1] == 80.0 and source[1] == "sequence end (ppo)"  # no reference: best stage end
    # A stage of two points (the untrained model, then the trained one): R_ref is the trained
    # model's score, never the mean of the two.
    two = SequenceCurves(
        ("a", "b"), np.array([0.0, 96.0, 100.0]), np.array([0, 0, 1]),
        np.array([[0.0, 0.84, 0.7], [0.0, 0.0, 0.1]]), np.array([96.0, 100.0]),
    )  # fmt: skip
    _, r_ref, _ = common_scale({"eggroll": np.array([np.nan, np.nan])}, {"eggroll": [two]})
    assert r_ref == pytest.approx([0.84, 0.1])


def test_condition_names_mark_awd_and_population_sizes() -> None:
    runs = pd.DataFrame(
        {
            "algo": ["openai_es", "openai_es", "openai_es", "ppo", "pgpe"],
            "sequence": ["s"] * 5,
            "population_size": [10, 40, 10, None, 20],
            "l2_anchor": ["zero", "zero", "stage_start", "zero", "zero"],
        }
    )
    assert list(condition_names(runs)) == [
        "openai_es@pop10",
        "openai_es@pop40",
        "openai_es+awd@pop10",
        "ppo",
        "pgpe",
    ]
