"""What an evaluation point measures on a language model: task reward, held-out loss, KL drift.

- :func:`task_reward`: mean outcome reward of greedy completions (task A: accuracy of the sum;
  task B: the verifier's reward), over a fixed prompt set.
- :func:`answer_loss`: mean next-token cross-entropy of the reference answers (and ``<eos>``)
  given the prompts, teacher forced: task A's held-out loss.
- :func:`next_token_kl`: mean KL(reference || model) of the next-token distributions at the
  answer positions of task-A prompts, teacher forced on the reference answers: how far the model
  drifted from the task-A model where task A is decided (Abdi, Gupta et al. 2026's KL drift).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import torch
import torch.nn.functional as F
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from esbench.envs.lm.tasks import Problem
from esbench.policies.lm.chat import chat_prompts
from esbench.policies.lm.decoding import greedy_completions


class Task(Protocol):
    """A task: its reward of a completion for a problem."""

    def reward(self, completion: str, problem: Problem) -> float: ...


def task_reward(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    task: Task,
    problems: Sequence[Problem],
    max_new_tokens: int,
    members: int = 1,
) -> torch.Tensor:
    """Mean reward per member over ``problems``, shape (members,), float64."""
    done = greedy_completions(model, tokenizer, [p.prompt for p in problems], max_new_tokens, members)
    return torch.tensor(
        [sum(task.reward(c, p) for c, p in zip(row, problems, strict=True)) / len(problems) for row in done],
        dtype=torch.float64,
    )


def teacher_forced(
    tokenizer: PreTrainedTokenizerBase, problems: Sequence[Problem]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(input_ids, attention_mask, labels), shape (B, T): ``<bos> prompt answer <eos>``, right
    padded, labels -100 except on the answer and ``<eos>`` (a chat model's prompt in its template,
    :func:`esbench.policies.lm.chat.chat_prompts`, and its end-of-turn as ``<eos>``)."""
    rows, labels = [], []
    for p, text in zip(problems, chat_prompts(tokenizer, [p.prompt for p in problems]), strict=True):
        prompt = tokenizer(text)["input_ids"]
        answer = tokenizer(p.answer, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        rows.append(prompt + answer)
        labels.append([-100] * len(prompt) + answer)
    width = max(len(r) for r in rows)
    pad = tokenizer.pad_token_id
    ids = torch.tensor([r + [pad] * (width - len(r)) for r in rows])
    mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows])
    lab = torch.tensor([r + [-100] * (width - len(r)) for r in labels])
    return ids, mask, lab


def _shifted_logits(model: PreTrainedModel, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return model(input_ids=ids, attention_mask=mask).logits[:, :-1].float()


@torch.no_grad()
def answer_loss(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, problems: Sequence[Problem]
) -> float:
    """Mean cross-entropy (nats per answer token) of the reference answers, teacher forced."""
    ids, mask, labels = teacher_forced(tokenizer, problems)
    logits = _shifted_logits(model, ids, mask)
    return float(F.cross_entropy(logits.transpose(1, 2), labels[:, 1:], ignore_index=-100))


@torch.no_grad()
def next_token_kl(
    model: PreTrainedModel,
    reference: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    problems: Sequence[Problem],
) -> float:
    """Mean KL(reference || model), in nats, over the answer positions of ``problems``."""
    ids, mask, labels = teacher_forced(tokenizer, problems)
    logp = F.log_softmax(_shifted_logits(model, ids, mask), dim=-1)
    logq = F.log_softmax(_shifted_logits(reference, ids, mask), dim=-1)
    kl = (logq.exp() * (logq - logp)).sum(-1)  # (B, T-1)
    at = labels[:, 1:] != -100
    return float(kl[at].mean())
