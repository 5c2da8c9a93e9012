"""The prior capability: supervised next-token training on task A, cached by config hash.

The retention study needs a model that already does task A before it learns task B. Nothing is
downloaded, so it is made here: plain teacher-forced cross-entropy on ``<bos> prompt answer
<eos>`` (loss on the answer and ``<eos>`` only), AdamW, a linear warm-up then a constant rate,
batches drawn from task A's ``train`` split by (seed, step). Optionally a share of each batch
(``countdown_fraction``) is solved Countdown puzzles with fewer numbers than task B's (the answer
format, not the task), and a share (``solved_fraction``) is solved puzzles of task B's own shape
from task B's ``train`` split, so the base already solves some held-out task-B puzzles, as an
instruct model solves some Countdown before post-training (Qiu et al. 2025). Those puzzles are
drawn under a seed derived from (pretraining seed, :data:`SOLVED_PUZZLES`), a stream apart from
the study's fitness and GRPO prompts (drawn under the run seed); the held-out split is never drawn.

Training is deterministic on the CPU for a given torch and thread count: no dropout, fixed
initialization (``ModelConfig.init_seed``), data a pure function of (seed, step). The result is
cached under ``$ESBENCH_CACHE/lm/<hash>/`` (default ``~/.cache/esbench``), the hash over
everything that shapes the weights: ``model.safetensors`` (the state dict, data only) and
``made.json`` (the configs, steps, seconds, held-out task-A accuracy and loss, with task B the
held-out solve and format rates, versions).

Several runs may ask for the same task-A model at once (two jobs of a sweep on two Dask workers):
the first takes an exclusive ``flock`` on ``<hash>.lock`` beside the cache entry and trains, the
others wait on the lock and then load what it saved, so the model is trained once and no job
races another to make it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch
import transformers
from safetensors.torch import load_file, save_file
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from esbench.config.lm import ModelConfig, PretrainConfig
from esbench.envs.lm.tasks import AdditionTask, CountdownTask, Problem
from esbench.policies.lm.decoding import greedy_completions
from esbench.policies.lm.evaluation import answer_loss, task_reward, teacher_forced
from esbench.policies.lm.model import build_model, build_tokenizer, model_weights
from esbench.utils.io import atomic_write_json
from esbench.utils.seeding import derive_seed

#: Bump when the training procedure changes in a way the configs do not show.
FORMAT = 1
#: The purpose key of the solved task-B puzzles' seed (:func:`~esbench.utils.seeding.derive_seed`).
SOLVED_PUZZLES = 1
#: Decoding length of the recorded task-B measures (``lm.decoding.max_new_tokens``'s default).
TASK_B_TOKENS = 12


def cache_root() -> Path:
    """``$ESBENCH_CACHE/lm`` (default ``~/.cache/esbench/lm``)."""
    return Path(os.environ.get("ESBENCH_CACHE", Path.home() / ".cache" / "esbench")) / "lm"


def config_hash(
    model: ModelConfig, pretrain: PretrainConfig, task: AdditionTask, task_b: CountdownTask | None = None
) -> str:
    """First 16 hex digits of the sha256 of everything that shapes the pretrained weights (a hub
    model's too: where its weights come from, :func:`~esbench.policies.lm.model.model_weights`, so
    the hub's and a package's copies never share a cache entry). Without solved task-B puzzles in
    the mix, ``solved_fraction`` and task B do not enter it: such a model keeps the hash it had
    before the mix could hold them."""
    pre = asdict(pretrain)
    if pretrain.solved_fraction == 0:
        del pre["solved_fraction"]
    shaping: dict[str, Any] = {
        "format": FORMAT,
        "model": model.as_dict(),
        "pretrain": pre,
        "task_a": asdict(task),
    }
    if pretrain.solved_fraction > 0:
        shaping["task_b"] = _puzzle_shape(_mixed_task_b(pretrain, task_b))
    if model.hub_id is not None:
        shaping["weights"] = model_weights(model.hub_id).source
    blob = json.dumps(shaping, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _puzzle_shape(task_b: CountdownTask) -> dict[str, Any]:
    """What of task B shapes the solved puzzles of the mix (not its reward's format score)."""
    return {k: v for k, v in asdict(task_b).items() if k != "format_score"}


def _mixed_task_b(cfg: PretrainConfig, task_b: CountdownTask | None) -> CountdownTask:
    """Task B, whose solved puzzles the mix holds; a clear error when the mix needs it and it is missing."""
    if task_b is None:
        raise ValueError(f"lm.pretrain.solved_fraction={cfg.solved_fraction} needs task B (lm.task_b)")
    return task_b


def _batch(
    task: AdditionTask, cfg: PretrainConfig, step: int, task_b: CountdownTask | None = None
) -> list[Problem]:
    """Pretraining batch ``step``: task A, then the easier puzzles, then solved task-B puzzles."""
    n_cd = round(cfg.countdown_fraction * cfg.batch_size)
    n_solved = round(cfg.solved_fraction * cfg.batch_size)
    start = step * cfg.batch_size
    problems = task.sample(cfg.seed, "train", cfg.batch_size - n_cd - n_solved, start=start)
    if n_cd:
        mix = CountdownTask(count=cfg.countdown_count)
        problems += mix.sample(cfg.seed, "train", n_cd, start=start)
    if n_solved:
        puzzles = _mixed_task_b(cfg, task_b)
        problems += puzzles.sample(derive_seed(cfg.seed, SOLVED_PUZZLES), "train", n_solved, start=start)
    return problems


def train(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    task: AdditionTask,
    cfg: PretrainConfig,
    task_b: CountdownTask | None = None,
) -> dict[str, float]:
    """Train ``model`` in place for ``cfg.steps`` steps; returns the last step's loss."""
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / max(cfg.warmup, 1)))
    model.train()
    loss = torch.zeros(())
    for step in range(cfg.steps):
        ids, mask, labels = teacher_forced(tokenizer, _batch(task, cfg, step, task_b))
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
    model.eval()
    return {"final_train_loss": float(loss.detach())}


