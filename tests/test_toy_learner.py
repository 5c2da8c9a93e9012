"""A learner added by the recipe of docs/training.md alone: random search on CartPole, run by the loop.

:class:`RandomSearch` is the recipe's learner (its seven methods, its checkpoint state, its training
function), written here and not in the product package: nothing of esbench changes for it. The
tests run it through :func:`esbench.training.loop.run_learner` on a real results store, and prove
resume: a run stopped by a crash part-way continues from its checkpoint and ends with the rows and
the parameters of a run never stopped.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest
from omegaconf import DictConfig

from esbench.config.compose import compose_run_config
from esbench.measures.distribution import CATEGORICAL, ActionDist
from esbench.tracking.logger import MetricsLogger
from esbench.tracking.store import RunStore
from esbench.training.checkpoint import StateKind, resume_state, save_checkpoint
from esbench.training.drift import StageStates, record_stage_states
from esbench.training.learner import AfterStep, Learner, Seeds, StepStats
from esbench.training.loop import logged_rows, run_learner
from esbench.training.ruler import Stage, StageEval
from esbench.training.sequence_loop import SequenceLoop, SequenceProgress
from esbench.utils.seeding import sha256_array
from tests.conftest import TIMING_COLUMNS
from tests.resume_check import checkpoint_rows


def play(env: gym.Env, w: np.ndarray, seed: int) -> tuple[float, int]:
    """One episode of the linear policy ``w`` (push right when ``obs @ w > 0``): (return, steps)."""
    obs, _ = env.reset(seed=seed)
    total, steps, done = 0.0, 0, False
    while not done:
        obs, reward, terminated, truncated, _ = env.step(int(obs @ w > 0))
        total, steps, done = total + float(reward), steps + 1, terminated or truncated
    return total, steps


@dataclass
class RandomSearchState:
    """The checkpoint state: the parameters and the loop's counters."""

    w: np.ndarray
    progress: SequenceProgress


RANDOM_SEARCH = StateKind(
    name="a random-search", state_type=RandomSearchState, types=(RandomSearchState, SequenceProgress,
    StageStates, ActionDist), digest=lambda s: sha256_array(s.w),
)  # fmt: skip


class RandomSearch:
    """Random search: a step tries ``w`` plus Gaussian noise (from (seed, step)) and keeps the better."""

    def __init__(
        self, cfg: DictConfig, store: RunStore, logger: MetricsLogger, loop: SequenceLoop, w: np.ndarray
    ):
        self.cfg, self.store, self.logger, self.loop, self.w = cfg, store, logger, loop, w
        self.env = gym.make("CartPole-v1")
        self.crash_at: int | None = None  # a step at which to crash (the tests' kill)

    def train(self, after_step: AfterStep) -> None:
        if after_step(StepStats(row=False, columns={"param_norm": float(np.linalg.norm(self.w))})):
            while after_step(self.step()):
                pass

    def step(self) -> StepStats:
        g = self.loop.p.episodes // 2  # two episodes a step
        if g == self.crash_at:
            raise RuntimeError("killed")
        trial = self.w + np.random.default_rng([int(self.cfg.seed), g]).normal(size=4)
        (now, n0), (new, n1) = play(self.env, self.w, g), play(self.env, trial, g)
        self.w = trial if new > now else self.w
        columns = {"train_return_mean": (now + new) / 2, "param_norm": float(np.linalg.norm(self.w))}
        return StepStats(n0 + n1, n0 + n1, 2, columns=columns, generation=g + 1)

    def evaluate(self, j: int, seeds: Seeds) -> StageEval:
        n = int(self.cfg.eval.episodes if seeds.episodes is None else seeds.episodes)
        played = [play(self.env, self.w, int(self.cfg.eval.seed) + seeds.first + k) for k in range(n)]
        returns = np.array([r for r, _ in played])
        return StageEval(
            self.loop.stage.name, float(returns.mean()), float(returns.std()), sum(s for _, s in played)
        )

    def record_states(self) -> StageStates:
        act = lambda obs: int(obs @ self.w > 0)  # noqa: E731
        return record_stage_states(
            self.loop.stage.name, self.env, act, self.distribution, int(self.cfg.eval.seed), 1
        )

    def distribution(self, states: np.ndarray) -> ActionDist:
        return ActionDist(CATEGORICAL, np.stack([np.zeros(len(states)), states @ self.w], axis=1))

    def params(self) -> np.ndarray:
        return self.w

    def begin_stage(self, stage: Stage) -> None:
        del stage

    def checkpoint(self) -> None:
        save_checkpoint(
            self.store, RANDOM_SEARCH, RandomSearchState(self.w, self.loop.p), len(self.logger.rows)
        )


