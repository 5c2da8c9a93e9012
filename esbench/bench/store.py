"""The results store's cost over a long run: appending metrics rows against rewriting the file.

A paper-scale ES run logs thousands of generations. ``metrics.csv`` used to be rewritten whole
(atomically) at every row, O(n^2) over the run; it is now appended to, durably (fsync per row), and
rewritten only on resume (:mod:`esbench.tracking.logger`). This times both ways for ``n`` rows of
the real schema in a temporary directory.
"""

from __future__ import annotations

import tempfile
import time
from typing import Any

from esbench.tracking.logger import MetricsLogger
from esbench.tracking.store import RunStore


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
        out.append({"rows": n, "append_s": append_s, "rewrite_whole_s": rewrite_s})
    return out


def format_store(rows: list[dict[str, Any]]) -> str:
    """A Markdown table of :func:`bench_store`'s result."""
    lines = ["| rows | append (s) | rewrite whole file per row (s) |", "|---:|---:|---:|"]
    lines += [f"| {r['rows']:,} | {r['append_s']:.2f} | {r['rewrite_whole_s']:.2f} |" for r in rows]
    return "\n".join(lines)
