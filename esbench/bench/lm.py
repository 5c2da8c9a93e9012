"""``esbench bench lm``: ES members of a language model per second, EGGROLL against plain inference.

EGGROLL's claim (Sarkar et al. 2025, arXiv:2511.16652) is that low-rank perturbations let a whole
population run as one batched forward pass at nearly the throughput of plain batched inference
(up to 91% in the paper). This measures it on the default LM (``ModelConfig()``, ~1M parameters)
in one process with one torch thread (as one Dask worker per core runs):

* **forward passes**: one teacher-forced forward pass over ``members`` x ``prompts`` sequences
  (task-B prompts with their reference answers). ``batched inference``: the unperturbed model on
  that whole batch. ``eggroll``: the population model with rank-``rank`` members (Eq. 1 of
  :mod:`esbench.policies.lm.population`). ``full rank``: every member's dense ``W + sigma E_i``,
  built and applied with a batched matmul. Reported as member forward passes per second (one
  member's pass = its ``prompts`` sequences) and as ratios to batched inference; the headline ratio
  is ``eggroll_over_batched_inference``.
* **ES generation**: one generation split into ``noise`` (regenerating every member's
  perturbation from seeds), ``forward`` (greedy decoding of every member's completions, the fixed
  protocol), ``reward`` (the verifier on every completion) and ``update`` (Eq. 2), for EGGROLL and
  for full-rank members.

Times are medians of ``repeats`` interleaved repeats (the three forward variants take turns, so a
busy machine slows each alike).

``esbench bench lm lm.model.hub_id=HuggingFaceTB/SmolLM2-135M-Instruct members=8`` measures the
same on a hub model (:func:`parse_lm_args`). Full-rank members hold ``members`` dense copies of
every weight, so they are left out (``None`` in the results) when those copies would pass
:data:`FULL_RANK_BYTES`, unless ``full_rank=true`` asks for them.
"""

from __future__ import annotations

import copy
import statistics
import time
from typing import Any

import torch

from esbench.envs.lm.tasks import CountdownTask
from esbench.policies.lm.decoding import greedy_completions
from esbench.policies.lm.evaluation import teacher_forced
from esbench.policies.lm.model import ModelConfig, build_model, build_tokenizer, num_parameters
from esbench.policies.lm.population import PopulationModel, antithetic

#: Largest size of the full-rank members' dense perturbations measured by default (2 GiB).
FULL_RANK_BYTES = 2 * 2**30
#: ``esbench bench lm`` arguments besides ``lm.model.<key>=<value>``, and their types.
_ARGS: dict[str, type] = {"members": int, "prompts": int, "repeats": int, "rank": int, "full_rank": bool}


def parse_lm_args(argv: list[str]) -> dict[str, Any]:
    """``bench_lm`` keyword arguments from ``KEY=VALUE`` words: ``lm.model.<field>`` (the
    :class:`~esbench.config.lm.ModelConfig` of the model measured) and ``members``, ``prompts``,
    ``repeats``, ``rank``, ``full_rank`` (``true``/``false``).

    Raises:
        ValueError: A word that is not ``KEY=VALUE``, an unknown key or a value of the wrong type
            (the message names it and what is allowed).
    """
    fields = ModelConfig.__dataclass_fields__
    model: dict[str, Any] = {}
    out: dict[str, Any] = {}
    allowed = ", ".join([*(f"lm.model.{f}" for f in fields), *_ARGS])
    for word in argv:
        key, eq, value = word.partition("=")
        if not eq:
            raise ValueError(f"{word!r} is not KEY=VALUE; allowed keys: {allowed}")
        try:
            if key.startswith("lm.model.") and key[len("lm.model.") :] in fields:
                name = key[len("lm.model.") :]
                model[name] = (
                    None
                    if value in ("null", "") and name == "hub_id"
                    else _typed(value, str if name == "hub_id" else int)
                )
            elif key in _ARGS:
                out[key] = _typed(value, _ARGS[key])
            else:
                raise ValueError(f"unknown key {key!r}; allowed: {allowed}")
        except (TypeError, ValueError) as e:
            raise ValueError(f"{word}: {e}") from None
    if model:
        out["model_cfg"] = ModelConfig(**model)
    return out


