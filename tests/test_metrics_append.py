"""metrics.csv grows by appending (issue #16 item 8), and still equals the rows exactly after a
resume or after a trainer drops rows that a re-run task will send again."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from esbench.tracking.logger import MetricsLogger
from esbench.tracking.schema import METRIC_COLUMNS, METRICS_FILE
from esbench.tracking.store import RunStore


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


def test_a_resumed_run_rewrites_the_file_to_its_checkpoint_rows(tmp_path: Path) -> None:
    logger = _logger(tmp_path)
    for g in range(5):
        _dump(logger, g)
    checkpoint_rows = [dict(r) for r in logger.rows[:3]]  # the run was killed after row 4
    resumed = _logger(tmp_path)
    resumed.rows = checkpoint_rows
    _dump(resumed, 3)
    assert list(_on_disk(resumed)["generation"]) == [0, 1, 2, 3]  # rows 3-4 of the dead run gone


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
