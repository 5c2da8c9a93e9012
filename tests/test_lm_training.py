"""Language models through the training loop: ES (openai_es, eggroll) on env=lm, the reward.

Tiny models, a prior of single-digit addition (learned in seconds, cached by config hash for the
session), stages of a few ES generations: the machinery, not the science.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from esbench.config.compose import compose_run_config
from esbench.envs.lm.tasks import CountdownTask, Problem
from esbench.envs.lm.verifier import countdown_reward
from esbench.runner import run
from tests.conftest import TIMING_COLUMNS, esbench, only_run_dir
from tests.resume_check import KilledRun, assert_resumed, kill_after_checkpoint

#: A model of ~10k parameters, a prior of 150 steps on single-digit addition, 4 members x 4 prompts.
TINY = [
    "env=lm",
    "budget=smoke",
    "tracker=none",
    "tracker.console=false",
    "lm.model.hidden_size=32",
    "lm.model.num_layers=1",
    "lm.model.intermediate_size=64",
    "lm.pretrain.steps=150",
    "lm.pretrain.batch_size=32",
    "lm.task_a.digits=1",
    "lm.decoding.eval_prompts=8",
    "lm.decoding.fitness_prompts=4",
    "lm.decoding.max_new_tokens=6",
    "eval.interval_timesteps=32",
]
#: ES with 4 members, a sigma large enough that members of the tiny model differ.
ES = ["algo.population_size=4", "algo.sigma=0.05"]
#: Train task A itself (a reward the tiny prior already earns sometimes: the update is not zero).
ON_ADDITION = ["env.kwargs.task=addition", "budget.timesteps=64"]
LM_COLUMNS = ["solve_rate", "prior_accuracy", "prior_loss", "prior_kl"]


def _run(tmp: Path, *overrides: str) -> tuple[pd.DataFrame, dict]:
    cfg = compose_run_config([*TINY, *overrides, f"results_dir={tmp}"])
    out = run(cfg)
    return pd.read_csv(out.run_dir / "metrics.csv"), out.summary


@pytest.mark.parametrize(
    ("expr", "numbers", "target", "reward"),
    [
        ("(3+5)*7", [3, 5, 7], 56, 1.0),  # correct
        ("7*(5+3)", [3, 5, 7], 56, 1.0),  # any correct expression
        ("3*5", [3, 5, 7], 56, 0.1),  # well formed, given numbers at most once: the format score
        ("3+5+7", [3, 5, 7], 56, 0.1),  # all numbers, wrong value: the format score
        ("3*3", [3, 5, 7], 56, 0.0),  # a number used twice
        ("8*7", [3, 5, 7], 56, 0.0),  # a number not given
        ("3*", [3, 5, 7], 56, 0.0),  # malformed
        ("", [3, 5, 7], 56, 0.0),  # empty
        ("7/(5-5)", [5, 5, 7], 1, 0.0),  # division by zero
        ("9*2", [9, 2, 7], 18, 0.1),  # the task-A model's typical answer: two of three numbers
    ],
)
def test_countdown_format_score_on_hand_made_cases(
    expr: str, numbers: list[int], target: int, reward: float
) -> None:
    assert countdown_reward(expr, numbers, target, format_score=0.1) == reward
    problem = Problem("", "", tuple(numbers), target)
    task = CountdownTask(format_score=0.1)
    assert task.reward(expr, problem) == reward
    assert task.solved(expr, problem) == float(reward == 1.0)  # the solve rate counts solutions only
    assert CountdownTask().reward(expr, problem) == float(reward == 1.0)  # default: outcome only
    assert task.formatted(expr, problem) == float(reward > 0)  # the format rate: solved or well formed


def test_lm_es_run_writes_rows_with_the_lm_columns_and_is_deterministic(tmp_path: Path) -> None:
    first, summary = _run(tmp_path / "a", "algo=eggroll", *ES, *ON_ADDITION)
    again, summary2 = _run(tmp_path / "b", "algo=eggroll", *ES, *ON_ADDITION)
    points = first[first["eval_return_mean"].notna()]
    assert list(points["timesteps"]) == [0, 32, 64]  # a point at 0, every 32 completions, the end
    assert list(first["timesteps"]) == [0, 16, 32, 48, 64]  # 4 members x 4 prompts per generation
    for col in LM_COLUMNS:
        assert points[col].notna().all(), col
    assert (points["prior_kl"].iloc[0] == 0.0) and (
        points["prior_kl"].iloc[1:] > 0
    ).all()  # moved off the prior
    assert (points["solve_rate"] == points["eval_return_mean"]).all()  # addition: exact match is the reward
    assert (first["grad_norm"].dropna() > 0).any()  # members differed: the update is not zero
    assert summary["params_sha256"] == summary2["params_sha256"]  # same seed, same parameters
    pd.testing.assert_frame_equal(first.drop(columns=TIMING_COLUMNS), again.drop(columns=TIMING_COLUMNS))
    _, summary3 = _run(tmp_path / "c", "algo=eggroll", *ES, *ON_ADDITION, "seed=1")
    assert summary3["params_sha256"] != summary["params_sha256"]
    assert summary["prior"]["steps"] == 150 and summary["generations"] == 4
    samples = [json.loads((only_run_dir(tmp_path / d) / "samples_last.json").read_text()) for d in "ab"]
    assert samples[0] == samples[1] and len(samples[0]["data"]) == 8  # the final model's, greedy


def test_lm_es_on_countdown_rewards_the_solve_and_reports_the_format_rate_apart(tmp_path: Path) -> None:
    metrics, summary = _run(
        tmp_path, "algo=openai_es", *ES, "budget.timesteps=32", "lm.task_b.format_score=0"
    )
    points = metrics[metrics["eval_return_mean"].notna()]
    assert set(points["eval_task"]) == {"lm"} and summary["stages"] == ["lm"]
    assert (points["eval_return_mean"] == points["solve_rate"]).all()  # outcome only
    assert points[LM_COLUMNS].notna().all().all()
    rates = pd.read_csv(only_run_dir(tmp_path) / "lm_points.csv")
    assert list(rates.columns) == ["timesteps", "eval_task", "solve_rate", "format_rate", "prompts"]
    assert rates["timesteps"].tolist() == points["timesteps"].tolist() and (rates["prompts"] == 8).all()
    assert rates["solve_rate"].tolist() == points["solve_rate"].tolist()
    assert (rates["format_rate"] >= rates["solve_rate"]).all()
    bonus, _ = _run(tmp_path / "bonus", "algo=openai_es", *ES, "budget.timesteps=32")  # the default bonus
    at = bonus[bonus["eval_return_mean"].notna()]
    assert (at["eval_return_mean"] >= at["solve_rate"]).all()  # the format score only adds


def test_grpo_runs_on_the_same_ruler(tmp_path: Path) -> None:
    grpo = ["algo=grpo", "algo.prompts_per_step=2", "algo.num_generations=4"]
    metrics, summary = _run(tmp_path / "a", *grpo, *ON_ADDITION)
    assert list(metrics["timesteps"]) == [0, 8, 16, 24, 32, 40, 48, 56, 64]  # 2 prompts x 4 samples a step
    points = metrics[metrics["eval_return_mean"].notna()]
    assert list(points["timesteps"]) == [0, 32, 64] and points[LM_COLUMNS].notna().all().all()
    assert (points["prior_kl"].iloc[1:] > 0).all() and metrics["train_return_mean"].iloc[1:].notna().all()
    again, summary2 = _run(tmp_path / "b", *grpo, *ON_ADDITION)
    assert summary["params_sha256"] == summary2["params_sha256"]  # seeded: the same weights
    pd.testing.assert_frame_equal(metrics.drop(columns=TIMING_COLUMNS), again.drop(columns=TIMING_COLUMNS))


def test_lm_sequence_evaluates_both_tasks_and_starts_from_the_prior(tmp_path: Path) -> None:
    overrides = ["algo=eggroll", *ES, "sequence=lm_addition_to_countdown", "budget.stage_timesteps=32"]
    # The tiny prior solves no puzzle: two-number puzzles in its mix and the format bonus give its
    # members task-B rewards that differ (the machinery, not the science).
    overrides += [
        "lm.task_b.format_score=0.1",
        "lm.pretrain.countdown_fraction=0.2",
        "lm.pretrain.solved_fraction=0",
    ]
    metrics, summary = _run(tmp_path, *overrides)
    pre = 150 * 32  # stage A is the pretraining: its steps x its batch, in training sequences
    assert summary["stages"] == ["addition", "countdown"] and summary["stage_boundaries"] == [pre, pre + 32]
    from esbench.training.ruler import recorded_pretraining, stage_plan

    cfg = compose_run_config([*TINY, *overrides])
    plan = stage_plan(cfg)  # the console bar counts to where the run ends, the pretraining included
    assert plan.total_timesteps + recorded_pretraining(cfg, plan) == summary["total_timesteps"] == pre + 32
    alone = compose_run_config([*TINY, *overrides, "sequence.only_stage=1"])
    assert recorded_pretraining(alone, stage_plan(alone)) == 0  # task B alone records no stage A
    points = metrics[metrics["eval_return_mean"].notna()]
    assert set(points["eval_task"]) == {"addition", "countdown"}
    assert set(metrics.loc[metrics["timesteps"] > pre, "train_task"]) == {"countdown"}
    a = points[points["eval_task"] == "addition"]
    assert list(a["timesteps"]) == [0, pre, pre + 32]  # the initial weights, the prior, the end
    assert (a["eval_return_mean"] == a["prior_accuracy"]).all()  # stage A is task A: one measure
    assert a["prior_kl"].iloc[0] > 0 and a["prior_kl"].iloc[1] == 0  # the initial weights are not the prior
    assert a["drift_l2"].iloc[1] > 0  # stage A's drift: from the initial weights to the prior
    kl = a["policy_kl"].dropna()  # from the model that ended stage A (the prior): prior_kl again
    assert len(kl) == 2 and np.allclose(kl, a.loc[kl.index, "prior_kl"])
    from esbench.analysis.retention import load_snapshots, sequence_curves

    snaps = load_snapshots(only_run_dir(tmp_path) / "snapshots.npz")
    assert snaps.params.shape[0] == 3  # the initial weights, the prior (the start of B), the final ones
    # Per-tensor drift, named, beside the snapshots (what a report ships instead of them).
    from esbench.analysis.lm_retention import layer_group
    from esbench.tracking.snapshot_drift import load_snapshot_drift

    drift = load_snapshot_drift(only_run_dir(tmp_path) / "snapshot_drift.csv")
    assert drift.n_rows == 3 and snaps.names and len(snaps.names) == len(snaps.layout or ())
    task_b = drift.layers(1, 2)
    assert list(task_b["name"]) == list(snaps.names)
    groups = {layer_group(n) for n in task_b["name"]}
    assert {"embed_tokens", "layer 0", "norm"} <= groups
    delta = snaps.params[2].astype(np.float64) - snaps.params[1].astype(np.float64)
    assert drift.whole(1, 2)["l2"] == np.linalg.norm(delta) > 0  # ES moved the prior
    assert np.sqrt((task_b["l2"] ** 2).sum()) == pytest.approx(np.linalg.norm(delta), rel=1e-12)
    curves = sequence_curves(metrics, summary["stages"], summary["stage_boundaries"])
    assert curves is not None


def test_env_lm_refuses_other_algorithms() -> None:
    from esbench.config.validate import ConfigError

    with pytest.raises(ConfigError, match="algo=snes with env=lm; allowed: openai_es, eggroll, grpo"):
        compose_run_config([*TINY, "algo=snes"])
    with pytest.raises(ConfigError, match=r"timesteps=0 is out of range"):
        compose_run_config(
            ["sequence=cartpole_pair", "sequence.stage_timesteps=null", "sequence.stages.0.timesteps=0"]
        )
    with pytest.raises(ConfigError, match=r"even algo\.population_size"):
        compose_run_config([*TINY, "algo=openai_es", "algo.population_size=5"])


@pytest.mark.slow
@pytest.mark.parametrize(
    "awd", [[], ["algo.l2_anchor=stage_start", "algo.l2_coeff=0.1"]], ids=["plain", "awd"]
)
def test_killed_lm_es_run_resumes_to_the_same_parameters(tmp_path: Path, awd: list[str]) -> None:
    """Resumed from a checkpoint inside the stage: the same parameters and rows as a run never
    stopped, also with Anchored Weight Decay (its anchor, the stage-start snapshot, is checkpointed)."""
    args = [
        *TINY,
        "algo=eggroll",
        *ES,
        *awd,
        "env.kwargs.task=addition",
        "budget.timesteps=1600",
        "checkpoint_every=1",
        "eval.interval_timesteps=400",
    ]
    killed = kill_after_checkpoint(args, tmp_path / "killed", rows=4)
    esbench("run", *args, f"results_dir={tmp_path / 'killed'}")
    assert_resumed(killed)
    esbench("run", *args, f"results_dir={tmp_path / 'whole'}")
    resumed, whole = (
        json.loads((only_run_dir(tmp_path / d) / "summary.json").read_text()) for d in ("killed", "whole")
    )
    assert resumed["resumed_from"] and resumed["params_sha256"] == whole["params_sha256"]
    a = pd.read_csv(only_run_dir(tmp_path / "killed") / "metrics.csv").drop(columns=TIMING_COLUMNS)
    b = pd.read_csv(only_run_dir(tmp_path / "whole") / "metrics.csv").drop(columns=TIMING_COLUMNS)
    pd.testing.assert_frame_equal(a, b)
    assert np.isfinite(a["prior_loss"].dropna()).all()


def test_a_run_written_before_the_lm_columns_resumes_with_them_empty(tmp_path: Path) -> None:
    from esbench.tracking.logger import MetricsLogger
    from esbench.tracking.schema import METRIC_COLUMNS, METRICS_FILE
    from esbench.tracking.store import RunStore

    store = RunStore(tmp_path, "exp", "run")
    first = METRIC_COLUMNS.index(LM_COLUMNS[0])
    old = list(METRIC_COLUMNS[:first])  # a file written before the LM columns (and any after them)
    assert list(METRIC_COLUMNS[first : first + len(LM_COLUMNS)]) == list(LM_COLUMNS)  # after every older one
    row = ",".join("1" if c in ("generation", "timesteps") else "" for c in old)
    store.path(METRICS_FILE).parent.mkdir(parents=True, exist_ok=True)
    store.path(METRICS_FILE).write_text(",".join(old) + "\n" + row + "\n" + row + "\n")
    logger = MetricsLogger(store, [])
    logger.resume(1)
    assert len(logger.rows) == 1 and logger.rows[0]["timesteps"] == 1
    frame = pd.read_csv(store.path(METRICS_FILE))
    assert list(frame.columns) == list(METRIC_COLUMNS) and len(frame) == 1
    assert frame[list(METRIC_COLUMNS[first:])].isna().all().all()


@pytest.mark.slow  # two LocalClusters: about 30 s
def test_lm_es_members_on_1_or_2_dask_workers_give_identical_parameters(tmp_path: Path) -> None:
    """The population is decoded in the config's fixed chunks of members, so the cluster's size
    cannot change a member's batch: 1 and 2 workers train the same weights, bit for bit."""
    dist = ["algo=openai_es", *ES, *ON_ADDITION, "lm.population.chunk_members=2", "cluster.dashboard=false"]
    one, a = _run(tmp_path / "one", *dist, "cluster.n_workers=1")
    two, b = _run(tmp_path / "two", *dist, "cluster.n_workers=2")
    assert a["params_sha256"] == b["params_sha256"]
    assert set(one["workers"]) == {1} and set(two["workers"]) == {2}
    cols = [*TIMING_COLUMNS, "workers"]
    pd.testing.assert_frame_equal(one.drop(columns=cols), two.drop(columns=cols))
    _, local = _run(tmp_path / "local", "algo=openai_es", *ES, *ON_ADDITION)
    assert local["generations"] == a["generations"] == 4  # 64 completions: 4 generations of 4 x 4
    assert one["grad_norm"].gt(0).any()  # the members differed: the weights moved


