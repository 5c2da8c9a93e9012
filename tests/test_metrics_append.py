"""metrics.csv grows by appending (issue #16 item 8), and still equals the rows exactly after a
resume or after a trainer drops rows that a re-run task will send again."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

from esbench.tracking.logger import MetricsLogger
from esbench.tracking.schema import METRIC_COLUMNS, METRICS_FILE
from esbench.tracking.store import RunFileError, RunStore


def _logger(tmp_path: Path) -> MetricsLogger:
    return MetricsLogger(RunStore(tmp_path, "exp", "run"), writers=[])


def _dump(logger: MetricsLogger, generation: int) -> None:
    logger.record_many({"generation": generation, "timesteps": 100 * generation})
    logger.dump()


def _on_disk(logger: MetricsLogger) -> pd.DataFrame:
    return pd.read_csv(logger.store.path(METRICS_FILE))


def test_rows_are_appended_not_rewritten(tmp_path: Path) -> None:
    logger = _logger(tmp_path)
    _dump(logger, 0)
    path = logger.store.path(METRICS_FILE)
    inode, first = os.stat(path).st_ino, path.read_bytes()
    for g in range(1, 5):
        _dump(logger, g)
    # An atomic rewrite replaces the file (a new inode); an append keeps it and its first bytes.
    assert os.stat(path).st_ino == inode
    assert path.read_bytes().startswith(first)
    table = _on_disk(logger)
    assert tuple(table.columns) == METRIC_COLUMNS
    assert list(table["generation"]) == [0, 1, 2, 3, 4]


def test_a_resumed_run_cuts_the_file_back_to_its_checkpoint_rows(tmp_path: Path) -> None:
    logger = _logger(tmp_path)
    for g in range(5):
        logger.record_many({"train_task": "Hopper-v5", "eval_return_mean": 0.1 * g, "workers": 2})
        _dump(logger, g)
    path = logger.store.path(METRICS_FILE)
    lines = path.read_text().splitlines(keepends=True)
    with open(path, "a") as f:
        f.write("5,500,0,0,1.5")  # a crash mid-append: a torn last line
    resumed = _logger(tmp_path)
    resumed.resume(3)  # the checkpoint was taken after row 3; rows 4-5 and the torn line go
    assert path.read_text() == "".join(lines[:4])  # the kept rows are the file's own bytes
    assert len(resumed.rows) == 3
    for parsed, logged in zip(resumed.rows, logger.rows[:3], strict=True):
        assert parsed.keys() == logged.keys()
        assert str(parsed) == str(logged)  # same values and types (NaN prints alike)
    _dump(resumed, 3)
    assert list(_on_disk(resumed)["generation"]) == [0, 1, 2, 3]
    assert path.read_text().startswith("".join(lines[:4]))  # appended, not rewritten


def test_a_checkpoint_ahead_of_the_file_is_refused_in_one_line(tmp_path: Path) -> None:
    logger = _logger(tmp_path)
    for g in range(2):
        _dump(logger, g)
    with pytest.raises(
        RunFileError,
        match=r"metrics .*metrics.csv cannot be resumed from \(2 complete rows, "
        r"the checkpoint was written after 3\); run again with resume=false",
    ):
        _logger(tmp_path).resume(3)
    logger.store.path(METRICS_FILE).write_text("a,b\n1,2\n")
    with pytest.raises(RunFileError, match="its header is not esbench's metrics columns"):
        _logger(tmp_path).resume(1)


def test_rows_dropped_and_sent_again_are_not_counted_twice(tmp_path: Path) -> None:
    logger = _logger(tmp_path)
    for g in range(4):
        _dump(logger, g)
    del logger.rows[2:]  # what the RL driver does when a re-run task re-sends rows 2 and 3
    _dump(logger, 2)
    _dump(logger, 3)
    table = _on_disk(logger)
    assert list(table["generation"]) == [0, 1, 2, 3]
    del logger.rows[3:]
    logger.rows[2]["timesteps"] = 123  # same length as written, last row replaced: rewritten
    _dump(logger, 3)
    assert list(_on_disk(logger)["timesteps"]) == [0, 100, 123, 300]
