"""The language-model pieces: tokenizer, verifier, tasks, population forward, pretraining, GRPO.

Models here are tiny (hidden 32, one or two blocks) so each test takes seconds on a shared CPU;
the default model's numbers are measured by ``esbench bench lm``.
"""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path

import pytest
import torch

from esbench.envs.lm.tasks import AdditionTask, CountdownTask
from esbench.envs.lm.tokenizer import CHARS, CharTokenizer
from esbench.envs.lm.verifier import verify_countdown
from esbench.policies.lm.evaluation import answer_loss, next_token_kl, task_reward
from esbench.policies.lm.model import ModelConfig, build_model, build_tokenizer
from esbench.policies.lm.population import Member, PopulationModel, antithetic
from esbench.policies.lm.pretrain import PretrainConfig, config_hash, pretrained

TINY = ModelConfig(hidden_size=32, num_layers=2, num_heads=2, intermediate_size=64, max_positions=32)


def flat(model: torch.nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def test_tokenizer_round_trip_and_left_padding() -> None:
    tok = CharTokenizer()
    text = "(3+5)*7-9/1=56, 0:"
    ids = tok(text)["input_ids"]
    assert ids[0] == tok.bos_token_id and len(ids) == len(text) + 1
    assert tok.decode(ids, skip_special_tokens=True) == text
    assert len(tok) == len(CHARS) + 3
    batch = tok(["1+1=", "123+4="], padding=True, return_tensors="pt")
    assert batch["input_ids"][0, :2].tolist() == [tok.pad_token_id] * 2  # left padded
    assert batch["attention_mask"][0].tolist() == [0, 0, 1, 1, 1, 1, 1]
    with pytest.raises(ValueError, match="not in the tokenizer's alphabet"):
        tok("2^3")


@pytest.mark.parametrize(
    ("expr", "numbers", "target", "reason"),
    [
        ("(3+5)*7", [3, 5, 7], 56, "correct"),
        (" 7 * 3 + 5 ", [5, 7, 3], 26, "correct"),  # any order, spaces ignored, precedence
        ("7/2*2", [7, 2, 2], 7, "correct"),  # exact rationals: no float rounding
        ("3*5", [3, 5, 7], 15, "wrong numbers"),  # a number left unused
        ("3*3+5", [3, 5, 7], 14, "wrong numbers"),  # 3 reused, 7 unused
        ("3*5+8", [3, 5, 7], 23, "wrong numbers"),  # a number not given
        ("3+5+7", [3, 5, 7], 16, "wrong value"),
        ("3/(5-5)+7", [3, 5, 5, 7], 10, "division by zero"),
        ("3+", [3], 3, "malformed"),
        ("(3+5", [3, 5], 8, "malformed"),
        ("3 5", [3, 5], 35, "malformed"),
        ("-3+5", [3, 5], 2, "malformed"),  # no unary minus
        ("03+5", [3, 5], 8, "malformed"),  # no leading zeros
        ("", [3], 3, "malformed"),
        ("__import__('os')", [3], 3, "malformed"),  # never eval'd
        ("(" * 40 + "1" + ")" * 40, [1], 1, "malformed"),  # longer than the verifier reads
    ],
)
def test_verifier_on_hand_made_cases(expr: str, numbers: list[int], target: int, reason: str) -> None:
    verdict = verify_countdown(expr, numbers, target)
    assert verdict.reason == reason
    assert verdict.reward == (1.0 if reason == "correct" else 0.0)


def test_tasks_are_seeded_solvable_and_split() -> None:
    add, cd = AdditionTask(digits=3), CountdownTask(count=3)
    assert add.sample(0, "train", 20) == add.sample(0, "train", 20)
    assert add.sample(0, "train", 5, start=15) == add.sample(0, "train", 20)[15:]
    assert add.sample(1, "train", 20) != add.sample(0, "train", 20)
    train = {p.prompt for p in add.sample(0, "train", 400)}
    held = {p.prompt for p in add.sample(0, "held_out", 100)}
    assert not train & held
    for p in add.sample(0, "held_out", 20):
        a, b = p.numbers
        assert (
            p.prompt == f"{a}+{b}="
            and add.reward(p.answer, p) == 1.0
            and add.reward("0", p) == (p.answer == "0")
        )
    puzzles = cd.sample(0, "train", 50)
    assert all(cd.reward(p.answer, p) == 1.0 for p in puzzles)  # solvable by construction
    assert all(1 <= p.target <= cd.max_target and len(p.numbers) == 3 for p in puzzles)
    keys = {(tuple(sorted(p.numbers)), p.target) for p in puzzles}
    assert not keys & {(tuple(sorted(p.numbers)), p.target) for p in cd.sample(0, "held_out", 50)}


@pytest.mark.parametrize("rank", [1, 3, None], ids=["eggroll-r1", "eggroll-r3", "full-rank"])
def test_population_forward_equals_member_by_member_with_materialized_weights(rank: int | None) -> None:
    """The batched pass (Eq. 1: x W^T + s/sqrt(r) (x B) A^T, one GEMM for all members) gives each
    member the logits of a plain model whose weights are W + sigma A B^T / sqrt(r), built explicitly."""
    base = build_model(TINY)
    ids = torch.tensor(CharTokenizer()(["12+34=", "7,3,5:26="], padding=True)["input_ids"])
    pm = PopulationModel(copy.deepcopy(base), rank=rank)
    assert pm.unperturbed == []  # every parameter is perturbed: matrices, embedding, norms
    members = antithetic(4)
    sigma = 0.05
    with torch.no_grad():
        plain = base(ids).logits
        assert torch.equal(pm.model(ids).logits, plain)  # no population: the plain model, bit for bit
        pm.set_population(seed=7, generation=3, members=members, sigma=sigma)
        batched = pm.model(ids.repeat(len(members), 1)).logits.reshape(len(members), *plain.shape)
        for i in range(len(members)):
            one = copy.deepcopy(base)
            state = one.state_dict()
            for name, delta in pm.perturbation(i).items():
                state[name] = state[name] + delta
            one.load_state_dict(state)
            torch.testing.assert_close(batched[i], one(ids).logits, atol=2e-5, rtol=1e-5)
            assert (batched[i] - plain).abs().max() > 1e-3  # the member really differs
    if rank is not None:
        w = pm.perturbation(0)["model.layers.0.mlp.up_proj.weight"]
        assert torch.linalg.matrix_rank(w) == rank
    # Antithetic pairs share a draw with opposite signs; draws are named by (seed, generation, index).
    p0, p1 = pm.perturbation(0), pm.perturbation(1)
    assert all(torch.equal(p0[k], -p1[k]) for k in p0)
    again = PopulationModel(copy.deepcopy(base), rank=rank)
    again.set_population(seed=7, generation=3, members=[Member(1, -1)], sigma=sigma)
    assert all(torch.equal(again.perturbation(0)[k], pm.perturbation(3)[k]) for k in p0)
    again.set_population(seed=7, generation=4, members=[Member(1, -1)], sigma=sigma)
    assert not torch.equal(again.perturbation(0)["lm_head.weight"], pm.perturbation(3)["lm_head.weight"])


@pytest.mark.parametrize("rank", [2, None], ids=["eggroll", "full-rank"])
def test_es_update_is_the_standardized_fitness_weighted_sum(rank: int | None) -> None:
    """theta <- theta + lr/P sum_i z_i E_i (Eq. 2 of the population module), checked densely."""
    base = build_model(TINY)
    pm = PopulationModel(copy.deepcopy(base), rank=rank)
    members = antithetic(6)
    pm.set_population(seed=0, generation=0, members=members, sigma=0.1)
    eps = [pm.perturbation(i) for i in range(len(members))]
    fitness = torch.tensor([0.5, 0.1, 0.9, 0.2, 0.3, 0.3])
    z = (fitness - fitness.mean()) / fitness.std(unbiased=False)
    lr = 0.01
    stats = pm.update(fitness, lr)
    assert pm.size == 0 and stats["update_norm"] > 0
    after = dict(pm.model.named_parameters())
    for name, p0 in base.named_parameters():
        swapped = name.replace(".weight", ".inner.weight")
        expected = p0 + sum(z[i] * eps[i][name] / 0.1 for i in range(len(members))) * lr / len(members)
        torch.testing.assert_close(after[swapped], expected, atol=1e-6, rtol=1e-5)


def test_evaluations_agree_with_their_definitions() -> None:
    model, tok = build_model(TINY), build_tokenizer(TINY)
    add = AdditionTask(digits=2)
    problems = add.sample(0, "held_out", 8)
    assert next_token_kl(model, model, tok, problems) == pytest.approx(0.0, abs=1e-7)
    other = build_model(ModelConfig(**{**TINY.as_dict(), "init_seed": 1}))
    assert next_token_kl(other, model, tok, problems) > 0.0
    loss = answer_loss(model, tok, problems)
    assert (
        0.5 * torch.log(torch.tensor(len(tok))) < loss < 3 * torch.log(torch.tensor(len(tok)))
    )  # near uniform
    acc = task_reward(model, tok, add, problems, max_new_tokens=4, members=1)
    assert acc.shape == (1,) and 0.0 <= float(acc[0]) <= 1.0


def test_pretraining_is_deterministic_and_cached_by_hash(tmp_path: Path) -> None:
    cfg = PretrainConfig(steps=3, batch_size=8, eval_size=16, countdown_fraction=0.25)
    task = AdditionTask(digits=2)
    a, _, rec_a = pretrained(TINY, cfg, task, cache=tmp_path / "one")
    b, _, rec_b = pretrained(TINY, cfg, task, cache=tmp_path / "two")
    assert not rec_a["cached"] and not rec_b["cached"]
    assert torch.equal(flat(a), flat(b))  # same config, same weights
    assert not torch.equal(flat(a), flat(build_model(TINY)))  # and it trained
    c, _, rec_c = pretrained(TINY, cfg, task, cache=tmp_path / "one")
    assert rec_c["cached"] and torch.equal(flat(a), flat(c))
    made = json.loads((Path(rec_a["path"]) / "made.json").read_text())
    assert made["steps"] == 3 and made["pretrain"]["batch_size"] == 8 and made["seconds"] > 0
    assert 0.0 <= made["held_out_accuracy"] <= 1.0 and made["held_out_loss"] > 0
    assert Path(rec_a["path"]).name == config_hash(TINY, cfg, task)
    assert config_hash(TINY, PretrainConfig(steps=4, batch_size=8, eval_size=16), task) != made["config_hash"]


def test_the_mix_holds_solved_task_b_puzzles_of_the_train_split_apart_from_the_study_prompts() -> None:
    from esbench.policies.lm.pretrain import _batch

    task, task_b = AdditionTask(digits=2), CountdownTask()
    cfg = PretrainConfig(batch_size=20, countdown_fraction=0.1, solved_fraction=0.25)
    batch = _batch(task, cfg, 3, task_b)
    puzzles = [p for p in batch if ":" in p.prompt]
    assert len(batch) == 20 and len([p for p in batch if "+" in p.prompt and ":" not in p.prompt]) == 13
    solved = [p for p in puzzles if len(p.numbers) == 3]
    assert len(solved) == 5 and len(puzzles) == 7  # 25% task B's shape, 10% two-number puzzles
    assert all(verify_countdown(p.answer, p.numbers, p.target).reward == 1.0 for p in solved)
    held_out = {p.prompt for p in task_b.sample(0, "held_out", 400)}
    mixed = [p for step in range(40) for p in _batch(task, cfg, step, task_b) if len(p.numbers) == 3]
    assert not held_out & {p.prompt for p in mixed}  # never a held-out puzzle
    study = task_b.sample(cfg.seed, "train", 5, start=3 * 20)  # a run of seed 0's prompts at that index
    assert [p.prompt for p in study] != [p.prompt for p in solved]  # the mix has a stream of its own
    with pytest.raises(ValueError, match=r"solved_fraction=0\.25 needs task B"):
        _batch(task, cfg, 0)


def test_the_solved_mix_enters_the_hash_and_a_model_without_it_keeps_its_hash() -> None:
    import hashlib
    from dataclasses import asdict

    from esbench.policies.lm.pretrain import FORMAT

    task, plain = AdditionTask(digits=2), PretrainConfig(steps=3)
    old = {k: v for k, v in asdict(plain).items() if k != "solved_fraction"}  # before the field existed
    blob = json.dumps(
        {"format": FORMAT, "model": TINY.as_dict(), "pretrain": old, "task_a": asdict(task)}, sort_keys=True
    )
    assert config_hash(TINY, plain, task, CountdownTask()) == hashlib.sha256(blob.encode()).hexdigest()[:16]
    mixed = PretrainConfig(steps=3, solved_fraction=0.1)
    base = config_hash(TINY, mixed, task, CountdownTask())
    assert base != config_hash(TINY, plain, task) and base != config_hash(
        TINY, mixed, task, CountdownTask(count=4)
    )
    assert base == config_hash(
        TINY, mixed, task, CountdownTask(format_score=0.1)
    )  # the reward shapes no weight


def test_the_record_holds_the_base_task_b_solve_and_format_rates(tmp_path: Path) -> None:
    cfg = PretrainConfig(steps=3, batch_size=8, eval_size=16, solved_fraction=0.5)
    _, _, rec = pretrained(TINY, cfg, AdditionTask(digits=2), cache=tmp_path, task_b=CountdownTask())
    made = json.loads((Path(rec["path"]) / "made.json").read_text())
    assert 0.0 <= made["task_b_solve_rate"] <= made["task_b_format_rate"] <= 1.0
    assert made["task_b"]["count"] == 3 and "format_score" not in made["task_b"]


def test_runs_asking_for_the_task_a_model_at_once_train_it_once(tmp_path: Path) -> None:
    """Two jobs that start together (a sweep on two Dask workers) both find no cached model; the
    lock makes one train it and the other wait and load it, instead of both training."""
    import threading

    from esbench.policies.lm.pretrain import _locked

    cfg = PretrainConfig(steps=3, batch_size=8, eval_size=16)
    task = AdditionTask(digits=2)
    where = tmp_path / config_hash(TINY, cfg, task)
    records: list[dict] = []
    with _locked(where):  # both jobs arrive while the entry is missing and the lock is held
        jobs = [
            threading.Thread(target=lambda: records.append(pretrained(TINY, cfg, task, cache=tmp_path)[2]))
            for _ in range(2)
        ]
        for job in jobs:
            job.start()
        time.sleep(0.5)
        assert not records  # both wait for the lock
    for job in jobs:
        job.join(timeout=60)
    assert sorted(r["cached"] for r in records) == [False, True]  # trained once, loaded once
    assert [p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")] == [where.name]


@pytest.mark.slow  # ~30 s on a loaded 2-core machine: two TRL runs
def test_grpo_trains_offline_and_deterministically() -> None:
    """TRL's GRPOTrainer, 2 steps on the CPU: same seed, same weights; and the weights moved.
    One-number puzzles with one-token answers, so a random model's samples sometimes score."""
    from esbench.baselines.grpo import GRPOSettings, train_grpo

    task = CountdownTask(count=1)
    settings = GRPOSettings(
        steps=2, prompts_per_step=4, num_generations=8, max_completion_length=1, learning_rate=1e-2
    )
    runs = []
    for _ in range(2):
        model, logs = train_grpo(build_model(TINY), build_tokenizer(TINY), task, settings)
        runs.append(flat(model))
        rewards = [row["reward"] for row in logs if "reward" in row]
        assert len(rewards) == 2 and max(rewards) > 0
    assert torch.equal(runs[0], runs[1])
    assert not torch.equal(runs[0], flat(build_model(TINY)))


def test_env_lm_config_validates_and_leaves_other_runs_hashes_alone() -> None:
    from esbench.config.compose import compose_run_config
    from esbench.config.validate import ConfigError
    from esbench.runner import config_hash

    cfg = compose_run_config(["env=lm", "budget=smoke"])
    assert cfg.env.kind == "lm" and cfg.lm.model.hidden_size == 64 and cfg.lm.decoding.strategy == "greedy"
    for override, message in (
        ("lm.decoding.strategy=beam", "lm.decoding.strategy='beam' is not allowed; allowed: greedy"),
        ("lm.pretrain.steps=-1", "lm.pretrain.steps=-1 is out of range"),
        ("lm.model.num_heads=3", "lm.model.hidden_size=128 is not a multiple of lm.model.num_heads=3"),
        ("lm.pretrain.solved_fraction=0.9", "lm.pretrain.solved_fraction=0.9 exceeds 1"),
    ):
        with pytest.raises(ConfigError, match=override.split("=")[0]) as err:
            compose_run_config(["env=lm", override])
        assert message in str(err.value)
    plain = compose_run_config(["budget=smoke"])
    assert plain.lm is None
    data = {k: plain[k] for k in plain if k != "lm"}
    from omegaconf import OmegaConf

    assert config_hash(plain) == config_hash(OmegaConf.create(data))  # as before the lm block existed


def test_bench_lm_reports_the_ratios_and_the_generation_split() -> None:
    from esbench.bench.lm import bench_lm, format_lm

    res = bench_lm(members=4, prompts=2, repeats=1, max_new_tokens=3, model_cfg=TINY)
    assert res["parameters"] == sum(p.numel() for p in build_model(TINY).parameters())
    rate = res["member_forward_passes_per_s"]
    assert res["eggroll_over_batched_inference"] == pytest.approx(rate["eggroll"] / rate["batched_inference"])
    assert set(res["generation_seconds"]["eggroll"]) == {"noise", "forward", "reward", "update", "total"}
    assert all(v > 0 for v in res["decode_member_passes_per_s"].values())
    assert "EGGROLL low rank" in format_lm(res) and "ES generation (full_rank)" in format_lm(res)


@pytest.mark.parametrize("rank", [2, None], ids=["eggroll", "full-rank"])
def test_a_tied_weight_is_perturbed_once_the_same_in_both_places(rank: int | None) -> None:
    """Tied input and output embeddings (SmolLM2's) are one parameter: the output head takes the
    embedding's perturbation, so each member is a plain tied model with W + s E, and the update
    steps the weight once (Eq. 2), not once per module."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=23, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=2, max_position_embeddings=32, tie_word_embeddings=True,
    )  # fmt: skip
    torch.manual_seed(0)
    base = LlamaForCausalLM(config).eval()
    assert base.lm_head.weight is base.model.embed_tokens.weight
    pm = PopulationModel(copy.deepcopy(base), rank=rank)
    assert list(pm.tied.values()) == [0]  # the head shares module 0's (the embedding's) noise
    ids = torch.tensor([[3, 4, 5, 6], [7, 8, 9, 10]])
    members = antithetic(4)
    pm.set_population(seed=1, generation=0, members=members, sigma=0.05)
    eps = [pm.perturbation(i) for i in range(len(members))]
    assert "lm_head.weight" not in eps[0]  # named once, under the embedding
    with torch.no_grad():
        batched = pm.model(ids.repeat(len(members), 1)).logits.reshape(len(members), 2, 4, -1)
        for i in range(len(members)):
            one = copy.deepcopy(base)
            for name, delta in eps[i].items():
                one.get_parameter(name).add_(delta)
            torch.testing.assert_close(batched[i], one(ids).logits, atol=2e-5, rtol=1e-5)
    fitness = torch.tensor([0.4, 0.1, 0.9, 0.2])
    z = (fitness - fitness.mean()) / fitness.std(unbiased=False)
    pm.update(fitness, lr=0.01)
    name = "model.embed_tokens.weight"
    expected = base.get_parameter(name) + sum(z[i] * eps[i][name] / 0.05 for i in range(4)) * 0.01 / 4
    torch.testing.assert_close(pm.model.model.embed_tokens.weight, expected, atol=1e-6, rtol=1e-5)


def test_a_hub_model_that_is_nowhere_is_refused_naming_what_loads_offline() -> None:
    """A hub id that neither a local directory, the hub's cache, the hub nor a package has: one
    error naming the id and the models a package ships."""
    from esbench.policies.lm.model import SHIPPED, model_weights

    with pytest.raises(OSError, match=r"lm.model.hub_id=esbench-tests/no-such-model: .*offline") as err:
        model_weights("esbench-tests/no-such-model")
    assert all(hub_id in str(err.value) for hub_id in SHIPPED)


def test_bench_lm_arguments_name_the_model_and_refuse_what_they_do_not_know() -> None:
    """``esbench bench lm lm.model.hub_id=... members=8``: the model config and the sizes; a bad word
    is one error naming it and what is allowed."""
    from esbench.bench.lm import parse_lm_args

    args = parse_lm_args(
        ["lm.model.hub_id=org/model", "lm.model.num_layers=3", "members=8", "full_rank=false"]
    )
    assert args == {
        "model_cfg": ModelConfig(hub_id="org/model", num_layers=3),
        "members": 8,
        "full_rank": False,
    }
    for word, why in [
        ("members=x", "'x' is not an integer"),
        ("lm.model.depth=3", "unknown key"),
        ("8", "KEY=VALUE"),
    ]:
        with pytest.raises(ValueError, match=why):
            parse_lm_args([word])


def test_a_chat_model_is_asked_in_its_template_and_the_char_model_plainly() -> None:
    """With a chat template, a task prompt becomes the user's turn after the system instruction,
    the assistant's turn opened; without one (the character tokenizer) it is unchanged."""
    from esbench.policies.lm.chat import INSTRUCTION, chat_prompts

    plain = CharTokenizer()
    assert chat_prompts(plain, ["1+2=", "3,5,7:56="]) == ["1+2=", "3,5,7:56="]
    chat = CharTokenizer()
    chat.chat_template = (
        "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}"
        "{% if add_generation_prompt %}<assistant>{% endif %}"
    )
    assert chat_prompts(chat, ["3,5,7:56="]) == [f"<system>{INSTRUCTION}<user>3,5,7:56=<assistant>"]
