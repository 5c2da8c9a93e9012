"""The language-model ES learner: OpenAI-ES or EGGROLL on task B, through the training loop.

A run with ``env=lm`` and ``algo=openai_es`` (full-rank members) or ``algo=eggroll`` (rank-r
members) starts from the task-A model (:func:`esbench.policies.lm.pretrain.pretrained`: trained
on the first call, loaded from its cache by config hash after that) and trains the stages of its
run (task B alone, or the stages of an ``lm_*`` sequence) with the ES update of
:mod:`esbench.policies.lm.population`. The loop of :mod:`esbench.training` owns the rest: the
evaluation points, stage boundaries, snapshots, checkpoints and resume, the summary.

The ruler on ``env=lm`` (docs/lm.md):

* ``timesteps`` count training completions: one prompt decoded by one member (an ES generation
  of P members on B prompts is P*B; a GRPO step is its prompts times its group). ``episodes``
  and ``frames`` count the same.
* ``eval_return_mean`` is a stage's task reward on its held-out prompts (greedy); on task B it
  is the solve rate, plus the format score where ``lm.task_b.format_score`` > 0 (0 by default),
  and ``solve_rate`` is the exact-solve rate alone. ``prior_accuracy``, ``prior_loss`` and
  ``prior_kl`` measure task A at every point. The format rate (the share of well-formed answers,
  solved or not) of every point and evaluated task is its own column in :data:`POINTS_FILE`, beside
  the solve rate and the prompt count.
* ``policy_kl`` (a sequence's ended stages) is the KL of next-token distributions at the answer
  positions of that stage's held-out prompts, from the model that ended the stage.
* A sequence whose first stage has budget 0 (``lm_addition_to_countdown``'s ``addition``) records
  the pretraining as that stage: the initial weights at timestep 0, then the task-A model
  ``pretrain.steps * pretrain.batch_size`` training sequences later (:meth:`LMLearner.start`).

Determinism: a generation's members, prompts and noise are functions of (config, generation);
the population is decoded as one batch of members x prompts on the driver, or, with
``lm.population.chunk_members``, in the config's fixed chunks of members on Dask workers
(:mod:`esbench.training.lm_population`): the batches never depend on the cluster, so any worker
count, and a resumed run, compute the same numbers as one run never stopped. The ES
state is the parameter vector alone (plain SGD, no optimizer moments), checkpointed as data.

Anchored Weight Decay (``algo.l2_anchor=stage_start``, Schweighofer et al. 2026): after each
generation's update the parameters move back toward the ones the current stage started from (the
task-A model, on task B) by ``algo.l2_coeff`` of their distance (:func:`anchored_decay`). The
anchor is the loop's stage-start snapshot, so it is checkpointed with the counters and a resumed
run decays toward the same parameters. With ``l2_anchor=zero`` (the default) there is no decay on
``env=lm``: such runs compute what they always did.
"""

from __future__ import annotations

import copy
import csv
import functools
import io
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from esbench.config.errors import ConfigError
from esbench.config.lm import ModelConfig, PretrainConfig
from esbench.envs.checks import LM_TASKS
from esbench.envs.lm.tasks import AdditionTask, CountdownTask, Problem
from esbench.measures.distribution import CATEGORICAL, ActionDist
from esbench.policies.lm.decoding import greedy_completions
from esbench.policies.lm.evaluation import answer_loss, next_token_kl, teacher_forced
from esbench.policies.lm.model import build_model
from esbench.policies.lm.population import PopulationModel, antithetic
from esbench.policies.lm.pretrain import pretrained
from esbench.runtime.cluster import dask_client, worker_count
from esbench.tracking.logger import MetricsLogger
from esbench.tracking.schema import SNAPSHOTS_FILE, STAGE_STATES_FILE
from esbench.tracking.stage_states import StageStates, write_stage_states
from esbench.tracking.store import RunStore
from esbench.training.checkpoint import StateKind, resume_state, save_checkpoint
from esbench.training.learner import AfterStep, Seeds, StepStats
from esbench.training.lm_population import ChunkTask, distributed_fitness, member_chunks
from esbench.training.loop import run_learner
from esbench.training.ruler import Stage, StageEval, recorded_pretraining, stage_plan, write_snapshots
from esbench.training.sequence_loop import PointResult, SequenceLoop, SequenceProgress
from esbench.utils.io import atomic_write_json, atomic_write_text
from esbench.utils.layout import Block, ParamLayout
from esbench.utils.seeding import sha256_array

