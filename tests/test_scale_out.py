"""Scale out, measured: bytes on the wire, and workers that come and go (real `dask worker` processes).

* The byte counts are checked on known messages, and steady-state bytes per generation are checked
  not to grow with the parameter count (a ~300-parameter and a ~1M-parameter MLP).
* ``algo.sync_history`` (generation records per sync message): a worker further behind needs a
  snapshot; 1 record instead of 4 sends fewer bytes and changes no number.
* A worker killed from outside with SIGKILL in the middle of a generation, a worker added mid-run,
  and a worker lost mid-sweep on the Dask launcher: every run ends with the same ``params_sha256``
  as an undisturbed one, and ``metrics.csv`` shows the worker count change.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import cast

import numpy as np
import pandas as pd
import pytest
from distributed import Client

from esbench.config.compose import compose_run_config
from esbench.runtime.evaluator import MemberEvaluator
from esbench.runtime.replica import GenerationRecord, SyncMessage, advance, state_digest
from esbench.runtime.wire import WireStats, payload_bytes
from esbench.runtime.worker import ChunkResult, RunContext, RunSpec, evaluate_chunk
from esbench.strategies.base import Population
from tests.conftest import REPO, SMALL, esbench, only_run_dir, read_run
from tests.process_watch import watch

# Generations of ~0.8 s of work (40 episodes, 20 ms of sleep at each reset), long enough to act in.
SLOW = [
    "env=inverted_pendulum",
    "env.id=tests.fault_envs:esbench/Slow-v0",
    "env.kind=custom",
    "+env.kwargs.sleep_s=0.01",
    "budget=smoke",
    "budget.timesteps=1000000000",
    "eval.interval_timesteps=1000000000",
    "eval.episodes=2",
    "checkpoint_every=1",
    *SMALL,
]
GENERATIONS = 12


# --- bytes on the wire -----------------------------------------------------------------------------


def test_payload_bytes_of_known_messages() -> None:
    """An array's count is its data plus a small header; a record's grows with members, not params."""
    for n in (1_000, 1_000_000):
        size = payload_bytes(np.zeros(n, dtype=np.float64))
        assert 8 * n <= size <= 8 * n + 300, (n, size)
    assert 5_000 <= payload_bytes(b"x" * 5_000) <= 5_100

    def message(members: int, obs_dim: int) -> SyncMessage:
        pop = Population(3, np.arange(members, dtype=np.int64), antithetic=True)
        fit = np.zeros((members, 2))
        rec = GenerationRecord(pop, fit, np.zeros(obs_dim), np.zeros(obs_dim), 1.0)
        return SyncMessage(4, "0" * 64, (rec,))

    small, large = payload_bytes(message(20, 17)), payload_bytes(message(2_000, 17))
    # 1,980 more members: offsets (8 B) + two returns (16 B) each, plus at most a little framing
    assert 1_980 * 24 <= large - small <= 1_980 * 24 + 100
    # the state's parameter count appears nowhere in the message: observation sums are O(obs_dim)
    assert payload_bytes(message(20, 17 + 1_000)) - small == pytest.approx(2 * 8 * 1_000, abs=100)


def test_task_count_matches_the_whole_task_serialized() -> None:
    """What the evaluator counts for a task is what pickling the task's whole call gives (+-1%)."""
    cfg = compose_run_config(["env=inverted_pendulum", *SMALL])
    spec = RunSpec.from_config(cfg, "key")
    pop = Population(0, np.arange(20, dtype=np.int64), antithetic=True)
    msg = SyncMessage(1, "0" * 64, (GenerationRecord(pop, np.ones((20, 2))),))
    evaluator = MemberEvaluator(cast(Client, None), spec)  # no cluster needed to count
    chunk = list(range(10))
    counted = evaluator.task_bytes(payload_bytes(msg), chunk, "train")
    whole = payload_bytes((evaluate_chunk, spec, msg, chunk, "train"))
    assert counted == pytest.approx(whole, rel=0.01)
    result = ChunkResult(np.arange(10), np.ones((10, 2)), np.ones((10, 2)), np.ones((10, 2)))
    assert payload_bytes(result) >= 3 * 160 + 80  # three (10, 2) float64 arrays and the indices
    stats = WireStats(10, 20, 1, 3)
    assert stats.take() == WireStats(10, 20, 1, 3) and stats == WireStats()


def _steady(metrics: pd.DataFrame) -> pd.DataFrame:
    """Generations past the first five (the sync history full) without an evaluation."""
    return metrics[(metrics["generation"] > 5) & metrics["eval_return_mean"].isna()]


