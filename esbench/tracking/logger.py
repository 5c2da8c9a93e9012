"""One logging interface with pluggable writers (after stable-baselines3's ``logger``).

``record(key, value)`` collects a step's values, ``dump()`` closes the row: it goes to the local
store always (columns fixed by :mod:`esbench.tracking.schema`), to W&B when enabled, and to the
console. Keys outside the schema are allowed only with a prefix (``es/``, ``train/``, ``time/``):
they reach W&B and not ``metrics.csv``, so the CSV ruler stays the same for every algorithm.

``metrics.csv`` grows by appending each new row (O(1) per row; rewriting the whole file at every
row was O(n^2) over a run), and a checkpoint keeps the trainer's state and a row count, not the
rows: a resumed run cuts the file back to that count (:meth:`MetricsLogger.resume`), so rows
logged after the checkpoint are not counted twice. The file is rewritten whole only when
:attr:`MetricsLogger.rows` no longer extends what was written (a trainer that drops rows a re-run
task will re-send truncates the list); the next :meth:`~MetricsLogger.dump` (or
:meth:`~MetricsLogger.sync`) then makes the file equal the rows exactly.
"""

from __future__ import annotations

from typing import Any, Protocol

from esbench.tracking import schema
from esbench.tracking.store import RunStore


class Writer(Protocol):
    """Anything that takes finished rows."""

    def write(self, row: dict[str, Any]) -> None: ...


class MetricsLogger:
    """Collects rows and fans them out to the store and writers."""

    def __init__(
        self, store: RunStore, writers: list[Writer], rows: list[dict[str, Any]] | None = None
    ) -> None:
        self.store = store
        self.writers = writers
        self._rows: list[dict[str, Any]] = list(rows or [])
        self._written: int | None = None  # rows of self._rows in metrics.csv; None: rewrite it
        self._last_written: dict[str, Any] | None = None  # the object of the last row written
        self._current: dict[str, Any] = {}

    @property
    def rows(self) -> list[dict[str, Any]]:
        """Every row so far (a resumed run's include those before its checkpoint)."""
        return self._rows

    @rows.setter
    def rows(self, rows: list[dict[str, Any]]) -> None:
        self._rows = list(rows)
        self._written = None

    def resume(self, n_rows: int) -> None:
        """Continue a run whose checkpoint was written after ``n_rows`` rows: ``metrics.csv`` is
        cut back to them (:meth:`RunStore.truncate_metrics`) and they become :attr:`rows`, already
        written, so the next row is appended. Writers with a ``resumed(rows)`` method (the console
        bar) are shown those rows, so what they summarize (the best evaluation) spans the whole run.

        Raises:
            RunFileError: ``metrics.csv`` does not hold the checkpoint's rows.
        """
        self._rows = self.store.truncate_metrics(n_rows)
        self._written = len(self._rows)
        self._last_written = self._rows[-1] if self._rows else None
        for w in self.writers:
            resumed = getattr(w, "resumed", None)
            if resumed is not None:
                resumed(self._rows)

    def record(self, key: str, value: Any) -> None:
        """Set one value of the current row."""
        if key not in schema.METRIC_COLUMNS and "/" not in key:
            raise KeyError(f"metric {key!r} is not in the schema; prefix extras (e.g. 'es/{key}')")
        self._current[key] = value

    def record_many(self, values: dict[str, Any]) -> None:
        """Set several values."""
        for k, v in values.items():
            self.record(k, v)

    def dump(self) -> dict[str, Any]:
        """Close the current row: store it (durably) and hand it to every writer."""
        row = schema.empty_row()
        row.update(self._current)
        self._current = {}
        self._rows.append({k: row[k] for k in schema.METRIC_COLUMNS})
        self.sync()
        for w in self.writers:
            w.write(row)
        return row

    def table(self, key: str, columns: list[str], data: list[list[Any]]) -> None:
        """Hand a table (rows of ``columns``) to every writer that logs tables (W&B's ``key``)."""
        for w in self.writers:
            write_table = getattr(w, "write_table", None)
            if write_table is not None:
                write_table(key, columns, data)

    def sync(self) -> None:
        """Make ``metrics.csv`` hold exactly :attr:`rows`: append the new ones, or rewrite it."""
        n = self._written
        still_a_prefix = (
            n is not None
            and n <= len(self._rows)
            and (
                n == 0 or self._rows[n - 1] is self._last_written  # rows truncated and re-grown: no
            )
        )
        if not still_a_prefix:
            self.store.write_metrics(self._rows)
        elif n is not None and n < len(self._rows):
            self.store.append_metrics(self._rows[n:])
        self._written = len(self._rows)
        self._last_written = self._rows[-1] if self._rows else None
