"""Configs: every option composes; bad input fails at once with one clear line."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from esbench.config.compose import CONF_DIR, compose_run_config
from esbench.config.registry import algorithms
from esbench.config.validate import ConfigError
from esbench.envs import make_env
from esbench.policies import make_policy
from esbench.runner import default_run_id
from tests.conftest import esbench

GROUPS = ["algo", "env", "budget", "cluster", "tracker"]
MUJOCO_ENVS = sorted(
    p.stem for p in (CONF_DIR / "env").glob("*.yaml") if OmegaConf.load(p).env.kind == "mujoco"
)


def options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))


@pytest.mark.parametrize("group", GROUPS)
def test_every_config_option_composes_and_validates(group: str) -> None:
    for option in options(group):
        overrides = [f"{group}={option}", "budget=smoke"] if group != "budget" else [f"budget={option}"]
        if group == "algo" and option == "dqn":
            overrides.append("env=cartpole")  # DQN acts only in discrete action spaces
        if group == "algo" and option == "grpo":
            overrides.append("env=lm")  # GRPO trains language models only
        if option == "address":
            overrides.append("cluster.address=tcp://127.0.0.1:8786")
        cfg = compose_run_config(overrides)
        if group == "algo":
            assert cfg.algo.name == option


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("algo.sigm=0.1", "algo.sigm: no such config key (did you mean sigma?)"),
        ("env.id=HalfCheeta-v5", "close matches: HalfCheetah-v5"),
        ("algo.sigma=-1", "algo.sigma=-1.0 is out of range; allowed: algo.sigma > 0.0"),
        ("env=halfchetah", "env=halfchetah: no such option (did you mean halfcheetah?)"),
        ("algo.optimizer=rmsprop", "allowed: adam, sgd, clipup"),
        ("algo.population_size=many", "algo.population_size"),
        ("budget.timesteps=0", "budget.timesteps=0 is out of range"),
        ("budget.confirm_episodes=5", "budget.confirm_episodes=5: a stop at a target is confirmed on"),
        (
            "budget.stop_at_return_by_env={Hopper-v5:1000}",
            "is a map: add an entry with +budget.stop_at_return_by_env.Hopper-v5=VALUE",
        ),
    ],
)
def test_bad_input_is_one_clear_error(override: str, expected: str) -> None:
    with pytest.raises(ConfigError) as err:
        compose_run_config([override])
    assert expected in str(err.value)
    assert "\n" not in str(err.value)


def test_cli_rejects_bad_input_before_any_work(tmp_path: Path) -> None:
    proc = esbench("run", "env.id=HalfCheeta-v5", f"results_dir={tmp_path}", check=False, timeout=60)
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "HalfCheetah-v5" in lines[0], proc.stderr
    assert not any(tmp_path.iterdir())  # nothing was started


def test_cli_rejects_a_bad_job_in_a_sweep_before_the_first_job(tmp_path: Path) -> None:
    proc = esbench(
        "run", "-m", "seed=0,1", "algo.sigma=0.1,-2", f"results_dir={tmp_path}", check=False, timeout=60
    )
    assert proc.returncode == 2
    assert "algo.sigma=-2" in proc.stderr
    assert not any(tmp_path.iterdir())


def test_run_id_names_what_determines_the_numbers_only() -> None:
    base = default_run_id(compose_run_config([]))
    execution_only = [
        "cluster.n_workers=7",
        "algo.tasks_per_worker=3",
        "algo.rollout_batch=4",
        "algo.sync_history=1",
        "checkpoint_every=2",
        "tracker=none",
    ]
    for override in execution_only:
        assert default_run_id(compose_run_config([override])) == base, override
    for override in ("algo.sigma=0.03", "seed=1", "algo.population_size=42", "env=hopper"):
        assert default_run_id(compose_run_config([override])) != base, override


@pytest.mark.parametrize("key", sorted(algorithms()))
def test_every_algorithm_composes_on_every_mujoco_env_or_refuses_them_all_in_one_line(key: str) -> None:
    """Every MuJoCo env has continuous (Box) actions, so acting there is all or nothing: an algorithm's
    config composes and validates on every one (every ES variant must), or is refused on every one
    with one line naming the algorithm (DQN: discrete actions only)."""
    family = algorithms()[key].family
    refusals = {}
    for env in MUJOCO_ENVS:
        try:
            cfg = compose_run_config([f"algo={key}", f"env={env}", "budget=smoke"])
        except ConfigError as err:
            refusals[env] = str(err)
            continue
        assert (cfg.algo.name, cfg.env.name, cfg.env.kind) == (key, env, "mujoco")
    if family == "es":
        assert not refusals, refusals
    if refusals:
        assert sorted(refusals) == MUJOCO_ENVS, f"{key} refused some MuJoCo envs only: {refusals}"
        for message in refusals.values():
            assert message.startswith(f"algo={key} ") and "\n" not in message, message


#: Mania, Guy, Recht 2018, Table 9 (ARS V2-t): env -> (alpha, nu, N directions, b top directions).
ARS_TABLE_9 = {
    "swimmer": (0.02, 0.01, 1, 1),
    "hopper": (0.01, 0.025, 8, 4),
    "halfcheetah": (0.02, 0.03, 32, 4),
    "walker2d": (0.03, 0.025, 40, 30),
    "ant": (0.015, 0.025, 60, 20),
    "humanoid": (0.02, 0.0075, 230, 230),
}


@pytest.mark.parametrize(("env", "values"), ARS_TABLE_9.items(), ids=list(ARS_TABLE_9))
def test_ars_runs_with_the_papers_per_env_hyperparameters(env: str, values: tuple) -> None:
    """conf/algo_env/ars_<env>.yaml: ARS V2-t with the paper's (alpha, nu, N, b); the command line
    still wins; no other algorithm is touched."""
    alpha, nu, n, b = values
    algo = compose_run_config(["algo=ars", f"env={env}", "budget=smoke"]).algo
    got = (algo.learning_rate, algo.sigma, algo.population_size, algo.top_directions)
    assert got == (alpha, nu, 2 * n, b)  # population_size counts both signs: 2N
    assert algo.version == "v2"
    override = compose_run_config(["algo=ars", f"env={env}", "algo.sigma=0.05", "algo.top_directions=1"]).algo
    assert (override.sigma, override.top_directions) == (0.05, 1)
    assert compose_run_config(["algo=openai_es", f"env={env}"]).algo.sigma == 0.02


@pytest.mark.parametrize("env", ["hopper", "swimmer"])
def test_ars_acts_continuously_where_the_env_file_discretizes_actions_for_the_es_paper(env: str) -> None:
    """env/hopper.yaml and env/swimmer.yaml discretize actions into 10 bins (Salimans et al. 2017's
    MLP); ARS keeps its paper's continuous linear policy M (act_dim x obs_dim, no bias) there."""
    ars = compose_run_config(["algo=ars", f"env={env}", "budget=smoke"])
    oes = compose_run_config(["algo=openai_es", f"env={env}", "budget=smoke"])
    assert (list(ars.policy.hidden_sizes), ars.policy.bias, ars.policy.action_bins) == ([], False, 0)
    assert (list(oes.policy.hidden_sizes), oes.policy.action_bins) == ([64, 64], 10)
    gym_env = make_env(ars.env)
    try:
        obs_dim, act_dim = gym_env.observation_space.shape[0], gym_env.action_space.shape[0]
        assert make_policy(ars.policy, gym_env).num_params == act_dim * obs_dim  # M, continuous
    finally:
        gym_env.close()
    binned = compose_run_config(["algo=ars", f"env={env}", "policy.action_bins=10"])
    assert binned.policy.action_bins == 10  # the command line still wins


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (["algo=dqn", "env=cartpole"], "algo=dqn has no action distribution to sample"),
        (["algo=a2c", "env=atari"], "eval.policy resolves to sampled for algo=a2c on env.kind=atari"),
    ],
)
def test_a_stochastic_evaluation_beside_an_already_stochastic_one_is_refused(
    overrides: list[str], expected: str
) -> None:
    with pytest.raises(ConfigError) as err:
        compose_run_config([*overrides, "eval.also_stochastic=true"])
    assert expected in str(err.value) and "eval.also_stochastic" in str(err.value)
    assert "\n" not in str(err.value)
    compose_run_config([*overrides, "eval.also_stochastic=false"])  # fine without it


def test_inert_stopping_and_evaluation_keys_leave_the_run_id_alone() -> None:
    """budget.confirm_episodes without a target and eval.also_stochastic=false change nothing a run
    computes, so they leave its id (the hash of what determines its numbers) as it was before they
    existed; with a target, or on, they change it."""
    from esbench.runner import config_hash

    base = config_hash(compose_run_config(["env=cartpole"]))
    assert config_hash(compose_run_config(["env=cartpole", "budget.confirm_episodes=20"])) == base
    assert config_hash(compose_run_config(["env=cartpole", "eval.also_stochastic=false"])) == base
    target = ["env=cartpole", "budget.stop_at_return=100"]
    assert config_hash(compose_run_config([*target, "budget.confirm_episodes=20"])) != config_hash(
        compose_run_config(target)
    )
    assert config_hash(compose_run_config(["env=cartpole", "eval.also_stochastic=true"])) != base