def test_steady_state_bytes_do_not_grow_with_the_parameter_count(tmp_path: Path) -> None:
    """~300 vs ~1M parameters, same population: bytes per generation within 10%, snapshots none."""
    runs = {}
    for name, hidden in (("small", "[16,16]"), ("large", "[1000,1000]")):
        esbench(
            "run", "env=inverted_pendulum", "budget=smoke", *SMALL, "algo.noise_table_size=2000000",
            f"policy.hidden_sizes={hidden}", "env.max_episode_steps=20", "budget.generations=8",
            "budget.timesteps=1000000000",
            "eval.interval_timesteps=1000000000", "eval.episodes=1", "cluster.n_workers=2",
            f"results_dir={tmp_path / name}",
        )  # fmt: skip
        runs[name] = pd.read_csv(only_run_dir(tmp_path / name) / "metrics.csv")
    small, large = _steady(runs["small"]), _steady(runs["large"])
    assert len(small) >= 2 and len(large) >= 2
    for col in ("bytes_to_workers", "bytes_from_workers"):
        a, b = small[col].mean(), large[col].mean()
        assert a > 0 and abs(b - a) / a <= 0.10, (col, a, b)
    assert large["bytes_to_workers"].max() < 0.01 * 4 * 1_000_000  # far below one float32 vector
    for m in runs.values():
        assert (m["snapshots_sent"] == 0).all()  # every worker kept up by replay
        assert m["bytes_to_workers"].notna().all() and (m["bytes_to_workers"] > 0).all()


# --- the sync history: records per message, a setting that changes bytes, never numbers ----------


def test_a_worker_further_behind_than_the_sync_history_needs_a_snapshot() -> None:
    """A worker at generation 0 reaches generation 3 by replay only if the message carries all three
    records; with fewer it answers stale, and a snapshot brings it there."""
    cfg = compose_run_config(["env=inverted_pendulum", *SMALL])
    spec = RunSpec.from_config(cfg, "key")
    master, worker = RunContext(spec), RunContext(spec)
    state = master.initial_state()
    assert worker.sync(SyncMessage(0, state_digest(state), ()), None) is not None  # at generation 0
    rng = np.random.default_rng(0)
    records = []
    for _ in range(3):
        pop = master.strategy.ask(state.es)
        record = GenerationRecord(pop, rng.normal(size=(len(pop.offsets), 2)))
        state, _ = advance(master.strategy, state, record)
        records.append(record)
    digest = state_digest(state)
    for history in (1, 2):
        assert worker.sync(SyncMessage(3, digest, tuple(records[-history:])), None) is None
    assert worker.sync(SyncMessage(3, digest, tuple(records[-1:])), state) is state  # the snapshot
    caught_up = RunContext(spec)
    caught_up.sync(SyncMessage(0, state_digest(master.initial_state()), ()), None)
    replayed = caught_up.sync(SyncMessage(3, digest, tuple(records)), None)
    assert replayed is not None and state_digest(replayed) == digest
    for ctx in (master, worker, caught_up):
        ctx.close()


def test_sync_history_changes_the_bytes_not_the_numbers(tmp_path: Path) -> None:
    """``algo.sync_history`` 4 (the default) and 1 on the same 2 workers: the same run id, metrics
    and parameters; each task carries 3 fewer generation records, so fewer bytes per generation."""
    from distributed import LocalCluster

    from esbench.runner import run

    raw, runs, names = {}, {}, {}
    with LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None) as lc:
        for history in (4, 1):
            cfg = compose_run_config(
                ["env=inverted_pendulum", "budget=smoke", *SMALL, "env.max_episode_steps=20",
                 "budget.generations=8", "budget.timesteps=1000000000",
                 "eval.interval_timesteps=1000000000", "eval.episodes=1", "cluster=address",
                 f"cluster.address={lc.scheduler_address}", f"algo.sync_history={history}",
                 f"results_dir={tmp_path / f'h{history}'}"]
            )  # fmt: skip
            run_dir = run(cfg).run_dir
            names[history], runs[history] = run_dir.name, read_run(run_dir)
            raw[history] = pd.read_csv(run_dir / "metrics.csv")
    assert names[4] == names[1]  # a non-semantic key: the same run
    pd.testing.assert_frame_equal(runs[4][0], runs[1][0])
    assert runs[4][1]["params_sha256"] == runs[1][1]["params_sha256"]
    assert (raw[4]["workers"] == 2).all() and (raw[1]["workers"] == 2).all()
    # steady generations without a resync (with 1 record, a worker that missed a generation gets one)
    per_gen = {h: _steady(m)[_steady(m)["snapshots_sent"] == 0]["bytes_to_workers"] for h, m in raw.items()}
    assert len(per_gen[4]) >= 1 and len(per_gen[1]) >= 1
    # 2 tasks x 3 records x 20 pairs x (an int64 offset and two float64 returns), at the least
    assert per_gen[4].mean() - per_gen[1].mean() >= 2 * 3 * 20 * 24, (per_gen[4].mean(), per_gen[1].mean())


