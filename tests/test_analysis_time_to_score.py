"""Time to a common score on synthetic runs with known answers (timesteps, seconds, censoring)."""

from __future__ import annotations

import numpy as np

from esbench.analysis.load import load_results
from esbench.analysis.time_to_score import display_time_to_score, time_to_common_score, write_time_to_score
from tests.synthetic_store import write_run

T = np.array([0.0, 100.0, 200.0, 300.0, 400.0])


def _write(root) -> None:
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


def test_time_to_common_score_known_answers(tmp_path) -> None:
    _write(tmp_path)
    table = time_to_common_score(load_results(tmp_path / "curves").curves)
    assert table["env_id"].tolist() == ["Hopper-v5", "Hopper-v5"]
    rows = table.set_index("algo")
    assert rows["target"].tolist() == [40.0, 40.0]
    es, trpo = rows.loc["openai_es"], rows.loc["trpo"]
    assert (es["n_seeds"], es["n_reached"]) == (3, 2)
    assert es["timesteps"] == 300.0 and es["wall_clock_s"] == 600.0 and not es["timesteps_censored"]
    assert (trpo["n_reached"], trpo["timesteps"], trpo["wall_clock_s"]) == (2, 400.0, 4000.0)
    assert trpo["steps_per_s"] == 0.1 and es["steps_per_s"] == 0.5


def test_median_seed_missing_the_target_is_censored_at_the_budget(tmp_path) -> None:
    for seed in (0, 1):
        write_run(tmp_path, "c", "trpo", "Hopper-v5", seed, T, T / 10)
    write_run(tmp_path, "c", "openai_es", "Hopper-v5", 0, T, T)  # reaches 40 at t=100
    for seed in (1, 2):  # these two never do: median censored
        write_run(tmp_path, "c", "openai_es", "Hopper-v5", seed, T, np.full(5, 10.0))
    table = time_to_common_score(load_results(tmp_path / "c").curves).set_index("algo")
    # ES mean curve best = (400 + 10 + 10) / 3 = 140 > TRPO's 40 -> common score 40.
    es = table.loc["openai_es"]
    assert es["n_reached"] == 1 and es["timesteps_censored"] and es["timesteps"] == 400.0
    shown = display_time_to_score(table.reset_index()).set_index("Algorithm")
    assert shown.loc["ES (OpenAI)", "Timesteps (median)"] == "> 400"
    assert shown.loc["ES (OpenAI)", "Seeds reached"] == "1/3"
    paths = write_time_to_score(table.reset_index(), tmp_path / "out")
    assert {p.suffix for p in paths.values()} == {".csv", ".md", ".tex"}
    assert "> 400" in paths["md"].read_text()
