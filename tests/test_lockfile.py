"""``requirements.lock`` pins exactly this environment: what ``make install`` gives a fresh clone."""

from __future__ import annotations

import importlib.util
import re

from tests.conftest import REPO


def _lock_module():
    spec = importlib.util.spec_from_file_location("esbench_lock", REPO / ".ci" / "lock.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_lockfile_pins_this_environments_versions_and_leaves_torch_to_its_own_step() -> None:
    """Regenerated from the installed distributions, the lock is the committed one (run `make lock`
    after changing a dependency); torch and any CUDA package stay out of it."""
    committed = (REPO / "requirements.lock").read_text()
    assert _lock_module().lock_text(["test", "sweepers", "docs"]) == committed
    pins = [line for line in committed.splitlines() if not line.startswith("#")]
    assert all(re.fullmatch(r"[a-z0-9-]+==\S+", line) for line in pins), pins
    names = {line.split("==")[0] for line in pins}
    assert {"hydra-core", "numpy", "gymnasium", "stable-baselines3", "dask", "sympy"} <= names
    assert not {n for n in names if n in ("torch", "esbench") or n.startswith(("nvidia-", "cuda-"))}