log = logging.getLogger(__name__)

#: What ``env.kwargs.task`` may name.
TASKS = LM_TASKS
#: Held-out prompts whose answer positions a stage's ``policy_kl`` is measured on.
KL_PROMPTS = 64
#: Held-out prompts per task in the tables of sample generations (first and last evaluation).
SAMPLE_PROMPTS = 8
#: Columns of a table of sample generations (W&B ``samples/first`` and ``samples/last``).
SAMPLE_COLUMNS = ["timesteps", "task", "prompt", "completion", "answer", "reward"]
#: A run's table of every point's per-task rates (:data:`POINT_COLUMNS`), rewritten at each point.
POINTS_FILE = "lm_points.csv"
#: Its columns: the point, the task evaluated, its held-out solve and format rates, the prompts.
POINT_COLUMNS = ("timesteps", "eval_task", "solve_rate", "format_rate", "prompts")


@dataclass
class LMProgress(SequenceProgress):
    """An LM run's counters: the loop's, and the ES generation (or GRPO step) count."""

    generation: int = 0
    last_point_at: int = -1  # unused: read from checkpoints written before the loop owned the points
    trainer_checkpoint: str = ""  # GRPO inside a stage: TRL's checkpoint (run-dir relative) to resume
    #: Rows of :data:`POINTS_FILE` so far (checkpointed with the counters, so a resume rewrites them).
    points_table: list[list[Any]] = field(default_factory=list)


@dataclass
class LMLearnerState:
    """An LM run's checkpoint state: the flat parameter vector (float32) and the counters."""

    params: np.ndarray
    progress: LMProgress


def _check_state(state: LMLearnerState) -> None:
    if not isinstance(state.params, np.ndarray) or state.params.dtype != np.float32:
        raise ValueError("not a float32 parameter vector")


#: An LM checkpoint's state for the resume checks (:mod:`esbench.training.checkpoint`).
LM_STATE = StateKind(
    name="a language-model",
    state_type=LMLearnerState,
    types=(LMLearnerState, LMProgress, StageStates, ActionDist),
    digest=lambda s: sha256_array(s.params),
    check=_check_state,
)


# --- the model and the tasks ----------------------------------------------------------------------


def _section(cfg: DictConfig, name: str, schema: type) -> Any:
    data = OmegaConf.to_container(cfg.lm[name], resolve=True)
    assert isinstance(data, dict)
    return schema(**{str(k): v for k, v in data.items()})


def tasks(cfg: DictConfig) -> dict[str, AdditionTask | CountdownTask]:
    """Task A and task B as ``cfg.lm`` configures them, by ``env.kwargs.task`` name."""
    a, b = cfg.lm.task_a, cfg.lm.task_b
    return {
        "addition": AdditionTask(digits=int(a.digits), held_out_fraction=float(a.held_out_fraction)),
        "countdown": CountdownTask(
            count=int(b.count),
            max_number=int(b.max_number),
            max_target=int(b.max_target),
            held_out_fraction=float(b.held_out_fraction),
            format_score=float(b.format_score),
        ),
    }


def stage_task(stage: Stage) -> str:
    """The task a stage trains: its env's ``kwargs.task`` (``countdown`` without one)."""
    task = str((stage.env.get("kwargs") or {}).get("task", "countdown"))
    if task not in TASKS:
        raise ConfigError(f"env.kwargs.task={task!r} in stage {stage.name}; allowed: {', '.join(TASKS)}")
    return task


def prior_model(cfg: DictConfig) -> tuple[PreTrainedModel, PreTrainedTokenizerBase, dict[str, Any]]:
    """The task-A model (cached by config hash; trained on the first call), its tokenizer, its record."""
    model_cfg = _section(cfg, "model", ModelConfig)
    pre = _section(cfg, "pretrain", PretrainConfig)
    both = tasks(cfg)
    task_a, task_b = both["addition"], both["countdown"]
    assert isinstance(task_a, AdditionTask) and isinstance(task_b, CountdownTask)
    return pretrained(model_cfg, pre, task_a, task_b=task_b)