#: GRPO on the tiny model: 2 prompts x 4 completions a step, 20 steps, an evaluation point every 4.
GRPO = [
    *TINY,
    "algo=grpo",
    "algo.prompts_per_step=2",
    "algo.num_generations=4",
    "env.kwargs.task=addition",
    "budget.timesteps=160",
    "eval.interval_timesteps=32",
]


@pytest.fixture(scope="module")
def grpo_resumed(tmp_path_factory: pytest.TempPathFactory) -> KilledRun:
    """A GRPO run killed after an evaluation point inside its stage, then run again to the end."""
    root = tmp_path_factory.mktemp("grpo-killed")
    killed = kill_after_checkpoint(GRPO, root, rows=9)  # the point at 64 (step 8)
    assert (killed.run_dir / "grpo_trainer").is_dir()
    esbench("run", *GRPO, f"results_dir={root}")
    return killed


def test_killed_grpo_run_resumes_inside_its_stage(grpo_resumed: KilledRun) -> None:
    """Killed after an evaluation point inside the stage, GRPO resumes from TRL's checkpoint there
    (the rows it covers are unchanged, byte for byte), not from the stage's start."""
    assert_resumed(grpo_resumed)
    assert not (grpo_resumed.run_dir / "grpo_trainer").exists()  # TRL's checkpoints go with the stage
    resumed = json.loads((grpo_resumed.run_dir / "summary.json").read_text())
    assert resumed["resumed_from"] and resumed["resumed_from"][0] >= 8  # inside the stage, not at 0


