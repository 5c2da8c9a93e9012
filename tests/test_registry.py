"""The algorithm registry: one entry per algorithm, and nothing else to edit to add one.

Registry keys, implementing classes and ``conf/algo/*.yaml`` correspond one to one; each file
selects its registry family; every reader (validation, runner, figures, loader, cost estimates)
answers from the registry. The last test adds a variant the way a contributor would, with only
``esbench/strategies/<key>.py`` and ``conf/algo/<key>.yaml``, and runs it through the real CLI.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from esbench.analysis.figures import algo_color, algo_label
from esbench.analysis.load import is_es
from esbench.config.compose import CONF_DIR, compose_run_config
from esbench.config.registry import FAMILIES, algorithms, get_algorithm
from esbench.config.validate import ConfigError
from esbench.recipes import _job_cost
from esbench.runner import trainer_for
from esbench.strategies import Strategy
from tests.conftest import REPO, esbench, only_run_dir, read_run


def test_registry_keys_classes_and_config_files_correspond_one_to_one() -> None:
    keys = set(algorithms())
    files = {p.stem for p in (CONF_DIR / "algo").glob("*.yaml")}
    assert keys == files, f"registered but no file: {keys - files}; file but not registered: {files - keys}"
    for key, spec in algorithms().items():
        cls = spec.load_class()
        if spec.family == "es":
            assert issubclass(cls, Strategy), key
            assert (REPO / "esbench" / "strategies" / f"{key}.py").exists(), key
            assert cls.__module__ == f"esbench.strategies.{key}", (key, cls.__module__)
        assert spec.label and re.fullmatch(r"#[0-9A-Fa-f]{6}", spec.colour), key
        env = (
            "env=lm"
            if spec.check is not None and spec.check.__name__ == "check_language_model"
            else "env=cartpole"
        )
        assert compose_run_config([f"algo={key}", env, "budget=smoke"]).algo.name == key


def test_every_algorithm_file_selects_its_registry_family() -> None:
    for key, spec in algorithms().items():
        text = (CONF_DIR / "algo" / f"{key}.yaml").read_text()
        assert f"override /family@_global_.family: {spec.family}" in text, key


def test_colours_are_distinct() -> None:
    colours = [s.colour.lower() for s in algorithms().values()]
    assert len(colours) == len(set(colours)), colours


def test_readers_answer_from_the_registry() -> None:
    for key, spec in algorithms().items():
        assert algo_label(key) == spec.label
        assert algo_color(key) == spec.colour
        assert is_es(key) == (spec.family == "es")
        own = spec.trainer.partition(":")[0] if spec.trainer else None
        assert trainer_for(key).__module__ == (
            own or ("esbench.training.es" if spec.family == "es" else "esbench.training.sb3")
        )
    es_cost = _job_cost(["algo=openai_es", "env=hopper", "budget.timesteps=100000"])[1]
    rl_cost = _job_cost(["algo=trpo", "env=hopper", "budget.timesteps=100000"])[1]
    assert es_cost < rl_cost  # ES steps at the simulator's rate, RL at its learner's


def test_a_library_caller_sees_the_registry_without_loading_it_first() -> None:
    """In a fresh interpreter that imported only the analysis (a notebook rendering a report), the
    figures' labels and colours and the loader's families are the registry's, as from the CLI:
    a lookup imports the registering packages itself, so a report's bytes do not depend on what the
    caller happened to import."""
    code = (
        "from esbench.analysis.figures import algo_color, algo_label\n"
        "from esbench.analysis.load import is_es\n"
        "print(algo_label('openai_es'), algo_label('trpo'), algo_color('ppo'),"
        " is_es('eggroll'), is_es('dqn'))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    labels = f"{get_algorithm('openai_es').label} {get_algorithm('trpo').label}"
    assert out.stdout.strip() == f"{labels} {get_algorithm('ppo').colour} True False"


def test_unknown_algorithm_suggests_close_matches() -> None:
    with pytest.raises(ConfigError, match=r"algo=openai_ez: no such option \(did you mean openai_es\?\)"):
        compose_run_config(["algo=openai_ez"])
    with pytest.raises(ConfigError, match=r"did you mean openai_es"):
        get_algorithm("openai_ex")


def test_es_settings_on_atari_apply_by_family_not_by_name() -> None:
    """conf/family_env/es_atari.yaml applies to every ES variant and to no RL baseline."""
    for key, spec in algorithms().items():
        overrides = [f"algo={key}", "env=atari", "env.game=Pong", "budget=smoke", "policy.kind=cnn"]
        try:
            cfg = compose_run_config(overrides, validate_config=False)
        except ConfigError:
            continue
        if spec.family == "es":
            assert cfg.env.clip_rewards is False and cfg.algo.action_noise_std == 0.0, key
        else:
            assert cfg.env.clip_rewards is True, key
    cfg = compose_run_config(["env=atari", "env.game=Pong", "algo.sigma=0.1"], validate_config=False)
    assert cfg.algo.sigma == 0.1  # the command line still wins


def test_run_help_lists_every_group_and_algorithm() -> None:
    out = esbench("run", "--help").stdout
    for group in ("algo:", "env:", "budget:", "cluster:", "tracker:"):
        assert group in out
    for key, spec in algorithms().items():
        assert key in out and spec.description in out
    groups = re.findall(r"^  (\w+):$", out, flags=re.M)
    assert "family_env" not in groups and "algo_env" not in groups  # not chosen by hand
    pairs = out.split("applied by themselves")[1]
    for group in ("family_env", "algo_env"):
        for f in (CONF_DIR / group).glob("*.yaml"):
            assert f"{group}/{f.stem}" in pairs, f  # listed where they apply, with their description


def test_every_pair_settings_file_names_a_registered_pair() -> None:
    """conf/family_env/<family>_<env>.yaml and conf/algo_env/<algo>_<env>.yaml apply only when the
    name matches: a misspelled one would never apply, silently. Each names a family or registered
    algorithm and an env option."""
    envs = {p.stem for p in (CONF_DIR / "env").glob("*.yaml")}
    firsts = {"family_env": set(FAMILIES), "algo_env": set(algorithms())}
    for group, allowed in firsts.items():
        for f in (CONF_DIR / group).glob("*.yaml"):
            rests = [f.stem[len(a) + 1 :] for a in allowed if f.stem.startswith(f"{a}_")]
            assert any(env in envs for env in rests), f"{group}/{f.name} names no ({group[:-4]}, env) pair"


def test_cfg_job_prints_the_validated_config_without_running(tmp_path: Path) -> None:
    out = esbench(
        "run", "--cfg", "job", "algo=openai_es", "algo.sigma=0.07", f"results_dir={tmp_path}"
    ).stdout
    assert "sigma: 0.07" in out and "population_size:" in out
    assert not any(tmp_path.iterdir())  # nothing ran
    bad = esbench("run", "--cfg", "job", "algo.sigma=-1", check=False)
    assert bad.returncode == 2 and "algo.sigma=-1.0 is out of range" in bad.stderr


def test_a_strategy_that_cannot_act_with_a_policy_fails_before_work(tmp_path: Path) -> None:
    linear_only = [k for k, s in algorithms("es").items() if "cnn" not in s.policy_kinds]
    assert linear_only, "ARS, CMA-ES and EGGROLL do not act with the CNN"
    key = linear_only[0]
    proc = esbench("run", f"algo={key}", "env=atari", "env.game=Pong", f"results_dir={tmp_path}", check=False)
    assert proc.returncode == 2
    assert f"algo={key} cannot act with a cnn policy" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


VARIANT = '''"""A throwaway variant written by tests/test_registry.py: OpenAI-ES with plain SGD."""

from dataclasses import dataclass

from esbench.config.registry import AlgorithmSpec, register_algorithm
from esbench.config.schema import GradientESConfig
from esbench.strategies.openai_es import OpenAIES


@dataclass
class ZzTestVariantConfig(GradientESConfig):
    name: str = "zz_test_variant"
    optimizer: str = "sgd"


class ZzTestVariant(OpenAIES):
    """OpenAI-ES's update under another name."""


