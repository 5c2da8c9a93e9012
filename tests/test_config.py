"""Configs: every option composes; bad input fails at once with one clear line."""

from __future__ import annotations

from pathlib import Path

import pytest

from esbench.config.compose import CONF_DIR, compose_run_config
from esbench.config.validate import ConfigError
from esbench.runner import default_run_id
from tests.conftest import esbench

GROUPS = ["algo", "env", "budget", "cluster", "tracker"]


def options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))


@pytest.mark.parametrize("group", GROUPS)
def test_every_config_option_composes_and_validates(group: str) -> None:
    for option in options(group):
        overrides = [f"{group}={option}", "budget=smoke"] if group != "budget" else [f"budget={option}"]
        if group == "algo" and option == "dqn":
            overrides.append("env=cartpole")  # DQN acts only in discrete action spaces
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
        "checkpoint_every=2",
        "tracker=none",
    ]
    for override in execution_only:
        assert default_run_id(compose_run_config([override])) == base, override
    for override in ("algo.sigma=0.03", "seed=1", "algo.population_size=42", "env=hopper"):
        assert default_run_id(compose_run_config([override])) != base, override
