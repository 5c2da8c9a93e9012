"""``cluster=slurm``: the job script dask-jobqueue submits, and a run on SLURM jobs.

No SLURM here, so the end-to-end test puts a stand-in ``sbatch`` on ``PATH`` that runs the
submitted batch script on this machine (in the background, as SLURM would on a node) and a
``scancel`` that stops it. Everything else is real: esbench's ``SLURMCluster``, the job scripts it
renders, the ``dask worker`` processes they start, the scheduler on 127.0.0.1 (interface ``lo``).
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from esbench.config.compose import compose_run_config
from esbench.runtime.slurm import slurm_job_kwargs, slurm_job_script
from tests.conftest import REPO, SMALL, esbench, only_run_dir, read_run
from tests.process_watch import watch

USER_OPTIONS = [
    "cluster=slurm",
    "cluster.queue=cpu-long",
    "cluster.account=es-project",
    "cluster.cores=8",
    "cluster.memory=16GB",
    "cluster.walltime=02:30:00",
    "cluster.job_name=es-bench",
    "cluster.job_extra_directives=['--qos=normal','--exclusive']",
    "cluster.job_script_prologue=['module load python/3.11','source /opt/es/.venv/bin/activate']",
    "cluster.worker_extra_args=['--lifetime','55m','--lifetime-stagger','4m']",
    "cluster.local_directory='/scratch/$USER'",
    "cluster.log_directory=/home/me/slurm-logs",
    "cluster.interface=ib0",
    "cluster.python=/opt/es/.venv/bin/python",
]


def test_job_script_carries_every_option() -> None:
    cfg = compose_run_config(USER_OPTIONS)
    script = slurm_job_script(cfg.cluster, "tcp://10.0.0.5:8786")
    lines = script.splitlines()
    assert lines[0].startswith("#!")
    for directive in (
        "#SBATCH -J es-bench",
        "#SBATCH -p cpu-long",
        "#SBATCH -A es-project",
        "#SBATCH -n 1",
        "#SBATCH --cpus-per-task=8",
        "#SBATCH --mem=15G",  # dask-jobqueue writes GiB: 16 GB = 14.9 GiB, rounded up
        "#SBATCH -t 02:30:00",
        "#SBATCH --qos=normal",
        "#SBATCH --exclusive",
        "#SBATCH -e /home/me/slurm-logs/es-bench-%J.err",
        "#SBATCH -o /home/me/slurm-logs/es-bench-%J.out",
    ):
        assert directive in lines, (directive, script)
    body = [ln for ln in lines if ln and not ln.startswith("#")]
    assert body[:2] == ["module load python/3.11", "source /opt/es/.venv/bin/activate"]  # before the worker
    command = shlex.split(body[-1])
    assert command[0] == "/opt/es/.venv/bin/python" and "tcp://10.0.0.5:8786" in command
    assert command[command.index("--nthreads") + 1] == "1"  # single-threaded workers ...
    assert command[command.index("--nworkers") + 1] == "8"  # ... one per core
    assert command[command.index("--memory-limit") + 1] in ("2.00GB", "1.86GiB")  # 16 GB / 8
    assert command[command.index("--local-directory") + 1] == "/scratch/$USER"
    assert command[command.index("--interface") + 1] == "ib0"
    assert command[command.index("--lifetime") + 1] == "55m"
    assert "--nanny" in command


def test_fewer_processes_than_cores_gives_threaded_workers_and_bad_counts_fail() -> None:
    cfg = compose_run_config(["cluster=slurm", "cluster.cores=8", "cluster.processes=2"])
    command = shlex.split(slurm_job_script(cfg.cluster).splitlines()[-1])
    assert command[command.index("--nthreads") + 1] == "4"
    assert command[command.index("--nworkers") + 1] == "2"
    bad = compose_run_config(["cluster=slurm", "cluster.cores=2", "cluster.processes=4"])
    with pytest.raises(ValueError, match=r"cluster\.processes=4"):
        slurm_job_kwargs(bad.cluster)


FAKE_SBATCH = """#!/bin/bash
# Stand-in for sbatch: run the batch script here, in the background, in its own session.
set -e
job=$(mktemp "$FAKE_SLURM_DIR/job-XXXXXX")  # unique: jobs are submitted concurrently
cp "$1" "$job.sh"   # dask-jobqueue deletes its temporary file once sbatch returns
setsid bash "$job.sh" > "$job.log" 2>&1 < /dev/null &
echo "$!" > "$job.pid"
echo "Submitted batch job $!"
"""

FAKE_SCANCEL = """#!/bin/bash
# Stand-in for scancel: stop each job's process group.
for id in "$@"; do kill -TERM -- "-$id" 2>/dev/null || true; done
"""


@pytest.fixture
def fake_slurm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory with stand-in ``sbatch``/``scancel`` first on ``PATH``; job scripts land there."""
    bindir, jobs = tmp_path / "bin", tmp_path / "jobs"
    bindir.mkdir()
    jobs.mkdir()
    for name, text in (("sbatch", FAKE_SBATCH), ("scancel", FAKE_SCANCEL)):
        (bindir / name).write_text(text)
        (bindir / name).chmod(stat.S_IRWXU)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_SLURM_DIR", str(jobs))
    yield jobs
    for pid_file in jobs.glob("job-*.pid"):  # any job left running
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.killpg(int(pid_file.read_text()), signal.SIGKILL)


