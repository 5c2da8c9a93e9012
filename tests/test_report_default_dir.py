"""``esbench report`` writes to the git-ignored ``reports/`` unless asked for ``paper/``."""

from __future__ import annotations

import numpy as np
import pytest

from esbench.analysis.cli import main
from tests.synthetic_store import write_run


def test_report_defaults_to_reports_and_leaves_paper_alone(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = np.arange(0, 1001, 250)
    for seed in (0, 1):
        write_run(tmp_path / "runs", "table1", "trpo", "Hopper-v5", seed, t, 0.1 * t + seed)
        write_run(tmp_path / "runs", "table1", "openai_es", "Hopper-v5", seed, t, 0.2 * t + seed)
    monkeypatch.chdir(tmp_path)
    assert main(["table1", "results_dir=runs"]) == 0
    assert (tmp_path / "reports" / "table1" / "REPORT.md").is_file()
    assert not (tmp_path / "paper").exists()
    assert main(["table1", "results_dir=runs", "out_dir=paper"]) == 0
    assert (tmp_path / "paper" / "table1" / "REPORT.md").is_file()
