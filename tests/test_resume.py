"""Resumed means resumed: every ES variant, a sweep and a sequence, killed from outside and run again.

Each test starts a real run through the CLI, SIGKILLs its process group once a checkpoint covers a
few rows, runs the same command again and checks with :func:`tests.resume_check.assert_resumed`
that the rows the checkpoint covered are byte-for-byte what the killed run wrote (timing columns
included), that the rest follow, and that the second run says it resumed from the checkpoint; for
one algorithm of each kind of resumed state (and in the slow suite for every one) the results also
equal an uninterrupted run's. A run that silently restarted from scratch fails that check: the first
test proves it by deleting the checkpoint before the second run.

Every ES run here connects to one of two clusters the module starts once (one worker, two workers:
``cluster=address``), so a run costs its own process only; the SIGKILL takes the run's driver, and
the cluster it used serves the next run. The variant list comes from the registry, so a new
variant inherits these tests. The SB3 baselines are killed and resumed in ``tests/test_resume_rl.py``
(a file of its own, so the test runner can put it on the other core).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from esbench.config.registry import algorithms
from tests.conftest import SMALL, esbench, only_run_dir, read_run
from tests.dask_processes import running_dask
from tests.resume_check import (
    Resumed,
    assert_resumed,
    assert_same_results,
    capture,
    checkpoint_rows,
    compared_in_default_suite,
    kill_after_checkpoint,
    kill_when,
    run_dirs,
)

ES_KEYS = sorted(algorithms("es"))
#: A single ES run that lasts long enough to be killed part-way: ~7 generations of CartPole, of which
#: ~5 (a second or more of work) are left when the checkpoint the helper waits for is written.
ES_RUN = [
    "env=cartpole", "budget=smoke", *SMALL, "budget.timesteps=12000", "eval.interval_timesteps=4000",
    "eval.episodes=2", "checkpoint_every=1",
]  # fmt: skip


@pytest.fixture(scope="module")
def clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[int, list[str]]]:
    """workers -> the overrides that run on a cluster of that many workers (1 and 2), started once
    for every ES run of the module."""
    root = tmp_path_factory.mktemp("dask")
    with running_dask(root / "one", workers=1) as one, running_dask(root / "two", workers=2) as two:
        yield {n: ["cluster=address", f"cluster.address={address}"] for n, address in ((1, one), (2, two))}


@pytest.fixture(scope="module")
def es_resumed(
    request: pytest.FixtureRequest, clusters: dict[int, list[str]], tmp_path_factory: pytest.TempPathFactory
) -> Resumed:
    """ES variant ``request.param`` killed on 1 worker once its checkpoint covers 2 rows, resumed on 2."""
    args, root = [f"algo={request.param}", *ES_RUN], tmp_path_factory.mktemp(f"{request.param}-killed")
    killed = kill_after_checkpoint([*args, *clusters[1]], root, rows=2)
    again = esbench("run", *args, *clusters[2], f"results_dir={root}")
    return Resumed(args, killed, again.stderr)


def test_a_run_restarted_from_scratch_fails_the_resume_check(
    tmp_path: Path, clusters: dict[int, list[str]]
) -> None:
    """The check is not vacuous: the same killed run, completed once by resuming and once after its
    checkpoint was deleted (so it starts over), passes in the first case and fails in the second."""
    args = ["algo=openai_es", *ES_RUN, *clusters[1]]
    killed = kill_after_checkpoint(args, tmp_path / "a", rows=2)
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    restarted = capture(only_run_dir(tmp_path / "b"))
    (restarted.run_dir / "checkpoint.npz").unlink()

    esbench("run", *args, f"results_dir={tmp_path / 'a'}")
    assert_resumed(killed)
    esbench("run", *args, f"results_dir={tmp_path / 'b'}")
    with pytest.raises(AssertionError, match="restarted instead of resuming"):
        assert_resumed(restarted)
    # Deterministic either way: only the timing columns tell the two apart.
    pd.testing.assert_frame_equal(read_run(killed.run_dir)[0], read_run(restarted.run_dir)[0])


@pytest.mark.parametrize("es_resumed", ES_KEYS, indirect=True)
def test_every_es_variant_resumes_where_it_was_killed(es_resumed: Resumed) -> None:
    """Killed on 1 worker, resumed on 2 from the generation its checkpoint holds: the covered rows
    untouched, the rest appended, the run complete."""
    assert_resumed(es_resumed.killed)
    assert re.search(r"resuming \S+ from generation [1-9]", es_resumed.log), es_resumed.log[-2000:]
    assert len(es_resumed.summary["resumed_from"]) == 1


@pytest.mark.parametrize("es_resumed", compared_in_default_suite(ES_KEYS), indirect=True)
def test_a_resumed_es_run_ends_as_an_uninterrupted_one(
    es_resumed: Resumed, clusters: dict[int, list[str]], tmp_path: Path
) -> None:
    """Every column but the timing ones, and the final parameters, as a run never stopped (on 1
    worker throughout, where the resumed run changed from 1 to 2)."""
    esbench("run", *es_resumed.args, *clusters[1], f"results_dir={tmp_path}")
    assert_same_results(only_run_dir(tmp_path), es_resumed.killed.run_dir)


SWEEP = [
    "-m", "hydra/launcher=dask", "algo=openai_es", "env=cartpole", "budget=smoke", *SMALL,
    "cluster.n_workers=1", "hydra.launcher.max_concurrent=1", "budget.timesteps=12000",
    "eval.interval_timesteps=5000", "eval.episodes=2", "checkpoint_every=1", "seed=0,1,2",
    "experiment=sweep",
]  # fmt: skip


def test_a_killed_sweep_skips_finished_jobs_and_resumes_the_killed_one(tmp_path: Path) -> None:
    """The sweep's driver, its cluster and workers SIGKILLed once one job is complete and another
    has a checkpoint; the same command again skips the complete job (its files untouched) and
    resumes the other (its covered rows untouched)."""
    root = tmp_path / "sweep"

    def one_done_one_midway() -> bool:
        dirs = run_dirs(root)
        done = [d for d in dirs if (d / "summary.json").exists()]
        midway = [d for d in dirs if not (d / "summary.json").exists() and checkpoint_rows(d) >= 3]
        return bool(done and midway)

    kill_when(SWEEP, root, one_done_one_midway, "one job complete and another checkpointed")
    dirs = run_dirs(root)
    done = {d: (d / "summary.json").read_bytes() for d in dirs if (d / "summary.json").exists()}
    frozen = {d: (d / "metrics.csv").read_bytes() for d in done}
    killed = [capture(d) for d in dirs if d not in done and checkpoint_rows(d) > 0]
    assert done and killed

    again = esbench("run", *SWEEP, f"results_dir={root}", timeout=600)
    out = again.stdout + again.stderr
    assert out.count("job skipped") == len(done), out[-3000:]
    for d, summary in done.items():  # not recomputed
        assert (d / "summary.json").read_bytes() == summary
        assert (d / "metrics.csv").read_bytes() == frozen[d]
    for k in killed:
        assert_resumed(k)
    assert len(run_dirs(root)) == 3 and all((d / "summary.json").exists() for d in run_dirs(root))


SEQUENCES = {
    "es": [
        "algo=openai_es", "sequence=cartpole_pair", "eval.episodes=2", *SMALL,
        "sequence.stage_timesteps=12000", "eval.interval_timesteps=6000", "checkpoint_every=1",
    ],
    "rl": [
        "algo=a2c", "sequence=cartpole_pair", "eval.episodes=2", "tracker=none", "tracker.console=false",
        "sequence.stage_timesteps=6000", "eval.interval_timesteps=1000", "checkpoint_every=1",
    ],
}  # fmt: skip


def _stage_2_checkpointed(root: Path) -> bool:
    """Whether the run's checkpoint covers a row of its second stage's training."""
    dirs = run_dirs(root)
    rows = checkpoint_rows(dirs[0]) if dirs else 0
    if not rows:
        return False
    header, *lines = (dirs[0] / "metrics.csv").read_text().splitlines()[: rows + 1]
    train_task = header.split(",").index("train_task")
    return any(line.split(",")[train_task] == "long_pole" for line in lines)


@pytest.mark.parametrize("family", ["es", pytest.param("rl", marks=pytest.mark.slow)])
def test_a_sequence_killed_inside_stage_2_resumes_inside_it(
    family: str, tmp_path: Path, clusters: dict[int, list[str]]
) -> None:
    """Killed once a checkpoint covers a row of stage 2's training: the second run resumes inside
    stage 2 (its covered rows, stage 1's among them, untouched) and ends as an uninterrupted run,
    stage-boundary snapshots included."""
    args, root = [*SEQUENCES[family], *(clusters[1] if family == "es" else [])], tmp_path / "killed"
    kill_when(args, root, lambda: _stage_2_checkpointed(root), "a checkpoint inside stage 2")
    killed = capture(only_run_dir(root))
    again = esbench("run", *args, f"results_dir={root}")
    assert re.search(r"resuming \S+ from .*stage 1", again.stderr), again.stderr[-2000:]
    assert_resumed(killed)
    esbench("run", *args, f"results_dir={tmp_path / 'straight'}")
    straight = only_run_dir(tmp_path / "straight")
    assert_same_results(straight, killed.run_dir)
    assert (straight / "snapshots.npz").read_bytes() == (killed.run_dir / "snapshots.npz").read_bytes()
    for probes in ("probes.npz", "probe_states.npz"):  # the behavioural probes come back from the checkpoint
        assert (straight / probes).read_bytes() == (killed.run_dir / probes).read_bytes()


def test_a_run_resumed_before_its_confirmations_confirms_on_the_same_seeds(
    tmp_path: Path, clusters: dict[int, list[str]]
) -> None:
    """budget.stop_at_return: killed before the points that reach the target, resumed on 2
    workers, the run takes the same confirmations (same fresh seeds: their count is in the
    checkpoint) and stops, or trains on, exactly where an uninterrupted run does."""
    base = ["algo=openai_es", *ES_RUN]
    esbench("run", *base, *clusters[2], f"results_dir={tmp_path / 'free'}")
    free, _ = read_run(only_run_dir(tmp_path / "free"))
    points = free["eval_return_mean"].dropna()
    target = float(points.iloc[1:].min())  # every later point reaches it: each is confirmed
    assert target > points.iloc[0], points.tolist()  # the untrained policy does not
    args = [*base, f"budget.stop_at_return={target}"]
    killed = kill_after_checkpoint([*args, *clusters[1]], tmp_path / "killed", rows=2)
    assert not pd.read_csv(killed.run_dir / "metrics.csv")["confirmed"].notna().any()  # none yet
    esbench("run", *args, *clusters[2], f"results_dir={tmp_path / 'killed'}")
    assert_resumed(killed)
    esbench("run", *args, *clusters[1], f"results_dir={tmp_path / 'straight'}")
    assert_same_results(only_run_dir(tmp_path / "straight"), killed.run_dir)
    resumed, _ = read_run(killed.run_dir)
    assert resumed["confirm_return_mean"].notna().any()
