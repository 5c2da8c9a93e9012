"""Fault-injection environments for the tests, registered as ``esbench/<Name>-v0`` on import.

They live with the tests, not in the product: a run names one as
``env.id=tests.fault_envs:esbench/NaNReward-v0`` (Gymnasium's ``module:id`` form, which imports the
module, and so registers the envs, in whichever process builds the env: the driver or a Dask worker).

They wrap a cheap real MuJoCo task and misbehave on purpose, deterministically:

* ``esbench/NaNReward-v0``: episodes whose reset seed is divisible by ``every`` return NaN
  rewards, to check that non-finite returns are excluded instead of poisoning the parameters.
* ``esbench/CrashOnce-v0``: the process dies (``os._exit``) at its ``crash_at_reset``-th reset,
  once per ``marker`` file, to check that a worker lost in the middle of a generation has its
  tasks recomputed elsewhere with identical results.
* ``esbench/Slow-v0``: sleeps ``sleep_s`` at each reset, so a generation lasts long enough for a
  test to kill or add a worker in the middle of it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import gymnasium as gym


class NaNReward(gym.Wrapper):
    """Returns NaN rewards in episodes whose reset seed is divisible by ``every``."""

    def __init__(self, base_id: str = "InvertedPendulum-v5", every: int = 7) -> None:
        super().__init__(gym.make(base_id, disable_env_checker=True))
        self.every = int(every)
        self._poison = False

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        self._poison = seed is not None and seed % self.every == 0
        return self.env.reset(seed=seed, options=options)

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, float("nan") if self._poison else reward, terminated, truncated, info


class CrashOnce(gym.Wrapper):
    """Kills its process at the ``crash_at_reset``-th reset, if ``marker`` does not exist yet."""

    def __init__(self, marker: str, base_id: str = "InvertedPendulum-v5", crash_at_reset: int = 20) -> None:
        super().__init__(gym.make(base_id, disable_env_checker=True))
        self.marker = Path(marker)
        self.crash_at_reset = int(crash_at_reset)
        self._resets = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        self._resets += 1
        if self._resets == self.crash_at_reset and not self.marker.exists():
            self.marker.write_text(str(os.getpid()))
            os._exit(17)  # a hard death, as a killed worker process
        return self.env.reset(seed=seed, options=options)


class Slow(gym.Wrapper):
    """Sleeps ``sleep_s`` at every reset: long generations, so that a test can act in the middle of
    one (kill a worker while it runs a task, add one) with nothing else about the episodes changed."""

    def __init__(self, base_id: str = "InvertedPendulum-v5", sleep_s: float = 0.02) -> None:
        super().__init__(gym.make(base_id, disable_env_checker=True))
        self.sleep_s = float(sleep_s)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        time.sleep(self.sleep_s)
        return self.env.reset(seed=seed, options=options)


def register_debug_envs() -> None:
    """Register the fault-injection environments with Gymnasium (idempotent)."""
    for name in ("NaNReward", "CrashOnce", "Slow"):
        env_id = f"esbench/{name}-v0"
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=f"{__name__}:{name}", max_episode_steps=1000)


register_debug_envs()
