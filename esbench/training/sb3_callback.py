"""The metrics callback: counts what SB3 actually does and logs it on the ES ruler.

An SB3 ``BaseCallback`` (SB3 ``common/callbacks.py``) that, at every environment step, counts
timesteps (``n_envs`` per vectorized step: the steps really taken, SB3's ``total_timesteps`` being
only a lower bound), Atari frames (``info["frames"]``, no-op resets included, as ES counts them),
finished episodes (SB3 ``Monitor``'s ``info["episode"]``) and their returns (unclipped on Atari:
``info["raw_reward"]`` summed). Every ``cfg.eval.interval_timesteps`` steps it takes an evaluation
point (:class:`esbench.training.sequence_loop.SequenceLoop`, shared with ES; the callback is its
:class:`~esbench.training.learner.Evaluable`): every stage of the run's sequence (one without a
sequence) evaluated the way ``cfg.eval.policy`` says (:mod:`esbench.baselines.evaluation`: sampled
on Atari for the policy-gradient baselines, epsilon-greedy for DQN, deterministic elsewhere; its
random numbers are derived from the run seed and the timestep, so training is unchanged), one row
per stage with exactly
the columns of :data:`esbench.tracking.schema.METRIC_COLUMNS`. An evaluation of the stage trained
at or above ``budget.stop_at_return`` stops ``learn`` (issue #15). At the start of a rollout, once
every ``cfg.checkpoint_every`` points, it emits a snapshot (:mod:`esbench.training.sb3_checkpoint`).
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

from esbench.baselines.evaluation import action_distribution, deterministic_act, evaluate
from esbench.config.eval_protocol import EvalProtocol, eval_protocol
from esbench.measures.distribution import ActionDist
from esbench.tracking.stage_states import StageStates
from esbench.training.drift import record_stage_states
from esbench.training.ruler import Counters, StageEval
from esbench.training.sb3_checkpoint import snapshot
from esbench.training.sb3_progress import Progress
from esbench.training.sequence_loop import SequenceLoop
from esbench.utils.layout import Block, ParamLayout

__all__ = ["MetricsCallback", "Progress", "policy_layout", "policy_vector"]

#: The stochastic evaluation beside a deterministic one (``eval.also_stochastic``).
SAMPLED = EvalProtocol("sampled")


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
    """Counts, evaluates, logs and checkpoints one stage of a baseline run (see the module
    docstring); the :class:`~esbench.training.learner.Evaluable` of its evaluation points.

    Args:
        cfg: The run config.
        loop: The run's sequence loop; its progress (a :class:`Progress`, fresh or from a
            checkpoint) is updated here, its ``stage`` is the one trained.
        eval_envs: One env per stage of the plan, made with ``training=False``.
        emit_row: Receives each finished row (a dict of schema columns plus ``rl/`` extras and
            ``row_index``, its index in ``metrics.csv``).
        emit_checkpoint: Receives each snapshot (bytes).
    """

    def __init__(
        self,
        cfg: Any,
        loop: SequenceLoop,
        eval_envs: list[gym.Env],
        emit_row: Callable[[dict[str, Any]], None],
        emit_checkpoint: Callable[[bytes], None],
    ) -> None:
        super().__init__(verbose=0)
        assert isinstance(loop.p, Progress)
        self.cfg = cfg
        self.loop = loop
        self.p: Progress = loop.p
        self.eval_envs = eval_envs
        self.emit_row = emit_row
        self.emit_checkpoint = emit_checkpoint
        self.atari = cfg.env.kind == "atari"
        self.protocol = eval_protocol(cfg, family="rl")
        self._t0 = time.perf_counter()
        self._cpu0 = time.process_time()
        self._wall_base = self.p.wall_clock_s
        self._cpu_base = self.p.cpu_s

    # --- SB3 hooks -------------------------------------------------------------------------------
    def _on_training_start(self) -> None:
        n = self.training_env.num_envs
        if not self.p.episode_raw:
            self.p.episode_raw = [0.0] * n
        if self.model.num_timesteps == 0 and self.atari:  # the stage's first reset's no-op frames
            self.p.frames += sum(int(i.get("frames", 0)) for i in self.training_env.unwrapped.reset_infos)

    def _on_rollout_start(self) -> None:
        if self.p.points >= self.p.next_checkpoint_at and self.p.points > 0:
            self.p.next_checkpoint_at = self.p.points + int(self.cfg.checkpoint_every)
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
        # The stage's last point is taken after ``learn`` returns, with the parameters its last
        # update left (the stage-boundary snapshot), so none is taken here once the budget is spent.
        if not self.loop.stage_done() and self.loop.point_due(stage_done=False):
            self.evaluation_point()
            if p.stopped_at_return:
                return False  # SB3 stops learn() when a callback returns False
        return True

    # --- the Evaluable of an evaluation point ----------------------------------------------------
    def clock(self) -> None:
        """Bring the wall-clock and CPU counters up to now."""
        self.p.wall_clock_s = self._wall_base + (time.perf_counter() - self._t0)
        self.p.cpu_s = self._cpu_base + (time.process_time() - self._cpu0)

    def evaluate_stage(self, j: int) -> StageEval:
        """The current policy on stage ``j``'s environment and the run's fixed evaluation seeds."""
        return self.confirm_stage(j, 0, int(self.cfg.eval.episodes))

    def evaluate_stochastic(self, j: int) -> StageEval:
        """Stage ``j`` on the fixed evaluation seeds with actions sampled from the policy (SB3's
        ``deterministic=False``, how the paper's TRPO targets were measured), on the evaluation
        action streams (run seed, timestep, episode)."""
        return self.confirm_stage(j, 0, int(self.cfg.eval.episodes), protocol=SAMPLED)

    def confirm_stage(
        self, j: int, first: int, episodes: int, protocol: EvalProtocol | None = None
    ) -> StageEval:
        """Stage ``j`` on the evaluation seeds ``eval.seed + first + k`` (``k < episodes``), acting
        as the regular evaluation does (the regular evaluation: ``first`` 0)."""
        mean, std, steps = evaluate(
            self.model,
            self.eval_envs[j],
            int(self.cfg.eval.seed),
            int(episodes),
            unwrap_vec_normalize(self.training_env),
            protocol=protocol or self.protocol,
            run_seed=int(self.cfg.seed),
            timestep=self.p.timesteps,
            first=int(first),
        )
        return StageEval(self.loop.plan.stages[j].name, mean, std, steps)

    def distribution(self, states: np.ndarray) -> ActionDist:
        """The current policy's action distributions on raw observations (its VecNormalize)."""
        return action_distribution(self.model, states, unwrap_vec_normalize(self.training_env))

    def record_states(self) -> StageStates:
        """The states the current (deterministic) policy visits on the stage it trains, on the
        run's first evaluation seeds (:func:`esbench.training.drift.record_stage_states`)."""
        act = deterministic_act(self.model, unwrap_vec_normalize(self.training_env))
        return record_stage_states(
            self.loop.stage.name, self.eval_envs[self.p.stage], act, self.distribution,
            int(self.cfg.eval.seed), int(self.cfg.eval.episodes),
        )  # fmt: skip

    def params(self) -> np.ndarray:
        """The policy's parameters (:func:`policy_vector`)."""
        return policy_vector(self.model)

    # --- rows and snapshots ----------------------------------------------------------------------
    def evaluation_point(self, stage_end: bool = False) -> list[dict[str, Any]]:
        """An evaluation point of the sequence loop (every stage evaluated), its rows emitted (one
        per stage) with the training statistics since the last point, which are then reset."""
        p = self.p
        point = self.loop.evaluation_point(self, stage_end=stage_end)
        self.clock()
        params = point.params
        train = {
            "train_return_mean": float(np.mean(p.returns)) if p.returns else math.nan,
            "train_return_max": float(np.max(p.returns)) if p.returns else math.nan,
            "nonfinite_members": 0,
            "grad_norm": math.nan,
            "param_norm": float(np.linalg.norm(params.astype(np.float64))),
            "rl/n_updates": int(getattr(self.model, "_n_updates", 0)),
        }
        counters = Counters(
            point.index, p.timesteps, p.frames, p.episodes, p.wall_clock_s, p.cpu_s, p.eval_timesteps, 1
        )  # RL: a row's ``generation`` is its point's index; one worker (one process)
        rows = self.loop.rows(counters, point, train)
        p.returns = []
        for row in rows:
            self.emit_row({**row, "row_index": p.rows})
            p.rows += 1
        return rows

    def checkpoint(self) -> None:
        """Emit a snapshot of the model, envs, RNGs and counters."""
        self.clock()
        self.emit_checkpoint(snapshot(self.model, self.p))
