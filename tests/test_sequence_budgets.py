"""A budget preset sets a sequence run's stage budget (``budget=smoke`` is a smoke), an explicit
``sequence.stage_timesteps`` wins, and a preset without a stage budget makes the run refuse with
one line naming ``sequence.stage_timesteps``; through the real CLI's config composition."""

from __future__ import annotations

import pytest
import yaml

from esbench.config.compose import compose_run_config
from esbench.training.ruler import stage_plan
from tests.conftest import esbench


def _job(*overrides: str) -> dict:
    """``esbench run ... --cfg job --resolve``: the composed, resolved config the run would train."""
    proc = esbench("run", *overrides, "--cfg", "job", "--resolve")
    return yaml.safe_load(proc.stdout)


def test_smoke_budget_makes_every_stage_small_through_the_cli() -> None:
    cfg = _job("algo=ppo", "sequence=cheetah_dir", "budget=smoke")
    assert cfg["sequence"]["stage_timesteps"] == cfg["budget"]["stage_timesteps"] == 10_000
    mini = _job("algo=ppo", "sequence=cheetah_dir", "budget=mini")
    assert mini["sequence"]["stage_timesteps"] == 1_000_000


def test_explicit_stage_timesteps_wins_over_the_preset() -> None:
    cfg = _job("algo=ppo", "sequence=cheetah_dir", "budget=smoke", "sequence.stage_timesteps=777")
    assert cfg["sequence"]["stage_timesteps"] == 777 and cfg["budget"]["stage_timesteps"] == 10_000


@pytest.mark.parametrize("name", ["cheetah_dir", "hopper_mass", "cartpole_pair", "atari_mode"])
def test_every_sequence_trains_the_presets_stage_budget(name: str) -> None:
    plan = stage_plan(compose_run_config([f"sequence={name}", "budget=smoke"]))
    assert [s.timesteps for s in plan.stages] == [10_000] * len(plan.stages)
    own = stage_plan(
        compose_run_config([f"sequence={name}", "budget=smoke", "sequence.stage_timesteps=null"])
    )
    assert all(s.timesteps != 10_000 for s in own.stages)  # null: the stages' own budgets


def test_a_preset_without_a_stage_budget_refuses_in_one_line() -> None:
    proc = esbench("run", "algo=ppo", "sequence=cheetah_dir", "budget=smoke", "budget.stage_timesteps=null",
                   "tracker=none", check=False)  # fmt: skip
    assert proc.returncode == 2
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "sequence.stage_timesteps" in lines[0] and "budget=smoke" in lines[0]


def test_no_sequence_needs_no_stage_budget() -> None:
    plan = stage_plan(compose_run_config(["budget=smoke", "budget.stage_timesteps=null"]))
    assert [s.timesteps for s in plan.stages] == [30_000]
