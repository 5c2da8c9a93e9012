"""The language model and its tokenizer, built from a config with nothing downloaded.

By default a Llama-architecture decoder-only transformer (``transformers.LlamaConfig``) of about
1M parameters over the character tokenizer (:class:`esbench.envs.lm.tokenizer.CharTokenizer`):
small enough that a population of members fits in one batched forward pass on a 2-core CPU.
With ``hub_id`` set (for example ``HuggingFaceTB/SmolLM2-135M``) the same recipe loads that
model and its tokenizer with ``AutoModelForCausalLM.from_pretrained`` instead (needs the hub or
a local copy; a GPU helps).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from esbench.envs.lm.tokenizer import CharTokenizer


@dataclass(frozen=True)
class ModelConfig:
    """Architecture of the locally built model, or the hub model that replaces it.

    Attributes:
        hub_id: A hub model id (or a local directory): when set, every other field is ignored and
            model and tokenizer come from it. None: build the small model below.
        hidden_size: Width of the residual stream.
        num_layers: Transformer blocks.
        num_heads: Attention heads (``hidden_size`` must divide by it).
        intermediate_size: Width of each block's gated MLP.
        max_positions: Longest sequence (prompt plus completion) in tokens.
        init_seed: Seed of the random initialization (torch's global RNG is set from it).
    """

    hub_id: str | None = None
    hidden_size: int = 128
    num_layers: int = 4
    num_heads: int = 4
    intermediate_size: int = 512
    max_positions: int = 64
    init_seed: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


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
                f"lm.model.hidden_size={cfg.hidden_size} is not a multiple of lm.model.num_heads={cfg.num_heads}"
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
            model = LlamaForCausalLM(config)
    gen = model.generation_config
    gen.do_sample = False
    gen.pad_token_id, gen.eos_token_id, gen.bos_token_id = tok.pad_token_id, tok.eos_token_id, tok.bos_token_id
    for key in ("temperature", "top_p", "top_k"):
        setattr(gen, key, None)
    return model.float().eval()


def num_parameters(model: torch.nn.Module) -> int:
    """Number of parameters (the ES search space)."""
    return sum(p.numel() for p in model.parameters())
