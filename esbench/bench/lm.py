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


def bench_lm(
    members: int = 32,
    prompts: int = 16,
    rank: int = 1,
    sigma: float = 0.001,
    repeats: int = 7,
    max_new_tokens: int = 12,
    model_cfg: ModelConfig | None = None,
    threads: int = 1,
) -> dict[str, Any]:
    """Measure forward-pass throughput and one ES generation's split; see the module docstring."""
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return _bench(
            members, prompts, rank, sigma, repeats, max_new_tokens, model_cfg or ModelConfig(), threads
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
) -> dict[str, Any]:
    tok = build_tokenizer(cfg)
    plain = build_model(cfg, tok)
    low = PopulationModel(copy.deepcopy(plain), rank=rank)
    full = PopulationModel(copy.deepcopy(plain), rank=None)
    pop = antithetic(members)
    task = CountdownTask()
    problems = task.sample(0, "train", prompts)
    ids, mask, _ = teacher_forced(tok, problems)
    big_ids, big_mask = ids.repeat(members, 1), mask.repeat(members, 1)
    low.set_population(0, 0, pop, sigma)
    full.set_population(0, 0, pop, sigma)

    models = {"batched_inference": plain, "eggroll": low.model, "full_rank": full.model}
    seconds = _forward_seconds(models, big_ids, big_mask, repeats)
    # One decoding step's shape: every sequence feeds one token (B rows per member, not B*T).
    decode = _forward_seconds(models, big_ids[:, -1:], big_mask[:, -1:], repeats)
    decode_rate = {k: members / s for k, s in decode.items()}
    rate = {k: members / s for k, s in seconds.items()}  # member forward passes per second

    generation = {
        "eggroll": _generation(low, pop, sigma, tok, task, problems, max_new_tokens, repeats),
        "full_rank": _generation(full, pop, sigma, tok, task, problems, max_new_tokens, repeats),
    }
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
        "eggroll_over_batched_inference": rate["eggroll"] / rate["batched_inference"],
        "full_rank_over_batched_inference": rate["full_rank"] / rate["batched_inference"],
        "eggroll_over_full_rank": rate["eggroll"] / rate["full_rank"],
        "decode_step_seconds": decode,
        "decode_member_passes_per_s": decode_rate,
        "eggroll_over_batched_inference_decode": decode_rate["eggroll"] / decode_rate["batched_inference"],
        "full_rank_over_batched_inference_decode": decode_rate["full_rank"]
        / decode_rate["batched_inference"],
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
        lines.append(f"| {label} | {sec[key]:.4f} | {rate[key]:,.1f} | {rate[key] / base:.2f} |")
    drate = res["decode_member_passes_per_s"]
    lines.append(
        "one decoding step (1 token per sequence): EGGROLL "
        f"{drate['eggroll'] / drate['batched_inference']:.2f}, full rank "
        f"{drate['full_rank'] / drate['batched_inference']:.2f} of batched inference"
    )
    for key, gen in res["generation_seconds"].items():
        split = ", ".join(f"{k} {v:.3f} s" for k, v in gen.items())
        lines.append(f"ES generation ({key}): {split}")
    return "\n".join(lines)