def flat_params(model: torch.nn.Module) -> np.ndarray:
    """The model's parameters as one float32 vector (``model.parameters()`` order)."""
    with torch.no_grad():
        return torch.nn.utils.parameters_to_vector(model.parameters()).detach().numpy().astype(np.float32)


def param_blocks(model: torch.nn.Module) -> tuple[ParamLayout, tuple[str, ...]]:
    """The layout of :func:`flat_params`' vector, one block per parameter tensor, and the tensors'
    names (``named_parameters()``, the same order as ``parameters()``, under the model's own names:
    a population wrapper's ``.inner`` removed): what per-layer drift is measured over."""
    blocks: list[Block] = []
    names: list[str] = []
    start = 0
    for name, param in model.named_parameters():
        blocks.append(Block(start, tuple(int(d) for d in param.shape)))
        names.append(name.replace(".inner.", "."))
        start = blocks[-1].stop
    return tuple(blocks), tuple(names)


def load_flat(model: torch.nn.Module, params: np.ndarray) -> None:
    """Set the model's parameters from :func:`flat_params`' vector (in place)."""
    with torch.no_grad():
        torch.nn.utils.vector_to_parameters(torch.from_numpy(np.array(params, copy=True)), model.parameters())


@dataclass(frozen=True)
class TaskScore:
    """A model on one task's held-out prompts (greedy).

    Attributes:
        reward: Mean reward (task B: the solve rate plus any format score).
        reward_std: Its standard deviation over prompts.
        solve_rate: Share of prompts solved exactly.
        format_rate: Share of completions of the answer's form, solved or not.
        prompts: How many prompts.
    """

    reward: float
    reward_std: float
    solve_rate: float
    format_rate: float
    prompts: int


class LMEvaluator:
    """What an evaluation point measures on a model: task rewards, solve rates, the prior's measures.

    Args:
        cfg: The run config (its ``lm`` block: tasks, decoding, the evaluation prompt count).
        tokenizer: The model's tokenizer.
        reference: The task-A model (frozen), for ``prior_kl``.
    """

    def __init__(
        self, cfg: DictConfig, tokenizer: PreTrainedTokenizerBase, reference: PreTrainedModel
    ) -> None:
        self.tok = tokenizer
        self.reference = reference
        self.tasks = tasks(cfg)
        self.max_new = int(cfg.lm.decoding.max_new_tokens)
        n = int(cfg.lm.decoding.eval_prompts)
        seed = int(cfg.eval.seed)
        self.held_out: dict[str, list[Problem]] = {
            name: task.sample(seed, "held_out", n) for name, task in self.tasks.items()
        }

    def task(self, model: PreTrainedModel, name: str) -> TaskScore:
        """The model's greedy completions of ``name``'s held-out prompts, scored."""
        task, problems = self.tasks[name], self.held_out[name]
        done = greedy_completions(model, self.tok, [p.prompt for p in problems], self.max_new)[0]
        pairs = list(zip(done, problems, strict=True))
        rewards = np.array([task.reward(c, p) for c, p in pairs])
        solved = np.mean([task.solved(c, p) for c, p in pairs])
        formatted = np.mean([task.formatted(c, p) for c, p in pairs])
        return TaskScore(
            float(rewards.mean()), float(rewards.std()), float(solved), float(formatted), len(problems)
        )

    def samples(self, model: PreTrainedModel, names: list[str], timesteps: int) -> list[list[Any]]:
        """Rows of :data:`SAMPLE_COLUMNS`: the model's greedy completions of the first
        :data:`SAMPLE_PROMPTS` held-out prompts of each task in ``names``, with their rewards."""
        rows: list[list[Any]] = []
        for name in names:
            task, problems = self.tasks[name], self.held_out[name][:SAMPLE_PROMPTS]
            done = greedy_completions(model, self.tok, [p.prompt for p in problems], self.max_new)[0]
            rows += [
                [timesteps, name, p.prompt, c, p.answer, float(task.reward(c, p))]
                for c, p in zip(done, problems, strict=True)
            ]
        return rows

    def prior(self, model: PreTrainedModel) -> dict[str, float]:
        """``prior_accuracy``, ``prior_loss`` and ``prior_kl`` (task A's held-out prompts)."""
        problems = self.held_out["addition"]
        accuracy = self.task(model, "addition").solve_rate
        return {
            "prior_accuracy": accuracy,
            "prior_loss": answer_loss(model, self.tok, problems),
            "prior_kl": next_token_kl(model, self.reference, self.tok, problems),
        }

    def answer_states(self, name: str) -> np.ndarray:
        """The teacher-forced sequences of ``name``'s first held-out prompts, as the "states" of
        ``policy_kl``: shape (n, T, 2), ``[..., 0]`` the token ids, ``[..., 1]`` 1 where the next
        token is an answer token (the positions whose distributions are compared)."""
        ids, _, labels = teacher_forced(self.tok, self.held_out[name][:KL_PROMPTS])
        at = torch.zeros_like(ids)
        at[:, :-1] = (labels[:, 1:] != -100).long()
        return torch.stack([ids, at], dim=-1).numpy().astype(np.int64)

    @torch.no_grad()
    def distribution(self, model: PreTrainedModel, states: np.ndarray) -> ActionDist:
        """The model's next-token distributions (logits) at the answer positions of ``states``."""
        ids = torch.from_numpy(states[..., 0])
        at = torch.from_numpy(states[..., 1]).bool()
        mask = (ids != self.tok.pad_token_id).long()
        logits = model(input_ids=ids, attention_mask=mask).logits.float()
        return ActionDist(CATEGORICAL, logits[at].numpy().astype(np.float64))