def _typed(value: str, kind: type) -> Any:
    if kind is bool:
        if value.lower() not in ("true", "false"):
            raise ValueError(f"{value!r} is not true or false")
        return value.lower() == "true"
    try:
        return kind(value)
    except ValueError:
        raise ValueError(
            f"{value!r} is not {'an integer' if kind is int else 'a ' + kind.__name__}"
        ) from None


def bench_lm(
    members: int = 32,
    prompts: int = 16,
    rank: int = 1,
    sigma: float = 0.001,
    repeats: int = 7,
    max_new_tokens: int = 12,
    model_cfg: ModelConfig | None = None,
    threads: int = 1,
    full_rank: bool | None = None,
) -> dict[str, Any]:
    """Measure forward-pass throughput and one ES generation's split; see the module docstring.

    ``full_rank``: measure full-rank members too; None: when their dense perturbations fit in
    :data:`FULL_RANK_BYTES`.
    """
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return _bench(
            members,
            prompts,
            rank,
            sigma,
            repeats,
            max_new_tokens,
            model_cfg or ModelConfig(),
            threads,
            full_rank,
        )
    finally:
        torch.set_num_threads(previous)


def _bench(
    members: int,
    prompts: int,
    rank: int,
    sigma: float,
    repeats: int,
    max_new_tokens: int,
    cfg: ModelConfig,
    threads: int,
    full_rank: bool | None = None,
) -> dict[str, Any]:
    tok = build_tokenizer(cfg)
    plain = build_model(cfg, tok)
    if full_rank is None:
        full_rank = members * num_parameters(plain) * 4 <= FULL_RANK_BYTES
    low = PopulationModel(copy.deepcopy(plain), rank=rank)
    pop = antithetic(members)
    task = CountdownTask()
    problems = task.sample(0, "train", prompts)
    ids, mask, _ = teacher_forced(tok, problems)
    big_ids, big_mask = ids.repeat(members, 1), mask.repeat(members, 1)
    low.set_population(0, 0, pop, sigma)
    models = {"batched_inference": plain, "eggroll": low.model}
    full = None
    if full_rank:
        full = PopulationModel(copy.deepcopy(plain), rank=None)
        full.set_population(0, 0, pop, sigma)
        models["full_rank"] = full.model

    seconds = _forward_seconds(models, big_ids, big_mask, repeats)
    # One decoding step's shape: every sequence feeds one token (B rows per member, not B*T).
    decode = _forward_seconds(models, big_ids[:, -1:], big_mask[:, -1:], repeats)
    decode_rate = {k: members / s for k, s in decode.items()}
    rate = {k: members / s for k, s in seconds.items()}  # member forward passes per second

    generation = {"eggroll": _generation(low, pop, sigma, tok, task, problems, max_new_tokens, repeats)}
    if full is not None:
        generation["full_rank"] = _generation(full, pop, sigma, tok, task, problems, max_new_tokens, repeats)

    def of(a: dict[str, float], key: str) -> float | None:
        return a[key] / a["batched_inference"] if key in a else None

    return {
        "model": cfg.as_dict(),
        "parameters": num_parameters(plain),
        "members": members,
        "prompts": prompts,
        "sequence_tokens": int(ids.shape[1]),
        "rank": rank,
        "torch_threads": threads,
        "repeats": repeats,
        "forward_seconds": seconds,
        "member_forward_passes_per_s": rate,
        "eggroll_over_batched_inference": of(rate, "eggroll"),
        "full_rank_over_batched_inference": of(rate, "full_rank"),
        "eggroll_over_full_rank": rate["eggroll"] / rate["full_rank"] if full is not None else None,
        "decode_step_seconds": decode,
        "decode_member_passes_per_s": decode_rate,
        "eggroll_over_batched_inference_decode": of(decode_rate, "eggroll"),
        "full_rank_over_batched_inference_decode": of(decode_rate, "full_rank"),
        "generation_seconds": generation,
    }