register_algorithm(
    AlgorithmSpec(key="zz_test_variant", family="es", schema=ZzTestVariantConfig, cls=ZzTestVariant,
                  label="Test variant", colour="#123456", description="a variant added by a test")
)
'''

VARIANT_YAML = """# A throwaway variant written by tests/test_registry.py.
defaults:
  - zz_test_variant_schema
  - override /family@_global_.family: es
  - _self_

name: zz_test_variant
learning_rate: 0.2
"""


def test_adding_a_variant_takes_a_module_and_a_config_file(tmp_path: Path) -> None:
    """The contributor's path: two new files, then the variant composes, runs on the real Dask
    runtime, is listed by --help and is labelled in reports, with no other file edited.

    The files go into a copy of the checkout (its ``esbench``, ``conf`` and ``hydra_plugins``), and
    the CLI runs from there: the checkout itself never holds the throwaway variant, so runs of other
    tests (the suite runs files in parallel) never see it."""
    checkout = tmp_path / "checkout"
    ignore = shutil.ignore_patterns("__pycache__")
    for name in ("esbench", "conf", "hydra_plugins"):
        shutil.copytree(REPO / name, checkout / name, symlinks=True, ignore=ignore)  # esbench/_data links
    module = checkout / "esbench" / "strategies" / "zz_test_variant.py"
    config = checkout / CONF_DIR.relative_to(REPO) / "algo" / "zz_test_variant.yaml"
    assert not module.exists() and not config.exists()
    module.write_text(VARIANT)
    config.write_text(VARIANT_YAML)
    assert "zz_test_variant  [es] a variant added by a test" in esbench("run", "--help", cwd=checkout).stdout
    esbench(
        "run", "algo=zz_test_variant", "env=cartpole", "budget=smoke", "budget.timesteps=3000",
        "tracker=none", "tracker.console=false", "algo.noise_table_size=1000000", "cluster.n_workers=1",
        f"results_dir={tmp_path / 'results'}", cwd=checkout,
    )  # fmt: skip
    metrics, summary = read_run(only_run_dir(tmp_path / "results"))
    assert summary["algo"] == "zz_test_variant" and len(metrics) > 0
    assert "zz_test_variant" not in esbench("run", "--help").stdout  # the checkout never had it