# --- the ES learner -------------------------------------------------------------------------------


def anchored_decay(before: np.ndarray, after: np.ndarray, anchor: np.ndarray, coeff: float) -> np.ndarray:
    """Anchored Weight Decay on top of an ES step: ``after - coeff * (before - anchor)``.

    The decay is decoupled from the ES step (as AdamW's is from Adam's): ``before`` are the
    parameters the generation's members were drawn around, ``after`` those of the ES update
    alone, ``anchor`` the parameters the stage started from; ``coeff`` is the share of the distance
    to the anchor removed per generation. All shape (n,), float32.

    Returns:
        The next parameters, shape (n,), float32.
    """
    return (after - np.float32(coeff) * (before - anchor)).astype(np.float32)


def train_lm(cfg: DictConfig, store: RunStore, logger: MetricsLogger, run_key: str) -> dict[str, Any]:
    """Train OpenAI-ES or EGGROLL on a language model as ``cfg`` says; returns the summary dict."""
    del run_key  # the noise is named by (seed, generation, member): nothing else to key
    if not int(OmegaConf.select(cfg, "lm.population.chunk_members", default=0) or 0):
        return run_lm_learner(cfg, store, logger, LMESLearner)
    with dask_client(cfg.cluster, quiet=not cfg.tracker.console) as client:
        return run_lm_learner(cfg, store, logger, functools.partial(LMESLearner, client=client))


