"""OpenAI-ES end to end through the real CLI, a real LocalCluster and real MuJoCo."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from esbench.tracking.store import code_revision, environment_record, pinned_code_revision
from tests.conftest import SMALL, esbench, only_run_dir, read_run
from tests.dask_processes import running_dask

PENDULUM = ["env=inverted_pendulum", "budget=smoke", *SMALL]


@pytest.mark.learning
def test_es_learns_inverted_pendulum(tmp_path: Path) -> None:
    """Smoke scale: InvertedPendulum-v5 to an eval return >= 900 (max 1000) within 100k steps."""
    esbench("run", *PENDULUM, "budget.timesteps=100000", f"results_dir={tmp_path}")
    metrics, summary = read_run(only_run_dir(tmp_path))
    first_eval = metrics["eval_return_mean"].dropna().iloc[0]
    assert summary["final_eval_return"] >= 900, summary
    assert first_eval < 300  # it learned; it did not start there
    assert summary["total_timesteps"] >= 100000
    assert list(pd.read_csv(only_run_dir(tmp_path) / "metrics.csv").columns)[:3] == [
        "generation",
        "timesteps",
        "frames",
    ]


def test_same_numbers_with_one_and_two_workers_and_on_a_second_run(tmp_path: Path) -> None:
    runs = {}
    for name, workers in (("one", 1), ("two", 2), ("again", 2)):
        esbench("run", *PENDULUM, "budget.timesteps=12000", "eval.interval_timesteps=4000",
                f"cluster.n_workers={workers}", f"results_dir={tmp_path / name}")  # fmt: skip
        runs[name] = read_run(only_run_dir(tmp_path / name))
    (m1, s1), (m2, s2), (m3, s3) = runs["one"], runs["two"], runs["again"]
    pd.testing.assert_frame_equal(m1, m2)
    pd.testing.assert_frame_equal(m2, m3)
    assert s1["params_sha256"] == s2["params_sha256"] == s3["params_sha256"]
    assert (s1["workers"], s2["workers"]) == (1, 2)


def test_run_writes_the_store_and_a_second_call_skips_it(tmp_path: Path) -> None:
    esbench("run", *PENDULUM, "budget.timesteps=5000", "experiment=store_check", f"results_dir={tmp_path}")
    run_dir = only_run_dir(tmp_path)
    assert run_dir.parent.name == "store_check"
    for name in ("config.yaml", "metrics.csv", "summary.json", "env.json", "checkpoint.npz"):
        assert (run_dir / name).exists(), name
    summary = json.loads((run_dir / "summary.json").read_text())
    for key in ("final_eval_return", "total_timesteps", "wall_clock_s", "steps_per_s", "params_sha256"):
        assert key in summary
    env = json.loads((run_dir / "env.json").read_text())
    assert env["cpu_count"] >= 1 and env["packages"]["mujoco"]
    again = esbench(
        "run", *PENDULUM, "budget.timesteps=5000", "experiment=store_check", f"results_dir={tmp_path}"
    )
    assert "already complete" in again.stdout
    assert not list(run_dir.glob(".*.tmp"))  # no temp files left behind


def test_nan_rewards_are_excluded_counted_and_warned(tmp_path: Path) -> None:
    proc = esbench(
        "run",
        *PENDULUM,
        "env.id=tests.fault_envs:esbench/NaNReward-v0",
        "env.kind=custom",
        "budget.timesteps=8000",
        f"results_dir={tmp_path}",
    )
    metrics, summary = read_run(only_run_dir(tmp_path))
    assert metrics["nonfinite_members"].sum() > 0
    assert metrics["param_norm"].notna().all()
    assert "returned NaN/inf and were excluded" in proc.stderr
    assert len(summary["params_sha256"]) == 64


def test_lost_worker_mid_generation_gives_identical_results(tmp_path: Path) -> None:
    """A worker process dies (os._exit) inside a task; Dask recomputes it elsewhere."""
    base = [
        *PENDULUM,
        "env.id=tests.fault_envs:esbench/CrashOnce-v0",
        "env.kind=custom",
        "budget.timesteps=8000",
        "+env.kwargs.crash_at_reset=5",  # each lockstep slot has its own env and reset count
        "cluster.n_workers=2",
    ]
    spared = tmp_path / "spared.marker"
    spared.write_text("exists: no crash")
    esbench("run", *base, f"+env.kwargs.marker={spared}", f"results_dir={tmp_path / 'clean'}")
    marker = tmp_path / "crash.marker"
    esbench("run", *base, f"+env.kwargs.marker={marker}", f"results_dir={tmp_path / 'crashed'}")
    assert marker.exists(), "no worker was killed"
    assert int(marker.read_text()) != os.getpid()
    clean, crashed = read_run(only_run_dir(tmp_path / "clean")), read_run(only_run_dir(tmp_path / "crashed"))
    pd.testing.assert_frame_equal(clean[0], crashed[0])
    assert clean[1]["params_sha256"] == crashed[1]["params_sha256"]


def test_wandb_offline_run_files_on_disk(tmp_path: Path) -> None:
    esbench(
        "run",
        "env=inverted_pendulum",
        "budget=smoke",
        "budget.timesteps=3000",
        "tracker=wandb_offline",
        "tracker.console=false",
        "algo.noise_table_size=1000000",
        f"results_dir={tmp_path}",
        timeout=300,
    )
    run_dir = only_run_dir(tmp_path)
    offline = list((run_dir / "wandb").glob("offline-run-*"))
    assert offline, "no offline W&B run directory"
    assert list(offline[0].glob("*.wandb"))


def test_wandb_failure_does_not_kill_the_run(tmp_path: Path) -> None:
    proc = esbench(
        "run",
        *PENDULUM[:-3],
        "tracker=wandb_offline",
        "tracker.console=false",
        "tracker.entity=",  # harmless; the failure comes from the bad project name below
        "tracker.project=bad/project/name",
        "algo.noise_table_size=1000000",
        "budget.timesteps=3000",
        f"results_dir={tmp_path}",
    )
    assert (only_run_dir(tmp_path) / "summary.json").exists()
    assert "W&B tracking disabled" in proc.stderr


@pytest.fixture
def dask_processes(tmp_path: Path) -> Iterator[str]:
    """A real `dask scheduler` and two `dask worker --nthreads 1` processes on 127.0.0.1."""
    with running_dask(tmp_path, workers=2) as address:
        yield address


def test_running_scheduler_by_address_gives_identical_results(tmp_path: Path, dask_processes: str) -> None:
    esbench("run", *PENDULUM, "budget.timesteps=8000", f"results_dir={tmp_path / 'local'}")
    esbench(
        "run",
        *PENDULUM,
        "budget.timesteps=8000",
        "cluster=address",
        f"cluster.address={dask_processes}",
        f"results_dir={tmp_path / 'remote'}",
    )
    local, remote = read_run(only_run_dir(tmp_path / "local")), read_run(only_run_dir(tmp_path / "remote"))
    pd.testing.assert_frame_equal(local[0], remote[0])
    assert local[1]["params_sha256"] == remote[1]["params_sha256"]
    assert remote[1]["workers"] == 2


def test_unreachable_scheduler_fails_fast_with_advice(tmp_path: Path) -> None:
    proc = esbench(
        "run",
        *PENDULUM,
        "cluster=address",
        "cluster.address=tcp://127.0.0.1:9",
        "cluster.connect_timeout_s=2",
        f"results_dir={tmp_path}",
        check=False,
        timeout=120,  # a connect that ignores cluster.connect_timeout_s hangs: a failure, not a wait
    )
    assert proc.returncode != 0
    assert "dask scheduler" in proc.stderr and "dask worker" in proc.stderr
    assert "within 2 s" in proc.stderr  # the configured connect timeout, not Dask's 30 s default


def test_a_pinned_code_revision_is_what_runs_record() -> None:
    """Inside :func:`pinned_code_revision` (a sweep's job) a run records the sweep's revision, not
    whatever the checkout is at the moment; outside it, the checkout's own."""
    pinned = {"git_commit": "0" * 40, "git_dirty": True}
    with pinned_code_revision(pinned):
        record = environment_record(2)
    assert (record["git_commit"], record["git_dirty"]) == ("0" * 40, True)
    assert environment_record(2)["git_commit"] == code_revision()["git_commit"] != "0" * 40


def test_multirun_sweep_runs_every_job_and_a_rerun_skips_them(tmp_path: Path) -> None:
    args = ["run", "-m", *PENDULUM, "budget.timesteps=2000", "seed=0,1", f"results_dir={tmp_path}"]
    first = esbench(*args)
    summaries = sorted(tmp_path.glob("default/*/summary.json"))
    assert len(summaries) == 2, first.stdout
    stamps = [p.stat().st_mtime_ns for p in summaries]
    # Every job names the code revision the sweep started from (taken once, on the driver).
    revisions = {
        (e["git_commit"], e["git_dirty"])
        for e in (json.loads((p.parent / "env.json").read_text()) for p in summaries)
    }
    assert revisions == {tuple(code_revision().values())}
    again = esbench(*args)
    assert again.stdout.count("already complete") == 2
    assert [p.stat().st_mtime_ns for p in summaries] == stamps
