"""The results store's cost over a long run: appending metrics rows against rewriting the file.

A paper-scale ES run logs thousands of generations. ``metrics.csv`` used to be rewritten whole
(atomically) at every row, O(n^2) over the run; it is now appended to, durably (fsync per row), and
cut back only on resume (:mod:`esbench.tracking.logger`). This times both ways for ``n`` rows of
the real schema in a temporary directory. Checkpoints used to carry every row too; they now carry
a row count, and this measures one checkpoint taken after ``n`` rows both ways (size and save
time, the rows as the data-only state file stores them).
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from esbench.tracking.logger import MetricsLogger
from esbench.tracking.store import RunStore
from esbench.utils import statefile


@dataclass
class _RowsCheckpoint:
    """A checkpoint as it was: every row so far."""

    rows: list[dict[str, Any]]


@dataclass
class _CountCheckpoint:
    """A checkpoint as it is: a row count."""

    n_rows: int


def _checkpoint_cost(path: Path, obj: Any) -> tuple[float, int]:
    """Seconds to save ``obj`` as a state file, and the file's size in bytes."""
    start = time.perf_counter()
    statefile.save(path, obj, (_RowsCheckpoint, _CountCheckpoint))
    return time.perf_counter() - start, path.stat().st_size


def bench_store(sizes: tuple[int, ...] = (1_000, 5_000)) -> list[dict[str, Any]]:
    """Seconds to log ``n`` rows by appending (the logger) and by rewriting the file each row."""
    out = []
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            logger = MetricsLogger(RunStore(tmp, "bench", "append"), writers=[])
            start = time.perf_counter()
            for g in range(n):
                logger.record_many({"generation": g, "timesteps": 1_000 * g, "eval_return_mean": 0.5 * g})
                logger.dump()
            append_s = time.perf_counter() - start
            store, rows = RunStore(tmp, "bench", "rewrite"), []
            start = time.perf_counter()
            for row in logger.rows:
                rows.append(row)
                store.write_metrics(rows)
            rewrite_s = time.perf_counter() - start
            rows_s, rows_bytes = _checkpoint_cost(Path(tmp) / "rows.npz", _RowsCheckpoint(logger.rows))
            count_s, count_bytes = _checkpoint_cost(Path(tmp) / "count.npz", _CountCheckpoint(n))
        out.append(
            {
                "rows": n,
                "append_s": append_s,
                "rewrite_whole_s": rewrite_s,
                "checkpoint_with_rows_s": rows_s,
                "checkpoint_with_rows_bytes": rows_bytes,
                "checkpoint_with_count_s": count_s,
                "checkpoint_with_count_bytes": count_bytes,
            }
        )
    return out


def format_store(rows: list[dict[str, Any]]) -> str:
    """A Markdown table of :func:`bench_store`'s result."""
    lines = [
        "| rows | append (s) | rewrite whole file per row (s) | a checkpoint with the rows | with a count |",
        "|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {r['rows']:,} | {r['append_s']:.2f} | {r['rewrite_whole_s']:.2f} "
        f"| {r['checkpoint_with_rows_bytes'] / 1e3:,.0f} kB, {r['checkpoint_with_rows_s'] * 1e3:.0f} ms "
        f"| {r['checkpoint_with_count_bytes'] / 1e3:,.1f} kB, {r['checkpoint_with_count_s'] * 1e3:.1f} ms |"
        for r in rows
    ]
    return "\n".join(lines)
