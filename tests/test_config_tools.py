"""Every typo caught, and Hydra's own tools welcome: ``+key`` additions, an algorithm's own keys,
scientific notation, did-you-mean; a user's config directory under ``-m``; ``--cfg hydra``, ``--info``,
shell completion, ``--version``; Hydra's Optuna sweeper on the Dask launcher."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from esbench import cli
from esbench.config.compose import CONF_DIR, compose_run_config, exact_integers
from esbench.config.validate import ConfigError
from esbench.reproduce import main as reproduce_main
from esbench.sweep import first_job, validate_sweep
from tests.conftest import SMALL, esbench


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (
            ["+algo.sigmaa=0.1"],
            "algo.sigmaa: no such config key (did you mean sigma?); allowed keys in algo:",
        ),
        (["+env.bar=2"], "env.bar: no such config key; allowed keys in env:"),
        (["+foo=1"], "foo: no such config key; allowed keys: algo, budget,"),
        (
            ["+budget.stop_at_return_by_env.HalfChetah-v5=100"],
            "budget.stop_at_return_by_env.HalfChetah-v5: not a registered Gymnasium environment id "
            "(did you mean HalfCheetah-v5",
        ),
        (["budget.timesteps=1.5e0"], "budget.timesteps=1.5e0 is not an integer; allowed: an integer"),
        (["budget.scale=minii"], "budget.scale='minii' is not allowed (did you mean mini?)"),
    ],
)
def test_typos_and_additions_are_refused_in_one_line(overrides: list[str], expected: str) -> None:
    with pytest.raises(ConfigError) as err:
        compose_run_config(overrides)
    assert expected in str(err.value) and "\n" not in str(err.value)


def test_an_unknown_algo_key_lists_the_chosen_algorithms_keys_only() -> None:
    with pytest.raises(ConfigError) as err:
        compose_run_config(["algo=ppo", "algo.sigma=0.1"])
    allowed = str(err.value).split("allowed keys in algo: ")[1].split(", ")
    assert "n_steps" in allowed and "clip_range" in allowed
    assert "sigma" not in allowed and "population_size" not in allowed  # ES keys are not PPO's
    with pytest.raises(ConfigError) as err:  # the default algorithm (openai_es) when none is chosen
        compose_run_config(["algo.sigmaa=0.1"])
    assert "n_steps" not in str(err.value) and "population_size" in str(err.value)


def test_scientific_notation_is_exact_where_an_integer_is_meant() -> None:
    cfg = compose_run_config(["budget.timesteps=1e6", "eval.interval_timesteps=2.5E+4", "algo.sigma=1e-2"])
    assert cfg.budget.timesteps == 1_000_000 and isinstance(cfg.budget.timesteps, int)
    assert cfg.eval.interval_timesteps == 25_000 and cfg.algo.sigma == 0.01
    assert exact_integers(["seed=1e1,2e1", "env.id=Foo-1e5", "x=1.5e0", "y=1e40"]) == [
        "seed=10,20", "env.id=Foo-1e5", "x=1.5e0", "y=1e40",
    ]  # fmt: skip


def test_scales_and_recipes_get_did_you_mean(capsys: pytest.CaptureFixture[str]) -> None:
    assert reproduce_main(["table1", "scale=minii"]) == 2
    assert "scale='minii' is unknown (did you mean mini?)" in capsys.readouterr().err
    assert reproduce_main(["tabel1", "scale=mini"]) == 2
    assert "unknown recipe 'tabel1' (did you mean table1" in capsys.readouterr().err
    assert reproduce_main(["table1"]) == 2
    assert "give a scale (e.g. esbench reproduce table1 scale=smoke); allowed: smoke, mini" in (
        capsys.readouterr().err
    )


def test_reproduce_writes_to_a_git_ignored_directory_and_states_its_cost_first(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert reproduce_main(["table1", "scale=mini", "--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert re.fullmatch(
        r"# reproduce table1 at scale mini: 36 job\(s\), estimated ~\S+ \S+ on \d+ core\(s\).*", out[0]
    )
    assert out[1] == "# table1 (mini) -> esbench report table1 out_dir=reports"
    assert reproduce_main(["table1", "scale=mini", "out_dir=paper", "--dry-run"]) == 0
    assert "out_dir=paper" in capsys.readouterr().out
    ignored = (Path(__file__).resolve().parents[1] / ".gitignore").read_text().split()
    assert "reports/" in ignored


def _user_conf(tmp_path: Path) -> Path:
    conf = tmp_path / "my_conf"
    (conf / "env").mkdir(parents=True)
    shutil.copy2(CONF_DIR / "env" / "cartpole.yaml", conf / "env" / "mycartpole.yaml")
    return conf


def test_a_users_config_directory_joins_the_search_path_of_runs_and_sweeps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conf = _user_conf(tmp_path)
    with pytest.raises(ConfigError, match="env=mycartpole: no such option"):
        compose_run_config(["env=mycartpole"])
    searchpath = f"hydra.searchpath=[file://{conf}]"
    assert compose_run_config([searchpath, "env=mycartpole"]).env.id == "CartPole-v1"
    jobs = validate_sweep([searchpath, "env=mycartpole", "seed=0,1"])  # -m validates every job
    assert jobs is not None and len(jobs) == 2
    monkeypatch.setenv("ESBENCH_CONFIG_PATH", str(conf))
    assert compose_run_config(["env=mycartpole"]).env.id == "CartPole-v1"
    monkeypatch.setenv("ESBENCH_CONFIG_PATH", str(tmp_path / "nowhere"))
    with pytest.raises(ConfigError, match=r"ESBENCH_CONFIG_PATH: .*nowhere is not a directory"):
        compose_run_config(["env=cartpole"])


def test_other_sweepers_jobs_are_checked_from_their_first_value() -> None:
    overrides = ["hydra/sweeper=optuna", "algo.sigma=interval(0.01,0.1)", "seed=range(0,3)", "env=cartpole"]
    assert first_job(overrides) == ["hydra/sweeper=optuna", "algo.sigma=0.01", "seed=0", "env=cartpole"]
    assert validate_sweep(overrides) is None  # the sweeper chooses the jobs; the first is valid
    with pytest.raises(ConfigError, match=r"algo\.sigmaa: no such config key"):
        validate_sweep(["hydra/sweeper=optuna", "algo.sigmaa=interval(0.01,0.1)"])


def test_hydra_own_options_behave_as_in_any_hydra_app(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--version"]) == 0
    assert re.fullmatch(r"esbench \S+\n", capsys.readouterr().out)
    assert cli.main(["run", "--cfg", "hydra"]) == 0
    assert "sweeper:" in capsys.readouterr().out
    assert cli.main(["run", "--info", "searchpath"]) == 0
    assert f"file://{CONF_DIR}" in capsys.readouterr().out
    assert cli.main(["--shell-completion", "install=bash"]) == 0
    assert "complete -o nospace -o default -F hydra_bash_completion esbench" in capsys.readouterr().out
    assert cli.main(["run", "hydra.run.dir=/tmp/elsewhere"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "esbench: error: hydra.run.dir: not used by esbench run; a run writes to "
        "results_dir/<experiment>/<run_id>/ (set results_dir=DIR or experiment=NAME)"
    ]


def test_shell_completion_completes_esbench_run() -> None:
    os.environ["COMP_LINE"] = "esbench run env=halfche"
    try:
        proc = esbench("-sc", "query=bash")
    finally:
        del os.environ["COMP_LINE"]
    assert proc.stdout.split() == ["env=halfcheetah"]


def test_optuna_sweeper_runs_a_4_trial_study_on_the_dask_launcher(tmp_path: Path) -> None:
    """Hydra's Optuna sweeper chooses ``algo.sigma`` in an interval (no grid to expand up front); each
    trial is a real run on the Dask launcher and returns its final evaluation return to Optuna."""
    results = tmp_path / "runs"
    proc = esbench(
        "run", "-m", "hydra/launcher=dask", "hydra/sweeper=optuna", "hydra.sweeper.n_trials=4",
        "hydra.sweeper.n_jobs=2", "hydra.sweeper.direction=maximize", "hydra.sweeper.sampler.seed=0",
        "algo.sigma=interval(0.01,0.1)", "env=cartpole", "budget=smoke", "budget.timesteps=3000",
        "cluster.n_workers=1", *SMALL, f"results_dir={results}", timeout=600,
    )  # fmt: skip
    summaries = [json.loads(p.read_text()) for p in results.glob("default/*/summary.json")]
    assert len(summaries) == 4  # four trials, four distinct sigmas, four runs
    best = max(s["final_eval_return"] for s in summaries)
    assert f"Best value: {best}" in proc.stdout + proc.stderr