def train_random_search(
    cfg: DictConfig, store: RunStore, logger: MetricsLogger, run_key: str = "", crash_at: int | None = None
) -> dict[str, Any]:
    """The training function a registry entry names (``trainer="module:train_random_search"``)."""
    resumed = resume_state(store, logger, RANDOM_SEARCH) if cfg.resume else None
    w, progress = (np.zeros(4), SequenceProgress()) if resumed is None else (resumed.w, resumed.progress)

    def build(loop: SequenceLoop) -> RandomSearch:
        learner = RandomSearch(cfg, store, logger, loop, w)
        learner.crash_at = crash_at
        return learner

    at = progress.timesteps if resumed is not None else None
    summary, _ = run_learner(cfg, progress, build, resumed_at=at, emit=logged_rows(logger), cpu="process")
    return summary


CONFIG = ["algo=openai_es", "env=cartpole", "budget.timesteps=6000", "eval.interval_timesteps=1000",
          "eval.episodes=2", "checkpoint_every=2", "tracker=none"]  # fmt: skip


def _run(root: Path, crash_at: int | None = None) -> tuple[RunStore, dict[str, Any]]:
    store = RunStore(root, "toy", "random-search")
    store.dir.mkdir(parents=True, exist_ok=True)
    return store, train_random_search(
        compose_run_config(CONFIG), store, MetricsLogger(store, []), crash_at=crash_at
    )


def _metrics(store: RunStore) -> pd.DataFrame:
    return pd.read_csv(store.path("metrics.csv")).drop(columns=TIMING_COLUMNS)


def test_a_learner_of_its_own_runs_through_the_loop(tmp_path: Path) -> None:
    _: type[Learner] = RandomSearch  # the protocol, checked by mypy too
    store, summary = _run(tmp_path)
    rows = _metrics(store)
    points = rows[rows["eval_return_mean"].notna()]
    assert points["timesteps"].iloc[0] == 0 and summary["total_timesteps"] >= 3000
    assert len(points) >= 4 and rows["timesteps"].is_monotonic_increasing  # 0, each 1000, the end
    assert summary["final_eval_return"] == points["eval_return_mean"].iloc[-1]


def test_a_crashed_learner_resumes_from_its_checkpoint_as_if_never_stopped(tmp_path: Path) -> None:
    straight_store, straight = _run(tmp_path / "straight")
    store = RunStore(tmp_path / "crashed", "toy", "random-search")
    with pytest.raises(RuntimeError, match="killed"):
        _run(tmp_path / "crashed", crash_at=5)  # after the checkpoint of step 4
    kept = checkpoint_rows(store.dir) + 1  # the header and the rows the checkpoint covers
    checkpointed = store.path("metrics.csv").read_bytes().splitlines()[:kept]
    assert kept > 2 and len(store.path("metrics.csv").read_bytes().splitlines()) == kept + 1  # step 5's row
    _, resumed = _run(tmp_path / "crashed")
    assert resumed["resumed_from"] and resumed["resumed_from"][0] > 0  # it did resume, part-way
    assert store.path("metrics.csv").read_bytes().splitlines()[:kept] == checkpointed  # timing included
    pd.testing.assert_frame_equal(_metrics(store), _metrics(straight_store))
    assert resumed["params_sha256"] == straight["params_sha256"]
