"""What the runner computes cannot change unnoticed: a smoke-scale sample of the committed recipes,
re-run and compared with committed golden data (``tests/golden/``).

The sample is table1's smoke recipe (``experiments/table1.yaml``): its OpenAI-ES job whole, and its
TRPO job cut to its first evaluation interval (5,000 timesteps instead of 20,000, to keep the
default suite fast). Every metrics column is compared but the timing ones
(:data:`tests.conftest.TIMING_COLUMNS`: they depend on the machine, not on the computation):
timesteps, frames, episodes and the task columns exactly, returns and norms to a relative 1e-9
(the CSV round trip of a float64). A change that alters these numbers must regenerate the golden
data on purpose, and say so in its commit::

    PYTHONPATH=. python -m tests.test_smoke_golden --update
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from esbench.recipes import all_jobs, get_recipe
from tests.conftest import REPO, TIMING_COLUMNS, esbench, only_run_dir, read_run

GOLDEN = REPO / "tests" / "golden"
#: (golden file stem, the recipe job's algo, overrides put after the recipe's).
SAMPLE: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("table1_smoke_openai_es", "openai_es", ()),
    ("table1_smoke_trpo", "trpo", ("budget.timesteps=5000",)),
)
EXACT = ("generation", "timesteps", "frames", "episodes", "eval_timesteps", "train_task", "eval_task")


def job_overrides(algo: str, extra: tuple[str, ...]) -> list[str]:
    """The table1 smoke job of ``algo``, as ``esbench reproduce`` runs it, then ``extra``."""
    (job,) = [j for j in all_jobs(get_recipe("table1"), "smoke") if f"algo={algo}" in j]
    return [*job, *extra]


def run_sample(algo: str, extra: tuple[str, ...], results: Path) -> pd.DataFrame:
    """Run one sampled job into ``results``; its metrics without the timing columns."""
    esbench(
        "run", *job_overrides(algo, extra), "tracker.console=false", f"results_dir={results}", timeout=600
    )
    metrics, _ = read_run(only_run_dir(results))
    return metrics.drop(columns=[c for c in TIMING_COLUMNS if c in metrics.columns])


def compare(golden: pd.DataFrame, fresh: pd.DataFrame) -> None:
    """Assert ``fresh`` equals ``golden``: same columns and rows, exact or to a relative 1e-9."""
    assert list(fresh.columns) == list(golden.columns), "metrics columns changed"
    assert len(fresh) == len(golden), f"{len(fresh)} metrics rows, golden {len(golden)}"
    for col in golden.columns:
        want, got = golden[col], fresh[col]
        if col in EXACT or not pd.api.types.is_numeric_dtype(want):
            assert want.astype(str).tolist() == got.astype(str).tolist(), f"column {col} changed"
        else:
            np.testing.assert_allclose(
                got.to_numpy(float), want.to_numpy(float), rtol=1e-9, atol=0, equal_nan=True, err_msg=col
            )


@pytest.mark.parametrize(("stem", "algo", "extra"), SAMPLE, ids=[s[0] for s in SAMPLE])
def test_smoke_sample_matches_golden_data(
    stem: str, algo: str, extra: tuple[str, ...], tmp_path: Path
) -> None:
    golden = pd.read_csv(GOLDEN / f"{stem}.csv")
    fresh = run_sample(algo, extra, tmp_path / "runs")
    assert fresh["eval_return_mean"].notna().sum() >= 2  # evaluated at least at 0 and once more
    compare(golden, fresh)


def update() -> None:  # pragma: no cover - run by hand, on purpose
    """Re-run the sample and rewrite the golden files."""
    import tempfile

    GOLDEN.mkdir(exist_ok=True)
    for stem, algo, extra in SAMPLE:
        with tempfile.TemporaryDirectory() as tmp:
            fresh = run_sample(algo, extra, Path(tmp) / "runs")
        fresh.to_csv(GOLDEN / f"{stem}.csv", index=False)
        print(f"wrote {GOLDEN / stem}.csv ({len(fresh)} rows)")


if __name__ == "__main__":  # pragma: no cover
    if sys.argv[1:] != ["--update"]:
        raise SystemExit("usage: python -m tests.test_smoke_golden --update")
    update()
