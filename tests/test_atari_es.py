"""OpenAI-ES on Atari end to end: the real CLI, a real LocalCluster, real ALE Pong, the VBN CNN.

Smoke scale: 2 antithetic pairs per generation, episodes capped at 150 agent steps (a Pong game
never ends that early, so every training episode is exactly 150 steps), 2,400 training steps.
Three runs serve every test: frame-skip 3 and frame-skip 1 on one worker (members in lockstep, the
default), sharing a ``dask worker`` the module starts once (``cluster=address``: the second run
costs its own process, not a LocalCluster importing the ALE, torch and esbench again), and
frame-skip 3 on a LocalCluster of two workers playing members one by one.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from esbench.config.compose import compose_run_config
from esbench.runner import default_run_id
from esbench.sweep import expand_sweep
from esbench.tracking.schema import METRIC_COLUMNS
from tests.conftest import REPO, SMALL, esbench, only_run_dir, read_run
from tests.dask_processes import running_dask

CAP = 150
NOOP_MAX = 30
PONG = [
    "algo=openai_es",
    "env=atari",
    "env.game=Pong",
    "budget=smoke",
    *SMALL,
    "algo.population_size=4",
    f"env.max_episode_steps={CAP}",
    "budget.timesteps=2400",
    "eval.episodes=2",
    "eval.interval_timesteps=100000",  # evaluate once, at the end
    "policy.vbn_reference_size=32",
]


def _run(root: Path, frame_skip: int, *extra: str) -> Path:
    esbench("run", *PONG, f"env.frame_skip={frame_skip}", f"results_dir={root}", *extra)
    return only_run_dir(root)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The three smoke runs the tests share, by name.

    The two-worker run also plays its members one by one (``algo.rollout_batch=1``), so one
    comparison with the one-worker lockstep run covers both knobs: a change that made either the
    worker count or the batched CNN forward alter a number fails it. It gets a LocalCluster of its
    own, not the shared worker: a worker keeps a run's context by its run key, which
    ``rollout_batch`` (not in the run id) does not change, so it would play in lockstep again.
    """
    root = tmp_path_factory.mktemp("atari")
    with running_dask(root / "dask", workers=1) as address:
        one = ["cluster=address", f"cluster.address={address}"]
        fs3_w1, fs1_w1 = _run(root / "fs3_w1", 3, *one), _run(root / "fs1_w1", 1, *one)
    fs3_w2 = _run(root / "fs3_w2", 3, "cluster.n_workers=2", "algo.rollout_batch=1")
    return {"fs3_w1": fs3_w1, "fs1_w1": fs1_w1, "fs3_w2_one_by_one": fs3_w2}


@pytest.mark.parametrize(("name", "frame_skip"), [("fs3_w1", 3), ("fs1_w1", 1)])
def test_smoke_run_counts_agent_steps_and_emulator_frames(
    runs: dict[str, Path], name: str, frame_skip: int
) -> None:
    run_dir = runs[name]
    metrics = pd.read_csv(run_dir / "metrics.csv")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert tuple(metrics.columns) == METRIC_COLUMNS
    assert summary["env_id"] == "ALE/Pong-v5" and "ale-pong-v5" in summary["run_id"]
    assert (metrics["train_task"] == "ALE/Pong-v5").all()
    steps, frames, episodes = metrics["timesteps"], metrics["frames"], metrics["episodes"]
    assert (steps == CAP * episodes).all()  # every training episode hit the agent-step cap
    # frames = sum of per-step frames (frame_skip each) + the 1..noop_max no-ops of each reset
    assert (frames >= frame_skip * steps + episodes).all()
    assert (frames <= frame_skip * steps + NOOP_MAX * episodes).all()
    assert frame_skip <= summary["total_frames"] / summary["total_timesteps"] <= frame_skip + NOOP_MAX / CAP
    assert summary["total_timesteps"] >= 2400
    # evaluations at timestep 0 and at the end: 2 deterministic episodes each, capped, unclipped
    # Pong scores in [-21, 21]
    evals = metrics.dropna(subset=["eval_return_mean"])
    assert list(evals["timesteps"]) == [0, summary["total_timesteps"]]
    assert evals["eval_return_mean"].between(-21, 21).all()
    assert 0 < metrics["eval_timesteps"].iloc[-1] <= 2 * 2 * CAP
    config = (run_dir / "config.yaml").read_text()
    assert "id: ALE/Pong-v5" in config and "sigma: 0.005" in config and "clip_rewards: false" in config


