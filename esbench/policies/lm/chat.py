"""Task prompts in a chat model's own template.

The tasks' prompts are terse (``347+85=``, ``3,5,7:56=``): the default model learns that format
from scratch. An instruct model (``lm.model.hub_id=HuggingFaceTB/SmolLM2-135M-Instruct``) is
asked in its chat template instead: one system message saying what the two prompt forms ask
(:data:`INSTRUCTION`) and the task's prompt as the user's message, ending in the template's
assistant turn, so the completion is the model's reply. A tokenizer without a chat template
(the character tokenizer) gets the prompt unchanged. The reward reads the reply as the tasks
read any completion (the sum; an expression over the given numbers).
"""

from __future__ import annotations

from collections.abc import Sequence

from transformers import PreTrainedTokenizerBase

#: The system message of a chat prompt: the two prompt forms and the answer's form.
INSTRUCTION = (
    "You solve arithmetic puzzles. 'a+b=' asks for the sum. 'n1,n2,n3:t=' asks for an expression "
    "that uses each of n1, n2, n3 exactly once, with + - * / and parentheses, and equals t. "
    "Reply with the answer only. Examples: '12+5=' -> 17. '3,5,7:56=' -> (3+5)*7."
)


def chat_prompts(tokenizer: PreTrainedTokenizerBase, prompts: Sequence[str]) -> list[str]:
    """``prompts`` as the text the model is given: in the tokenizer's chat template when it has
    one (system :data:`INSTRUCTION`, the prompt as the user's turn, the assistant's turn opened),
    else unchanged."""
    if not getattr(tokenizer, "chat_template", None):
        return list(prompts)
    out = []
    for prompt in prompts:
        messages = [{"role": "system", "content": INSTRUCTION}, {"role": "user", "content": prompt}]
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        out.append(str(text))
    return out