@pytest.mark.slow  # a third GRPO run in a subprocess
def test_a_resumed_grpo_run_ends_as_an_uninterrupted_one(grpo_resumed: KilledRun, tmp_path: Path) -> None:
    """The same rows (timing aside) and the same final parameters as a run never stopped."""
    esbench("run", *GRPO, f"results_dir={tmp_path / 'whole'}")
    resumed, whole = (
        json.loads((d / "summary.json").read_text())
        for d in (grpo_resumed.run_dir, only_run_dir(tmp_path / "whole"))
    )
    a = pd.read_csv(grpo_resumed.run_dir / "metrics.csv").drop(columns=TIMING_COLUMNS)
    b = pd.read_csv(only_run_dir(tmp_path / "whole") / "metrics.csv").drop(columns=TIMING_COLUMNS)
    assert list(a["timesteps"]) == list(b["timesteps"])
    assert resumed["params_sha256"] == whole["params_sha256"]
    pd.testing.assert_frame_equal(a, b)


@pytest.mark.slow  # a W&B offline run: up to a minute on the loaded 2-core machine
def test_lm_run_logs_tables_of_sample_generations_to_offline_wandb(tmp_path: Path) -> None:
    """The first and the last evaluation's sample generations (prompt, completion, reward) are
    W&B tables in the offline run's files, and in the run directory."""
    cfg = compose_run_config(
        [*TINY, "algo=eggroll", *ES, *ON_ADDITION, "tracker=wandb_offline", "tracker.artifacts=false",
         f"results_dir={tmp_path}"]
    )  # fmt: skip
    run_dir = run(cfg).run_dir
    for which, timesteps in (("first", 0), ("last", 64)):
        local = json.loads((run_dir / f"samples_{which}.json").read_text())
        assert local["columns"] == ["timesteps", "task", "prompt", "completion", "answer", "reward"]
        assert len(local["data"]) == 8 and {r[0] for r in local["data"]} == {timesteps}
        (table,) = (run_dir / "wandb").glob(f"offline-run-*/files/media/table/samples/{which}_*.table.json")
        logged = json.loads(table.read_text())
        assert logged["columns"] == local["columns"] and logged["data"] == local["data"]
        assert all(r[2].endswith("=") and r[5] in (0.0, 1.0) for r in logged["data"])  # task A: exact or not


