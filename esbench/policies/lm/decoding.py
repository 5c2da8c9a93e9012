"""The fixed decoding protocol: greedy, a fixed number of new tokens, stop at end-of-sequence.

Every ES fitness evaluation and every evaluation of any learner decodes this way: argmax at each
step (no sampling, so a member's completion is a function of its weights and the prompt), at
most ``max_new_tokens`` tokens, everything from the first ``<eos>`` on dropped. Prompts are left
padded into one batch. With a population set on the model
(:class:`esbench.policies.lm.population.PopulationModel`) the batch is P copies of the prompts,
member-major, and the completions come back per member.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from esbench.policies.lm.chat import chat_prompts


def encode_prompts(tokenizer: PreTrainedTokenizerBase, prompts: Sequence[str]) -> dict[str, torch.Tensor]:
    """Left-padded ``input_ids`` and ``attention_mask``, shape (B, T), of the prompts as the model
    is given them (a chat model's in its template: :func:`esbench.policies.lm.chat.chat_prompts`)."""
    return dict(tokenizer(chat_prompts(tokenizer, prompts), padding=True, return_tensors="pt"))


@torch.no_grad()
def greedy_completions(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    prompts: Sequence[str],
    max_new_tokens: int,
    members: int = 1,
) -> list[list[str]]:
    """Greedy completions of ``prompts`` by each of ``members`` members (1: the plain model).

    Returns:
        ``out[p][b]``: member p's completion of prompt b, special tokens removed.
    """
    batch = encode_prompts(tokenizer, prompts)
    ids, mask = batch["input_ids"].repeat(members, 1), batch["attention_mask"].repeat(members, 1)
    out = model.generate(  # type: ignore[operator]
        input_ids=ids,
        attention_mask=mask,
        max_new_tokens=max_new_tokens,
        do_sample=False,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    new = out[:, ids.shape[1] :]
    texts = tokenizer.batch_decode(new, skip_special_tokens=True)
    b = len(prompts)
    return [texts[p * b : (p + 1) * b] for p in range(members)]
