"""The calibration file: this machine's measured step rates, where cost estimates read them.

``esbench bench calibrate`` measures the rates the estimator of :mod:`esbench.recipes` needs (raw
simulator steps/s, ES's cost per step with the policy in the loop, each baseline's training
steps/s, Atari's emulator and CNN costs, the language-model learners' cost per completion, and the
fixed cost of starting a job, a sweep and a report) and writes them here. Estimates use it when it
exists and say so; without one they use the built-in rates measured on the development machine.

Location, first that is set: ``--out PATH`` of the command, ``$ESBENCH_CALIBRATION`` (a file),
``$ESBENCH_CACHE/calibration.json``, ``~/.cache/esbench/calibration.json`` (the cache directory of
the noise tables and the pretrained language models).

The file is JSON::

    {"schema": 1, "date": "2026-11-26 03:10:00", "seconds": 180.0,
     "machine": {"cpu_model": ..., "cpu_count": 2, "platform": ..., "python": ...},
     "versions": {"esbench": ..., "mujoco": ..., ...},
     "rates": {<the keys of esbench.recipes.STEP_RATES it measured>}}

Only ``rates`` is read by the estimator; a key missing from it keeps its built-in value.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from esbench.utils.io import atomic_write_json

SCHEMA = 1
ENV_VAR = "ESBENCH_CALIBRATION"


class CalibrationError(ValueError):
    """A calibration file that cannot be used; the message is one line naming the file and the problem."""


def calibration_path() -> Path:
    """Where the calibration is read and written unless a path is given (see the module docstring)."""
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR])
    cache = Path(os.environ.get("ESBENCH_CACHE", Path.home() / ".cache" / "esbench"))
    return cache / "calibration.json"


def save_calibration(data: dict[str, Any], path: Path | None = None) -> Path:
    """Write ``data`` (checked like a loaded file) atomically to ``path`` (default
    :func:`calibration_path`); returns the path written."""
    target = path or calibration_path()
    check_calibration(data, target)
    atomic_write_json(target, data)
    return target


def load_calibration(path: Path | None = None) -> dict[str, Any] | None:
    """The calibration at ``path`` (default :func:`calibration_path`), or ``None`` when there is none.

    Raises:
        CalibrationError: The file exists but is not a calibration of this schema.
    """
    source = path or calibration_path()
    if not source.is_file():
        return None
    try:
        data = json.loads(source.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise CalibrationError(
            f"{source}: not readable JSON ({e}); run `esbench bench calibrate` again"
        ) from e
    check_calibration(data, source)
    return data


def check_calibration(data: Any, path: Path) -> None:
    """Raise :class:`CalibrationError` unless ``data`` has the schema, a date and a rates mapping
    whose values are positive numbers (or mappings of them)."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise CalibrationError(
            f"{path}: schema={data.get('schema') if isinstance(data, dict) else None!r}; "
            f"allowed: {SCHEMA} (run `esbench bench calibrate` again)"
        )
    if not isinstance(data.get("date"), str) or not isinstance(data.get("rates"), dict):
        raise CalibrationError(f"{path}: a calibration needs 'date' (text) and 'rates' (a mapping)")
    for key, value in _leaves(data["rates"], "rates"):
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            raise CalibrationError(f"{path}: {key}={value!r}; allowed: a positive number")


def _leaves(node: Any, key: str) -> list[tuple[str, Any]]:
    if isinstance(node, dict):
        return [leaf for k, v in node.items() for leaf in _leaves(v, f"{key}.{k}")]
    return [(key, node)]