def test_lm_es_with_anchored_weight_decay_matches_the_hand_computed_update(tmp_path: Path) -> None:
    """``algo.l2_anchor=stage_start`` on env=lm: each generation's ES step, then the parameters pulled
    back toward the task-A model (the stage's start) by ``l2_coeff`` of the distance. Generation 1
    starts at the anchor (no decay), so generation 2's members and fitness are the plain run's, and
    theta_2(AWD) = theta_2(plain) - l2_coeff * (theta_1 - theta_0), computed here by hand."""
    from esbench.analysis.retention import load_snapshots

    def params(name: str, *overrides: str) -> np.ndarray:
        # seed 2: the members' rewards differ in generations 1 and 2 (the update is not zero)
        _run(tmp_path / name, "algo=openai_es", *ES, "env.kwargs.task=addition", "seed=2", *overrides)
        return load_snapshots(only_run_dir(tmp_path / name) / "snapshots.npz").params

    one = params("one", "budget.timesteps=16")  # one generation of 4 members x 4 prompts
    plain = params("plain", "budget.timesteps=32")
    awd = params("awd", "budget.timesteps=32", "algo.l2_anchor=stage_start", "algo.l2_coeff=0.25")
    theta0, theta1 = one[0], one[-1]
    assert np.array_equal(plain[0], theta0) and np.array_equal(awd[0], theta0)  # the task-A model
    assert not np.array_equal(theta1, theta0)  # the members differed: the weights moved
    by_hand = plain[-1] - np.float32(0.25) * (theta1 - theta0)
    np.testing.assert_allclose(awd[-1], by_hand, rtol=0, atol=1e-7)
    assert not np.allclose(awd[-1], plain[-1], rtol=0, atol=1e-7)  # the decay did something
    assert np.linalg.norm(awd[-1] - theta0) < np.linalg.norm(plain[-1] - theta0)  # nearer the anchor