def run_lm_learner(
    cfg: DictConfig,
    store: RunStore,
    logger: MetricsLogger,
    learner_cls: Callable[..., LMLearner],
    loop_checkpoints: bool = True,
) -> dict[str, Any]:
    """What every LM learner's run starts from: the task-A model, resumed or fresh parameters (the
    initial weights first when stage 0 records the pretraining); then the loop's driver
    (:func:`~esbench.training.loop.run_learner`) and the summary. ``loop_checkpoints``: the loop
    checkpoints every ``checkpoint_every`` steps (False: the learner's library times them)."""
    torch.set_num_threads(max(1, int(OmegaConf.select(cfg, "torch_threads", default=1) or 1)))
    plan = stage_plan(cfg)
    for stage in plan.stages:
        stage_task(stage)
    model, tok, record = prior_model(cfg)
    log.info("task-A model %s (%s)", record["config_hash"], "cached" if record["cached"] else "trained")
    reference = copy.deepcopy(model).eval()
    resumed = resume_state(store, logger, LM_STATE) if cfg.resume else None
    pretraining = None
    if resumed is not None:
        load_flat(model, resumed.params)
        prog = resumed.progress
    else:
        prog = LMProgress()
        if recorded_pretraining(cfg, plan):
            # Stage 0 is the pretraining: it starts from the initial weights (its point at timestep 0
            # and its snapshot) and ends at the prior, pretrain.steps * batch_size sequences later.
            initial = flat_params(build_model(_section(cfg, "model", ModelConfig), tok))
            prog.snapshots = [initial]
            pretraining = (initial, recorded_pretraining(cfg, plan))
    evaluator = LMEvaluator(cfg, tok, reference)
    built: list[LMLearner] = []

    def build(loop: SequenceLoop) -> LMLearner:
        built.append(learner_cls(cfg, store, logger, loop, model, tok, evaluator))
        built[0].pretraining = pretraining
        return built[0]

    def emit(rows: list[dict[str, Any]], point: PointResult | None) -> None:
        built[0].log_rows(rows, point is not None)

    summary, learner = run_learner(
        cfg, prog, build, resumed_at=prog.generation if resumed is not None else None, emit=emit,
        cpu="wall", checkpoints=loop_checkpoints, target=False, probes=False,
        on_boundary=LMLearner.write_boundary,
    )  # fmt: skip
    learner.log_samples("last")
    return {
        **summary,
        "generations": prog.generation,
        "prior": {k: record[k] for k in ("config_hash", "held_out_accuracy", "held_out_loss", "steps")},
    }


