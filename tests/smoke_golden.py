"""What the runner computes cannot change unnoticed: golden data for the committed recipes at smoke
scale (``tests/golden/``).

Two sets, two tests:

* a sample, table1's smoke recipe (``experiments/table1.yaml``): its OpenAI-ES and TRPO jobs, whole
  (``tests/golden/table1_smoke_*.csv``), compared by ``tests/test_readme_command.py`` with the runs of
  the default suite's one ``esbench reproduce table1 scale=smoke``;
* every job of every recipe (``tests/golden/smoke/<recipe>/<run id>.csv``, and each run's final
  ``params_sha256`` in ``tests/golden/smoke/params.json``): every learner (the ES variants, the SB3
  baselines, Atari, sequences of stages, the language-model ES, EGGROLL and GRPO), compared by
  ``tests/test_recipes_smoke.py`` with the runs of its ``esbench reproduce all scale=smoke``.

Every metrics column is compared but the timing ones (:data:`tests.conftest.TIMING_COLUMNS`: they
depend on the machine, not on the computation): timesteps, frames, episodes and the task columns
exactly, returns to a relative 1e-9 (the CSV round trip of a float64), the float32 norms to 1e-6
(:data:`FLOAT32_NORMS`). A change that alters
these numbers must regenerate the golden data on purpose, and say so in its commit::

    PYTHONPATH=. python -m tests.smoke_golden --update          # the table1 sample
    PYTHONPATH=. python -m tests.smoke_golden --update-all      # every recipe (about 15 minutes)
    PYTHONPATH=. python -m tests.smoke_golden --update-all RUNS # from an existing reproduction's runs
"""

from __future__ import annotations

import contextlib
import json
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from tests.conftest import REPO, esbench, read_run

GOLDEN = REPO / "tests" / "golden"
#: Every recipe's smoke runs: ``<recipe>/<run id>.csv`` and ``params.json``.
GOLDEN_ALL = GOLDEN / "smoke"
PARAMS_FILE = GOLDEN_ALL / "params.json"
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


def every_run(results: Path) -> dict[str, Path]:
    """Every run directory of a reproduction's runs in ``results``, by ``<recipe>/<run id>``."""
    summaries = sorted(results.glob("*/*/summary.json"))
    return {f"{s.parent.parent.name}/{s.parent.name}": s.parent for s in summaries}


def golden_runs() -> list[str]:
    """The ``<recipe>/<run id>`` of every run with golden data."""
    return sorted(json.loads(PARAMS_FILE.read_text()))


def compare_run(key: str, run_dir: Path) -> None:
    """Assert the run at ``run_dir`` computed what its golden data says: its metrics (:func:`compare`)
    and its final parameters (their sha256, bit for bit)."""
    fresh, summary = read_run(run_dir)
    compare(pd.read_csv(GOLDEN_ALL / f"{key}.csv"), fresh)
    want = json.loads(PARAMS_FILE.read_text())[key]
    assert summary["params_sha256"] == want, f"{key}: final parameters changed"


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


@contextlib.contextmanager
def reproduced(recipe: str) -> Iterator[Path]:  # pragma: no cover - run by hand, on purpose
    """The runs directory of ``esbench reproduce <recipe> scale=smoke``, in a temporary directory."""
    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp) / "runs"
        esbench(
            "reproduce", recipe, "scale=smoke", f"results_dir={runs}", f"out_dir={Path(tmp) / 'reports'}",
            timeout=3600,
        )  # fmt: skip
        yield runs


def update() -> None:  # pragma: no cover - run by hand, on purpose
    """Reproduce table1 at smoke and rewrite the golden files from its sampled runs."""
    GOLDEN.mkdir(exist_ok=True)
    with reproduced("table1") as runs:
        for stem, run_dir in sample_runs(runs).items():
            fresh, _ = read_run(run_dir)
            fresh.to_csv(GOLDEN / f"{stem}.csv", index=False)
            print(f"wrote {GOLDEN / stem}.csv ({len(fresh)} rows)")


def write_all(runs: Path) -> None:  # pragma: no cover - run by hand, on purpose
    """Rewrite every recipe's golden data from the runs of ``esbench reproduce all scale=smoke``."""
    found = every_run(runs)
    if not found:
        raise SystemExit(f"no runs under {runs}")
    params = {}
    for key, run_dir in found.items():
        fresh, summary = read_run(run_dir)
        (GOLDEN_ALL / key).parent.mkdir(parents=True, exist_ok=True)
        fresh.to_csv(GOLDEN_ALL / f"{key}.csv", index=False)
        params[key] = summary["params_sha256"]
    PARAMS_FILE.write_text(json.dumps(params, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(params)} runs under {GOLDEN_ALL}")


def update_all() -> None:  # pragma: no cover - run by hand, on purpose
    """Reproduce every recipe at smoke and rewrite their golden data."""
    with reproduced("all") as runs:
        write_all(runs)


if __name__ == "__main__":  # pragma: no cover
    args = sys.argv[1:]
    if args == ["--update"]:
        update()
    elif args == ["--update-all"]:
        update_all()
    elif len(args) == 2 and args[0] == "--update-all":
        write_all(Path(args[1]))
    else:
        raise SystemExit("usage: python -m tests.smoke_golden --update | --update-all [RUNS]")