def test_bad_sync_history_is_rejected_before_any_work(tmp_path: Path) -> None:
    proc = esbench("run", "algo.sync_history=0", f"results_dir={tmp_path}", check=False, timeout=60)
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "algo.sync_history=0 is out of range" in lines[0], proc.stderr
    assert "algo.sync_history >= 1" in lines[0]
    assert not any(tmp_path.iterdir())  # nothing was started


# --- workers that come and go: real `dask scheduler` and `dask worker` processes ------------------


class DaskProcesses:
    """A `dask scheduler` on 127.0.0.1 and `dask worker` processes added and killed by name."""

    def __init__(self, tmp_path: Path) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.address = f"tcp://127.0.0.1:{port}"
        self.tmp = tmp_path
        self.bindir = Path(sys.executable).parent
        self.scheduler = self._spawn(
            ["scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"]
        )
        self.workers: dict[str, subprocess.Popen[bytes]] = {}
        self.client = Client(self.address, timeout=30)

    def _spawn(self, args: list[str]) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [str(self.bindir / "dask"), *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its own process group, killed as one
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},  # tests.fault_envs, imported by env id
        )

    def add_worker(self, name: str, wait: bool = True) -> None:
        """Start a single-threaded worker (no nanny: a killed worker stays dead)."""
        self.workers[name] = self._spawn(
            ["worker", self.address, "--nthreads", "1", "--no-nanny", "--no-dashboard",
             "--host", "127.0.0.1", "--name", name, "--local-directory", str(self.tmp / name)]
        )  # fmt: skip
        if wait:
            self.client.wait_for_workers(len(self.workers), timeout=60)

    def address_of(self, name: str) -> str:
        """The named worker's address."""
        info = self.client.scheduler_info(n_workers=-1)["workers"]
        return next(addr for addr, w in info.items() if w.get("name") == name)

    def running(self, key_part: str) -> str:
        """The name of a worker processing a task whose key contains ``key_part``."""
        names = {a: w.get("name") for a, w in self.client.scheduler_info(n_workers=-1)["workers"].items()}
        for addr, keys in self.client.processing().items():
            if any(key_part in str(k) for k in keys):
                return str(names[addr])
        raise AssertionError(f"no worker is processing a {key_part!r} task")

    def kill(self, name: str) -> None:
        """SIGKILL the worker's process group, from outside, as a node failure would."""
        os.killpg(self.workers[name].pid, signal.SIGKILL)
        self.workers[name].wait(timeout=30)

    def close(self) -> None:
        """Stop every process this object started."""
        self.client.close()
        for p in [*self.workers.values(), self.scheduler]:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in [*self.workers.values(), self.scheduler]:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=20)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[DaskProcesses]:
    """A real scheduler process; the test adds its workers."""
    procs = DaskProcesses(tmp_path)
    try:
        yield procs
    finally:
        procs.close()


@pytest.fixture(scope="module")
def undisturbed(tmp_path_factory: pytest.TempPathFactory) -> dict[int, tuple[pd.DataFrame, dict]]:
    """Seeds 0 and 1, run one after another on an embedded 2-worker cluster: the reference."""
    root = tmp_path_factory.mktemp("undisturbed")
    esbench("run", "-m", *SLOW, f"budget.generations={GENERATIONS}", "seed=0,1", f"results_dir={root}")
    out = {}
    for summary in root.rglob("summary.json"):
        metrics, s = read_run(summary.parent)
        out[int(s["seed"])] = (metrics, s)
    assert sorted(out) == [0, 1]
    return out


def _start_run(root: Path, address: str, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "esbench.cli", "run", *SLOW, f"budget.generations={GENERATIONS}",
         "cluster=address", f"cluster.address={address}", f"results_dir={root}", *extra],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy(),
    )  # fmt: skip


