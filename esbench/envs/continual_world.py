"""Continual World's tasks (Wołczyk et al. 2021, arXiv:2105.10919) as Gymnasium ids, on Meta-World v3.

Importing this module (Gymnasium's ``module:id`` form does:
``env.id: esbench.envs.continual_world:CW/hammer-v3``) applies the MuJoCo 4 fix of
:mod:`esbench.envs.metaworld_compat` and registers ``CW/<task>`` for every Meta-World v3 task.
CW10, the ten-task sequence of the paper, is :data:`CW10`; ``conf/sequence/cw10.yaml`` trains it.
Meta-World is an optional extra (``make install-cw``; docs/guides/sequences.md).

What follows Continual World (``continualworld/envs.py`` and ``utils/wrappers.py`` of the
authors' repository), each point with the reason:

- **Episodes of 200 steps** (CW's ``META_WORLD_TIME_HORIZON``), registered as the id's
  ``max_episode_steps``; Meta-World's own horizon is 500.
- **A new object and goal placement at every reset** (CW's default ``random_init_all``
  randomization: ``_freeze_rand_vec = False``), drawn from the env's own seeded generator
  (``seeded_rand_vec``) instead of NumPy's global one as CW did, so ``reset(seed=s)`` gives the
  same placement every time (DESIGN.md promise 1: fixed evaluation seeds); an unseeded reset
  continues that stream, as in Gymnasium.
- **Goal coordinates unbounded** in the observation space (CW's ``remove_goal_bounds``): each
  task's goal box differs, and every stage of a sequence must share one observation space.
- **Optional one-hot task id** appended to the observation (CW's ``OneHotAdder``):
  ``one_hot_index=k, one_hot_len=n`` (make kwargs). CW conditions its networks on it; its
  multi-head output layers are not reproduced (esbench's policies have one head).

Observations: 39 float64 (Meta-World v3: hand position, gripper opening, object poses, the same
for the previous step, goal position), plus ``one_hot_len``; actions: 4 in [-1, 1] (end-effector
displacement, gripper). Rewards are Meta-World v3's shaped rewards (0 to 10 per step); the
``info`` dict carries ``success``, the metric Continual World reports (esbench's ruler records
returns). CW10 used Meta-World v1 tasks (``-v1``; later ``-v2`` in the authors' repository);
these are their ``-v3`` versions, which Meta-World 3.1.1 ships.
"""

from __future__ import annotations

from functools import cache
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding

try:
    import metaworld
    from metaworld.env_dict import ALL_V3_ENVIRONMENTS
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "Continual World needs Meta-World, an optional extra: `make install-cw` "
        "(pip install --no-deps 'metaworld==3.1.1'; see docs/guides/sequences.md)"
    ) from e

from esbench.envs.metaworld_compat import patch_metaworld

CW10 = (
    "hammer-v3",
    "push-wall-v3",
    "faucet-close-v3",
    "push-back-v3",
    "stick-pull-v3",
    "handle-press-side-v3",
    "push-v3",
    "shelf-place-v3",
    "window-close-v3",
    "peg-unplug-side-v3",
)
"""Continual World's CW10 sequence (``continualworld/tasks.py``), Meta-World v3 names."""

CW_TIME_HORIZON = 200
"""Steps per episode (Continual World's ``META_WORLD_TIME_HORIZON``)."""

GOAL = slice(36, 39)
"""The goal position within Meta-World v3's 39-number observation."""

_TASKS_SEED = 1  # Continual World seeds NumPy with 1 before building its tasks (envs.get_mt50)


@cache
def _benchmark(task: str) -> Any:
    """Meta-World's MT1 benchmark of one task (its first task sets the observability flags)."""
    return metaworld.MT1(task, seed=_TASKS_SEED)


class ContinualWorldEnv(gym.Wrapper):
    """One Meta-World v3 task as Continual World runs it (module docstring).

    Args:
        task: A Meta-World v3 task name, e.g. ``"hammer-v3"``.
        one_hot_index: Position of this task's 1 in the appended one-hot id (None: no id).
        one_hot_len: Length of the one-hot id (the number of tasks in the sequence).
    """

    def __init__(self, task: str, one_hot_index: int | None = None, one_hot_len: int = 0) -> None:
        if task not in ALL_V3_ENVIRONMENTS:
            raise ValueError(f"unknown Meta-World v3 task {task!r}; e.g. {', '.join(CW10)}")
        if (one_hot_index is None) != (one_hot_len == 0) or not (
            one_hot_index is None or 0 <= one_hot_index < one_hot_len
        ):
            raise ValueError(
                f"one_hot_index={one_hot_index}, one_hot_len={one_hot_len}: "
                "allowed: both unset, or 0 <= one_hot_index < one_hot_len"
            )
        patch_metaworld()
        bench = _benchmark(task)
        env = bench.train_classes[task]()
        env.set_task(bench.train_tasks[0])
        env._freeze_rand_vec = False  # random_init_all: a new placement at every reset
        env.seeded_rand_vec = True  # ... from the env's own generator, not NumPy's global one
        super().__init__(env)
        self.task = task
        self._one_hot = np.zeros(one_hot_len, dtype=np.float64)
        if one_hot_index is not None:
            self._one_hot[one_hot_index] = 1.0
        base = env.observation_space
        low, high = base.low.astype(np.float64), base.high.astype(np.float64)
        low[GOAL], high[GOAL] = -np.inf, np.inf  # CW's remove_goal_bounds
        self.observation_space = spaces.Box(
            np.concatenate([low, np.zeros(one_hot_len)]),
            np.concatenate([high, np.ones(one_hot_len)]),
            dtype=np.float64,
        )
        self.action_space = env.action_space

    def _obs(self, obs: np.ndarray) -> np.ndarray:
        return np.concatenate([np.asarray(obs, dtype=np.float64), self._one_hot])

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """A new object and goal placement, from ``seed`` when given (same seed, same placement)."""
        if seed is not None:
            self.env.unwrapped.np_random, _ = seeding.np_random(seed)
        obs, info = self.env.reset()
        return self._obs(obs), info

    def step(self, action: Any) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        """One Meta-World step (Meta-World v3 reward; ``info["success"]``)."""
        obs, reward, terminated, truncated, info = self.env.step(np.asarray(action, dtype=np.float32))
        return self._obs(obs), float(reward), bool(terminated), bool(truncated), info


def register_cw_envs() -> None:
    """Register ``CW/<task>`` for every Meta-World v3 task (idempotent)."""
    for task in ALL_V3_ENVIRONMENTS:
        env_id = f"CW/{task}"
        if env_id not in gym.registry:
            gym.register(
                id=env_id,
                entry_point=f"{__name__}:ContinualWorldEnv",
                kwargs={"task": task},
                max_episode_steps=CW_TIME_HORIZON,
            )


register_cw_envs()