class LMLearner:
    """What every LM :class:`~esbench.training.learner.Learner` shares: the start of a run (the
    point at timestep 0, or the recorded pretraining), the evaluation point (task rewards, solve
    rates, the prior's measures, ``policy_kl`` on answer positions), the rows' own columns,
    snapshots and the data-only checkpoint of the parameters. Subclasses take the steps.

    Args:
        cfg: The run config.
        store: The run's results store.
        logger: The run's metrics logger.
        loop: The run's sequence loop (its progress an :class:`LMProgress`).
        model: The model, at the parameters to start from.
        tokenizer: Its tokenizer.
        evaluator: What an evaluation point measures.
    """

    def __init__(
        self,
        cfg: DictConfig,
        store: RunStore,
        logger: MetricsLogger,
        loop: SequenceLoop,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        evaluator: LMEvaluator,
    ) -> None:
        assert isinstance(loop.p, LMProgress)
        self.cfg, self.store, self.logger, self.loop = cfg, store, logger, loop
        self.plan = loop.plan
        self.prog: LMProgress = loop.p
        self.model, self.tok, self.ev = model, tokenizer, evaluator
        self.tasks = tasks(cfg)
        self._scores: dict[str, TaskScore] = {}
        self._prior: dict[str, float] = {}
        self.workers = 1
        #: (initial parameters, training sequences) when stage 0 is the pretraining, else None.
        self.pretraining: tuple[np.ndarray, int] | None = None

    def log_rows(self, rows: list[dict[str, Any]], point: bool) -> None:
        """Write a step's rows, a point's with its solve rates and the prior's measures."""
        for row in rows:
            if point:
                score = self._scores.get(str(row["eval_task"]))
                row["solve_rate"] = score.solve_rate if score is not None else float("nan")
                row.update(self._prior)
                if score is not None:
                    self.prog.points_table.append(
                        [
                            int(row["timesteps"]),
                            str(row["eval_task"]),
                            score.solve_rate,
                            score.format_rate,
                            score.prompts,
                        ]
                    )
            self.logger.record_many(row)
            self.logger.dump()
        if point:
            self._write_points()

    def _write_points(self) -> None:
        """Rewrite :data:`POINTS_FILE` from the rows so far (atomic)."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(POINT_COLUMNS)
        writer.writerows(self.prog.points_table)
        atomic_write_text(self.store.path(POINTS_FILE), out.getvalue())

    # --- a step -----------------------------------------------------------------------------------
    def start(self, after_step: AfterStep) -> bool:
        """Hand the loop the step with no counts (the point at timestep 0 of a fresh run: the
        task-A model itself), or, when stage 0 is the pretraining (:attr:`pretraining`), the
        initial weights at timestep 0 and the pretraining as a step that ends the stage at the
        task-A model; True to go on with the stage's own steps."""
        first = self.prog.points == 0
        if self.pretraining is not None and first:
            initial, sequences = self.pretraining
            prior = self.params()
            load_flat(self.model, initial)
            after_step(self._step(ends_stage=False))
            load_flat(self.model, prior)
            go_on = after_step(self._step(sequences))
        else:
            go_on = after_step(self._step())
        if first:
            self.log_samples("first")
        return go_on

    def _step(
        self, sequences: int = 0, columns: dict[str, Any] | None = None, ends_stage: bool | None = None
    ) -> StepStats:
        """A step of ``sequences`` training sequences (completions), with ``columns`` (the
        parameters' norm alone by default)."""
        return StepStats(
            sequences, sequences, sequences, columns=columns or {"param_norm": self._norm()},
            generation=self.prog.generation, workers=self.workers, row=sequences > 0, ends_stage=ends_stage,
        )  # fmt: skip

    def train(self, after_step: AfterStep) -> None:
        """Train the current stage (the subclass's)."""
        raise NotImplementedError

    def log_samples(self, which: str) -> None:
        """The table of sample generations ``samples/<which>`` (``first``: the model training
        starts from, the task-A model; ``last``: the final model), on every stage's task: logged
        through the tracker (a W&B table) and written to ``samples_<which>.json`` in the run."""
        names = list(dict.fromkeys(stage_task(s) for s in self.plan.stages))
        data = self.ev.samples(self.model, names, self.prog.timesteps)
        self.logger.table(f"samples/{which}", SAMPLE_COLUMNS, data)
        atomic_write_json(self.store.path(f"samples_{which}.json"), {"columns": SAMPLE_COLUMNS, "data": data})

    def _norm(self) -> float:
        return float(np.linalg.norm(self.params().astype(np.float64)))

    def write_boundary(self) -> None:
        """Write the stage-boundary snapshots and the recorded stage states."""
        p = self.prog
        layout, names = param_blocks(self.model)
        write_snapshots(
            self.store.path(SNAPSHOTS_FILE), p.snapshots, self.plan.names, p.boundaries, layout, names
        )
        write_stage_states(self.store.path(STAGE_STATES_FILE), p.stage_states)

    def begin_stage(self, stage: Stage) -> None:
        """Nothing carries over but the parameters (an LM learner's optimizer starts afresh)."""
        del stage

    def checkpoint(self) -> None:
        """The parameter vector and the counters, with the count of rows written."""
        save_checkpoint(self.store, LM_STATE, LMLearnerState(self.params(), self.prog), len(self.logger.rows))

    # --- an evaluation point ----------------------------------------------------------------------
    def evaluate(self, j: int, seeds: Seeds) -> StageEval:
        """Stage ``j``'s task on its held-out prompts (greedy); the prior's measures with the first.
        The regular evaluation only (a language model has no seeds to confirm on, nor a
        stochastic protocol)."""
        if not seeds.regular:
            raise NotImplementedError("a language model evaluates on its held-out prompts only")
        if j == 0:
            self._prior = self.ev.prior(self.model)
        stage = self.plan.stages[j]
        score = self.ev.task(self.model, stage_task(stage))
        self._scores[stage.name] = score
        return StageEval(stage.name, score.reward, score.reward_std, score.prompts)

    def record_states(self) -> StageStates:
        """The trained stage's answer positions and the model's distributions there now."""
        stage = self.loop.stage
        states = self.ev.answer_states(stage_task(stage))
        return StageStates(stage.name, states, self.distribution(states), 0)

    def distribution(self, states: np.ndarray) -> ActionDist:
        """The model's next-token distributions at the answer positions of ``states``."""
        return self.ev.distribution(self.model, states)

    def params(self) -> np.ndarray:
        """The flat parameter vector."""
        return flat_params(self.model)


