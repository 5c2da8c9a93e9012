"""``esbench reproduce``: recipes, their validation and cost, and one recipe end to end."""

from __future__ import annotations

from pathlib import Path

import pytest

from esbench.recipes import SCALES, RecipeError, all_jobs, get_recipe, load_recipes
from tests.conftest import esbench

RECIPES = (
    "table1", "table2", "frameskip", "scaling", "curves", "es_family", "retention", "lm_retention",
    "population",
)  # fmt: skip


def test_every_target_has_a_recipe_with_three_scales() -> None:
    recipes = load_recipes()
    assert sorted(recipes) == sorted(RECIPES)
    for name, recipe in recipes.items():
        assert recipe.report == name
        for scale in SCALES:
            jobs = all_jobs(recipe, scale)
            assert jobs, (name, scale)
            assert all(f"experiment={name}" in j for j in jobs)
            assert all(f"budget={scale}" in j for j in jobs)


@pytest.mark.parametrize("name", RECIPES)
def test_smoke_and_mini_jobs_compose_and_validate(name: str) -> None:
    from esbench.config.compose import compose_run_config
    from esbench.sweep import validate_sweep

    for sweep in get_recipe(name).plan("smoke"):
        validate_sweep(list(sweep.overrides))
    # Mini: every job up to its seed (jobs that differ only in ``seed=`` compose alike; each
    # composition costs Hydra ~0.3 s, and the retention recipe's mini has 126 jobs).
    distinct = {
        tuple(o for o in job if not o.startswith("seed=")) for job in all_jobs(get_recipe(name), "mini")
    }
    for job in sorted(distinct):
        compose_run_config(list(job))


def test_table2_paper_sweeps_all_51_games_and_frameskip_budgets_are_equal_frames() -> None:
    from esbench.envs.atari import ATARI_GAMES

    jobs = all_jobs(get_recipe("table2"), "paper")
    games = {o.split("=", 1)[1] for j in jobs for o in j if o.startswith("env.game=")}
    assert len(games) == len(ATARI_GAMES) == 51
    frames = get_recipe("frameskip").scales["mini"]["budget"]["frames"]
    for job in all_jobs(get_recipe("frameskip"), "mini"):
        o = dict(a.split("=", 1) for a in job)
        assert 0 <= frames - int(o["budget.timesteps"]) * int(o["env.frame_skip"]) < int(o["env.frame_skip"])


def test_scaling_runs_get_distinct_run_ids_per_worker_count() -> None:
    recipe = get_recipe("scaling")
    assert recipe.launcher == "basic"
    jobs = all_jobs(recipe, "smoke")
    assert sorted(o for j in jobs for o in j if o.startswith("cluster.n_workers=")) == [
        "cluster.n_workers=1",
        "cluster.n_workers=2",
    ]
    from esbench.config.compose import compose_run_config

    run_ids = sorted(compose_run_config(j).run_id for j in jobs)
    assert run_ids == ["openai_es-inverted_pendulum-w1-s0", "openai_es-inverted_pendulum-w2-s0"]


def test_user_overrides_replace_the_recipes() -> None:
    (sweep,) = get_recipe("scaling").plan("smoke", ["seed=7", "results_dir=/x"])
    assert "seed=7" in sweep.overrides and "seed=0" not in sweep.overrides
    assert sweep.overrides[-1] == "results_dir=/x"


def test_rl_alias_keeps_to_control_tasks_and_lm_alias_names_the_language_model_learners() -> None:
    from esbench.recipes import expand_families

    rl = expand_families("@rl")
    assert "grpo" not in rl and {"ppo", "trpo"} <= set(rl)  # GRPO trains language models only
    assert expand_families("@lm") == ["openai_es", "eggroll", "grpo"]
    sweep = get_recipe("lm_retention").plan("smoke", [])[0]  # then its conditions (AWD, population)
    algos = {o.split("=", 1)[1] for job in sweep.jobs() for o in job if o.startswith("algo=")}
    assert algos == {"openai_es", "eggroll", "grpo"}
    with pytest.raises(RecipeError, match="allowed: @es, @rl, @lm or algorithm keys"):
        expand_families("@nope")


