"""Which environment versions a set of runs used, against the versions the paper ran.

Salimans et al. (2017) ran OpenAI Gym's v1 MuJoCo tasks (mujoco-py on MuJoCo 1.31,
``results/reference/README.md``); esbench runs Gymnasium's v5 tasks on the ``mujoco`` bindings.
Rewards, terminations and observations differ in places between the two
(docs/mujoco-v1-vs-v5.md), so a report must say which versions produced its numbers. The paper's
Atari games went through the preprocessing of Mnih et al. (2016); it does not name its emulator or
Gym version, and this line says so rather than guess.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

#: What the paper ran, per env kind (from the paper and ``results/reference/README.md``).
PAPER_ENVS: dict[str, str] = {
    "mujoco": "gym v1 MuJoCo tasks (mujoco-py, MuJoCo 1.31); what changed since: docs/mujoco-v1-vs-v5.md",
    "atari": "the ALE with Mnih et al. 2016's preprocessing (emulator and Gym versions not stated)",
}

#: The package versions worth naming beside each env kind.
KIND_PACKAGES: dict[str, tuple[str, ...]] = {
    "mujoco": ("gymnasium", "mujoco"),
    "atari": ("gymnasium", "ale-py"),
    "classic": ("gymnasium",),
    "custom": ("gymnasium",),
}

_KIND_NAMES = {"mujoco": "Gymnasium MuJoCo", "atari": "ALE", "classic": "Gymnasium classic control"}


def _versions(env_info: Iterable[Mapping[str, Any]], names: Iterable[str]) -> str:
    """``"gymnasium 1.4.0, mujoco 4.0.0"``: each named package's versions over the runs' env.json."""
    parts = []
    for name in names:
        found = sorted({str((i.get("packages") or {}).get(name)) for i in env_info} - {"None"})
        if found:
            parts.append(f"{name} {' / '.join(found)}")
    return ", ".join(parts)


def _suffixes(ids: Iterable[str]) -> list[str]:
    """The version suffixes (``v5``) of env ids, sorted and distinct."""
    return sorted({m.group(1) for i in ids if (m := re.search(r"-(v\d+)$", i))})


def env_versions_line(runs: pd.DataFrame, env_info: Iterable[Mapping[str, Any]]) -> str:
    """One Markdown bullet naming the env ids and versions of ``runs`` beside the paper's.

    Args:
        runs: The run table (``env_id``, ``env_kind`` per run).
        env_info: The runs' ``env.json`` mappings (``packages``: name -> version).

    Returns:
        ``"- Environments: ..."``, one clause per env kind, e.g. ``Gymnasium MuJoCo v5
        (HalfCheetah-v5, Hopper-v5; gymnasium 1.4.0, mujoco 4.0.0); the paper: gym v1 MuJoCo
        tasks (...)``; ``"- Environments: unknown"`` for an empty table.
    """
    info = list(env_info)
    clauses = []
    if "env_kind" in runs.columns and "env_id" in runs.columns:
        for kind, group in runs.groupby("env_kind", sort=True):
            ids = sorted({str(i) for i in group["env_id"] if str(i)})
            if not ids:
                continue
            kind = str(kind)
            versions = _suffixes(ids)
            name = _KIND_NAMES.get(kind, kind or "other")
            label = f"{name} {'/'.join(versions)}" if versions else name
            packages = _versions(info, KIND_PACKAGES.get(kind, ("gymnasium",)))
            clause = f"{label} ({', '.join(ids)}{'; ' + packages if packages else ''})"
            if kind in PAPER_ENVS:
                clause += f"; the paper: {PAPER_ENVS[kind]}"
            clauses.append(clause)
    return "- Environments: " + (". ".join(clauses) if clauses else "unknown")
