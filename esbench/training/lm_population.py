"""An LM ES generation's members on Dask workers, in fixed chunks the config names.

With ``lm.population.chunk_members=K`` (K > 0) a generation's P members are cut into the chunks
``[0, K), [K, 2K), ...`` (the last may be shorter), and each chunk is one Dask task: the worker
loads the generation's parameters, regenerates its members' perturbations from (seed,
generation, member index) and decodes the fitness prompts with them as one batch of K x B
sequences. A member's completions depend on the batch it is decoded in (a shared GEMM rounds a
row by its batch), so the batch composition is the config's, never the cluster's: 1 worker or
20 run the same chunks and the run computes the same parameters, bit for bit. The driver then
regenerates the whole population's noise (cheap: seeds) and applies the update.

``chunk_members=0`` (the default) keeps the whole population in one batch on the driver, with
no cluster.

A worker keeps one model per architecture (:data:`_MODELS`): building it costs more than a
generation of a tiny model, and the parameters are overwritten from the driver's vector every
task, so nothing carries over between generations but the architecture.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from esbench.config.lm import ModelConfig
from esbench.envs.lm.tasks import AdditionTask, CountdownTask, Problem
from esbench.policies.lm.decoding import greedy_completions
from esbench.policies.lm.model import build_model, build_tokenizer
from esbench.policies.lm.population import Member, PopulationModel

__all__ = ["ChunkTask", "distributed_fitness", "evaluate_chunk", "member_chunks"]


def member_chunks(members: list[Member], chunk: int) -> list[list[Member]]:
    """``members`` cut into consecutive chunks of ``chunk`` (the last may be shorter)."""
    if chunk < 1:
        raise ValueError(f"chunk={chunk} must be >= 1")
    return [members[i : i + chunk] for i in range(0, len(members), chunk)]


@dataclass(frozen=True)
class ChunkTask:
    """What a worker needs beside the parameters: the architecture and one generation's chunk.

    Attributes:
        model: The architecture (``lm.model``), as a dict of :class:`ModelConfig` fields.
        rank: EGGROLL's rank, or None for full-rank members.
        seed: The run seed (names the noise with the generation and member index).
        generation: The generation.
        members: The chunk's members.
        sigma: The perturbation scale.
        problems: The generation's fitness prompts.
        task: The stage's task (its reward).
        max_new_tokens: The decoding protocol's completion length.
        threads: Torch threads on the worker (the driver's ``torch_threads``).
    """

    model: dict[str, Any]
    rank: int | None
    seed: int
    generation: int
    members: tuple[Member, ...]
    sigma: float
    problems: tuple[Problem, ...]
    task: AdditionTask | CountdownTask
    max_new_tokens: int
    threads: int


#: A worker's models, by architecture and rank: (population model, tokenizer).
_MODELS: dict[str, tuple[PopulationModel, PreTrainedModel, PreTrainedTokenizerBase]] = {}


def _model(task: ChunkTask) -> tuple[PopulationModel, PreTrainedModel, PreTrainedTokenizerBase]:
    key = json.dumps([task.model, task.rank], sort_keys=True)
    if key not in _MODELS:
        cfg = ModelConfig(**task.model)
        tok = build_tokenizer(cfg)
        _MODELS.clear()  # one architecture at a time: a worker serves one run's generations
        model = build_model(cfg, tok).eval()
        _MODELS[key] = (PopulationModel(model, rank=task.rank), model, tok)
    return _MODELS[key]


def evaluate_chunk(params: np.ndarray, task: ChunkTask) -> np.ndarray:
    """The chunk's members' fitness (mean reward over the prompts), shape (len(members),), float64.

    Runs on a Dask worker (or anywhere): the model is set to ``params``, the chunk's perturbations
    regenerated from seeds, and the members decode the prompts as one batch.
    """
    torch.set_num_threads(task.threads)
    pop, model, tok = _model(task)
    vector = torch.from_numpy(np.array(params, copy=True))
    with torch.no_grad():
        torch.nn.utils.vector_to_parameters(vector, model.parameters())
    pop.set_population(task.seed, task.generation, list(task.members), task.sigma)
    try:
        done = greedy_completions(
            model, tok, [p.prompt for p in task.problems], task.max_new_tokens, len(task.members)
        )
    finally:
        pop.clear()
    return np.array(
        [np.mean([task.task.reward(c, p) for c, p in zip(row, task.problems, strict=True)]) for row in done],
        dtype=np.float64,
    )


def distributed_fitness(client: Any, params: np.ndarray, tasks: list[ChunkTask]) -> np.ndarray:
    """Every chunk's fitness, from Dask workers, concatenated in chunk (= member) order.

    The parameters are scattered once per generation (``hash=False``: a fresh key each time, so a
    worker never reads an earlier generation's vector); each chunk is one task.
    """
    shared = client.scatter(params, broadcast=False, hash=False)
    futures = [client.submit(evaluate_chunk, shared, t, pure=False) for t in tasks]
    try:
        return np.concatenate(client.gather(futures))
    finally:
        del futures, shared
