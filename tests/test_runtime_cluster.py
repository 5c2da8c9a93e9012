"""The embedded cluster's settings and the master's task handling, on a real LocalCluster."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator

import numpy as np
import pytest
from distributed import Client

from esbench.config.compose import compose_run_config
from esbench.runtime.cluster import dask_client
from esbench.runtime.evaluator import MemberEvaluator
from esbench.runtime.replica import SyncMessage, state_digest
from esbench.runtime.worker import RunSpec, get_context
from tests.conftest import SMALL

OVERRIDES = [
    *SMALL,
    "env.id=InvertedPendulum-v5",
    "algo.population_size=4",
    "cluster.n_workers=1",
    "cluster.monitor_interval_s=2.5",
    "cluster.dashboard=false",
]


#: What a Dask nanny leaves in its own process's environment (and so in every later child's).
DASK_TRIM = {"MALLOC_TRIM_THRESHOLD_": "65536"}


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    """One single-worker LocalCluster started by ``dask_client``, as a run starts it, from a
    process whose environment an earlier nanny has set MALLOC_TRIM_THRESHOLD_ in (a notebook that
    ran a default LocalCluster, a test session): the worker inherits it."""
    cfg = compose_run_config(OVERRIDES)
    with pytest.MonkeyPatch.context() as mp:
        for key, value in DASK_TRIM.items():
            mp.setenv(key, value)
        with dask_client(cfg.cluster, quiet=True) as c:
            yield c


def test_local_cluster_polls_memory_and_system_at_the_configured_interval(client: Client) -> None:
    def intervals(dask_worker=None, dask_scheduler=None) -> dict[str, float]:  # type: ignore[no-untyped-def]
        server = dask_worker or dask_scheduler
        return {name: pc.callback_time for name, pc in server.periodic_callbacks.items()}

    (worker,) = client.run(intervals).values()
    scheduler = client.run_on_scheduler(intervals)
    for server in (worker, scheduler):
        assert server["monitor"] == 2500  # system monitor, ms
        assert server["tick"] == 2500  # event-loop health
    assert worker["memory_monitor"] == 2500
    assert "profile" not in worker  # Dask's stack sampler is off by default


def _page_faults_per_large_allocation() -> float:
    """Minor page faults per allocation of a fresh 1 MB array (touched, then freed), over 50."""
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(50):
        a = np.ones(1 << 18, dtype=np.float32)  # 1 MB: over glibc's default 128 kB mmap threshold
        del a
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 50


def _faults_after_a_task(spec: RunSpec) -> tuple[str | None, float]:
    get_context(spec)  # what every rollout task does first
    return os.environ.get("MALLOC_TRIM_THRESHOLD_"), _page_faults_per_large_allocation()


def test_worker_rollouts_keep_large_allocations_on_the_heap(client: Client) -> None:
    """In a real Dask worker that inherited Dask's MALLOC_TRIM_THRESHOLD_, once a task has run, a
    1 MB allocation no longer faults its 256 pages in again: glibc serves it from the heap."""
    spec = RunSpec.from_config(compose_run_config(OVERRIDES), run_key="test-allocator")
    trim, faults = client.submit(_faults_after_a_task, spec, pure=False).result()
    assert trim == DASK_TRIM["MALLOC_TRIM_THRESHOLD_"]  # the case this guards against
    assert faults < 10, faults


def test_evaluator_keeps_a_generations_results_until_the_next_is_submitted(client: Client) -> None:
    cfg = compose_run_config(OVERRIDES)
    spec = RunSpec.from_config(cfg, run_key="test-evaluator")
    state = get_context(spec).initial_state()
    msg = SyncMessage(state.generation, state_digest(state), ())
    evaluate = MemberEvaluator(client, spec)

    def scheduler_keys() -> set[str]:
        return set(client.run_on_scheduler(lambda dask_scheduler: list(map(str, dask_scheduler.tasks))))

    first = evaluate(msg, [[0], [1]], "train", state)
    first_keys = {str(f.key) for f in evaluate.held}
    assert len(first_keys) == 2 and first_keys <= scheduler_keys()  # still held after gathering

    second = evaluate(msg, [[0], [1]], "train", state)
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a.returns, b.returns)  # same generation, same numbers
    deadline = time.monotonic() + 10
    while first_keys & scheduler_keys() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not first_keys & scheduler_keys()  # released once the next call had submitted
    assert {str(f.key) for f in evaluate.held} <= scheduler_keys()


def _scheduler_address(cfg) -> str:  # type: ignore[no-untyped-def]
    with dask_client(cfg, quiet=True) as c:
        c.submit(sum, [1, 2]).result()  # the workers serve
        return str(c.scheduler.address)


def test_reproduce_reuses_one_local_cluster_for_sweeps_that_ask_for_the_same_one() -> None:
    """Inside ``reusing_local_clusters`` a LocalCluster serves every client asking for its settings;
    other settings replace it (the old one closed); on exit it is closed. Outside, each client gets
    a cluster of its own."""
    from distributed import Client as RawClient

    from esbench.runtime.cluster import reusing_local_clusters

    one = compose_run_config(OVERRIDES).cluster
    two = compose_run_config([*OVERRIDES, "cluster.n_workers=2"]).cluster
    assert _scheduler_address(one) != _scheduler_address(one)  # not reusing: a new cluster each time
    with reusing_local_clusters():
        first, again = _scheduler_address(one), _scheduler_address(one)
        assert first == again
        other = _scheduler_address(two)
        assert other != first
        with pytest.raises(OSError):  # the first was closed when other settings were asked for
            RawClient(first, timeout=2)
        assert _scheduler_address(two) == other
    with pytest.raises(OSError):  # closed on leaving
        RawClient(other, timeout=2)


def test_a_cluster_shutdown_that_times_out_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    """After the work is done, a slow shutdown (a loaded machine) must not turn a completed run or
    reproduction into a failure; any other error still propagates."""
    from esbench.runtime.cluster import close_quietly

    class SlowToClose:
        def __init__(self, error: Exception) -> None:
            self.error = error

        def close(self) -> None:
            raise self.error

    with caplog.at_level("WARNING"):
        close_quietly(SlowToClose(TimeoutError("timed out after 10 s")))
    assert "did not shut down in time" in caplog.text
    with pytest.raises(RuntimeError):
        close_quietly(SlowToClose(RuntimeError("broken")))


@pytest.mark.parametrize("fixed", [False, True])
def test_dask_trim_setting_faults_every_large_allocation_unless_undone(fixed: bool) -> None:
    """The measurement can tell the two apart: in a process started with Dask's setting, every
    1 MB allocation faults its 256 pages of 4 kB; after keep_large_allocations_on_the_heap, none do."""
    code = (
        "import numpy as np, resource\n"
        "from esbench.runtime.allocator import keep_large_allocations_on_the_heap\n"
        f"if {fixed}:\n    assert keep_large_allocations_on_the_heap()\n"
        "b = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
        "for _ in range(50):\n    a = np.ones(1 << 18, dtype=np.float32); del a\n"
        "print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - b) / 50)"
    )
    env = {**os.environ, **DASK_TRIM}
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    faults = float(run.stdout)
    assert faults < 10 if fixed else faults > 200, faults


def test_dask_config_reaches_a_spawned_dask_process_with_its_case_and_none_values() -> None:
    """``cluster=processes`` hands its Dask settings to the `dask scheduler` and `dask worker`
    processes through the environment: a key with upper case (a nanny's pre-spawn variable) and a
    None value (which unsets it) arrive as set, as does an ordinary key."""
    from esbench.runtime.cluster import _local_cluster_config
    from esbench.runtime.processes import dask_env

    config = _local_cluster_config(compose_run_config(OVERRIDES).cluster)
    code = (
        "import json, distributed, dask.config as c\n"  # distributed adds its defaults on import
        "print(json.dumps([c.get('distributed.nanny.pre-spawn-environ'),\n"
        "                  c.get('distributed.admin.tick.interval')]))"
    )
    env = {**os.environ, **dask_env(config)}
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    spawn_env, tick = json.loads(run.stdout)
    assert spawn_env["MALLOC_TRIM_THRESHOLD_"] is None  # a nanny leaves a None variable unset
    assert spawn_env["OMP_NUM_THREADS"] == 1  # Dask's other defaults stay
    assert tick == "2.5s"  # cluster.monitor_interval_s, an ordinary key


def _placements_from_a_job(spec: RunSpec, n_calls: int, n_chunks: int) -> list[dict[str, int]]:
    """Run inside a Dask task, as a sweep job runs (seceded from its worker by ``worker_client``):
    ``n_calls`` generations of ``n_chunks`` chunks each; per call, how many chunks each worker ran."""
    from collections import Counter

    from distributed import worker_client

    state = get_context(spec).initial_state()
    msg = SyncMessage(state.generation, state_digest(state), ())
    with worker_client() as c:
        evaluate = MemberEvaluator(c, spec)
        placements, kept = [], []
        for _ in range(n_calls):
            evaluate(msg, [[i % 2] for i in range(n_chunks)], "train", state)
            who = c.who_has(evaluate.held)
            placements.append(dict(Counter(addrs[0] for addrs in who.values())))
            kept += evaluate.held  # results still wanted (a retry's, an evaluation's): a larger task group
        return placements


def _seceded_until_set(name: str) -> None:
    """A task that leaves its worker's thread pool and waits (a second sweep job on that worker)."""
    from distributed import Event, secede

    secede()
    Event(name).wait(timeout=120)


def test_a_jobs_chunks_are_spread_over_every_worker_its_own_included() -> None:
    """A sweep job holds its worker's thread while it waits for its chunks (seceded: a long-running
    task to the scheduler). Each generation's chunks still go to every worker, the job's own
    included. Left to Dask, once the chunks' task group grows past twice the cluster's threads
    (results still wanted: a re-sent chunk's, an evaluation's), its queue for "root-ish" tasks
    counts the job as a task on its worker and sends a generation's chunks to the other one while
    the job's worker idles (a Hopper run alone on 2 workers went from 5.8k to 3.2k timesteps/s).
    A second job waiting on the same worker, as a sweep of more jobs than workers stacks them,
    makes that placement certain: with it, every chunk from the third generation on went to the
    other worker."""
    from distributed import Event

    cfg = compose_run_config([*OVERRIDES[:-3], "cluster.n_workers=2", "cluster.dashboard=false"])
    spec = RunSpec.from_config(cfg, run_key="test-spread")
    with dask_client(cfg.cluster, quiet=True) as c:
        workers = sorted(c.nthreads())
        other_job = c.submit(_seceded_until_set, "test-spread-stop", workers=workers[:1], pure=False)
        job = c.submit(_placements_from_a_job, spec, 8, 2, workers=workers[:1], pure=False)
        placements = job.result()
        Event("test-spread-stop", client=c).set()
        other_job.result()
    for call in placements:
        assert set(call) == set(workers) and sum(call.values()) == 2, placements
