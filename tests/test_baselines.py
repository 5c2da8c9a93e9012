"""RL baselines (TRPO, A2C, PPO, DQN through SB3) end to end through the real CLI, on the ES ruler."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from esbench.tracking.schema import METRIC_COLUMNS
from tests.conftest import esbench, only_run_dir, read_run

QUIET = ["tracker=none", "tracker.console=false", "budget=smoke"]
CARTPOLE = ["env=cartpole", *QUIET]


@pytest.mark.learning
@pytest.mark.parametrize(
    ("algo", "env", "timesteps", "threshold"),
    [
        ("ppo", "cartpole", 20000, 200.0),  # in `make test-learning`; the others in the slow suite
        pytest.param("a2c", "cartpole", 30000, 150.0, marks=pytest.mark.slow),
        pytest.param("dqn", "cartpole", 30000, 100.0, marks=pytest.mark.slow),
        pytest.param("trpo", "inverted_pendulum", 30000, 500.0, marks=pytest.mark.slow),
    ],
)
def test_baseline_learns(tmp_path: Path, algo: str, env: str, timesteps: int, threshold: float) -> None:
    """Smoke scale: each algorithm ends clearly above an untrained policy (CartPole/pendulum ~10-40)."""
    esbench("run", f"algo={algo}", f"env={env}", *QUIET, f"budget.timesteps={timesteps}",
            "eval.interval_timesteps=5000", f"results_dir={tmp_path}")  # fmt: skip
    run_dir = only_run_dir(tmp_path)
    metrics, summary = read_run(run_dir)
    assert summary["final_eval_return"] >= threshold, summary
    assert summary["total_timesteps"] >= timesteps  # the steps really taken (SB3 may overshoot)
    assert metrics["timesteps"].iloc[-1] == summary["total_timesteps"]
    assert list(pd.read_csv(run_dir / "metrics.csv").columns) == list(METRIC_COLUMNS)
    assert (metrics["frames"] == metrics["timesteps"]).all()
    assert metrics["eval_return_mean"].notna().all()


def test_the_same_numbers_in_its_own_process_and_streamed_from_a_dask_worker(tmp_path: Path) -> None:
    """A single run trains in the CLI's process (cluster=local); on cluster=processes it is one task
    on a spawned worker that streams rows and checkpoints back: the same rows and parameters."""
    args = [
        "algo=ppo",
        *CARTPOLE,
        "budget.timesteps=4096",
        "eval.interval_timesteps=1024",
        "checkpoint_every=1",
    ]
    esbench("run", *args, f"results_dir={tmp_path / 'a'}")
    esbench("run", *args, "cluster=processes", "cluster.n_workers=1", f"results_dir={tmp_path / 'b'}")
    (m1, s1), (m2, s2) = (read_run(only_run_dir(tmp_path / n)) for n in ("a", "b"))
    pd.testing.assert_frame_equal(m1, m2)
    assert s1["params_sha256"] == s2["params_sha256"]


def test_es_and_baseline_in_one_sweep_share_the_columns(tmp_path: Path) -> None:
    esbench("run", "-m", "algo=openai_es,ppo", "env=inverted_pendulum", *QUIET, "budget.timesteps=4000",
            "eval.interval_timesteps=2000", f"results_dir={tmp_path}")  # fmt: skip
    runs = sorted(p.parent for p in tmp_path.rglob("summary.json"))
    assert [p.name.split("-")[0] for p in runs] == ["openai_es", "ppo"]
    columns = [list(pd.read_csv(p / "metrics.csv").columns) for p in runs]
    assert columns[0] == columns[1] == list(METRIC_COLUMNS)


def test_dqn_on_continuous_actions_fails_early_with_one_line(tmp_path: Path) -> None:
    proc = esbench("run", "algo=dqn", "env=halfcheetah", *QUIET, f"results_dir={tmp_path}", check=False)
    assert proc.returncode == 2
    errors = [line for line in proc.stderr.splitlines() if line.startswith("esbench: error")]
    assert errors == [
        "esbench: error: algo=dqn needs a discrete action space; env.id=HalfCheetah-v5 has "
        "Box(-1.0, 1.0, (6,), float32) (use algo=trpo, a2c or ppo)"
    ]
    assert not list(tmp_path.rglob("config.yaml"))  # nothing started


@pytest.mark.parametrize(
    ("override", "key"),
    [("algo.learning_rate=-0.1", "algo.learning_rate"), ("algo.gamma=1.5", "algo.gamma"),
     ("algo.classic_overrides.n_steps=0", "algo.classic_overrides.n_steps")],
)  # fmt: skip
def test_bad_hyperparameters_fail_early(tmp_path: Path, override: str, key: str) -> None:
    proc = esbench("run", "algo=ppo", *CARTPOLE, override, f"results_dir={tmp_path}", check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith(f"esbench: error: {key}="), proc.stderr