def _job_pids(jobs: Path) -> list[int]:
    """Pids of the batch scripts the fake sbatch started (it records each one)."""
    pids = []
    for pid_file in jobs.glob("job-*.pid"):
        with contextlib.suppress(ValueError):
            pids.append(int(pid_file.read_text()))
    return pids


def test_run_on_slurm_jobs_matches_the_embedded_cluster(tmp_path: Path, fake_slurm: Path) -> None:
    """Two SLURM jobs of one worker each, on interface lo: same numbers as a LocalCluster run, and
    the scheduler (in the run's process), its HTTP server and the jobs' workers all listen on
    127.0.0.1 only (only this run's processes and the jobs the fake sbatch started are looked at)."""
    run = ["env=inverted_pendulum", "budget=smoke", *SMALL, "budget.timesteps=6000"]
    esbench("run", *run, f"results_dir={tmp_path / 'local'}")
    log = tmp_path / "stderr.txt"
    with log.open("wb") as err:  # a file, not a pipe: nobody reads a pipe while the run is watched
        proc = subprocess.Popen(
            [sys.executable, "-m", "esbench.cli", "run", *run, "cluster=slurm", "cluster.jobs=2",
             "cluster.cores=1", "cluster.memory=2GB", "cluster.interface=lo", "cluster.worker_wait_s=120",
             "cluster.queue=debug", "cluster.dashboard=false",
             f"cluster.local_directory={tmp_path / 'scratch'}", f"results_dir={tmp_path / 'slurm'}"],
            cwd=REPO, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True,
        )  # fmt: skip
        try:
            seen = watch(proc, lambda: _job_pids(fake_slurm))
            proc.wait(timeout=300)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, log.read_text()[-3000:]
    servers = seen.servers()
    assert proc.pid in servers and len(servers) >= 3, servers  # the scheduler and two workers
    assert not seen.off_loopback(), seen.off_loopback()
    scripts = sorted(fake_slurm.glob("job-*.sh"))
    assert len(scripts) == 2, "cluster.jobs=2 submitted two jobs"
    text = scripts[0].read_text()
    assert "#SBATCH -p debug" in text and re.search(r"tcp://127\.0\.0\.1:\d+", text)
    local, slurm = read_run(only_run_dir(tmp_path / "local")), read_run(only_run_dir(tmp_path / "slurm"))
    pd.testing.assert_frame_equal(local[0], slurm[0])
    assert local[1]["params_sha256"] == slurm[1]["params_sha256"]
    workers = pd.read_csv(only_run_dir(tmp_path / "slurm") / "metrics.csv")["workers"]
    assert workers.max() == 2


def test_adaptive_slurm_cluster_submits_jobs_as_tasks_wait(tmp_path: Path, fake_slurm: Path) -> None:
    """minimum_jobs=1, maximum_jobs=2: the run starts on one job and finishes with the numbers."""
    run = ["env=inverted_pendulum", "budget=smoke", *SMALL, "budget.timesteps=6000"]
    esbench(
        "run", *run, "cluster=slurm", "cluster.minimum_jobs=1", "cluster.maximum_jobs=2",
        "cluster.cores=1", "cluster.memory=2GB", "cluster.interface=lo", "cluster.worker_wait_s=120",
        f"results_dir={tmp_path / 'adaptive'}",
    )  # fmt: skip
    assert 1 <= len(list(fake_slurm.glob("job-*.sh"))) <= 2
    assert (only_run_dir(tmp_path / "adaptive") / "summary.json").exists()
