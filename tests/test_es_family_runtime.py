"""Every registered ES variant on the real Dask runtime: one worker or two, the same numbers.

Parametrized over the registry, so a new variant inherits this promise (DESIGN.md promise 1): the
run is a pure function of its config whatever the number of workers. That a killed run resumes
(not restarts) to the same results is tests/test_resume.py's.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from esbench.config.registry import algorithms
from tests.conftest import SMALL, esbench, only_run_dir, read_run

ES_KEYS = sorted(algorithms("es"))
PENDULUM = [
    "env=inverted_pendulum",
    "budget=smoke",
    *SMALL,
    "eval.interval_timesteps=2000",
    "eval.episodes=2",
]


#: In the default suite every variant is killed on 1 worker and resumed on 2, then compared with an
#: uninterrupted 1-worker run (tests/test_resume.py); this plain 1-vs-2 comparison is the slow suite's.
@pytest.mark.slow
@pytest.mark.parametrize("algo", ES_KEYS)
def test_one_and_two_workers_give_identical_runs(algo: str, tmp_path: Path) -> None:
    runs = {}
    for workers in (1, 2):
        esbench(
            "run", f"algo={algo}", *PENDULUM, "budget.timesteps=4000", f"cluster.n_workers={workers}",
            f"results_dir={tmp_path / str(workers)}",
        )  # fmt: skip
        runs[workers] = read_run(only_run_dir(tmp_path / str(workers)))
    (m1, s1), (m2, s2) = runs[1], runs[2]
    pd.testing.assert_frame_equal(m1, m2)
    assert s1["params_sha256"] == s2["params_sha256"]
    assert s1["algo"] == algo and m1["generation"].iloc[-1] >= 2
