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


#: A PPO run with a checkpoint at each of its 4 evaluation points, and an ES run of the same length.
PPO_RUN = [
    "env=cartpole",
    *QUIET,
    "budget.timesteps=4096",
    "eval.interval_timesteps=1024",
    "checkpoint_every=1",
]


@pytest.fixture(scope="module")
def es_and_ppo_sweep(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """algo -> run directory of one sweep (Hydra's basic launcher: each job in the CLI's own
    process) of OpenAI-ES and PPO on CartPole, shared by the tests below."""
    root = tmp_path_factory.mktemp("es-and-ppo")
    esbench("run", "-m", "algo=openai_es,ppo", *PPO_RUN, f"results_dir={root}")
    return {p.parent.name.split("-")[0]: p.parent for p in root.rglob("summary.json")}


def test_the_same_numbers_in_its_own_process_and_streamed_from_a_dask_worker(
    tmp_path: Path, es_and_ppo_sweep: dict[str, Path]
) -> None:
    """A run trains in the CLI's process (cluster=local); on cluster=processes it is one task on a
    spawned worker that streams rows and checkpoints back: the same rows and parameters."""
    esbench(
        "run", "algo=ppo", *PPO_RUN, "cluster=processes", "cluster.n_workers=1", f"results_dir={tmp_path}"
    )
    (m1, s1), (m2, s2) = read_run(es_and_ppo_sweep["ppo"]), read_run(only_run_dir(tmp_path))
    pd.testing.assert_frame_equal(m1, m2)
    assert s1["params_sha256"] == s2["params_sha256"]


def test_es_and_baseline_in_one_sweep_share_the_columns(es_and_ppo_sweep: dict[str, Path]) -> None:
    assert sorted(es_and_ppo_sweep) == ["openai_es", "ppo"]
    columns = [list(pd.read_csv(es_and_ppo_sweep[a] / "metrics.csv").columns) for a in ("openai_es", "ppo")]
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
