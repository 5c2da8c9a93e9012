"""What the runner computes cannot change unnoticed: golden data for a smoke-scale sample of the
committed recipes (``tests/golden/``), compared by ``tests/test_readme_command.py`` with the runs of the
default suite's one ``esbench reproduce table1 scale=smoke``.

The sample is table1's smoke recipe (``experiments/table1.yaml``): its OpenAI-ES and TRPO jobs, whole.
Every metrics column is compared but the timing ones (:data:`tests.conftest.TIMING_COLUMNS`: they
depend on the machine, not on the computation): timesteps, frames, episodes and the task columns
exactly, returns to a relative 1e-9 (the CSV round trip of a float64), the float32 norms to 1e-6
(:data:`FLOAT32_NORMS`). A change that alters
these numbers must regenerate the golden data on purpose, and say so in its commit::

    PYTHONPATH=. python -m tests.smoke_golden --update
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from tests.conftest import REPO, esbench, read_run

GOLDEN = REPO / "tests" / "golden"
#: (golden file stem, the table1 smoke job's algo).
SAMPLE: tuple[tuple[str, str], ...] = (("table1_smoke_openai_es", "openai_es"), ("table1_smoke_trpo", "trpo"))
EXACT = ("generation", "timesteps", "frames", "episodes", "eval_timesteps", "train_task", "eval_task")
#: Norms of float32 vectors, summed by BLAS kernels that OpenBLAS picks per CPU: they differ in the
#: last float32 bits between machines (measured: 6.4e-8 relative in grad_norm between two VMs, same
#: commit and packages) while every return agrees to 1e-9. Compared to float32 precision.
FLOAT32_NORMS = ("grad_norm", "param_norm", "drift_l2", "drift_rel")


def sample_runs(results: Path) -> dict[str, Path]:
    """Each sampled job's run directory among a table1 smoke reproduction's runs in ``results``
    (``esbench reproduce table1|all scale=smoke results_dir=...``), by golden file stem."""
    runs = {}
    for summary in sorted(results.glob("table1/*/summary.json")):
        algo_of_run = json.loads(summary.read_text())["algo"]
        runs.update({stem: summary.parent for stem, algo in SAMPLE if algo == algo_of_run})
    return runs


def compare(golden: pd.DataFrame, fresh: pd.DataFrame) -> None:
    """Assert ``fresh`` equals ``golden``: same columns and rows, exact or to a relative 1e-9 (the
    float32 norms to 1e-6)."""
    assert list(fresh.columns) == list(golden.columns), "metrics columns changed"
    assert len(fresh) == len(golden), f"{len(fresh)} metrics rows, golden {len(golden)}"
    for col in golden.columns:
        want, got = golden[col], fresh[col]
        if col in EXACT or not pd.api.types.is_numeric_dtype(want):
            assert want.astype(str).tolist() == got.astype(str).tolist(), f"column {col} changed"
        else:
            rtol = 1e-6 if col in FLOAT32_NORMS else 1e-9
            np.testing.assert_allclose(
                got.to_numpy(float), want.to_numpy(float), rtol=rtol, atol=0, equal_nan=True, err_msg=col
            )


def update() -> None:  # pragma: no cover - run by hand, on purpose
    """Reproduce table1 at smoke and rewrite the golden files from its sampled runs."""
    import tempfile

    GOLDEN.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp) / "runs"
        esbench(
            "reproduce", "table1", "scale=smoke", f"results_dir={runs}", f"out_dir={Path(tmp) / 'reports'}",
            timeout=1800,
        )  # fmt: skip
        for stem, run_dir in sample_runs(runs).items():
            fresh, _ = read_run(run_dir)
            fresh.to_csv(GOLDEN / f"{stem}.csv", index=False)
            print(f"wrote {GOLDEN / stem}.csv ({len(fresh)} rows)")


if __name__ == "__main__":  # pragma: no cover
    if sys.argv[1:] != ["--update"]:
        raise SystemExit("usage: python -m tests.smoke_golden --update")
    update()