def test_lm_jobs_are_priced_by_the_language_model_rates() -> None:
    from esbench.recipes import STEP_RATES, _job_cost, estimate, lm_pretrain_s

    recipe = get_recipe("lm_retention")
    smoke = estimate(recipe, "smoke")
    assert smoke.timesteps == 10 * 2048  # the stage budget of task B; the pretraining stage is 0
    jobs = all_jobs(recipe, "mini")
    cost = {j[-3]: _job_cost(j)[1] for j in jobs}
    assert cost["algo=grpo"] > cost["algo=openai_es"] and cost["algo=grpo"] > cost["algo=eggroll"]
    # The task-A model once (mini trains the default model: its measured seconds per step), not per job.
    assert lm_pretrain_s(jobs) == 1500 * STEP_RATES["lm"]["pretrain_step_s"]
    assert lm_pretrain_s(jobs + jobs) == lm_pretrain_s(jobs)
    assert 0 < lm_pretrain_s(all_jobs(recipe, "smoke")) < lm_pretrain_s(jobs)  # a smaller model, fewer steps
    mini = estimate(recipe, "mini")
    assert mini.core_s >= sum(_job_cost(j)[1] for j in jobs) + lm_pretrain_s(jobs) - 1e-6  # rounding
    assert mini.wall_s < 0.7 * mini.core_s  # two jobs at once on the 2 cores (Dask, 2 workers)
    assert mini.wall_s < 2 * 3600  # the mini fits in 2 hours on 2 cores


def test_lm_retention_runs_the_other_sides_conditions_at_every_scale() -> None:
    """Every scale runs the three learners plus OpenAI-ES with Anchored Weight Decay and OpenAI-ES at
    a second population size, at least 5 seeds each from mini on, two jobs at a time."""
    recipe = get_recipe("lm_retention")
    assert recipe.launcher == "dask"
    for scale in ("smoke", "mini", "paper"):
        jobs = [set(j) for j in all_jobs(recipe, scale)]
        assert all({"cluster.n_workers=2", "cluster.threads_per_worker=1"} <= j for j in jobs)
        awd = [j for j in jobs if "algo.l2_anchor=stage_start" in j]
        small = [j for j in jobs if "algo.population_size=8" in j]
        seeds = {o for j in jobs for o in j if o.startswith("seed=")}
        bases = {o for j in jobs for o in j if o.startswith("lm.pretrain.seed=")} or {"one"}
        assert len(awd) == len(small) == len(seeds) * len(bases) and len(seeds) >= (
            2 if scale == "smoke" else 5
        )
        assert len(bases) == (2 if scale == "paper" else 1)  # paper: every seed on two bases
        assert all("algo=openai_es" in j for j in awd + small)


def test_bad_recipe_files_fail_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("description: x\nreport: table1\nscales: {smoke: {}}\n")
    with pytest.raises(RecipeError, match=r"bad\.yaml: scales must be smoke, mini, paper, optionally"):
        load_recipes(tmp_path)
    (tmp_path / "bad.yaml").write_text("description: x\nreport: nope\nscales: {}\n")
    with pytest.raises(RecipeError, match="report='nope'"):
        load_recipes(tmp_path)


