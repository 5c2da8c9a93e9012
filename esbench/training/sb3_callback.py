"""The metrics callback: SB3's every environment step, handed to the training loop.

An SB3 ``BaseCallback`` (SB3 ``common/callbacks.py``) that, at every environment step, counts
timesteps (``n_envs`` per vectorized step: the steps really taken, SB3's ``total_timesteps`` being
only a lower bound), Atari frames (``info["frames"]``, no-op resets included, as ES counts them),
finished episodes (SB3 ``Monitor``'s ``info["episode"]``) and their returns (unclipped on Atari:
``info["raw_reward"]`` summed), and hands them to the loop's ``after_step``
(:meth:`esbench.training.sequence_loop.SequenceLoop.after_step`, the same for every learner), which
takes the evaluation points the schedule asks for; its answer stops ``learn`` once the stage trained
reached ``budget.stop_at_return``. At the start of a rollout, once every ``cfg.checkpoint_every``
points, it has the learner emit a snapshot (:mod:`esbench.training.sb3_checkpoint`): a rollout's
start is where SB3 lets a run be snapshotted exactly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from stable_baselines3.common.callbacks import BaseCallback

from esbench.training.learner import StepStats
from esbench.training.sb3_progress import Progress
from esbench.utils.layout import Block, ParamLayout

__all__ = ["MetricsCallback", "Progress", "policy_layout", "policy_vector"]


def policy_vector(model: Any) -> np.ndarray:
    """The policy's parameters as one float32 vector (``state_dict`` values in order)."""
    with torch.no_grad():
        parts = [t.detach().reshape(-1).to(torch.float32) for t in model.policy.state_dict().values()]
    return torch.cat(parts).numpy()


def policy_layout(model: Any) -> ParamLayout:
    """The blocks of :func:`policy_vector`: one per ``state_dict`` tensor, in order."""
    blocks, start = [], 0
    for t in model.policy.state_dict().values():
        block = Block(start, tuple(int(d) for d in t.shape) or (1,))
        blocks.append(block)
        start = block.stop
    return tuple(blocks)


class MetricsCallback(BaseCallback):
    """Hands every environment step of SB3's ``learn`` to the training loop (see the module
    docstring) and checkpoints at a rollout's start, where SB3 lets a run be snapshotted.

    Args:
        cfg: The run config.
        progress: The run's progress (the loop's), whose episode returns it keeps.
        after_step: The loop's ``after_step`` for the learner (:class:`StepStats` of each step;
            False stops ``learn``).
        columns: The learner's columns of a point's row.
        checkpoint: Writes a checkpoint of the learner now.
    """

    def __init__(
        self,
        cfg: Any,
        progress: Progress,
        after_step: Callable[[StepStats], bool],
        columns: Callable[[], dict[str, Any]],
        checkpoint: Callable[[], None],
    ) -> None:
        super().__init__(verbose=0)
        self.cfg = cfg
        self.p = progress
        self.after_step = after_step
        self.columns = columns
        self.save = checkpoint
        self.atari = cfg.env.kind == "atari"
        self._reset_frames = 0  # the stage's first reset's no-op frames, counted with the first step

    # --- SB3 hooks -------------------------------------------------------------------------------
    def _on_training_start(self) -> None:
        n = self.training_env.num_envs
        if not self.p.episode_raw:
            self.p.episode_raw = [0.0] * n
        if self.model.num_timesteps == 0 and self.atari:  # the stage's first reset's no-op frames
            self._reset_frames = sum(int(i.get("frames", 0)) for i in self.training_env.unwrapped.reset_infos)

    def _on_rollout_start(self) -> None:
        if self.p.points >= self.p.next_checkpoint_at and self.p.points > 0:
            self.p.next_checkpoint_at = self.p.points + int(self.cfg.checkpoint_every)
            self.save()

    def _on_step(self) -> bool:
        p = self.p
        infos: list[dict[str, Any]] = self.locals["infos"]
        dones = self.locals["dones"]
        frames, episodes, self._reset_frames = self._reset_frames, 0, 0
        for i, info in enumerate(infos):
            if self.atari:
                frames += int(info.get("frames", 1))
                p.episode_raw[i] += float(info.get("raw_reward", 0.0))
            else:
                frames += 1
            episode = info.get("episode")
            if episode is not None:
                episodes += 1
                p.returns.append(p.episode_raw[i] if self.atari else float(episode["r"]))
                p.episode_raw[i] = 0.0
            if dones[i] and self.atari:  # the auto-reset's no-op frames
                frames += int(self.training_env.unwrapped.reset_infos[i].get("frames", 0))
        # The stage's last point is taken after ``learn`` returns, with the parameters its last
        # update left (the stage-boundary snapshot): an environment step cannot end the stage.
        step = StepStats(len(infos), frames, episodes, columns=self.columns, row=False, ends_stage=False)
        return self.after_step(step)  # SB3 stops learn() when a callback returns False
