"""The language model and its tokenizer, built from a config with nothing downloaded.

By default a Llama-architecture decoder-only transformer (``transformers.LlamaConfig``) of about
1M parameters over the character tokenizer (:class:`esbench.envs.lm.tokenizer.CharTokenizer`):
small enough that a population of members fits in one batched forward pass on a 2-core CPU.
With ``hub_id`` set (for example ``HuggingFaceTB/SmolLM2-135M``) the same recipe loads that
model and its tokenizer with ``AutoModelForCausalLM.from_pretrained`` instead (needs the hub or
a local copy; a GPU helps).
"""

from __future__ import annotations

import torch
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from esbench.config.lm import ModelConfig
from esbench.envs.lm.tokenizer import CharTokenizer

__all__ = ["ModelConfig", "build_model", "build_tokenizer", "num_parameters"]


def build_tokenizer(cfg: ModelConfig) -> PreTrainedTokenizerBase:
    """The character tokenizer, or the hub model's own (left padding either way)."""
    if cfg.hub_id is None:
        return CharTokenizer()
    tok = AutoTokenizer.from_pretrained(cfg.hub_id, padding_side="left")
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


def build_model(cfg: ModelConfig, tokenizer: PreTrainedTokenizerBase | None = None) -> PreTrainedModel:
    """A freshly initialized model (the same weights for the same ``cfg``), or the hub model.

    The model is float32, in eval mode, on the CPU; its generation config says: greedy, pad with
    the tokenizer's pad token, stop at its end-of-sequence token.
    """
    tok = tokenizer if tokenizer is not None else build_tokenizer(cfg)
    if cfg.hub_id is not None:
        model = AutoModelForCausalLM.from_pretrained(cfg.hub_id, dtype=torch.float32)
    else:
        if cfg.hidden_size % cfg.num_heads:
            raise ValueError(
                f"lm.model.hidden_size={cfg.hidden_size} is not a multiple of "
                f"lm.model.num_heads={cfg.num_heads}"
            )
        config = LlamaConfig(
            vocab_size=len(tok),
            hidden_size=cfg.hidden_size,
            intermediate_size=cfg.intermediate_size,
            num_hidden_layers=cfg.num_layers,
            num_attention_heads=cfg.num_heads,
            num_key_value_heads=cfg.num_heads,
            max_position_embeddings=cfg.max_positions,
            pad_token_id=tok.pad_token_id,
            bos_token_id=tok.bos_token_id,
            eos_token_id=tok.eos_token_id,
            tie_word_embeddings=False,
        )
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(cfg.init_seed)
            model = LlamaForCausalLM(config)  # type: ignore[assignment]
    gen = model.generation_config
    gen.do_sample = False
    gen.pad_token_id, gen.eos_token_id, gen.bos_token_id = (
        tok.pad_token_id,
        tok.eos_token_id,
        tok.bos_token_id,
    )
    for key in ("temperature", "top_p", "top_k"):
        setattr(gen, key, None)
    return model.float().eval()


def num_parameters(model: torch.nn.Module) -> int:
    """Number of parameters (the ES search space)."""
    return sum(p.numel() for p in model.parameters())
