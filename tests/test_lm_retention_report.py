"""The language model's section of the lm_retention report, on hand-made runs whose answer is known:
ES keeps less of task A than GRPO at the task-B gain both reach, the verdict says so."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from esbench.analysis.lm_retention import is_lm, lm_points, lm_section

PRE = 1000  # the pretraining's sequences: stage `countdown` starts here


def _run(root: Path, algo: str, seed: int, reward: list[float], accuracy: list[float]) -> dict:
    """A complete sequence run: points of stage countdown every 100 completions, both tasks."""
    run_dir = root / f"{algo}-s{seed}"
    run_dir.mkdir(parents=True)
    rows = []
    for k, (r, a) in enumerate(zip(reward, accuracy, strict=True)):
        t = PRE + 100 * k
        for task, value in (("addition", a), ("countdown", r)):
            rows.append(
                {"timesteps": t, "wall_clock_s": 10.0 + 2.0 * k + seed, "eval_task": task,
                 "eval_return_mean": value, "solve_rate": value / 2, "prior_accuracy": a}
            )  # fmt: skip
    pd.DataFrame(rows).to_csv(run_dir / "metrics.csv", index=False)
    ends = [PRE, PRE + 100 * (len(reward) - 1)]
    (run_dir / "summary.json").write_text(
        json.dumps({"stages": ["addition", "countdown"], "stage_boundaries": ends})
    )
    return {"run_id": run_dir.name, "algo": algo, "sequence": "lm_addition_to_countdown", "seed": seed,
            "complete": True, "path": str(run_dir)}  # fmt: skip


def test_lm_section_decides_es_forgets_more_at_matched_task_b_gain(tmp_path: Path) -> None:
    runs = pd.DataFrame(
        [
            _run(tmp_path, "eggroll", 0, [0.1, 0.2, 0.3], [0.8, 0.6, 0.4]),
            _run(tmp_path, "eggroll", 1, [0.1, 0.2, 0.3], [0.8, 0.62, 0.42]),
            _run(tmp_path, "eggroll", 2, [0.1, 0.2, 0.3], [0.8, 0.58, 0.38]),
            _run(tmp_path, "grpo", 0, [0.1, 0.3, 0.4], [0.8, 0.78, 0.7]),
            _run(tmp_path, "grpo", 1, [0.1, 0.3, 0.4], [0.8, 0.76, 0.72]),
            _run(tmp_path, "grpo", 2, [0.1, 0.3, 0.4], [0.8, 0.8, 0.74]),
        ]
    )
    assert is_lm(runs)
    points = lm_points(runs)
    first = points[points["point"] == 0]
    assert (first["completions"] == 0).all() and (first["task_a_retention"] == 1).all()
    assert np.allclose(points["wall_clock_s"].max(), 4.0)  # seconds since the stage began
    report = tmp_path / "report"
    blocks, claims = lm_section(runs, report, np.random.default_rng(0))
    verdicts = pd.read_csv(report / "tables" / "lm_claims.csv")
    (row,) = verdicts.itertuples()
    assert (row.a, row.b, row.verdict) == ("eggroll", "grpo", "supported")
    assert np.isclose(row.matched_gain, 0.2)  # the largest gain every run reaches: EGGROLL's
    # at gain 0.2: EGGROLL keeps 0.4/0.8 .. 0.42/0.8; GRPO (gain 0.2 two thirds of the way to 0.3) ~0.975
    assert np.isclose(row.retention_a, 0.5) and 0.96 < row.retention_b < 0.99 and row.high < 0
    assert len(claims) == 1 and claims[0].endswith("| supported |")
    assert (report / "figures" / "lm_curves.png").exists() and "Completions" in blocks[0]
