"""The wheel carries everything esbench needs: built, installed in a fresh venv, run from elsewhere.

Covered: ``pip wheel`` of the source tree (setuptools, no build isolation: no network), installed
with ``pip install --no-deps`` into a new virtual environment, then run from a directory outside
the checkout with no ``PYTHONPATH``: ``esbench --version``, ``esbench run --cfg job`` (the configs),
``esbench reproduce --list`` (the recipes and their cost estimates), and a smoke run on the real
Dask runtime (the reference CSVs are read when the env package loads) of an environment defined in a
user's config directory named by ``ESBENCH_CONFIG_PATH`` (the search-path plugin ships too).

Not covered: resolving the dependencies. The fresh venv sees this environment's installed
dependencies through a ``.pth`` file (its ``esbench`` itself is an editable install whose finder
only a site directory activates, so the wheel's copy is the one imported, which the test checks);
``docs/install.md``'s full route (``requirements.lock``, then the wheel) downloads them and is
not run here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.conftest import REPO

SMALL_RUN = [
    "run", "env=mycartpole", "budget=smoke", "budget.timesteps=3000", "tracker=none", "tracker.console=false",
    "algo.noise_table_size=1000000", "cluster.n_workers=1", "cluster.dashboard=false",
]  # fmt: skip


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel of this checkout installed (built from a copy of the tree)."""
    root = tmp_path_factory.mktemp("wheel")
    src = root / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for name in ("esbench", "hydra_plugins", "conf", "experiments", "results/reference"):
        shutil.copytree(REPO / name, src / name, symlinks=True, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    dist = root / "dist"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-build-isolation", "--no-deps", "-w", dist, src], check=True)
    (wheel,) = dist.glob("esbench-*.whl")
    env = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", env], check=True)
    python = env / "bin" / "python"
    subprocess.run([*pip, "--python", python, "install", "--no-deps", wheel], check=True)
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    Path(purelib, "_esbench_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return env


def _user_conf(root: Path) -> Path:
    """A user's config directory adding ``env=mycartpole`` (a copy of the shipped cartpole)."""
    conf = root / "my_conf"
    (conf / "env").mkdir(parents=True, exist_ok=True)
    shutil.copy2(REPO / "conf" / "env" / "cartpole.yaml", conf / "env" / "mycartpole.yaml")
    return conf


def _esbench(venv: Path, cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ESBENCH_CONFIG_PATH")}
    proc = subprocess.run(
        [venv / "bin" / "esbench", *args], capture_output=True, text=True, cwd=cwd,
        env={**environ, **env}, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, (
        f"esbench {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}"
    )
    return proc


def test_the_wheel_runs_every_command_from_outside_the_checkout(venv: Path, tmp_path: Path) -> None:
    where = subprocess.run(
        [venv / "bin" / "python", "-c", "import esbench, esbench.utils.resources as r; "
         "print(esbench.__file__); print(r.conf_dir())"],
        capture_output=True, text=True, cwd=tmp_path, env={"PATH": os.environ["PATH"]}, check=True,
    ).stdout.split()  # fmt: skip
    assert all(p.startswith(str(venv)) for p in where), where  # the wheel's code and configs
    assert _esbench(venv, tmp_path, "--version").stdout.strip() == "esbench 0.1.0"
    job = _esbench(venv, tmp_path, "run", "--cfg", "job", "env=hopper").stdout
    assert "id: Hopper-v5" in job
    listing = _esbench(venv, tmp_path, "reproduce", "--list").stdout
    assert all(name in listing for name in ("table1", "table2", "frameskip", "scaling")), listing

    conf = _user_conf(tmp_path)
    results = tmp_path / "results"
    run = _esbench(venv, tmp_path, *SMALL_RUN, f"results_dir={results}", ESBENCH_CONFIG_PATH=str(conf))
    assert "run complete" in run.stderr + run.stdout
    assert len(list((results / "default").glob("*/summary.json"))) == 1