class LMESLearner(LMLearner):
    """ES on a language model: every generation's population in one batched forward pass
    (:class:`~esbench.policies.lm.population.PopulationModel`; full rank for ``openai_es``, rank
    ``algo.rank`` for ``eggroll``), fitness the mean reward on one prompt batch of the stage's
    task (``lm.decoding.fitness_prompts`` ``train`` prompts, a function of (seed, generation)),
    the update Eq. (2) of that module (``algo.learning_rate``, ``algo.sigma``).

    With a Dask ``client`` (``lm.population.chunk_members`` > 0) the members are decoded on the
    cluster's workers in the config's fixed chunks (:mod:`esbench.training.lm_population`)."""

    def __init__(self, *args: Any, client: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        cfg = self.cfg
        self.client = client
        if client is not None:
            self.workers = worker_count(client)
        self.chunk = int(OmegaConf.select(cfg, "lm.population.chunk_members", default=0) or 0)
        rank = int(cfg.algo.rank) if str(cfg.algo.name) == "eggroll" else None
        self.pop = PopulationModel(self.model, rank=rank)
        self.members = antithetic(int(cfg.algo.population_size))
        self.sigma = float(cfg.algo.sigma)
        self.lr = float(cfg.algo.learning_rate)
        self.batch = int(cfg.lm.decoding.fitness_prompts)
        anchored = str(OmegaConf.select(cfg, "algo.l2_anchor", default="zero")) == "stage_start"
        #: Anchored Weight Decay's strength (``algo.l2_coeff``), None without it.
        self.awd: float | None = float(cfg.algo.l2_coeff) if anchored else None

    def train(self, after_step: AfterStep) -> None:
        """Generations until the stage's budget is spent (a stage with budget 0 only takes its
        closing point)."""
        if self.start(after_step):
            while after_step(self.step()):
                pass

    def _distributed_fitness(
        self, generation: int, task: AdditionTask | CountdownTask, problems: list[Problem]
    ) -> np.ndarray:
        """The members' fitness from the cluster, one task per fixed chunk of members."""
        cfg = self.cfg
        model = OmegaConf.to_container(cfg.lm.model, resolve=True)
        assert isinstance(model, dict)
        tasks = [
            ChunkTask(
                model={str(k): v for k, v in model.items()},
                rank=self.pop.rank,
                seed=int(cfg.seed),
                generation=generation,
                members=tuple(chunk),
                sigma=self.sigma,
                problems=tuple(problems),
                task=task,
                max_new_tokens=int(cfg.lm.decoding.max_new_tokens),
                threads=torch.get_num_threads(),
            )
            for chunk in member_chunks(self.members, self.chunk)
        ]
        self.workers = worker_count(self.client)
        return distributed_fitness(self.client, self.params(), tasks)

    def step(self) -> StepStats:
        """One generation: members on one fixed prompt batch, the update."""
        loop, prog = self.loop, self.prog
        g = prog.generation
        task = self.tasks[stage_task(loop.stage)]
        problems = task.sample(int(self.cfg.seed), "train", self.batch, start=g * self.batch)
        if self.client is None:
            self.pop.set_population(int(self.cfg.seed), g, self.members, self.sigma)
            done = greedy_completions(
                self.model, self.tok, [p.prompt for p in problems], int(self.cfg.lm.decoding.max_new_tokens),
                len(self.members),
            )  # fmt: skip
            fitness = torch.tensor(
                [np.mean([task.reward(c, p) for c, p in zip(row, problems, strict=True)]) for row in done],
                dtype=torch.float64,
            )
        else:
            fitness = torch.from_numpy(self._distributed_fitness(g, task, problems))
            self.pop.set_population(int(self.cfg.seed), g, self.members, self.sigma)  # for the update
        before = self.params() if self.awd is not None else None
        stats = self.pop.update(fitness, self.lr)
        if before is not None and self.awd is not None:  # AWD toward the stage's starting parameters
            anchor = prog.snapshots[prog.stage]
            load_flat(self.model, anchored_decay(before, self.params(), anchor, self.awd))
        prog.generation += 1
        train = {
            "train_return_mean": float(fitness.mean()),
            "train_return_max": float(fitness.max()),
            "nonfinite_members": 0,
            "grad_norm": stats["update_norm"],
            "param_norm": self._norm(),
            "es/fitness_std": stats["fitness_std"],
        }
        return self._step(len(self.members) * len(problems), train)