def _wait_for(what: str, condition: Callable[[], bool], timeout: float = 120) -> None:
    deadline = time.time() + timeout
    while not condition():
        if time.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def _rows(root: Path) -> int:
    """Lines of the (first) metrics.csv under ``root``, header included (0: none yet)."""
    files = list(root.rglob("metrics.csv"))
    return len(files[0].read_text().splitlines()) if files else 0


def _finish(proc: subprocess.Popen[str]) -> None:
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-4000:]


def test_worker_killed_with_sigkill_mid_generation_changes_nothing(
    tmp_path: Path, cluster: DaskProcesses, undisturbed: dict[int, tuple[pd.DataFrame, dict]]
) -> None:
    cluster.add_worker("w0")
    cluster.add_worker("w1")
    root = tmp_path / "killed"
    proc = _start_run(root, cluster.address)
    try:
        _wait_for("two generations", lambda: _rows(root) >= 4)
        victim = cluster.address_of("w1")
        _wait_for(
            "a task running on w1",
            lambda: any("evaluate_chunk" in str(k) for k in cluster.client.processing().get(victim, ())),
        )
        cluster.kill("w1")  # mid-generation: w1 is running one of this generation's two tasks
        _finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    metrics, summary = read_run(only_run_dir(root))
    ref_metrics, ref_summary = undisturbed[0]
    pd.testing.assert_frame_equal(metrics, ref_metrics)
    assert summary["params_sha256"] == ref_summary["params_sha256"]
    workers = pd.read_csv(only_run_dir(root) / "metrics.csv")["workers"].tolist()
    assert workers[0] == 2 and workers[-1] == 1, workers  # the count changed, and was logged


def test_worker_added_mid_run_gets_a_snapshot_and_changes_nothing(
    tmp_path: Path, cluster: DaskProcesses, undisturbed: dict[int, tuple[pd.DataFrame, dict]]
) -> None:
    cluster.add_worker("w0")
    root = tmp_path / "joined"
    proc = _start_run(root, cluster.address)
    try:
        # past the sync history (4 generations): the newcomer cannot replay from generation 0
        _wait_for("six generations", lambda: _rows(root) >= 8)
        # The driver is paused while the worker starts and joins (however long that takes on a
        # loaded machine), so the run cannot end before the newcomer is there to take work.
        os.kill(proc.pid, signal.SIGSTOP)
        try:
            cluster.add_worker("w1")  # returns once the scheduler has both workers
        finally:
            os.kill(proc.pid, signal.SIGCONT)
        _finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    metrics, summary = read_run(only_run_dir(root))
    ref_metrics, ref_summary = undisturbed[0]
    pd.testing.assert_frame_equal(metrics, ref_metrics)
    assert summary["params_sha256"] == ref_summary["params_sha256"]
    raw = pd.read_csv(only_run_dir(root) / "metrics.csv")
    assert raw["workers"].iloc[0] == 1 and raw["workers"].iloc[-1] == 2, raw["workers"].tolist()
    joined = raw[raw["snapshots_sent"] > 0]
    assert len(joined) >= 1, "the new worker was never sent a snapshot"  # a resync, counted
    first = int(joined.index[0])
    # The newcomer's first task (with the snapshot it needs) is in the generation it joined during,
    # which counted its workers before it came, or in the next one.
    two = int(raw.index[raw["workers"] == 2][0])
    assert first in (two - 1, two) and (raw["workers"].iloc[:first] == 1).all(), raw["workers"].tolist()
    # the snapshot holds the whole state: the parameters (float32) and more, counted in bytes
    params = 4 * (4 * 64 + 64 + 64 * 64 + 64 + 64 * 1 + 1)  # InvertedPendulum, 64x64 MLP
    steady = raw["bytes_to_workers"].iloc[first - 1]
    assert raw["bytes_to_workers"].iloc[first] >= steady + params


