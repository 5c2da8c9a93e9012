"""GRPO on a language model through the training loop: TRL's ``GRPOTrainer`` with evaluation points.

``algo=grpo env=lm`` trains the same task-A model as the ES learners (:mod:`esbench.training.lm`),
on the same stages, with the same reward (the format score included), the same evaluation points
and columns, and a budget in the same unit: ``timesteps`` count completions, and a GRPO step
samples ``algo.num_generations`` completions for each of ``algo.prompts_per_step`` prompts. The
GRPO itself is TRL's (:func:`esbench.baselines.grpo.train_grpo`), one trainer per stage, seeded by
the run seed; a :class:`transformers.TrainerCallback` hands every step to the loop
(``after_step``, as SB3's callback and the ES generation do), which takes a point when the
schedule says so.

Checkpoints: the loop's at stage boundaries and at the end (the parameters and the counters, as
data), and, inside a stage, one at every evaluation point: TRL's trainer checkpoint (weights,
AdamW moments, learning-rate schedule, the Python/NumPy/torch random states, the step count;
``grpo_trainer/checkpoint-N`` in the run directory) beside the loop's, which names it. A GRPO run
killed inside a stage resumes from its last evaluation point: the trainer is rebuilt with the
stage's starting weights as its KL reference and restores the rest from its checkpoint, skipping
the prompts of the steps it has taken (docs/lm.md says what this reproduces exactly).
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import Any

from omegaconf import DictConfig
from transformers import TrainerCallback

from esbench.baselines.grpo import GRPOSettings, train_grpo
from esbench.tracking.logger import MetricsLogger
from esbench.tracking.store import RunStore
from esbench.training.learner import AfterStep, StepStats
from esbench.training.lm import LMLearner, flat_params, load_flat, run_lm_learner, stage_task

__all__ = ["TRAINER_DIR", "LMGRPOLearner", "train_grpo_lm"]

#: TRL's checkpoints inside a stage, in the run directory.
TRAINER_DIR = "grpo_trainer"


def train_grpo_lm(cfg: DictConfig, store: RunStore, logger: MetricsLogger, run_key: str) -> dict[str, Any]:
    """Train GRPO on a language model as ``cfg`` says; returns the summary dict."""
    del run_key
    # TRL's trainer state is checkpointed with the loop's, at an evaluation point (LMGRPOLearner.saved)
    return run_lm_learner(cfg, store, logger, LMGRPOLearner, loop_checkpoints=False)


class LMGRPOLearner(LMLearner):
    """GRPO (TRL) on each stage's task; every step is handed to the loop from a trainer callback."""

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

    def train(self, after_step: AfterStep) -> None:
        """One TRL trainer for the stage's budget (rounded up to whole steps), resumed from its
        checkpoint when the run was stopped inside the stage."""
        loop, prog = self.loop, self.prog
        if not self.start(after_step):
            return
        steps = math.ceil(loop.stage.timesteps / self.per_step)
        task = self.tasks[stage_task(loop.stage)]
        resume = None
        if prog.trainer_checkpoint:
            resume = str(self.store.path(prog.trainer_checkpoint))
            if not Path(resume).is_dir():
                raise self.store.checkpoint_error(f"the trainer checkpoint it names, {resume}, is missing")
            load_flat(self.model, prog.snapshots[-1])  # the stage's start: the trainer's KL reference
        out = self.store.path(TRAINER_DIR)
        trained, _ = train_grpo(
            self.model, self.tok, task, self.settings(steps), output_dir=str(out),
            callbacks=[_Steps(self, after_step)], resume_from=resume,
        )  # fmt: skip
        if trained is not self.model:  # TRL trained a wrapper's copy: carry its weights over
            load_flat(self.model, flat_params(trained))
        self.model.eval()
        prog.trainer_checkpoint = ""  # the stage is over: the loop's boundary checkpoint follows

    def checkpoint(self) -> None:
        """The loop's checkpoint; once it names no trainer checkpoint (a stage boundary), TRL's
        checkpoints are deleted (after it is written: a kill in between still finds them)."""
        super().checkpoint()
        if not self.prog.trainer_checkpoint:
            shutil.rmtree(self.store.path(TRAINER_DIR), ignore_errors=True)

    def saved(self, step: int) -> None:
        """TRL wrote its checkpoint of step ``step`` (at an evaluation point): write the loop's
        checkpoint naming it, then drop TRL's older ones (in this order, so a kill in between
        leaves a checkpoint whose trainer state exists)."""
        name = f"checkpoint-{step}"
        self.prog.trainer_checkpoint = f"{TRAINER_DIR}/{name}"
        self.checkpoint()
        for old in self.store.path(TRAINER_DIR).glob("checkpoint-*"):
            if old.name != name:
                shutil.rmtree(old, ignore_errors=True)

    def step(self, logs: dict[str, float]) -> StepStats:
        """A GRPO step ended (TRL logged it): its completions and TRL's statistics."""
        self.prog.generation += 1
        train = {
            "train_return_mean": float(logs.get("reward", math.nan)),
            "train_return_max": math.nan,
            "grad_norm": float(logs.get("grad_norm", math.nan)),
            "param_norm": self._norm(),
            "train/kl": float(logs.get("kl", math.nan)),
            "train/loss": float(logs.get("loss", math.nan)),
        }
        return self._step(self.per_step, train)


class _Steps(TrainerCallback):  # type: ignore[misc]
    """Hands each logged GRPO step to the loop (the model in evaluation mode while a point is
    taken); stops the trainer at the stage's end, and has it save a checkpoint at an evaluation
    point inside the stage (TRL saves after ``on_log``)."""

    def __init__(self, learner: LMGRPOLearner, after_step: AfterStep) -> None:
        self.learner = learner
        self.after_step = after_step

    def on_log(
        self, args: Any, state: Any, control: Any, logs: dict[str, float] | None = None, **_: Any
    ) -> None:
        if logs is None or "reward" not in logs:  # the summary TRL logs after the last step
            return
        learner = self.learner
        points, training = learner.prog.points, learner.model.training
        learner.model.eval()
        go_on = self.after_step(learner.step(logs))
        learner.model.train(training)
        if not go_on:
            control.should_training_stop = True
        elif learner.prog.points > points:
            control.should_save = True

    def on_save(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        self.learner.saved(int(state.global_step))