def pretrained(
    model_cfg: ModelConfig,
    cfg: PretrainConfig,
    task: AdditionTask,
    max_new_tokens: int = 8,
    cache: Path | None = None,
    task_b: CountdownTask | None = None,
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase, dict[str, Any]]:
    """The task-A model: loaded from the cache if made before, else trained and cached.

    Args:
        model_cfg: The model to build (or load).
        cfg: The pretraining.
        task: Task A.
        max_new_tokens: Decoding length of the recorded held-out measures.
        cache: The cache root (default :func:`cache_root`).
        task_b: Task B: the shape of the mix's solved puzzles (``cfg.solved_fraction``), and the
            held-out solve and format rates the record holds.

    Returns:
        (model, tokenizer, record), the record as in ``made.json`` plus ``cached`` (whether it was
        loaded) and ``path``.
    """
    tokenizer = build_tokenizer(model_cfg)
    model = build_model(model_cfg, tokenizer)
    where = (cache or cache_root()) / config_hash(model_cfg, cfg, task, task_b)
    if (where / "made.json").exists():
        return _load(where, model, tokenizer)
    with _locked(where):  # one process trains; the others wait here, then load its model
        if (where / "made.json").exists():
            return _load(where, model, tokenizer)
        return _make(where, model, tokenizer, cfg, task, model_cfg, max_new_tokens, task_b)


@contextlib.contextmanager
def _locked(where: Path) -> Iterator[None]:
    """The machine-wide lock for making the cache entry ``where`` (a blocking ``flock``)."""
    where.parent.mkdir(parents=True, exist_ok=True)
    with open(where.with_name(where.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _load(
    where: Path, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase, dict[str, Any]]:
    """The cached task-A model at ``where``, loaded into ``model``."""
    model.load_state_dict(load_file(str(where / "model.safetensors")))
    record = json.loads((where / "made.json").read_text())
    return model, tokenizer, {**record, "cached": True, "path": str(where)}


def _make(
    where: Path,
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    cfg: PretrainConfig,
    task: AdditionTask,
    model_cfg: ModelConfig,
    max_new_tokens: int,
    task_b: CountdownTask | None = None,
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase, dict[str, Any]]:
    """Train ``model`` on task A, save it at ``where``, and return it with its record."""
    start = time.perf_counter()
    last = train(model, tokenizer, task, cfg, task_b)
    seconds = time.perf_counter() - start
    held_out = task.sample(cfg.seed, "held_out", cfg.eval_size)
    solving = {} if task_b is None else base_task_b(model, tokenizer, task_b, cfg.seed, cfg.eval_size)
    record = {
        "config_hash": where.name,
        "model": model_cfg.as_dict(),
        **({"weights": model_weights(model_cfg.hub_id).source} if model_cfg.hub_id is not None else {}),
        "pretrain": asdict(cfg),
        "task_a": asdict(task),
        "steps": cfg.steps,
        "seconds": round(seconds, 2),
        "held_out_accuracy": float(task_reward(model, tokenizer, task, held_out, max_new_tokens)[0]),
        "held_out_loss": answer_loss(model, tokenizer, held_out),
        **solving,
        **({"task_b": _puzzle_shape(task_b)} if task_b is not None else {}),
        **last,
        "parameters": sum(p.numel() for p in model.parameters()),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "torch_threads": torch.get_num_threads(),
    }
    _save(where, model, record)
    return model, tokenizer, {**record, "cached": False, "path": str(where)}


def base_task_b(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, task_b: CountdownTask, seed: int, n: int
) -> dict[str, float]:
    """The model's held-out task-B ``solve_rate`` and ``format_rate`` on ``n`` prompts (greedy)."""
    problems = task_b.sample(seed, "held_out", n)
    done = greedy_completions(model, tokenizer, [p.prompt for p in problems], TASK_B_TOKENS)[0]
    return {
        "task_b_solve_rate": sum(task_b.solved(c, p) for c, p in zip(done, problems, strict=True)) / n,
        "task_b_format_rate": sum(task_b.formatted(c, p) for c, p in zip(done, problems, strict=True)) / n,
    }


def _unshared(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The state dict with every tensor its own memory, as safetensors requires: a tied weight
    (SmolLM2's input and output embeddings) is written under both names, loaded back into the one."""
    seen: set[int] = set()
    out = {}
    for k, v in state.items():
        t = v.contiguous()
        out[k] = t.clone() if t.data_ptr() in seen else t
        seen.add(t.data_ptr())
    return out


def _save(where: Path, model: PreTrainedModel, record: dict[str, Any]) -> None:
    """Write weights and record into a temporary sibling, then move it into place (atomic)."""
    where.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=where.parent, prefix=f".{where.name}-"))
    try:
        state = _unshared(model.state_dict())
        save_file(state, str(tmp / "model.safetensors"))
        atomic_write_json(tmp / "made.json", record)
        try:
            tmp.rename(where)
        except OSError:  # another process made it first: theirs is the same model
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
