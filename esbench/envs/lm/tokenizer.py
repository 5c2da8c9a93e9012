"""A character-level tokenizer for arithmetic prompts, built locally (no hub download).

One token per character of ``0-9 + - * / ( ) = , :`` and space, plus ``<pad>``, ``<bos>`` and
``<eos>``. It is a :class:`transformers.PreTrainedTokenizer`, so TRL's ``GRPOTrainer`` and
``model.generate`` accept it like any hub tokenizer; padding is on the left, as batched
generation with a decoder-only model needs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from transformers import PreTrainedTokenizer

#: The characters a prompt or a completion may contain, in vocabulary order after the specials.
CHARS = "0123456789+-*/()=,: "
SPECIALS = ("<pad>", "<bos>", "<eos>")


class CharTokenizer(PreTrainedTokenizer):
    """Characters of :data:`CHARS` as tokens; ids 0, 1, 2 are ``<pad>``, ``<bos>``, ``<eos>``.

    ``encode(text)`` prepends ``<bos>`` (a sequence always starts with it, so the first real
    character has a context). An unknown character is an error, never silently dropped.
    """

    vocab_files_names = {"vocab_file": "vocab.json"}  # noqa: RUF012 (transformers' attribute)
    model_input_names = ["input_ids", "attention_mask"]  # noqa: RUF012 (transformers' attribute)

    def __init__(self, **kwargs: Any) -> None:
        self._vocab = {tok: i for i, tok in enumerate([*SPECIALS, *CHARS])}
        self._inverse = {i: tok for tok, i in self._vocab.items()}
        kwargs.pop("vocab_file", None)
        kwargs.setdefault("pad_token", "<pad>")
        kwargs.setdefault("bos_token", "<bos>")
        kwargs.setdefault("eos_token", "<eos>")
        kwargs.setdefault("padding_side", "left")
        kwargs.setdefault("model_max_length", 512)
        super().__init__(**kwargs)

    @property
    def vocab_size(self) -> int:
        return len(self._vocab)

    def get_vocab(self) -> dict[str, int]:
        return dict(self._vocab)

    def _tokenize(self, text: str, **kwargs: Any) -> list[str]:
        bad = sorted({c for c in text if c not in self._vocab})
        if bad:
            raise ValueError(f"characters {bad} are not in the tokenizer's alphabet {CHARS!r}")
        return list(text)

    def _convert_token_to_id(self, token: str) -> int:
        return self._vocab[token]

    def _convert_id_to_token(self, index: int) -> str:
        return self._inverse[int(index)]

    def convert_tokens_to_string(self, tokens: list[str]) -> str:
        return "".join(tokens)

    def build_inputs_with_special_tokens(
        self, token_ids_0: list[int], token_ids_1: list[int] | None = None
    ) -> list[int]:
        """``<bos>`` + ids (a pair is concatenated, for completeness)."""
        return [self.bos_token_id, *token_ids_0, *(token_ids_1 or [])]

    def save_vocabulary(self, save_directory: str, filename_prefix: str | None = None) -> tuple[str, ...]:
        path = Path(save_directory) / f"{filename_prefix + '-' if filename_prefix else ''}vocab.json"
        path.write_text(json.dumps(self._vocab))
        return (str(path),)
