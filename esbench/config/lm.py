"""The ``lm:`` block of a run config: the language-model study's model, tasks, pretraining, decoding.

Filled by ``conf/env/lm.yaml`` (``env=lm``). The model is built locally from ``lm.model`` unless
``lm.model.hub_id`` names a hub model; task A (addition) is the prior capability made by
``lm.pretrain``; task B (a Countdown-like puzzle) is the new task, rewarded by an exact verifier.
Ranges and choices sit in field metadata, checked like every other block
(:func:`esbench.config.validate.check_fields`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


def _c(default: Any, **constraints: Any) -> Any:
    # Same as esbench.config.schema._c, which imports this module (no cycle).
    return field(default=default, metadata=constraints)


@dataclass
class ModelConfig:
    """Architecture of the locally built decoder-only transformer (Llama layout), or a hub id.

    The defaults make a model of about 1.06M parameters over the 23-token character vocabulary.
    """

    hub_id: str | None = None  # e.g. HuggingFaceTB/SmolLM2-135M: load it (and its tokenizer) instead
    hidden_size: int = _c(128, ge=8)
    num_layers: int = _c(4, ge=1)
    num_heads: int = _c(4, ge=1)
    intermediate_size: int = _c(512, ge=8)
    max_positions: int = _c(64, ge=8)
    init_seed: int = _c(0, ge=0)

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass
class PretrainConfig:
    """How the task-A model is made (esbench.policies.lm.pretrain); cached by a hash of all of it."""

    steps: int = _c(1500, ge=0)  # 0: the model as built or loaded
    batch_size: int = _c(64, ge=1)
    lr: float = _c(2e-3, gt=0.0)
    warmup: int = _c(100, ge=0)
    weight_decay: float = _c(0.0, ge=0.0)
    seed: int = _c(0, ge=0)
    countdown_fraction: float = _c(0.0, ge=0.0, le=1.0)  # share of solved easier puzzles (format only)
    countdown_count: int = _c(2, ge=1)
    # Share of each batch that is solved task-B puzzles (task B's shape, from its train split): what
    # makes the base solve some of task B before any post-training, as an instruct model does.
    solved_fraction: float = _c(0.0, ge=0.0, le=1.0)
    eval_size: int = _c(500, ge=1)


@dataclass
class TaskAConfig:
    """Multi-digit addition: ``a+b=`` -> the sum."""

    digits: int = _c(3, ge=1)
    held_out_fraction: float = _c(0.1, gt=0.0, lt=1.0)


@dataclass
class TaskBConfig:
    """Countdown-like: ``n1,n2,n3:target=`` -> an expression using each number once."""

    count: int = _c(3, ge=1)
    max_number: int = _c(9, ge=1)
    max_target: int = _c(99, ge=1)
    held_out_fraction: float = _c(0.2, gt=0.0, lt=1.0)
    # Reward of a well-formed wrong answer: 0.1 is TinyZero's format bonus (the committed
    # lm_retention report's runs were made with it); 0 makes the reward the solve (outcome only).
    format_score: float = _c(0.1, ge=0.0, lt=1.0)


@dataclass
class DecodingConfig:
    """The fixed decoding protocol and prompt batches (esbench.policies.lm.decoding)."""

    strategy: str = _c("greedy", choices=("greedy",))
    max_new_tokens: int = _c(12, ge=1)
    fitness_prompts: int = _c(16, ge=1)  # task-B train prompts per ES generation (one fixed batch)
    eval_prompts: int = _c(200, ge=1)  # held-out prompts per evaluation, each task


@dataclass
class PopulationConfig:
    """Where an ES generation's members are decoded (esbench.training.lm_population)."""

    # 0: the whole population as one batch on the driver; K > 0: fixed chunks of K members, one
    # Dask task each on the run's cluster (the chunks are the config's, so any worker count
    # computes the same parameters).
    chunk_members: int = _c(0, ge=0)


@dataclass
class LMConfig:
    """Everything the language-model environment needs beyond ``env``."""

    model: ModelConfig = field(default_factory=ModelConfig)
    pretrain: PretrainConfig = field(default_factory=PretrainConfig)
    task_a: TaskAConfig = field(default_factory=TaskAConfig)
    task_b: TaskBConfig = field(default_factory=TaskBConfig)
    decoding: DecodingConfig = field(default_factory=DecodingConfig)
    population: PopulationConfig = field(default_factory=PopulationConfig)


@dataclass
class GRPOAlgoConfig:
    """``algo=grpo`` (``conf/algo/grpo.yaml``): GRPO on a language model with TRL's ``GRPOTrainer``
    (esbench.baselines.grpo); env=lm only. A step samples ``num_generations`` completions for each
    of ``prompts_per_step`` prompts, so a stage of T timesteps (completions) takes
    ceil(T / (prompts_per_step * num_generations)) steps."""

    name: str = "grpo"
    prompts_per_step: int = _c(4, ge=1)
    num_generations: int = _c(8, ge=2)  # the group; GRPO needs at least 2
    learning_rate: float = _c(1e-4, gt=0.0)
    beta: float = _c(0.04, ge=0.0)  # KL penalty to the stage's starting model
    temperature: float = _c(1.0, gt=0.0)  # sampling of the group (evaluation stays greedy)
    num_prompts: int = _c(1024, ge=1)  # the train prompts TRL's sampler draws from
