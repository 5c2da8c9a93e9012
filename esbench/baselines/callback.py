"""The metrics callback: counts what SB3 actually does and logs it on the ES ruler.

An SB3 ``BaseCallback`` (SB3 ``common/callbacks.py``) that, at every environment step, counts
timesteps (``n_envs`` per vectorized step: the steps really taken, SB3's ``total_timesteps`` being
only a lower bound), Atari frames (``info["frames"]``, no-op resets included, as ES counts them),
finished episodes (SB3 ``Monitor``'s ``info["episode"]``) and their returns (unclipped on Atari:
``info["raw_reward"]`` summed). Every ``cfg.eval.interval_timesteps`` steps it evaluates the
policy the way ``cfg.eval.policy`` says (:mod:`esbench.baselines.evaluation`: sampled on Atari for the
policy-gradient baselines, epsilon-greedy for DQN, deterministic elsewhere; its random numbers are
derived from the run seed and the timestep, so training is unchanged) and emits one row with exactly the
columns of :data:`esbench.tracking.schema.METRIC_COLUMNS`. At the start of a rollout, once every
``cfg.checkpoint_every`` rows, it emits a snapshot (:mod:`esbench.baselines.checkpoint`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import unwrap_vec_normalize

from esbench.baselines.checkpoint import snapshot
from esbench.baselines.evaluation import evaluate
from esbench.baselines.progress import Progress
from esbench.config.eval_protocol import eval_protocol

__all__ = ["MetricsCallback", "Progress", "policy_vector"]


def policy_vector(model: Any) -> np.ndarray:
    """The policy's parameters as one float32 vector (``state_dict`` values in order)."""
    with torch.no_grad():
        parts = [t.detach().reshape(-1).to(torch.float32) for t in model.policy.state_dict().values()]
    return torch.cat(parts).numpy()


class MetricsCallback(BaseCallback):
    """Counts, evaluates, logs and checkpoints a baseline run (see the module docstring).

    Args:
        cfg: The run config.
        progress: Counters, fresh or from a checkpoint.
        eval_env: An env made with ``training=False``.
        emit_row: Receives each finished row (a dict of schema columns plus ``rl/`` extras).
        emit_checkpoint: Receives each snapshot (bytes).
        task: The env id written to ``train_task`` / ``eval_task``.
    """

    def __init__(
        self,
        cfg: Any,
        progress: Progress,
        eval_env: gym.Env,
        emit_row: Callable[[dict[str, Any]], None],
        emit_checkpoint: Callable[[bytes], None],
        task: str,
    ) -> None:
        super().__init__(verbose=0)
        self.cfg = cfg
        self.p = progress
        self.eval_env = eval_env
        self.emit_row = emit_row
        self.emit_checkpoint = emit_checkpoint
        self.task = task
        self.atari = cfg.env.kind == "atari"
        self.interval = int(cfg.eval.interval_timesteps)
        self.protocol = eval_protocol(cfg, family="rl")
        self._t0 = time.perf_counter()
        self._cpu0 = time.process_time()
        self._wall_base = progress.wall_clock_s
        self._cpu_base = progress.cpu_s

    # --- SB3 hooks -------------------------------------------------------------------------------
    def _on_training_start(self) -> None:
        n = self.training_env.num_envs
        if not self.p.episode_raw:
            self.p.episode_raw = [0.0] * n
        if self.p.timesteps == 0 and self.atari:  # the first reset's no-op frames
            self.p.frames += sum(int(i.get("frames", 0)) for i in self.training_env.unwrapped.reset_infos)

    def _on_rollout_start(self) -> None:
        if self.p.rows >= self.p.next_checkpoint_at and self.p.rows > 0:
            self.p.next_checkpoint_at = self.p.rows + int(self.cfg.checkpoint_every)
            self.checkpoint()

    def _on_step(self) -> bool:
        p = self.p
        infos: list[dict[str, Any]] = self.locals["infos"]
        dones = self.locals["dones"]
        p.timesteps += len(infos)
        for i, info in enumerate(infos):
            if self.atari:
                p.frames += int(info.get("frames", 1))
                p.episode_raw[i] += float(info.get("raw_reward", 0.0))
            else:
                p.frames += 1
            episode = info.get("episode")
            if episode is not None:
                p.episodes += 1
                p.returns.append(p.episode_raw[i] if self.atari else float(episode["r"]))
                p.episode_raw[i] = 0.0
            if dones[i] and self.atari:  # the auto-reset's no-op frames
                p.frames += int(self.training_env.unwrapped.reset_infos[i].get("frames", 0))
        if p.timesteps >= p.next_eval_at:
            self.log_row(evaluate_now=True)
        return True

    # --- rows and snapshots ----------------------------------------------------------------------
    def _clock(self) -> None:
        self.p.wall_clock_s = self._wall_base + (time.perf_counter() - self._t0)
        self.p.cpu_s = self._cpu_base + (time.process_time() - self._cpu0)

    def log_row(self, evaluate_now: bool) -> dict[str, Any]:
        """Evaluate (when asked), then emit one metrics row and reset the per-row statistics."""
        p = self.p
        evaluated = math.nan, math.nan
        if evaluate_now:
            mean, std, steps = evaluate(
                self.model,
                self.eval_env,
                int(self.cfg.eval.seed),
                int(self.cfg.eval.episodes),
                unwrap_vec_normalize(self.training_env),
                protocol=self.protocol,
                run_seed=int(self.cfg.seed),
                timestep=p.timesteps,
            )
            p.eval_timesteps += steps
            p.last_eval = evaluated = (mean, std)
            p.last_eval_timesteps = p.timesteps
            p.best_eval = max(p.best_eval, mean)
            while p.next_eval_at <= p.timesteps:
                p.next_eval_at += self.interval
        self._clock()
        params = policy_vector(self.model)
        row = {
            "generation": p.rows,
            "timesteps": p.timesteps,
            "frames": p.frames,
            "episodes": p.episodes,
            "wall_clock_s": p.wall_clock_s,
            "cpu_s": p.cpu_s,
            "train_return_mean": float(np.mean(p.returns)) if p.returns else math.nan,
            "train_return_max": float(np.max(p.returns)) if p.returns else math.nan,
            "eval_return_mean": evaluated[0],
            "eval_return_std": evaluated[1],
            "eval_timesteps": p.eval_timesteps,
            "steps_per_s": p.timesteps / max(p.wall_clock_s, 1e-9),
            "workers": 1,
            "train_task": self.task,
            "eval_task": self.task,
            "nonfinite_members": 0,
            "grad_norm": math.nan,
            "param_norm": float(np.linalg.norm(params.astype(np.float64))),
            "rl/n_updates": int(getattr(self.model, "_n_updates", 0)),
        }
        p.rows += 1
        p.returns = []
        self.emit_row(row)
        return row

    def checkpoint(self) -> None:
        """Emit a snapshot of the model, envs, RNGs and counters."""
        self._clock()
        self.emit_checkpoint(snapshot(self.model, self.p))
