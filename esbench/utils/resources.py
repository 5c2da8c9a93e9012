"""Where esbench's shipped files are: the Hydra configs, the recipes and the published reference data.

The top level of the repository keeps ``conf/``, ``experiments/`` and ``results/reference/``; the
package reaches them as ``esbench/_data/{conf,experiments,reference}`` (relative links in a
checkout, real files in a wheel: ``pyproject.toml`` lists them as package data). They are read
through :mod:`importlib.resources`, so the same code finds them in an editable install, a plain
checkout on ``PYTHONPATH`` and an installed wheel. No other module locates these directories.

A user's own config directories join Hydra's search path through the ``ESBENCH_CONFIG_PATH``
environment variable (``os.pathsep``-separated directories) or Hydra's own
``hydra.searchpath=[file://DIR]`` override; :func:`user_config_dirs` reads the former.
"""

from __future__ import annotations

import os
from importlib.resources import files
from pathlib import Path

#: Environment variable naming extra config directories (``os.pathsep``-separated), searched after
#: esbench's own ``conf/``: a file there may add options to any group (``env/mycheetah.yaml``).
CONFIG_PATH_ENV = "ESBENCH_CONFIG_PATH"


def _data_dir(name: str) -> Path:
    """The real directory of ``esbench/_data/<name>`` (links resolved)."""
    resource = files("esbench") / "_data" / name
    path = Path(str(resource))
    if not path.is_dir():
        raise FileNotFoundError(
            f"esbench's data directory {name!r} is missing at {path}: the installation is incomplete "
            "(reinstall esbench from its wheel or its source tree)"
        )
    return path.resolve()


def conf_dir() -> Path:
    """The Hydra config directory (``conf/``): ``config.yaml`` and one folder per config group."""
    return _data_dir("conf")


def experiments_dir() -> Path:
    """The recipes (``experiments/*.yaml``), one per paper table or figure."""
    return _data_dir("experiments")


def reference_dir() -> Path:
    """The published numbers (``results/reference/*.csv`` and their README)."""
    return _data_dir("reference")


def user_config_dirs() -> list[Path]:
    """The directories named by ``ESBENCH_CONFIG_PATH``, in order; each must exist.

    Raises:
        FileNotFoundError: One line naming the variable and the missing directory.
    """
    raw = os.environ.get(CONFIG_PATH_ENV, "")
    dirs = [Path(p).expanduser().resolve() for p in raw.split(os.pathsep) if p.strip()]
    for d in dirs:
        if not d.is_dir():
            raise FileNotFoundError(f"{CONFIG_PATH_ENV}: {d} is not a directory")
    return dirs
