"""Resumed means resumed, for every SB3 baseline: killed from outside once a checkpoint covers a few
rows, run again, and checked with :func:`tests.resume_check.assert_resumed` (the covered rows byte
for byte what the killed run wrote, the rest appended, the second run saying how many rows it
resumed from); PPO's and DQN's resumed runs also equal an uninterrupted run's, the others' in the
slow suite. The ES variants, a sweep and a sequence are killed in ``tests/test_resume.py``; the two
files are apart so the test runner can put them on different cores.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from esbench.config.registry import algorithms
from tests.conftest import esbench, only_run_dir
from tests.resume_check import (
    Resumed,
    assert_resumed,
    assert_same_results,
    compared_in_default_suite,
    kill_after_checkpoint,
)

#: The SB3 baselines (GRPO, an RL learner of language models with its own trainer: tests/test_lm_training.py).
RL_KEYS = sorted(k for k, spec in algorithms("rl").items() if spec.trainer is None)
#: Per baseline: 6 evaluation rows after the one at timestep 0, a checkpoint at each (the helper
#: kills at the first, leaving 5); small rollouts, and for DQN a small replay buffer and few
#: gradient steps, so each run takes seconds.
RL_RUN = ["env=cartpole", "budget=smoke", "tracker=none", "tracker.console=false", "checkpoint_every=1",
          "eval.episodes=2"]  # fmt: skip
RL_ARGS = {
    "a2c": ["budget.timesteps=6000", "eval.interval_timesteps=1000"],
    "dqn": ["budget.timesteps=6000", "eval.interval_timesteps=1000", "algo.buffer_size=5000",
            "algo.learning_starts=500", "algo.gradient_steps=16"],
    "ppo": ["budget.timesteps=3072", "eval.interval_timesteps=512", "algo.n_steps=256"],
    "trpo": ["budget.timesteps=3072", "eval.interval_timesteps=512", "algo.n_steps=256"],
}  # fmt: skip
#: PPO on MuJoCo: MjData and VecNormalize statistics come back too (slow suite).
PPO_PENDULUM = [
    "algo=ppo", "env=inverted_pendulum", "budget=smoke", "tracker=none", "tracker.console=false",
    "checkpoint_every=1", "budget.timesteps=10240", "eval.interval_timesteps=1024", "algo.n_steps=512",
]  # fmt: skip


@pytest.fixture(scope="module")
def rl_resumed(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Resumed:
    """RL baseline ``request.param`` killed once its checkpoint covers 2 rows, then run again."""
    algo = request.param
    args = PPO_PENDULUM if algo == "ppo-inverted_pendulum" else [f"algo={algo}", *RL_RUN, *RL_ARGS[algo]]
    root = tmp_path_factory.mktemp(f"{algo}-killed")
    killed = kill_after_checkpoint(args, root, rows=2)
    again = esbench("run", *args, f"results_dir={root}")
    return Resumed(args, killed, again.stderr)


@pytest.mark.parametrize("rl_resumed", RL_KEYS, indirect=True)
def test_every_rl_baseline_resumes_where_it_was_killed(rl_resumed: Resumed) -> None:
    """Model, optimizer, replay or rollout buffer, environments and random streams come back from
    the checkpoint (the second run says how many rows it covers): those rows untouched, the rest
    appended, the run complete."""
    assert_resumed(rl_resumed.killed)
    said = re.search(r"resuming \S+ from its checkpoint \((\d+) rows\)", rl_resumed.log)
    assert said and int(said.group(1)) == rl_resumed.killed.rows, rl_resumed.log[-2000:]
    assert len(rl_resumed.summary["resumed_from"]) == 1


@pytest.mark.parametrize(
    "rl_resumed",
    [*compared_in_default_suite(RL_KEYS), pytest.param("ppo-inverted_pendulum", marks=pytest.mark.slow)],
    indirect=True,
)
def test_a_resumed_rl_run_ends_bit_identical_to_an_uninterrupted_one(
    rl_resumed: Resumed, tmp_path: Path
) -> None:
    """The rows after the resume and the final parameters equal a run never stopped, bit for bit."""
    esbench("run", *rl_resumed.args, f"results_dir={tmp_path}")
    assert_same_results(only_run_dir(tmp_path), rl_resumed.killed.run_dir)