def _forward_seconds(
    models: dict[str, Any], ids: torch.Tensor, mask: torch.Tensor, repeats: int
) -> dict[str, float]:
    """Median seconds of one forward pass of each model over (ids, mask), interleaved repeats."""
    times: dict[str, list[float]] = {k: [] for k in models}
    with torch.no_grad():
        for m in models.values():  # warm-up
            m(input_ids=ids, attention_mask=mask)
        for _ in range(repeats):
            for key, m in models.items():
                start = time.perf_counter()
                m(input_ids=ids, attention_mask=mask)
                times[key].append(time.perf_counter() - start)
    return {k: statistics.median(v) for k, v in times.items()}


def _generation(
    pm: PopulationModel,
    pop: list[Any],
    sigma: float,
    tok: Any,
    task: CountdownTask,
    problems: list[Any],
    max_new_tokens: int,
    repeats: int,
) -> dict[str, float]:
    """Median seconds of each part of one ES generation (the weights are restored after each)."""
    start_state = {k: v.clone() for k, v in pm.model.state_dict().items()}
    parts: dict[str, list[float]] = {"noise": [], "forward": [], "reward": [], "update": []}
    for g in range(max(1, repeats // 2)):
        t0 = time.perf_counter()
        pm.set_population(0, g, pop, sigma)
        t1 = time.perf_counter()
        model: Any = pm.model
        done = greedy_completions(model, tok, [p.prompt for p in problems], max_new_tokens, len(pop))
        t2 = time.perf_counter()
        fitness = torch.tensor(
            [
                sum(task.reward(c, p) for c, p in zip(row, problems, strict=True)) / len(problems)
                for row in done
            ]
        )
        t3 = time.perf_counter()
        pm.update(fitness, lr=5e-4)
        t4 = time.perf_counter()
        for key, dt in zip(parts, (t1 - t0, t2 - t1, t3 - t2, t4 - t3), strict=True):
            parts[key].append(dt)
        pm.model.load_state_dict(start_state)
    out = {k: statistics.median(v) for k, v in parts.items()}
    out["total"] = sum(out.values())
    return out


def format_lm(res: dict[str, Any]) -> str:
    """The results as a Markdown table and a line per generation split."""
    rate, sec = res["member_forward_passes_per_s"], res["forward_seconds"]
    base = rate["batched_inference"]
    lines = [
        f"LM ES population: {res['parameters']:,} parameters, {res['members']} members x "
        f"{res['prompts']} prompts x {res['sequence_tokens']} tokens, rank {res['rank']}, "
        f"{res['torch_threads']} torch thread(s), medians of {res['repeats']}",
        "| forward pass | seconds | member passes/s | of batched inference |",
        "|---|---|---|---|",
    ]
    for key, label in (
        ("batched_inference", "plain batched inference"),
        ("eggroll", "EGGROLL low rank"),
        ("full_rank", "full-rank members"),
    ):
        if key not in rate:
            lines.append(
                f"| {label} | not measured (dense copies past {FULL_RANK_BYTES / 2**30:.0f} GiB) | | |"
            )
            continue
        lines.append(f"| {label} | {sec[key]:.4f} | {rate[key]:,.1f} | {rate[key] / base:.2f} |")
    drate = res["decode_member_passes_per_s"]
    full = (
        f", full rank {drate['full_rank'] / drate['batched_inference']:.2f}" if "full_rank" in drate else ""
    )
    lines.append(
        "one decoding step (1 token per sequence): EGGROLL "
        f"{drate['eggroll'] / drate['batched_inference']:.2f}{full} of batched inference"
    )
    for key, gen in res["generation_seconds"].items():
        split = ", ".join(f"{k} {v:.3f} s" for k, v in gen.items())
        lines.append(f"ES generation ({key}): {split}")
    return "\n".join(lines)
