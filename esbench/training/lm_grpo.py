"""GRPO on a language model through the training loop: TRL's ``GRPOTrainer`` with evaluation points.

``algo=grpo env=lm`` trains the same task-A model as the ES learners (:mod:`esbench.training.lm`),
on the same stages, with the same reward (the format score included), the same evaluation points
and columns, and a budget in the same unit: ``timesteps`` count completions, and a GRPO step
samples ``algo.num_generations`` completions for each of ``algo.prompts_per_step`` prompts. The
GRPO itself is TRL's (:func:`esbench.baselines.grpo.train_grpo`), one trainer per stage, seeded by
the run seed; a :class:`transformers.TrainerCallback` hands every step to the loop, which takes a
point when the schedule says so.

Checkpoints are the loop's, at stage boundaries and at the end: the parameters and the counters,
as data. TRL's optimizer moments and sampling state are not in them, so a GRPO run killed inside
a stage resumes from that stage's start (and computes the same numbers again: the stage is a
function of its starting parameters and the seed).
"""

from __future__ import annotations

import math
from typing import Any

from omegaconf import DictConfig
from transformers import TrainerCallback

from esbench.baselines.grpo import GRPOSettings, train_grpo
from esbench.tracking.logger import MetricsLogger
from esbench.tracking.store import RunStore
from esbench.training.lm import LMLearner, flat_params, load_flat, run_lm_learner, stage_task

__all__ = ["LMGRPOLearner", "train_grpo_lm"]


def train_grpo_lm(cfg: DictConfig, store: RunStore, logger: MetricsLogger, run_key: str) -> dict[str, Any]:
    """Train GRPO on a language model as ``cfg`` says; returns the summary dict."""
    del run_key
    return run_lm_learner(cfg, store, logger, LMGRPOLearner)


class LMGRPOLearner(LMLearner):
    """GRPO (TRL) on each stage's task; the evaluation points are taken from a trainer callback."""

    def settings(self, steps: int) -> GRPOSettings:
        """TRL's settings for a stage of ``steps`` steps."""
        a = self.cfg.algo
        return GRPOSettings(
            steps=steps,
            prompts_per_step=int(a.prompts_per_step),
            num_generations=int(a.num_generations),
            max_completion_length=int(self.cfg.lm.decoding.max_new_tokens),
            learning_rate=float(a.learning_rate),
            beta=float(a.beta),
            temperature=float(a.temperature),
            seed=int(self.cfg.seed),
            prompt_seed=int(self.cfg.seed),
            num_prompts=int(a.num_prompts),
        )

    @property
    def per_step(self) -> int:
        """Completions a GRPO step samples (its timesteps)."""
        return int(self.cfg.algo.prompts_per_step) * int(self.cfg.algo.num_generations)

    def train_stage(self) -> None:
        """One TRL trainer for the stage's budget (rounded up to whole steps)."""
        loop = self.loop
        if loop.stage_done():
            self._closing_point()
            return
        left = loop.stage.timesteps - (self.prog.timesteps - self.prog.stage_start)
        steps = math.ceil(left / self.per_step)
        task = self.tasks[stage_task(loop.stage)]
        trained, _ = train_grpo(self.model, self.tok, task, self.settings(steps), callbacks=[_Steps(self)])
        if trained is not self.model:  # TRL trained a wrapper's copy: carry its weights over
            load_flat(self.model, flat_params(trained))
        self.model.eval()

    def step(self, logs: dict[str, float]) -> bool:
        """A GRPO step ended (TRL logged it): count it, take a point when due; True at the stage's end."""
        loop, prog = self.loop, self.prog
        prog.generation += 1
        prog.timesteps += self.per_step
        prog.frames += self.per_step
        prog.episodes += self.per_step
        stage_done = loop.stage_done()
        point = None
        if loop.point_due(stage_done):
            training = self.model.training
            self.model.eval()
            point = loop.evaluation_point(self, stage_end=stage_done)
            prog.last_point_at = prog.timesteps
            self.model.train(training)
        self._clock()
        train = {
            "train_return_mean": float(logs.get("reward", math.nan)),
            "train_return_max": math.nan,
            "grad_norm": float(logs.get("grad_norm", math.nan)),
            "param_norm": self._norm(),
            "train/kl": float(logs.get("kl", math.nan)),
            "train/loss": float(logs.get("loss", math.nan)),
        }
        self._log(loop.rows(self.counters(), point, train), point=point is not None)
        return stage_done


class _Steps(TrainerCallback):  # type: ignore[misc]
    """Hands each logged GRPO step to the learner; stops the trainer at the stage's end."""

    def __init__(self, learner: LMGRPOLearner) -> None:
        self.learner = learner

    def on_log(
        self, args: Any, state: Any, control: Any, logs: dict[str, float] | None = None, **_: Any
    ) -> None:
        if logs is None or "reward" not in logs:  # the summary TRL logs after the last step
            return
        if self.learner.step(logs):
            control.should_training_stop = True
