"""RL baselines (TRPO, A2C, PPO, DQN through SB3) end to end through the real CLI, on the ES ruler."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from esbench.tracking.schema import METRIC_COLUMNS
from tests.conftest import REPO, esbench, only_run_dir, read_run

QUIET = ["tracker=none", "tracker.console=false", "budget=smoke"]
CARTPOLE = ["env=cartpole", *QUIET]


@pytest.mark.parametrize(
    ("algo", "env", "timesteps", "threshold"),
    [
        ("ppo", "cartpole", 20000, 200.0),  # one learner by default; the others in the slow suite
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


def test_same_seed_twice_gives_identical_metrics_and_params(tmp_path: Path) -> None:
    args = ["algo=ppo", *CARTPOLE, "budget.timesteps=8000", "eval.interval_timesteps=2000"]
    for name in ("a", "b"):
        esbench("run", *args, f"results_dir={tmp_path / name}")
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


KILLED_RUNS = {
    # DQN: model, optimizer, replay buffer, env and RNG states all come back (bit-identical).
    "dqn-cartpole": ["algo=dqn", *CARTPOLE, "budget.timesteps=9000", "eval.interval_timesteps=1500"],
    # PPO on MuJoCo: MjData, VecNormalize statistics and the rollout buffer come back too.
    "ppo-inverted_pendulum": [
        "algo=ppo", "env=inverted_pendulum", *QUIET, "budget.timesteps=10240",
        "eval.interval_timesteps=1024", "algo.n_steps=512",
    ],
}  # fmt: skip


@pytest.mark.parametrize(
    "case", ["dqn-cartpole", pytest.param("ppo-inverted_pendulum", marks=pytest.mark.slow)]
)
def test_killed_baseline_resumes_to_identical_results(case: str, tmp_path: Path) -> None:
    """Killed with SIGKILL mid-run, then run again: it says it resumed from a checkpoint with rows
    (not a restart) and ends bit-identical to an uninterrupted run."""
    args = [*KILLED_RUNS[case], "checkpoint_every=1"]
    esbench("run", *args, f"results_dir={tmp_path / 'straight'}")
    straight = read_run(only_run_dir(tmp_path / "straight"))

    root = tmp_path / "killed"
    proc = subprocess.Popen(
        [sys.executable, "-m", "esbench.cli", "run", *args, f"results_dir={root}"],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group: the kill takes its Dask worker too
    )
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            metrics = list(root.rglob("metrics.csv"))
            if (
                metrics
                and len(metrics[0].read_text().splitlines()) > 3
                and (metrics[0].parent / "checkpoint.npz").exists()
            ):
                break
            time.sleep(0.05)
        else:
            raise AssertionError("the run never logged 3 rows and a checkpoint")
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    run_dir = only_run_dir(root)
    assert not (run_dir / "summary.json").exists()  # it really was killed mid-run
    again = esbench("run", *args, f"results_dir={root}")
    found = re.search(r"resuming \S+ from its checkpoint \((\d+) rows\)", again.stderr)
    assert found and int(found.group(1)) > 0, again.stderr[-2000:]  # resumed, not restarted
    resumed = read_run(run_dir)
    pd.testing.assert_frame_equal(straight[0], resumed[0])
    assert straight[1]["params_sha256"] == resumed[1]["params_sha256"]
