"""Every file a run or a report loads refuses a planted pickle, and no loader in esbench can unpickle.

A results directory or a cache may come from anyone; unpickling runs whatever the file names. The
checkpoints are covered through the real CLI in ``test_checkpoint_safety.py``. Here: the
stage-boundary snapshots and stage states (read by the retention report and its tools), the noise
table cache (read by every ES run), and a scan of the package source so that a new loader cannot
add an unpickling read without failing this file.
"""

from __future__ import annotations

import ast
import os
import pickle
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from esbench.analysis.retention import load_snapshots
from esbench.analysis.retention_behaviour import load_probes
from esbench.strategies import noise
from esbench.strategies.noise import noise_table, table_path
from esbench.tracking.stage_states import load_stage_states
from tests.conftest import REPO


class _Payload:
    """Unpickling this creates ``marker``: what a hostile file would do (any code at all)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


@pytest.fixture
def marker() -> Iterator[Path]:
    """A path that exists only if a planted pickle's code ran."""
    path = Path(f"/tmp/esbench-pwned-{uuid.uuid4().hex}")
    yield path
    path.unlink(missing_ok=True)


def _plant(path: Path, marker: Path, how: str) -> None:
    """A hostile pickle at ``path``: as the whole file, or as an object array inside an ``.npz``
    under the names the loaders read (``np.load(allow_pickle=True)`` would unpickle it)."""
    payload = _Payload(marker)
    if how == "pickle":
        path.write_bytes(pickle.dumps(payload))
        return
    hostile = np.empty(1, dtype=object)
    hostile[0] = payload
    names = ("params", "boundaries", "stages", "layout_starts", "layout_shapes", "__state__")
    with path.open("wb") as f:
        np.savez(f, allow_pickle=True, **dict.fromkeys(names, hostile))


LOADERS = {
    "snapshots.npz": load_snapshots,
    "stage_states.npz": load_stage_states,
    "probes.npz": load_probes,
    "probe_states.npz": load_stage_states,
}


@pytest.mark.parametrize("how", ["pickle", "object-array"])
@pytest.mark.parametrize("name", sorted(LOADERS))
def test_a_planted_pickle_in_a_run_file_is_refused_and_never_run(
    name: str, how: str, tmp_path: Path, marker: Path
) -> None:
    path = tmp_path / name
    _plant(path, marker, how)
    with pytest.raises(ValueError):  # the loaders' one error type for an unreadable file
        LOADERS[name](path)
    assert not marker.exists(), f"{name}: the planted pickle was unpickled, its code ran"


def test_a_planted_pickle_in_the_noise_table_cache_is_rebuilt_over_never_run(
    tmp_path: Path, marker: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cache holds raw float32 bytes and a digest; a pickle in the table's place fails the check
    and is replaced by the true table, never executed."""
    seed, size = 5, 100_000
    monkeypatch.setenv("ESBENCH_CACHE", str(tmp_path / "reference"))
    monkeypatch.setattr(noise, "_OPEN", {})
    reference = np.array(noise_table(seed, size))
    monkeypatch.setenv("ESBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(noise, "_OPEN", {})
    path = table_path(seed, size)
    path.parent.mkdir(parents=True)
    _plant(path, marker, "pickle")
    table = noise_table(seed, size)
    assert not marker.exists()
    np.testing.assert_array_equal(table, reference)


# --- no loader in the package can unpickle ----------------------------------------------------------

#: Calls that unpickle (or may, depending on a flag) what they read.
UNPICKLING = {
    ("pickle", "load"), ("pickle", "loads"), ("cloudpickle", "load"), ("cloudpickle", "loads"),
    ("dill", "load"), ("dill", "loads"), ("joblib", "load"), ("torch", "load"), ("pd", "read_pickle"),
    ("pandas", "read_pickle"), ("dask_pickle", "loads"), ("shelve", "open"), ("marshal", "loads"),
}  # fmt: skip


def _calls(tree: ast.AST) -> Iterator[tuple[str, str, ast.Call]]:
    """(object name, attribute, call) of every ``name.attr(...)`` call."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            value = node.func.value
            if isinstance(value, ast.Name):
                yield value.id, node.func.attr, node
            elif isinstance(value, ast.Attribute):  # numpy.lib.npyio.load and the like
                yield value.attr, node.func.attr, node


def test_no_loader_in_the_package_can_unpickle() -> None:
    """Every ``np.load`` passes ``allow_pickle=False`` (a literal), and nothing calls an unpickler
    (``torch.load`` only with ``weights_only=True``).

    The scan is over source, so it also holds for loaders added later; it found at least the
    loaders this file tests through (snapshots and stage states), or it would be looking elsewhere.
    """
    found_np_load = 0
    problems = []
    for path in sorted((REPO / "esbench").rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for obj, attr, call in _calls(tree):
            where = f"{path.relative_to(REPO)}:{call.lineno}"
            safe_torch = (obj, attr) == ("torch", "load") and any(
                k.arg == "weights_only" and isinstance(k.value, ast.Constant) and k.value.value is True
                for k in call.keywords
            )  # tensors only: torch refuses any other object
            if (obj, attr) in UNPICKLING and not safe_torch:
                problems.append(f"{where}: {obj}.{attr}(...) unpickles")
            if obj in ("np", "numpy") and attr == "load":
                found_np_load += 1
                flag = next((k.value for k in call.keywords if k.arg == "allow_pickle"), None)
                if not (isinstance(flag, ast.Constant) and flag.value is False):
                    problems.append(f"{where}: np.load(...) without allow_pickle=False")
    assert not problems, "\n".join(problems)
    assert found_np_load >= 3, found_np_load