def test_same_numbers_on_one_worker_in_lockstep_and_two_playing_members_one_by_one(
    runs: dict[str, Path],
) -> None:
    """1 worker or 2, and the batched CNN forward (BatchedCNN, members in lockstep) or members one
    by one: the same metrics and final parameters, bit for bit; ``algo.rollout_batch`` stays out
    of the run id."""
    (m1, s1), (m2, s2) = read_run(runs["fs3_w1"]), read_run(runs["fs3_w2_one_by_one"])
    pd.testing.assert_frame_equal(m1, m2)
    assert s1["params_sha256"] == s2["params_sha256"]
    assert (s1["workers"], s2["workers"]) == (1, 2)
    assert s1["run_id"] == s2["run_id"]


def test_unknown_game_fails_before_any_work_with_close_matches(tmp_path: Path) -> None:
    proc = esbench("run", "env=atari", "env.game=Pongg", f"results_dir={tmp_path}", check=False, timeout=60)
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert "unknown Atari game 'Pongg': close matches: Pong;" in lines[0] and "Space Invaders" in lines[0]
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (["env=atari", "policy.kind=mlp"], "policy.kind='mlp' cannot act on Atari frames"),
        (["env=hopper", "policy.kind=cnn"], "policy.kind=cnn needs an Atari env"),
        (["env=atari", "policy.obs_norm=true"], "allowed: policy.obs_norm=false"),
        (["env=atari", "algo.noise_table_size=600000"], "allowed: algo.noise_table_size >= 677990"),
    ],
)
def test_policy_and_env_mismatch_is_one_clear_error(overrides: list[str], expected: str) -> None:
    from esbench.config.validate import ConfigError

    with pytest.raises(ConfigError) as err:
        compose_run_config(overrides)
    assert expected in str(err.value) and "\n" not in str(err.value)


def test_frame_skip_sweep_composes_to_distinct_runs_with_atari_es_settings() -> None:
    """The issue's sweep: 4 frame-skips x 3 seeds, each a valid config with its own run id."""
    args = ["algo=openai_es", "env=atari", "env.game=Pong", "env.frame_skip=1,2,3,4", "seed=0,1,2"]
    cfgs = [compose_run_config(job) for job in expand_sweep(args)]
    assert len({default_run_id(c) for c in cfgs}) == 12
    assert {int(c.env.frame_skip) for c in cfgs} == {1, 2, 3, 4}
    for c in cfgs:
        assert c.env.id == "ALE/Pong-v5" and c.policy.kind == "cnn" and not c.policy.obs_norm
        assert (c.algo.sigma, c.algo.action_noise_std, c.env.clip_rewards) == (0.005, 0.0, False)
    # the Atari ES settings apply to openai_es only, and only on Atari
    assert compose_run_config(["env=hopper"]).algo.sigma == 0.02
    assert compose_run_config(["env=atari", "env.game=space_invaders"]).env.id == "ALE/SpaceInvaders-v5"


