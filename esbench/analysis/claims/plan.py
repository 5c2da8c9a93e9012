"""A recipe's plan: the claims files it names, fixed before its runs, and the hash that names them.

A recipe (``experiments/<recipe>.yaml``) names its claims files under ``claims:``::

    claims: [experiments/claims/retention.yaml]

A path starting with ``experiments/`` or ``results/reference/`` names a file esbench ships (the
repository's directory of that name, in a checkout or a wheel); any other relative path is read
from the recipe's own directory. A claims file is YAML (a mapping) or CSV (a header and at least
one row); what its claims say is the study's to check (each study's claim type validates its own
file, e.g. :func:`esbench.analysis.claims.retention.load_retention_claims`). A recipe without
``claims:`` has the empty plan.

The plan's hash (:func:`plan_hash`) is sha256 over each file's name (as the recipe writes it) and
the sha256 of its bytes, in the order of the names: editing a claim, adding a file or renaming one
changes it; reordering the list does not. A run records the hash of the plan it was launched
under (:meth:`esbench.tracking.store.RunStore.record_plan`), and a report compares that record with its
recipe's current plan: runs made under another plan (or with none recorded) decide nothing.
"""

from __future__ import annotations

import csv
import hashlib
import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from esbench.config.errors import ConfigError
from esbench.utils.resources import experiments_dir, reference_dir

#: The suffixes a claims file may have.
CLAIMS_SUFFIXES: tuple[str, ...] = (".yaml", ".yml", ".csv")


class PlanError(ConfigError):
    """A recipe's ``claims:`` that cannot be read; the message names the recipe, the file and what
    is allowed."""


@dataclass(frozen=True)
class PlanFile:
    """One claims file of a plan.

    Attributes:
        name: Its path as the recipe names it (``experiments/claims/retention.yaml``).
        sha256: sha256 of its bytes.
        path: Where it was read from.
    """

    name: str
    sha256: str
    path: Path


@dataclass(frozen=True)
class Plan:
    """The claims a recipe's runs are made to decide.

    Attributes:
        recipe: The recipe's name (``""``: a report of no recipe).
        files: Its claims files, sorted by name (empty: the empty plan).
    """

    recipe: str
    files: tuple[PlanFile, ...] = ()

    @property
    def hash(self) -> str:
        """:func:`plan_hash` of the files."""
        return plan_hash(self.files)

    def record(self) -> dict[str, Any]:
        """The plan as JSON data: recipe, hash, and each file's name and sha256."""
        return {"recipe": self.recipe, "hash": self.hash, "files": {f.name: f.sha256 for f in self.files}}


def plan_hash(files: Sequence[PlanFile]) -> str:
    """sha256 over each file's name and the sha256 of its bytes, sorted by name (module doc)."""
    digest = hashlib.sha256()
    for f in sorted(files, key=lambda f: f.name):
        digest.update(f"{f.name}\0{f.sha256}\n".encode())
    return digest.hexdigest()


#: The plan of a recipe that names no claims file.
EMPTY_PLAN_HASH = plan_hash(())


def _resolve(name: str, recipe_dir: Path) -> Path:
    """Where the claims file ``name`` is (module doc); PlanError for an absolute or escaping path."""
    parts = PurePosixPath(name)
    if parts.is_absolute() or ".." in parts.parts or not parts.parts:
        raise PlanError(f"{name!r}: give a path relative to the recipe's directory or the repository")
    if parts.parts[0] == "experiments":
        return experiments_dir().joinpath(*parts.parts[1:])
    if parts.parts[:2] == ("results", "reference"):
        return reference_dir().joinpath(*parts.parts[2:])
    return recipe_dir.joinpath(*parts.parts)


def read_claims_file(path: Path) -> Any:
    """The content of one claims file: a YAML mapping, or a CSV file's rows as mappings.

    Raises:
        PlanError: Missing, another suffix, unparsable, not a mapping (YAML) or without rows (CSV).
    """
    if path.suffix not in CLAIMS_SUFFIXES:
        raise PlanError(f"{path}: a claims file is {', '.join(CLAIMS_SUFFIXES)}")
    if not path.is_file():
        raise PlanError(f"{path}: no such claims file")
    text = path.read_text()
    if path.suffix == ".csv":
        rows = list(csv.DictReader(io.StringIO(text)))
        if not rows:
            raise PlanError(f"{path}: a claims CSV needs a header and at least one row")
        return rows
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise PlanError(f"{path}: not valid YAML ({str(e).splitlines()[0]})") from e
    if not isinstance(data, dict):
        raise PlanError(f"{path}: a claims YAML file is a mapping")
    return data


def load_plan(recipe: str, claims: Any, recipe_dir: Path) -> Plan:
    """The plan of recipe ``recipe`` from its ``claims:`` value (None: the empty plan).

    Every file is read and parsed (:func:`read_claims_file`) before the plan is returned, so a bad
    file fails before any run starts.

    Raises:
        PlanError: ``claims`` is not a list of distinct paths, or a file is bad; the message names
            the recipe, the key and what is allowed.
    """
    if claims is None:
        return Plan(recipe)
    where = f"{recipe}.yaml: claims"
    if not isinstance(claims, list) or not all(isinstance(c, str) and c for c in claims):
        raise PlanError(f"{where} must be a list of claims files (paths, {'/'.join(CLAIMS_SUFFIXES)})")
    if len(set(claims)) != len(claims):
        raise PlanError(f"{where} names a file twice: {claims}")
    files = []
    for name in claims:
        try:
            path = _resolve(name, recipe_dir)
            read_claims_file(path)
        except PlanError as e:
            raise PlanError(f"{where}: {e}") from None
        files.append(PlanFile(name, hashlib.sha256(path.read_bytes()).hexdigest(), path))
    return Plan(recipe, tuple(sorted(files, key=lambda f: f.name)))


def plan_of_recipe(recipe: str, directory: Path | None = None) -> Plan:
    """The current plan of the recipe named ``recipe`` under ``directory`` (the shipped recipes by
    default); the empty plan when there is no such recipe (a report of a results path)."""
    directory = directory or experiments_dir()
    path = directory / f"{recipe}.yaml"
    if not path.is_file():
        return Plan("")
    data = yaml.safe_load(path.read_text())
    return load_plan(recipe, data.get("claims") if isinstance(data, dict) else None, directory)


@dataclass(frozen=True)
class PlanCheck:
    """A report's plan in force against the plans its runs were made under.

    Attributes:
        current: The recipe's plan now (:meth:`Plan.record`).
        recorded: Each complete run's recorded plan, by run id (None: it records none).
    """

    current: dict[str, Any]
    recorded: dict[str, dict[str, Any] | None]

    @property
    def changed(self) -> bool:
        """Whether any run lacks a record or records another plan: then nothing is decided."""
        return any(r is None or r.get("hash") != self.current["hash"] for r in self.recorded.values())

    def others(self) -> dict[str, dict[str, Any]]:
        """The other plans the runs record, by hash."""
        return {
            str(r["hash"]): r
            for r in self.recorded.values()
            if r is not None and r["hash"] != self.current["hash"]
        }

    def count(self, plan_hash: str | None) -> int:
        """Runs that record ``plan_hash`` (None: no record)."""
        return sum((r or {}).get("hash") == plan_hash for r in self.recorded.values())


def check_plan(current: dict[str, Any] | None, recorded: dict[str, dict[str, Any] | None]) -> PlanCheck:
    """Compare the plan in force (None: not known, the empty plan of no recipe) with the runs' records."""
    return PlanCheck(current if current is not None else Plan("").record(), dict(recorded))
