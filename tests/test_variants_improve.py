"""Every registered ES variant improves on a classic-control task (issue #13's promise).

Parametrized over the registry (a variant is tested the moment it registers), each variant runs
with its own defaults from ``conf/algo/<key>.yaml`` through the real CLI, a one-worker Dask
LocalCluster and CartPole-v1, a task every variant can act in (ARS with its linear policy, the
others with the 64x64 MLP). CartPole is the cheapest task on which all of them learn within a few
seconds; InvertedPendulum-v5 needs ~100k steps even for OpenAI-ES (tests/test_es_run.py).

Threshold: the final evaluation (3 fixed-seed episodes, deterministic policy) must beat the
timestep-0 evaluation by at least :data:`MARGIN` = 50 return, i.e. 50 more steps balanced on
average (CartPole-v1 caps an episode at 500). With 30k timesteps, seeds 0-3 all pass, every
variant: the smallest gains are simple_es's +64 (seed 0: 64 -> 128) and +143, and PGPE's +91 and
+101; every other variant gains +160 or more on every one of those seeds. The test runs seed 0; a
run is a pure function of its config, so it is deterministic.
Cost: 7-11 s of CPU per variant (3-6 s wall on an idle 2-core machine); a 500-step run through
the CLI already costs ~7 s of CPU (the process, Hydra, the one-worker LocalCluster), so training
itself is 1-4 s of it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from esbench.config.registry import algorithms
from tests.conftest import SMALL, esbench, only_run_dir, read_run

ES_KEYS = sorted(algorithms("es"))

#: Training timesteps per run (CartPole-v1: a few thousand episodes' worth of steps at the start).
TIMESTEPS = 30_000

#: The least improvement, in return, of the final evaluation over the timestep-0 evaluation.
MARGIN = 50.0

CARTPOLE = [
    "env=cartpole",
    "budget=smoke",
    f"budget.timesteps={TIMESTEPS}",
    f"eval.interval_timesteps={TIMESTEPS}",  # evaluate at timestep 0 and at the end only
    "eval.episodes=3",
    "cluster.n_workers=1",
    "seed=0",
    *SMALL,
]


@pytest.mark.learning
@pytest.mark.parametrize("algo", ES_KEYS)
def test_every_es_variant_improves_on_cartpole(algo: str, tmp_path: Path) -> None:
    """Final evaluation >= timestep-0 evaluation + MARGIN, with the variant's default settings."""
    esbench("run", f"algo={algo}", *CARTPOLE, f"results_dir={tmp_path}")
    metrics, summary = read_run(only_run_dir(tmp_path))
    evals = metrics.dropna(subset=["eval_return_mean"])
    assert evals["timesteps"].iloc[0] == 0, "no timestep-0 evaluation"
    first, final = float(evals["eval_return_mean"].iloc[0]), float(summary["final_eval_return"])
    assert summary["algo"] == algo and summary["total_timesteps"] >= TIMESTEPS
    assert final >= first + MARGIN, f"{algo}: eval return {first:.1f} at timestep 0, {final:.1f} at the end"
