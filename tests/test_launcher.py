"""The Dask launcher for Hydra: sweeps on a LocalCluster and on real scheduler/worker processes."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd

from hydra_plugins.esbench_dask_launcher.progress import SweepProgress, format_duration
from tests.conftest import SMALL, esbench, read_run
from tests.test_es_run import dask_processes  # noqa: F401  (a real `dask scheduler` + 2 workers)

DASK = ["-m", "hydra/launcher=dask", "env=inverted_pendulum", "budget=smoke", *SMALL, "cluster.n_workers=2"]
NAN_ENV = ["env.id=tests.fault_envs:esbench/NaNReward-v0", "env.kind=custom"]
BASES = "+env.kwargs.base_id=InvertedPendulum-v5,NoSuchEnv-v9"  # the second fails at run time only


def _summaries(root: Path) -> dict[str, float]:
    return {str(p.parent.name): p.stat().st_mtime_ns for p in root.rglob("summary.json")}


def test_two_job_sweep_then_a_second_invocation_recomputes_nothing(tmp_path: Path) -> None:
    args = [*DASK, "budget.timesteps=3000", "seed=0,1", "experiment=two", f"results_dir={tmp_path}"]
    first = esbench("run", *args)
    assert "Dask launcher: 2 job(s) on 2 worker(s)" in first.stdout
    assert "2/2 done" in first.stdout and "ETA" in first.stdout
    before = _summaries(tmp_path / "two")
    assert len(before) == 2
    again = esbench("run", *args)
    assert again.stdout.count("job skipped") == 2
    assert "2/2 done (2 skipped)" in again.stdout
    assert _summaries(tmp_path / "two") == before  # nothing rewritten


def test_jobs_outnumbering_worker_threads_run_at_once_without_deadlock(tmp_path: Path) -> None:
    """2 ES jobs on 1 single-threaded worker both finish, and ran at once: each job secedes from the
    worker's only thread when its run connects to the cluster, so its rollouts and the other job can
    use it. Without seceding the first job would hold the thread while waiting for rollouts that need
    it (a deadlock, caught by the timeout). The overlap is structural, not a race: the second job can
    only start once the first has seceded, and the first is then still training.

    The overlap comes from the jobs' own start times and durations (the sweep's last line), not from
    the driver's once-a-second progress polls.
    """
    proc = esbench(
        "run", *DASK[:-1], "cluster.n_workers=1", "budget.timesteps=6000", "seed=0,1",
        "hydra.launcher.max_concurrent=2", f"results_dir={tmp_path}", timeout=240,
    )  # fmt: skip
    assert len(list(tmp_path.rglob("summary.json"))) == 2
    assert "2 job(s) on 1 worker(s)" in proc.stdout
    match = re.search(r"sweep finished: 2/2 done, up to (\d+) job\(s\) ran at once", proc.stdout)
    assert match, proc.stdout[-2000:]
    assert int(match.group(1)) == 2


def _enter_cluster_and_wait(i: int) -> bool:
    """A stand-in for a sweep job: connect to the cluster the way a run does (which secedes inside a
    task), say so on a queue, then wait until the test lets every job go."""
    from distributed import Event, Queue

    from esbench.runtime.cluster import dask_client

    with dask_client(None):
        Queue("entered").put(i)
        return Event("release").wait(timeout=120)


def test_four_tasks_on_two_worker_threads_are_all_inside_a_run_at_once() -> None:
    """4 tasks on 2 single-threaded workers are all inside ``dask_client`` at the same moment: a
    barrier, not a timing, shows it (without seceding only 2 could ever enter, and the queue read
    below times out)."""
    from distributed import Client, Event, LocalCluster, Queue

    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                     dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):  # fmt: skip
        entered, release = Queue("entered", client=client), Event("release", client=client)
        futures = client.map(_enter_cluster_and_wait, range(4), pure=False)
        inside = sorted(entered.get(timeout=120) for _ in range(4))
        release.set()
        assert inside == [0, 1, 2, 3]
        assert client.gather(futures) == [True] * 4


def test_a_failed_job_is_reported_and_the_others_complete(tmp_path: Path) -> None:
    proc = esbench(
        "run", *DASK, *NAN_ENV, "budget.timesteps=2000", BASES,
        f"results_dir={tmp_path}", check=False,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "job FAILED:" in proc.stderr and "+env.kwargs.base_id=NoSuchEnv-v9" in proc.stderr
    assert "Traceback" in proc.stderr and "NoSuchEnv" in proc.stderr
    assert "1 of 2 job(s) failed" in proc.stderr
    assert len(list(tmp_path.rglob("summary.json"))) == 1


def test_sweep_on_real_scheduler_matches_local_cluster(
    tmp_path: Path,
    dask_processes: str,  # noqa: F811
) -> None:
    sweep = [*DASK, "budget.timesteps=3000", "seed=0,1", "experiment=same"]
    esbench("run", *sweep, f"results_dir={tmp_path / 'local'}")
    remote = esbench(
        "run",
        *sweep,
        "cluster=address",
        f"cluster.address={dask_processes}",
        f"results_dir={tmp_path / 'remote'}",
    )
    assert "on 2 worker(s)" in remote.stdout
    local_dirs = sorted((tmp_path / "local" / "same").iterdir())
    remote_dirs = sorted((tmp_path / "remote" / "same").iterdir())
    assert [d.name for d in local_dirs] == [d.name for d in remote_dirs] and len(local_dirs) == 2
    for a, b in zip(local_dirs, remote_dirs, strict=True):
        (ma, sa), (mb, sb) = read_run(a), read_run(b)
        pd.testing.assert_frame_equal(ma, mb)
        assert sa["params_sha256"] == sb["params_sha256"]


def test_progress_counts_and_eta() -> None:
    now = [0.0]
    p = SweepProgress(4, clock=lambda: now[0])
    assert math.isinf(p.eta()) and "ETA ?" in p.line()
    assert p.start(0) and p.start(1) and not p.start(1)
    now[0] = 10.0
    p.finish(0, "complete", 10.0)
    p.finish(2, "skipped", 0.1)
    assert (p.running, p.queued, p.failed, p.skipped) == (1, 1, 0, 1)
    # job 1 ran 10 s of a mean of 10 s; job 3 queued: 10 s more, one job at a time
    assert p.eta() == 10.0
    p.finish(1, "failed", 10.0)
    assert "3/4 done (1 skipped, 1 failed), 0 running, 1 queued" in p.line()
    assert format_duration(3725) == "1h02m" and format_duration(65) == "1m05s"


def test_peak_concurrency_from_job_spans() -> None:
    p = SweepProgress(4)
    assert p.peak_concurrency() == 0
    p.finish(0, "complete", 10.0, started=100.0)  # 100-110
    p.finish(1, "complete", 5.0, started=104.0)  # 104-109: overlaps job 0
    p.finish(2, "complete", 2.0, started=110.0)  # 110-112: starts as job 0 ends, no overlap
    p.finish(3, "failed", 1.0)  # no start time: not counted
    assert p.peak_concurrency() == 2
    p.finish(4, "complete", 3.0, started=105.0)  # 105-108 inside both
    assert p.peak_concurrency() == 3
    assert "up to 3 job(s) ran at once" in p.summary()


def test_weighted_eta_prices_slow_jobs_by_their_estimated_cost() -> None:
    """Cheap ES jobs finishing first must not make a sweep of slow TRPO jobs look nearly done."""
    now = [0.0]
    p = SweepProgress(3, clock=lambda: now[0], weights={0: 1.0, 1: 10.0, 2: 10.0})
    p.start(0)
    now[0] = 5.0
    p.finish(0, "complete", 5.0)  # 5 s per unit of weight
    p.start(1)
    now[0] = 15.0  # job 1 has run 10 s of its expected 50; job 2 (50 s) is queued
    assert p.eta() == (40.0 + 50.0) / 1
    unweighted = SweepProgress(3, clock=lambda: now[0])
    unweighted.finish(0, "complete", 5.0)
    assert unweighted.eta() == 10.0  # mean-duration pricing: 2 jobs x 5 s


def test_job_weights_follow_algorithm_and_budget() -> None:
    from esbench.recipes import estimated_core_seconds

    es = estimated_core_seconds(["algo=openai_es", "env=hopper", "budget.timesteps=200000"])
    trpo = estimated_core_seconds(["algo=trpo", "env=hopper", "budget.timesteps=200000"])
    trpo_long = estimated_core_seconds(["algo=trpo", "env=hopper", "budget.timesteps=400000"])
    assert trpo > 3 * es and trpo_long > 1.8 * trpo
