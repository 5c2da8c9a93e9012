"""One logging interface with pluggable writers (after stable-baselines3's ``logger``).

``record(key, value)`` collects a step's values, ``dump()`` closes the row: it goes to the local
store always (columns fixed by :mod:`esbench.tracking.schema`), to W&B when enabled, and to the
console. Keys outside the schema are allowed only with a prefix (``es/``, ``train/``, ``time/``):
they reach W&B and not ``metrics.csv``, so the CSV ruler stays the same for every algorithm.
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
        self.rows: list[dict[str, Any]] = list(rows or [])
        self._current: dict[str, Any] = {}

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
        """Close the current row: store it (atomically) and hand it to every writer."""
        row = schema.empty_row()
        row.update(self._current)
        self._current = {}
        self.rows.append({k: row[k] for k in schema.METRIC_COLUMNS})
        self.store.write_metrics(self.rows)
        for w in self.writers:
            w.write(row)
        return row
