"""A scale's paper targets: ES budgets and stops from the paper's numbers, and with
``paper_targets.rl_stops`` our RL baseline stopping at the same score on the scale's budget."""

from __future__ import annotations

from esbench.recipes import load_recipes, paper_target_entries


def test_rl_stops_at_the_same_score_on_the_scales_budget() -> None:
    entries = [{"algo": ["openai_es", "trpo"], "env": ["inverted_pendulum", "swimmer"]}]
    out = paper_target_entries(entries, 1.0, "trpo_timesteps", rl_stops=True)
    trpo = {e["env"]: e for e in out if e["algo"] == ["trpo"]}
    es = {e["env"]: e for e in out if e["algo"] == ["openai_es"]}
    assert trpo["inverted_pendulum"]["budget.stop_at_return"] == 1000.0
    assert "budget.timesteps" not in trpo["swimmer"]  # the scale's 5M
    assert trpo["swimmer"]["budget.stop_at_return"] == es["swimmer"]["budget.stop_at_return"]
    # Without rl_stops RL keeps the scale's budget and no stop.
    plain = paper_target_entries(entries, 1.0, "trpo_timesteps")
    assert [e for e in plain if e["algo"] == ["trpo"]] == [
        {"algo": ["trpo"], "env": ["inverted_pendulum", "swimmer"]}
    ]


def test_the_decisive_table1_runs_our_trpo_and_records_stochastic_evaluation() -> None:
    sweeps = load_recipes()["table1"].plan("decisive")
    args = [" ".join(s.overrides) for s in sweeps]
    assert any("algo=trpo" in a and "budget.stop_at_return=" in a for a in args)
    assert all("eval.also_stochastic=true" in a for a in args)
