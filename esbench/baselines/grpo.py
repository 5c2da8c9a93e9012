"""GRPO on task B with TRL's ``GRPOTrainer`` (the field's reference implementation, not ours).

Shao et al. 2024 (DeepSeekMath) group-relative policy optimization: for each prompt, sample
``num_generations`` completions, score them with the same outcome reward the ES learners use
(:meth:`esbench.envs.lm.tasks.CountdownTask.reward`, the exact verifier), standardize rewards
within the group and take clipped policy-gradient steps. Everything here is configuration of
``trl.GRPOTrainer``: it runs on the CPU, offline (``report_to="none"``, no hub), seeded
(``seed`` and ``data_seed``), with sampling at ``temperature`` (GRPO needs diverse samples; the
evaluation protocol stays greedy, :mod:`esbench.policies.lm.decoding`).

The prompts are task B's ``train`` split, a pure function of ``prompt_seed``; their order is
TRL's sampler's, seeded by ``seed``. Two runs with the same config and the same torch thread
count give the same weights.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from typing import Any

import torch
from datasets import Dataset
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from esbench.envs.lm.tasks import AdditionTask, CountdownTask, Problem
from esbench.policies.lm.chat import chat_prompts


@dataclass(frozen=True)
class GRPOSettings:
    """What a GRPO run on task B does (TRL's ``GRPOConfig`` fields, named as TRL names them).

    Attributes:
        steps: Optimizer steps (``max_steps``).
        prompts_per_step: Distinct prompts per step; each gets ``num_generations`` completions.
        num_generations: Completions per prompt (the group).
        max_completion_length: Longest completion in tokens.
        learning_rate: AdamW's learning rate.
        beta: Weight of the KL penalty to the reference (starting) model.
        temperature: Sampling temperature of the completions.
        seed: TRL's seed (sampling, data order).
        prompt_seed: Seed of the prompt set.
        num_prompts: Size of the prompt set the trainer draws from.
    """

    steps: int = 10
    prompts_per_step: int = 4
    num_generations: int = 4
    max_completion_length: int = 12
    learning_rate: float = 1e-4
    beta: float = 0.04
    temperature: float = 1.0
    seed: int = 0
    prompt_seed: int = 0
    num_prompts: int = 256


def reward_dataset(
    task: CountdownTask | AdditionTask,
    problems: list[Problem],
    tokenizer: PreTrainedTokenizerBase | None = None,
) -> Dataset:
    """The prompts with the columns the reward function reads (``numbers``, ``target``, ``answer``);
    with a chat model's ``tokenizer``, the prompts in its chat template, as ES's members see them
    (:func:`esbench.policies.lm.chat.chat_prompts`)."""
    prompts = [p.prompt for p in problems]
    return Dataset.from_dict(
        {
            "prompt": prompts if tokenizer is None else chat_prompts(tokenizer, prompts),
            "numbers": [list(p.numbers) for p in problems],
            "target": [p.target for p in problems],
            "answer": [p.answer for p in problems],
        }
    )


def countdown_reward_function(task: CountdownTask | AdditionTask) -> Any:
    """A TRL reward function: the task's reward of each completion (the same as ES's)."""

    def countdown_reward(
        prompts: list[str],
        completions: list[str],
        numbers: list[list[int]],
        target: list[int],
        answer: list[str],
        **_: Any,
    ) -> list[float]:
        return [
            task.reward(c, Problem(p, a, tuple(n), int(t)))
            for p, c, n, t, a in zip(prompts, completions, numbers, target, answer, strict=True)
        ]

    return countdown_reward


def train_grpo(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    task: CountdownTask | AdditionTask,
    settings: GRPOSettings,
    output_dir: str | None = None,
    callbacks: list[Any] | None = None,
    resume_from: str | None = None,
) -> tuple[PreTrainedModel, list[dict[str, float]]]:
    """Train ``model`` (in place) on task B (or any task with a reward) with GRPO for
    ``settings.steps`` steps; ``callbacks`` are ``transformers.TrainerCallback`` s the trainer calls
    (the training loop's evaluation points, :mod:`esbench.training.lm_grpo`).

    ``resume_from`` names a trainer checkpoint (``output_dir/checkpoint-N``, written when a callback
    sets ``control.should_save``) to continue from: its weights, AdamW moments, learning-rate
    schedule, random states and step count are TRL's to restore, and the prompts of its first N
    steps are skipped. ``model`` must then hold the weights the trainer started from (the KL
    reference is made from them).

    Returns:
        The trained model (the same object, in eval mode) and TRL's log rows (reward, loss, KL ...).
    """
    from transformers.utils import logging as hf_logging

    problems = task.sample(settings.prompt_seed, "train", settings.num_prompts)
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # saving and reloading the reference copy: no bars on stderr
    try:
        return _train(model, tokenizer, task, settings, problems, output_dir, callbacks, resume_from)
    finally:
        if bars:
            hf_logging.enable_progress_bar()


def _train(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    task: CountdownTask | AdditionTask,
    settings: GRPOSettings,
    problems: list[Problem],
    output_dir: str | None,
    callbacks: list[Any] | None,
    resume_from: str | None,
) -> tuple[PreTrainedModel, list[dict[str, float]]]:
    """The body of :func:`train_grpo`."""
    from transformers import PrinterCallback
    from trl import GRPOConfig, GRPOTrainer  # heavy import, only when GRPO runs

    with tempfile.TemporaryDirectory(prefix="esbench-grpo-") as tmp:
        # TRL builds the KL reference model by loading the policy's ``_name_or_path``: point it at
        # a copy of the starting weights on disk (no hub is involved).
        start = f"{tmp}/start"
        model.save_pretrained(start)
        name, model.config._name_or_path = model.config._name_or_path, start
        args = GRPOConfig(
            output_dir=output_dir or tmp,
            max_steps=settings.steps,
            per_device_train_batch_size=settings.prompts_per_step * settings.num_generations,
            gradient_accumulation_steps=1,
            num_generations=settings.num_generations,
            max_completion_length=settings.max_completion_length,
            learning_rate=settings.learning_rate,
            beta=settings.beta,
            temperature=settings.temperature,
            seed=settings.seed,
            data_seed=settings.seed,
            use_cpu=True,
            report_to="none",
            save_strategy="no",
            logging_steps=1,
            disable_tqdm=True,
            dataloader_num_workers=0,
            bf16=False,
            fp16=False,
        )
        trainer = GRPOTrainer(
            model=model,
            reward_funcs=countdown_reward_function(task),
            args=args,
            train_dataset=reward_dataset(task, problems, tokenizer),
            processing_class=tokenizer,
            callbacks=callbacks,
        )
        trainer.remove_callback(PrinterCallback)  # TRL's rows come back in ``logs``, not on stdout
        try:
            trainer.train(resume_from_checkpoint=resume_from)
        finally:
            model.config._name_or_path = name  # the temporary copy is gone after this block
        logs = [dict(row) for row in trainer.state.log_history]
    trained = trainer.model
    assert isinstance(trained, torch.nn.Module)
    return trained.eval(), logs  # type: ignore[return-value]