def test_worker_torch_threads_bound_the_cnn_forward() -> None:
    """A worker context sets torch's threads; the CNN (acting and the VBN reference pass) uses one core."""
    code = """
import time, torch
from esbench.config.compose import compose_run_config
from esbench.runtime.worker import RunSpec, get_context
cfg = compose_run_config(["env=atari", "policy.vbn_reference_size=128", "algo.noise_table_size=1000000"])
ctx = get_context(RunSpec.from_config(cfg, "threads-check"))
assert torch.get_num_threads() == 1, torch.get_num_threads()
obs, _ = ctx.env.reset(seed=0)
params = ctx.policy.get_params()
w0, c0 = time.perf_counter(), time.process_time()
for _ in range(5):
    ctx.policy.set_params(params)
for _ in range(200):
    ctx.policy.act(obs)
print((time.process_time() - c0) / (time.perf_counter() - w0))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert float(proc.stdout.strip().splitlines()[-1]) < 1.25  # CPU-seconds per second: one thread


def test_every_family_env_specialization_names_an_existing_pair() -> None:
    """conf/family_env/<family>_<env>.yaml applies only if both names exist (a typo would be silent)."""
    from esbench.config.compose import CONF_DIR

    families = {p.stem for p in (CONF_DIR / "family").glob("*.yaml")}
    envs = {p.stem for p in (CONF_DIR / "env").glob("*.yaml")}
    pairs = {f"{f}_{e}" for f in families for e in envs}
    files = sorted(p.stem for p in (CONF_DIR / "family_env").glob("*.yaml"))
    assert "es_atari" in files
    assert not [f for f in files if f not in pairs], f"no such family_env pair: {files}"


def test_every_es_variant_gets_the_atari_specialization() -> None:
    """A new ES variant on Atari runs with the Atari ES settings, not silently with MuJoCo's."""
    from esbench.config.compose import compose_run_config
    from esbench.config.registry import algorithms

    on_atari = [k for k, spec in algorithms("es").items() if "cnn" in spec.policy_kinds]
    assert len(on_atari) >= 2, on_atari
    for key in on_atari:
        cfg = compose_run_config([f"algo={key}", "env=atari", "env.game=Pong"])
        assert cfg.env.clip_rewards is False, key
        assert cfg.algo.tasks_per_worker == 2 and cfg.algo.obs_norm_fraction == 0.0, key


def test_atari_bench_table_states_fraction_of_raw_limit() -> None:
    from esbench.bench.atari import format_atari_bench

    result = {
        "env_id": "ALE/Pong-v5",
        "frame_skip": 4,
        "cpu_count": 2,
        "raw": {"agent_steps_per_s": 2500.0, "frames_per_s": 10000.0},
        "profile": {
            "agent_steps_per_s": 1000.0,
            "frames_per_s": 4000.0,
            "act_share": 0.3,
            "act_ms": 0.2,
            "env_share": 0.65,
            "reset_share": 0.15,
            "reset_ms": 120.0,
            "set_params_share": 0.05,
        },
        "rollout_batch": 4,
        "profile_lockstep": {
            "batch": 4,
            "agent_steps_per_s": 1500.0,
            "frames_per_s": 6000.0,
            "act_share": 0.2,
            "act_ms": 0.13,
            "env_share": 0.75,
            "reset_share": 0.2,
            "reset_ms": 118.0,
            "set_params_share": 0.05,
        },
        "es": [
            {"workers": 1, "steady_steps_per_s": 900.0, "steady_frames_per_s": 3600.0, "generations": 6},
            {"workers": 2, "steady_steps_per_s": 1700.0, "steady_frames_per_s": 6800.0, "generations": 11},
        ],
        "speedup": {1: 1.0, 2: 6800.0 / 3600.0},
        "repeats": [
            {"es_over_emulator_plus_cnn": r, "es_over_emulator_plus_cnn_cpu": r + 0.01}
            for r in (0.84, 0.86, 0.88)
        ],
    }
    table = format_atari_bench(result)
    assert (
        "median of 3 ES runs, each bracketed by its own measurement of the limit, in the order "
        "run: 0.84, 0.86, 0.88 (CPU time: 0.85, 0.87, 0.89)" in table
    )
    assert "0.36 of raw ALE x workers (10,000 frames/s)" in table
    assert "1.89x of 1 worker; 0.34 of raw ALE x workers (20,000 frames/s)" in table
    assert "CNN act 30%" in table
    assert "members one by one) | 1,000 | 4,000 | 0.40 of raw ALE" in table
    assert "members 4 in lockstep) | 1,500 | 6,000 | 0.60 of raw ALE; CNN act 20%" in table
    assert "11 generations; rollout_batch 4 |" in table
    assert "emulator 65% (of which seeded resets 15%, 120 ms each)" in table