def test_list_shows_every_recipe_with_cost_per_scale() -> None:
    out = esbench("reproduce", "--list").stdout
    for name in RECIPES:
        assert name in out
    recipes = load_recipes()
    assert out.count(" jobs ") == sum(len(r.scales) for r in recipes.values()) >= 3 * len(RECIPES)
    assert "  decisive " in out  # table1's scales that decide on one machine, with their cost
    assert "  decisive_hard " in out
    assert "core-h" in out and "on 2 cores" in out and "steps/s" in out


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["tabel1", "scale=smoke"],
            "unknown recipe 'tabel1' (did you mean table1 or table2?); allowed: curves, es_family, "
            "frameskip, lm_retention, population, retention, scaling, table1, table2, all",
        ),
        (
            ["table1", "scale=huge"],
            "scale='huge' is unknown; allowed: smoke, mini, paper, decisive, decisive_hard",
        ),
        (
            ["table1", "scale=minii"],
            "scale='minii' is unknown (did you mean mini?); allowed: smoke, mini, paper, decisive, "
            "decisive_hard",
        ),
        (
            ["table1"],
            "give a scale (e.g. esbench reproduce table1 scale=smoke); allowed: smoke, mini, paper, "
            "decisive, decisive_hard",
        ),
    ],
)
def test_unknown_recipe_or_scale_exits_2_with_one_line(args: list[str], expected: str) -> None:
    proc = esbench("reproduce", *args, check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"esbench reproduce: error: {expected}"]