def test_sweep_on_the_dask_launcher_loses_no_job_when_a_worker_dies(
    tmp_path: Path, cluster: DaskProcesses, undisturbed: dict[int, tuple[pd.DataFrame, dict]]
) -> None:
    """Two jobs on two workers; a worker running a job is SIGKILLed mid-sweep: the job restarts
    elsewhere from its checkpoint, and both jobs end as if nothing happened."""
    cluster.add_worker("w0")
    cluster.add_worker("w1")
    root = tmp_path / "sweep"
    proc = subprocess.Popen(
        [sys.executable, "-m", "esbench.cli", "run", "-m", "hydra/launcher=dask", *SLOW,
         f"budget.generations={GENERATIONS}", "seed=0,1", "cluster=address",
         f"cluster.address={cluster.address}", f"results_dir={root}"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy(),
    )  # fmt: skip
    try:
        _wait_for(
            "both jobs two generations in",
            lambda: (
                len(files := list(root.rglob("metrics.csv"))) == 2
                and all(len(f.read_text().splitlines()) >= 4 for f in files)
            ),
        )
        cluster.kill(cluster.running("-job"))  # a worker that runs a job (and rollouts)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err[-4000:]
    summaries = list(root.rglob("summary.json"))
    assert len(summaries) == 2, out[-2000:]
    resumed = []
    for summary in summaries:
        metrics, s = read_run(summary.parent)
        ref_metrics, ref_summary = undisturbed[int(s["seed"])]
        pd.testing.assert_frame_equal(metrics, ref_metrics)
        assert s["params_sha256"] == ref_summary["params_sha256"]
        resumed += s.get("resumed_from") or []
    assert resumed, "no job ran on the killed worker"  # its job restarted elsewhere, from its checkpoint


# --- cluster=processes: the scheduler path on one machine ------------------------------------------


def test_processes_cluster_matches_local_listens_on_loopback_and_stops_its_processes(tmp_path: Path) -> None:
    """``cluster=processes``: the same numbers as the embedded cluster; its scheduler, nannies and
    workers listen on 127.0.0.1 only; none of them outlives the run. Only the processes of this run
    are looked at (the CLI's descendants, though the dask processes start sessions of their own)."""
    run = ["env=inverted_pendulum", "budget=smoke", *SMALL, "budget.timesteps=6000"]
    esbench("run", *run, "cluster.n_workers=2", f"results_dir={tmp_path / 'local'}")
    log = tmp_path / "stderr.txt"
    with log.open("wb") as err:  # a file, not a pipe: nobody reads a pipe while the run is watched
        proc = subprocess.Popen(
            [sys.executable, "-m", "esbench.cli", "run", *run, "cluster=processes", "cluster.n_workers=3",
             "cluster.dashboard=false", f"results_dir={tmp_path / 'procs'}"],
            cwd=REPO, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True,
        )  # fmt: skip
        try:
            seen = watch(proc)
            proc.wait(timeout=300)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, log.read_text()[-3000:]
    local, procs = read_run(only_run_dir(tmp_path / "local")), read_run(only_run_dir(tmp_path / "procs"))
    pd.testing.assert_frame_equal(local[0], procs[0])
    assert local[1]["params_sha256"] == procs[1]["params_sha256"]
    assert procs[1]["workers"] == 3

    servers = seen.servers()
    assert len(servers) >= 4, servers  # the scheduler and three workers (with their nannies) were seen
    assert not seen.off_loopback(), seen.off_loopback()
    assert not seen.survivors(), f"processes of the run outlived it: {seen.survivors()}"


@pytest.mark.slow
def test_scaling_on_dask_worker_processes_oversubscribed(tmp_path: Path) -> None:
    """1, 2, 4 and 8 `dask worker` processes on this machine (4 and 8 oversubscribed): the same
    numbers at every count, and the scaling report's efficiency per worker for each."""
    from esbench.analysis.report import build_report

    esbench(
        "run", "-m", "env=hopper", "budget=smoke", *SMALL, "budget.generations=12",
        "budget.timesteps=1000000000", "eval.interval_timesteps=20000", "eval.episodes=2",
        "cluster=processes", "cluster.n_workers=1,2,4,8", "experiment=scaling",
        "run_id=${algo.name}-${env.name}-processes-w${cluster.n_workers}-s${seed}", f"results_dir={tmp_path}",
        timeout=900,
    )  # fmt: skip
    runs = [read_run(p.parent) for p in sorted((tmp_path / "scaling").rglob("summary.json"))]
    assert sorted(s["workers"] for _, s in runs) == [1, 2, 4, 8]
    assert len({s["params_sha256"] for _, s in runs}) == 1
    for metrics, _ in runs[1:]:
        pd.testing.assert_frame_equal(metrics, runs[0][0])
    text = build_report("scaling", tmp_path, tmp_path / "paper").read_text()
    table = pd.read_csv(tmp_path / "paper" / "scaling" / "tables" / "scaling.csv")
    procs = table[table["cluster"] == "processes"].sort_values("workers")
    assert list(procs["workers"]) == [1, 2, 4, 8]
    assert procs["efficiency_throughput"].notna().all()
    assert (procs["efficiency_throughput"].iloc[1:] > 0).all()
    assert "Efficiency per worker" in text
