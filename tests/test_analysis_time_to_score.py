"""Time to a common score on synthetic runs with known answers (timesteps, seconds, runs censored
at their budget, the Kaplan-Meier median's interval and its exact coverage, the share reached,
algorithms that did not improve)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from esbench.analysis.figures import algo_label
from esbench.analysis.load import load_results, stopped_runs
from esbench.analysis.time_to_score import display_time_to_score, time_to_common_score, write_time_to_score
from tests.synthetic_store import write_run

T = np.array([0.0, 100.0, 200.0, 300.0, 400.0])


def _write(root: Path) -> None:
    # TRPO: best mean 40 (the lower best) -> the common score; reaches it at t=400, slowly (10 s/step).
    for seed in (0, 1):
        write_run(root, "curves", "trpo", "Hopper-v5", seed, T, T / 10, wall_clock_s=T * 10)
    # ES: seed 0 reaches 40 at t=200 (seconds 2 s/step -> 400 s); seed 1 at t=300 (600 s);
    # seed 2 plateaus at 35 and never does. Median over seeds of (200, 300, inf) = 300 steps.
    es = {0: np.minimum(T / 5, 80), 1: np.minimum(T * 0.14, 80), 2: np.minimum(T, 35)}
    for seed, y in es.items():
        write_run(root, "curves", "openai_es", "Hopper-v5", seed, T, y, wall_clock_s=T * 2)
    # Swimmer: only ES -> no comparison, no rows.
    write_run(root, "curves", "openai_es", "Swimmer-v5", 0, T, T)


def test_time_to_common_score_known_answers(tmp_path: Path) -> None:
    """Medians and their intervals, by hand. ES's per-seed times are 200, 300 and one run censored at
    its budget, 400: the Kaplan-Meier S(t) is 2/3 from 200 and 1/3 from 300, so the median is 300;
    at 3 seeds the interval is first to last run, [200, inf) (the censored run's time is above
    400): "> 400"; its exact coverage is 75%. TRPO's two seeds are identical (400, 400)."""
    _write(tmp_path)
    table = time_to_common_score(load_results(tmp_path / "curves").curves)
    assert table["env_id"].tolist() == ["Hopper-v5", "Hopper-v5"]
    rows = table.set_index("algo")
    assert rows["target"].tolist() == [40.0, 40.0] and rows["improved"].all()
    es, trpo = rows.loc["openai_es"], rows.loc["trpo"]
    assert (es["n_seeds"], es["n_reached"]) == (3, 2)
    assert (es["ci_coverage"], trpo["ci_coverage"]) == (0.75, 0.5)
    assert es["timesteps"] == 300.0 and es["wall_clock_s"] == 600.0 and not es["timesteps_censored"]
    assert (es["timesteps_low"], es["timesteps_high"]) == (200.0, np.inf)
    assert (es["wall_clock_low"], es["wall_clock_high"]) == (400.0, np.inf)
    assert (trpo["n_reached"], trpo["timesteps"], trpo["wall_clock_s"]) == (2, 400.0, 4000.0)
    assert (trpo["timesteps_low"], trpo["timesteps_high"]) == (400.0, 400.0)
    assert trpo["steps_per_s"] == 0.1 and es["steps_per_s"] == 0.5
    shown = display_time_to_score(table).set_index("Algorithm")
    assert shown.loc["ES (OpenAI)", "Timesteps, median [CI]"] == "300 [200, > 400]"
    assert shown.loc["ES (OpenAI)", "Wall-clock s, median [CI]"] == "600 [400, > 800]"
    assert shown.loc["TRPO", "Timesteps, median [CI]"] == "400 [400, 400]"
    # The share reached within the budget beside a cell with a censored run (Clopper-Pearson).
    assert shown.loc["ES (OpenAI)", "Seeds reached [95% CI of the share]"] == "2/3 [0.094, 0.99]"
    assert shown.loc["TRPO", "Seeds reached [95% CI of the share]"] == "2/2"


def test_the_table_notes_give_the_exact_coverage(tmp_path: Path) -> None:
    _write(tmp_path)
    table = time_to_common_score(load_results(tmp_path / "curves").curves)
    md = write_time_to_score(table, tmp_path / "out")["md"].read_text()
    assert "exact coverage 50% at 2 seeds, 75% at 3 seeds" in md
    assert "no interval of a median over fewer than 6 seeds reaches 95%" in md


