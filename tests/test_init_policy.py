"""A run started from a given policy (init.from_run): through the real CLI.

The promise: the run's first evaluation point (timestep 0) evaluates exactly the policy its base's
last point evaluated, across families (ES -> PPO, TRPO -> ES) on the same evaluation seeds, so the
parameters and the observation normalization must both have travelled; the run records its base;
a base that cannot start the run is refused with exit 2 and one line, before any work.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from esbench.analysis.retention import forgetting, sequence_curves
from tests.conftest import esbench, only_run_dir

QUIET = ("tracker.console=false", "tracker.wandb=false")


def _run(root: Path, experiment: str, *overrides: str) -> Path:
    esbench("run", *overrides, *QUIET, f"results_dir={root}", f"experiment={experiment}", timeout=600)
    return only_run_dir(root / experiment)


def _points(run: Path) -> list[dict[str, str]]:
    with (run / "metrics.csv").open() as f:
        return [r for r in csv.DictReader(f) if r["eval_return_mean"] not in ("", "nan")]


def _summary(run: Path) -> dict:
    return json.loads((run / "summary.json").read_text())


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("init")


@pytest.fixture(scope="module")
def es_base(root: Path) -> Path:
    """OpenAI-ES on InvertedPendulum, long enough for its observation statistics to move."""
    return _run(
        root, "es_base", "algo=openai_es", "env=inverted_pendulum", "budget=smoke", "budget.timesteps=6000"
    )


@pytest.fixture(scope="module")
def trpo_base(root: Path) -> Path:
    """TRPO on InvertedPendulum, with VecNormalize (clip 10)."""
    return _run(
        root, "trpo_base", "algo=trpo", "env=inverted_pendulum", "budget=smoke", "budget.timesteps=4096"
    )


def _assert_first_point_is_base(run: Path, base: Path) -> None:
    last, first = _points(base)[-1], _points(run)[0]
    assert int(first["timesteps"]) == 0
    assert float(first["eval_return_mean"]) == float(last["eval_return_mean"])
    assert float(first["eval_return_std"]) == float(last["eval_return_std"])
    recorded = _summary(run)["init"]
    assert recorded["run_id"] == _summary(base)["run_id"]
    assert recorded["params_sha256"] == _summary(base)["params_sha256"]


def test_es_to_ppo_first_point_evaluates_the_base(root: Path, es_base: Path) -> None:
    run = _run(
        root, "es_ppo", "algo=ppo", "env=inverted_pendulum", "budget=smoke", "budget.timesteps=2048",
        "init.value_warmup_steps=2048", f"init.from_run={es_base}",
    )  # fmt: skip
    _assert_first_point_is_base(run, es_base)
    init = _summary(run)["init"]
    assert init["value_warmup_steps"] == 2048 and init["value_warmup_s"] > 0
    assert math.isfinite(init["value_warmup_loss"])
    assert _summary(run)["total_timesteps"] == 2048  # the warm-up is not the stage's budget


def test_trpo_to_es_first_point_evaluates_the_base(root: Path, trpo_base: Path) -> None:
    run = _run(
        root, "trpo_es", "algo=openai_es", "env=inverted_pendulum", "budget=smoke", "budget.generations=1",
        "policy.obs_clip=10", f"init.from_run={trpo_base}",
    )  # fmt: skip
    _assert_first_point_is_base(run, trpo_base)


@pytest.mark.parametrize(
    ("overrides", "words"),
    [
        (("init.from_run=/nonexistent/run",), "not a run directory"),
        (("init.from_run={base}:3",), "stage 3 is out of range"),
        (("init.from_run={base}:nope",), "the base has no stage 'nope'"),
        (("init.from_run={base}", "init.params=/tmp/p.npz"), "a run starts from one policy"),
        (("init.from_run={base}", "policy.hidden_sizes=[32,32]"), "policy.hidden_sizes differs"),
        (("init.from_run={base}", "env=halfcheetah"), "observation or action shape differs"),
        (("init.from_run={base}",), "allowed: policy.obs_clip=10"),
        (("init.from_run={base}", "algo=dqn", "env=cartpole"), "algo=dqn has no actor MLP"),
    ],
)
def test_a_base_that_cannot_start_the_run_is_refused(
    root: Path, trpo_base: Path, overrides: tuple[str, ...], words: str
) -> None:
    args = [o.format(base=trpo_base) for o in overrides]
    algo = [] if any(a.startswith("algo=") for a in args) else ["algo=openai_es"]
    env = [] if any(a.startswith("env=") for a in args) else ["env=inverted_pendulum"]
    experiment = root / "refused"
    proc = esbench(
        "run", *algo, *env, *args, "budget=smoke", *QUIET, f"results_dir={root}", "experiment=refused",
        check=False,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = [line for line in proc.stderr.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and words in lines[0], proc.stderr
    assert not experiment.exists()  # refused before any work


def test_a_sequence_run_trains_the_stage_after_its_base_stage(root: Path) -> None:
    seq = ("sequence=cartpole_pair", "budget=smoke", "sequence.stage_timesteps=2000")
    base = _run(root, "seq_base", "algo=openai_es", *seq)
    run = _run(root, "seq_ppo", "algo=ppo", *seq, "init.value_warmup_steps=512", f"init.from_run={base}:0")
    with (base / "metrics.csv").open() as f:
        base_rows = [r for r in csv.DictReader(f) if r["eval_return_mean"] not in ("", "nan")]
    end_of_a = {r["eval_task"]: r for r in base_rows if r["train_task"] == "default"}  # its last point
    first = [r for r in _points(run) if int(r["timesteps"]) == 0]
    assert [r["eval_task"] for r in first] == ["default", "long_pole"]
    assert all(r["train_task"] == "default" for r in first)  # the end of the base's stage, as there
    for r in first:  # task A and task B at timestep 0: exactly the base's at the end of stage A
        assert float(r["eval_return_mean"]) == float(end_of_a[r["eval_task"]]["eval_return_mean"])
    curves = sequence_curves(pd.read_csv(run / "metrics.csv"), ["default", "long_pole"])
    assert float(curves.boundaries[0]) == 0 and list(curves.train_stage[:2]) == [0, 1]
    assert np.isfinite(forgetting(curves.returns, curves.train_stage)).all()  # the analysis reads it
    summary = _summary(run)
    assert summary["stages"] == ["default", "long_pole"]
    assert summary["stage_boundaries"][0] == 0 and summary["stage_boundaries"][1] >= 2000
    assert summary["init"]["stage"] == "default" and summary["init"]["stage_index"] == 0
