"""What the runner computes cannot change unnoticed: golden data for every job of every committed
recipe at smoke scale (``tests/golden/smoke/<recipe>/<run id>.csv``, and each run's final
``params_sha256`` in ``tests/golden/smoke/params.json``): every learner (the ES variants, the SB3
baselines, Atari, sequences of stages, the language-model ES, EGGROLL and GRPO).

Two tests read them: ``tests/test_readme_command.py`` compares table1's runs with the default
suite's one ``esbench reproduce table1 scale=smoke``; ``tests/test_recipes_smoke.py`` compares every
run with its ``esbench reproduce all scale=smoke`` (``make test-recipes``).

Every metrics column is compared but the timing ones (:data:`tests.conftest.TIMING_COLUMNS`: they
depend on the machine, not on the computation): timesteps, frames, episodes and the task columns
exactly, returns to a relative 1e-9 (the CSV round trip of a float64), the float32 norms to 1e-6
(:data:`FLOAT32_NORMS`).

The data are those of one kind of CPU (``tests/golden/smoke/machine.json``): PyTorch picks its
kernels by the CPU's vector instructions, so an SB3 or GRPO run on one kind of CPU and the same run
on another part in the last bits and then in their trajectories (measured: TRPO's last
training return on table1's smoke job, 212.44 on AVX-512 against 212.52 where the data were first
made). A failed comparison on another kind of CPU says so. A change that alters these numbers, or
a move to another kind of machine, regenerates the golden data on purpose, and says so in its commit::

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
#: The kind of CPU the golden data were made on (:func:`machine`).
MACHINE_FILE = GOLDEN_ALL / "machine.json"
EXACT = ("generation", "timesteps", "frames", "episodes", "eval_timesteps", "train_task", "eval_task")
#: Norms of float32 vectors, summed by BLAS kernels that OpenBLAS picks per CPU: they differ in the
#: last float32 bits between machines (measured: 6.4e-8 relative in grad_norm between two VMs, same
#: commit and packages) while every return agrees to 1e-9. Compared to float32 precision.
FLOAT32_NORMS = ("grad_norm", "param_norm", "drift_l2", "drift_rel")


def every_run(results: Path) -> dict[str, Path]:
    """Every run directory of a reproduction's runs in ``results``, by ``<recipe>/<run id>``."""
    summaries = sorted(results.glob("*/*/summary.json"))
    return {f"{s.parent.parent.name}/{s.parent.name}": s.parent for s in summaries}


def golden_runs() -> list[str]:
    """The ``<recipe>/<run id>`` of every run with golden data."""
    return sorted(json.loads(PARAMS_FILE.read_text()))


def machine() -> dict[str, str]:
    """What decides PyTorch's CPU kernels here: its CPU capability (``AVX512``, ``AVX2``, ...) and
    its BLAS."""
    import torch

    config = torch.__config__.show()
    capability = next(
        (line.split(":", 1)[1].strip() for line in config.splitlines() if "CPU capability" in line), "?"
    )
    return {"torch_cpu_capability": capability, "torch": torch.__version__}


def compare_run(key: str, run_dir: Path) -> None:
    """Assert the run at ``run_dir`` computed what its golden data says: its metrics (:func:`compare`)
    and its final parameters (their sha256, bit for bit). On a kind of CPU other than the golden
    data's, a failure says so."""
    made_on, here = json.loads(MACHINE_FILE.read_text()), machine()
    other_cpu = "" if made_on == here else f" (golden data made on {made_on}, this machine is {here})"
    fresh, summary = read_run(run_dir)
    try:
        compare(pd.read_csv(GOLDEN_ALL / f"{key}.csv"), fresh)
    except AssertionError as err:
        raise AssertionError(f"{key}: {err}{other_cpu}") from None
    want = json.loads(PARAMS_FILE.read_text())[key]
    assert summary["params_sha256"] == want, f"{key}: final parameters changed{other_cpu}"


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
    MACHINE_FILE.write_text(json.dumps(machine(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(params)} runs under {GOLDEN_ALL}")


def update_all() -> None:  # pragma: no cover - run by hand, on purpose
    """Reproduce every recipe at smoke and rewrite their golden data."""
    with reproduced("all") as runs:
        write_all(runs)


if __name__ == "__main__":  # pragma: no cover
    args = sys.argv[1:]
    if args == ["--update-all"]:
        update_all()
    elif len(args) == 2 and args[0] == "--update-all":
        write_all(Path(args[1]))
    else:
        raise SystemExit("usage: python -m tests.smoke_golden --update-all [RUNS]")