def test_unreachable_scheduler_fails_fast_with_advice(tmp_path: Path) -> None:
    proc = esbench(
        "reproduce", "scaling", "scale=smoke", "cluster=address", "cluster.address=tcp://127.0.0.1:9",
        "cluster.connect_timeout_s=2", f"results_dir={tmp_path}", check=False, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 3
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "dask scheduler" in proc.stderr and "dask worker" in proc.stderr
    assert "within 2 s" in proc.stderr  # the configured connect timeout, not Dask's 30 s default
    assert not list(tmp_path.rglob("summary.json"))


def test_decisive_scale_gives_es_the_papers_trpo_timesteps_and_stops_at_its_score() -> None:
    from esbench.analysis.table1 import load_mujoco_reference

    ref = load_mujoco_reference()
    full = ref[ref["progress_fraction"] == 1.0].set_index("gymnasium_id")
    envs = {"halfcheetah": "HalfCheetah-v5", "inverted_double_pendulum": "InvertedDoublePendulum-v5",
            "inverted_pendulum": "InvertedPendulum-v5", "swimmer": "Swimmer-v5"}  # fmt: skip
    jobs = [dict(a.split("=", 1) for a in job) for job in all_jobs(get_recipe("table1"), "decisive")]
    assert {j["env"] for j in jobs} == set(envs) and {j["algo"] for j in jobs} == {"openai_es", "trpo"}
    for j in jobs:
        row = full.loc[envs[j["env"]]]
        # ES gets the paper's TRPO timesteps; our TRPO the scale's 5M: both stop at the same score
        budget = round(row["trpo_timesteps"]) if j["algo"] == "openai_es" else 5_000_000
        assert int(j["budget.timesteps"]) == budget
        assert float(j["budget.stop_at_return"]) == row["trpo_score"]
    with pytest.raises(RecipeError, match="recipe curves has no scale=decisive"):
        get_recipe("curves").plan("decisive")


def test_decisive_hard_scale_gives_es_10x_the_papers_trpo_timesteps_on_hopper_and_walker2d() -> None:
    """The hard tasks' claim ("less than 10x") decided by its own limit: each ES job gets 10x the
    paper's TRPO timesteps to TRPO's 5M-timestep score and stops at that score."""
    from esbench.analysis.table1 import load_mujoco_reference

    ref = load_mujoco_reference()
    full = ref[ref["progress_fraction"] == 1.0].set_index("gymnasium_id")
    envs = {"hopper": "Hopper-v5", "walker2d": "Walker2d-v5"}
    jobs = [dict(a.split("=", 1) for a in job) for job in all_jobs(get_recipe("table1"), "decisive_hard")]
    assert {j["env"] for j in jobs} == set(envs) and {j["algo"] for j in jobs} == {"openai_es"}
    for j in jobs:
        row = full.loc[envs[j["env"]]]
        assert int(j["budget.timesteps"]) == round(10 * row["trpo_timesteps"])
        assert float(j["budget.stop_at_return"]) == row["trpo_score"]
        assert j["budget"] == "decisive_hard"
    assert all(sum(j["env"] == env for j in jobs) >= 3 for env in envs)  # seeds per task
    from esbench.config.compose import compose_run_config

    for env in envs:  # the budget preset exists and each task's job validates
        job = next(job for job in all_jobs(get_recipe("table1"), "decisive_hard") if f"env={env}" in job)
        cfg = compose_run_config(list(job))
        assert cfg.budget.scale == "decisive_hard" and cfg.algo.noise_table_size == 250_000_000


def test_paper_scale_gives_es_1_5x_the_papers_es_timesteps_with_stop_at_target_and_trpo_5m() -> None:
    """Issue #15 item 4, composed (nothing run): at scale=paper each ES job gets 1.5x the paper's ES
    timesteps to its 100% target on its environment and stops at that target (the paper's TRPO score);
    every TRPO job gets the paper's 5M timesteps and no target; six seeds, the paper's noise table."""
    import math

    from esbench.analysis.table1 import load_mujoco_reference
    from esbench.runner import load_components

    load_components()  # the registry says which algorithms are ES (as the CLI does before planning)
    ref = load_mujoco_reference()
    full = ref[ref["progress_fraction"] == 1.0].set_index("gymnasium_id")
    envs = {"halfcheetah": "HalfCheetah-v5", "hopper": "Hopper-v5", "inverted_double_pendulum":
            "InvertedDoublePendulum-v5", "inverted_pendulum": "InvertedPendulum-v5", "swimmer": "Swimmer-v5",
            "walker2d": "Walker2d-v5"}  # fmt: skip
    jobs = [dict(a.split("=", 1) for a in job) for job in all_jobs(get_recipe("table1"), "paper")]
    es = [j for j in jobs if j["algo"] == "openai_es"]
    trpo = [j for j in jobs if j["algo"] == "trpo"]
    assert {j["env"] for j in es} == {j["env"] for j in trpo} == set(envs)
    for j in es:
        row = full.loc[envs[j["env"]]]
        assert int(j["budget.timesteps"]) == math.ceil(1.5 * row["es_timesteps"])
        assert float(j["budget.stop_at_return"]) == row["trpo_score"]
        assert int(j["algo.noise_table_size"]) == 250_000_000
    for j in trpo:
        assert int(j["budget.timesteps"]) == 5_000_000 and "budget.stop_at_return" not in j
    assert all(j["budget"] == "paper" for j in jobs) and len(jobs) == 2 * 6 * 6
    for algo in ("openai_es", "trpo"):
        for env in envs:
            seeds = sorted(int(j["seed"]) for j in jobs if (j["algo"], j["env"]) == (algo, env))
            assert seeds == [0, 1, 2, 3, 4, 5], (algo, env)  # the paper's six seeds


def test_retention_decisive_is_the_minis_jobs_with_more_seeds() -> None:
    """The decisive scale adds seeds to the mini's closest comparisons: each of its jobs at a mini
    seed is a mini job, override for override (so the same config and run id: a results_dir that
    holds the mini's runs does not run them again), and it runs every seed of 0-9."""
    recipe = get_recipe("retention")

    def keyed(scale: str) -> set[frozenset[tuple[str, str]]]:
        return {frozenset(tuple(a.split("=", 1)) for a in job) for job in all_jobs(recipe, scale)}

    mini, decisive = keyed("mini"), keyed("decisive")
    seeds = {dict(job)["seed"] for job in decisive}
    assert seeds == {str(s) for s in range(10)}
    at_mini_seeds = {job for job in decisive if dict(job)["seed"] in {"0", "1", "2"}}
    assert at_mini_seeds and at_mini_seeds <= mini
    assert all(dict(job)["budget"] == "mini" for job in decisive)