def test_median_seed_missing_the_target_is_censored_at_the_budget(tmp_path: Path) -> None:
    for seed in (0, 1):
        write_run(tmp_path, "c", "trpo", "Hopper-v5", seed, T, T / 10)
    write_run(tmp_path, "c", "openai_es", "Hopper-v5", 0, T, T)  # reaches 40 at t=100
    for seed in (1, 2):  # these two never do: median censored
        write_run(tmp_path, "c", "openai_es", "Hopper-v5", seed, T, np.full(5, 10.0) + T / 1000)
    table = time_to_common_score(load_results(tmp_path / "c").curves).set_index("algo")
    # ES mean curve best = (400 + 10.4 + 10.4) / 3 > TRPO's 40 -> common score 40.
    es = table.loc["openai_es"]
    assert es["n_reached"] == 1 and es["timesteps_censored"] and es["timesteps"] == 400.0
    assert (es["timesteps_low"], es["timesteps_high"]) == (100.0, np.inf)  # P(median = 100) = 7/27
    shown = display_time_to_score(table.reset_index()).set_index("Algorithm")
    assert shown.loc["ES (OpenAI)", "Timesteps, median [CI]"] == "> 400 [100, > 400]"
    assert shown.loc["ES (OpenAI)", "Seeds reached [95% CI of the share]"] == "1/3 [0.0084, 0.91]"
    paths = write_time_to_score(table.reset_index(), tmp_path / "out")
    assert {p.suffix for p in paths.values()} == {".csv", ".md", ".tex"}
    assert "> 400" in paths["md"].read_text()


def test_an_algorithm_that_never_improved_does_not_set_the_common_score(tmp_path: Path) -> None:
    """A2C stays at its timestep-0 score of 5 on every seed: with it, the common score would be 5,
    the untrained policy's. It is listed as "did not improve" and the score stays 40 (TRPO's best)."""
    _write(tmp_path)
    for seed in (0, 1):
        write_run(tmp_path, "curves", "a2c", "Hopper-v5", seed, T, [5.0, 5.0, 4.0, 5.0, 3.0])
    table = time_to_common_score(load_results(tmp_path / "curves").curves).set_index("algo")
    assert table["target"].tolist() == [40.0, 40.0, 40.0]
    a2c = table.loc["a2c"]
    assert not a2c["improved"] and np.isnan(a2c["timesteps"]) and a2c["n_reached"] == 0
    assert table.loc["openai_es", "timesteps"] == 300.0  # unchanged
    shown = display_time_to_score(table.reset_index()).set_index("Algorithm")
    assert shown.loc[algo_label("a2c"), "Timesteps, median [CI]"] == "did not improve"
    md = write_time_to_score(table.reset_index(), tmp_path / "out")["md"].read_text()
    assert "Did not improve (no run ever evaluated above its timestep-0 evaluation" in md
    assert f"common score): {algo_label('a2c')}." in md


def test_a_stopped_run_counts_as_reached_at_its_stop(tmp_path: Path) -> None:
    """ES seed 0 stopped at t=200 with 60 (budget.stop_at_return): it reached 40 at t=200 and does
    not cut the ES mean curve (that sets the common score) short."""
    for seed in (0, 1):
        write_run(tmp_path, "c", "trpo", "Hopper-v5", seed, T, T / 10)
    write_run(tmp_path, "c", "openai_es", "Hopper-v5", 0, T[:3], [0.0, 20.0, 60.0], stopped_at_return=True)
    write_run(tmp_path, "c", "openai_es", "Hopper-v5", 1, T, [0.0, 10.0, 20.0, 30.0, 50.0])
    results = load_results(tmp_path / "c")
    table = time_to_common_score(results.curves, stopped=stopped_runs(results)).set_index("algo")
    # ES mean with seed 0 held at 60: (0, 15, 40, 45, 55); best 55 > TRPO's 40 -> 40.
    es = table.loc["openai_es"]
    assert es["target"] == 40.0 and es["n_reached"] == 2
    # The Kaplan-Meier median of (200, 400): the first time half the runs got there.
    assert es["timesteps"] == 200.0
