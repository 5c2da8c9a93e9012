"""The local results store: one directory per run, every file written atomically.

The report reads only this store, so a paper never depends on a tracking server. Layout and
columns are fixed in :mod:`esbench.tracking.schema`. A run directory whose ``summary.json`` exists
is complete; one with only a checkpoint is resumable.

A run directory is written by one process at a time: :meth:`RunStore.lock` holds an exclusive
``flock`` on its ``.lock`` file for the run's lifetime, and a second process asking for it stops
at once with :class:`RunLockedError`. Names are checked (:mod:`esbench.utils.paths`) and
:meth:`RunStore.clear` deletes nothing outside the store's root.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import fcntl
import io
import json
import math
import os
import platform
import re
import socket
import subprocess
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextvars import ContextVar
from importlib import metadata
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from esbench.config.errors import ConfigError
from esbench.config.validate import register_check
from esbench.tracking import schema
from esbench.utils import statefile
from esbench.utils.io import atomic_write_json, atomic_write_text
from esbench.utils.machine import cpu_model
from esbench.utils.paths import check_path_component

_PACKAGES = (
    "esbench", "numpy", "torch", "gymnasium", "mujoco", "ale-py", "stable-baselines3", "sb3-contrib",
    "hydra-core", "omegaconf", "dask", "distributed", "wandb", "pandas", "scipy", "matplotlib",
)  # fmt: skip


LOCK_FILE = ".lock"
"""In the run directory: its ``flock`` marks the one process writing the run (holder's pid inside)."""


class RunLockedError(RuntimeError):
    """Another process holds the run directory's lock; the message is one line for the user."""


class RunFileError(ConfigError):
    """A checkpoint or summary that cannot be read; the message is one line naming the file and the fix.

    A :class:`~esbench.config.errors.ConfigError` because the fix is one: ``resume=false``. The
    command line prints it as one line and exits with status 2, as for any config that cannot run.
    """


class RunStore:
    """The files of one run: ``<root>/<experiment>/<run_id>/``."""

    def __init__(self, root: str | os.PathLike[str], experiment: str, run_id: str) -> None:
        """Raises ``ValueError`` if ``experiment`` or ``run_id`` is not a plain directory name
        (``..``, ``/``, a leading ``.``...): validation rejects those first, this is the backstop
        for callers that build a store without a validated config."""
        check_path_component("experiment", experiment)
        check_path_component("run_id", run_id)
        self.root = Path(root)
        self.dir = self.root / experiment / run_id
        self.run_id = run_id
        self.experiment = experiment

    def path(self, name: str) -> Path:
        """A file of this run."""
        return self.dir / name

    @property
    def is_complete(self) -> bool:
        """Whether the run finished (its summary exists)."""
        return self.path(schema.SUMMARY_FILE).exists()

    @property
    def has_checkpoint(self) -> bool:
        """Whether a checkpoint exists to resume from (a legacy pickle counts: loading refuses it)."""
        return self.path(schema.CHECKPOINT_FILE).exists() or self.path(schema.LEGACY_CHECKPOINT_FILE).exists()

    def write_config(self, cfg: DictConfig) -> None:
        """The resolved config, as YAML; refuses a config that reads the environment
        (:func:`refuse_env_interpolations`), whose resolved value could be a secret."""
        refuse_env_interpolations(cfg)
        atomic_write_text(self.path(schema.CONFIG_FILE), OmegaConf.to_yaml(cfg, resolve=True))

    def write_env_record(self, workers: int) -> None:
        """Package versions, git commit, cores and host: what produced these numbers."""
        atomic_write_json(self.path(schema.ENV_FILE), environment_record(workers))

    def write_metrics(self, rows: list[dict[str, Any]]) -> None:
        """Replace ``metrics.csv`` with ``rows`` (atomically): a new run, or a resumed one whose
        file must match its checkpoint's rows exactly (anything after them is dropped, so nothing
        is counted twice)."""
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(schema.METRIC_COLUMNS)
        writer.writerows(_csv_row(row) for row in rows)
        atomic_write_text(self.path(schema.METRICS_FILE), buf.getvalue())

    def append_metrics(self, rows: list[dict[str, Any]]) -> None:
        """Append ``rows`` to ``metrics.csv`` durably (flushed and fsynced): O(rows), not O(run).

        The file must exist (:meth:`write_metrics` starts it). A crash mid-append can leave a
        partial last line; the resumed run rewrites the file from its checkpoint's rows.
        """
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows(_csv_row(row) for row in rows)
        with open(self.path(schema.METRICS_FILE), "a", encoding="utf-8") as f:
            f.write(buf.getvalue())
            f.flush()
            os.fsync(f.fileno())

    def truncate_metrics(self, n_rows: int) -> list[dict[str, Any]]:
        """Cut ``metrics.csv`` back to its first ``n_rows`` rows and return them, parsed.

        A resumed run's checkpoint holds state and a row count, not the rows (issue #16 item 8):
        rows logged after the checkpoint (and a partial line a crash left mid-append) are dropped,
        so nothing is counted twice, and the rows kept are the file's own bytes, unchanged. Cells
        parse back to what :func:`_fmt` wrote them from: ints, floats (empty: NaN) and the two
        task names, so rewriting them gives the same text.

        Raises:
            RunFileError: the file is missing, has other columns, or holds fewer complete rows than
                the checkpoint says were written.
        """
        path = self.path(schema.METRICS_FILE)

        def unusable(reason: str) -> RunFileError:
            return RunFileError(
                f"metrics {path} cannot be resumed from ({reason}); run again with resume=false to start over"
            )

        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise unusable(type(e).__name__) from None
        lines = text.split("\n")[:-1]  # complete lines only: a torn last line has no newline
        header = next(csv.reader(lines[:1])) if lines else []
        columns = list(schema.METRIC_COLUMNS)
        if not header or header != columns[: len(header)]:
            raise unusable("its header is not esbench's metrics columns")
        if len(lines) - 1 < n_rows:
            raise unusable(f"{len(lines) - 1} complete rows, the checkpoint was written after {n_rows}")
        kept = lines[: n_rows + 1]
        if len(header) < len(columns):  # written before the last columns existed: they are empty
            pad = "," * (len(columns) - len(header))
            kept = [",".join(columns)] + [line + pad for line in kept[1:]]
        if len(lines) != n_rows + 1 or not text.endswith("\n") or len(header) < len(columns):
            atomic_write_text(path, "\n".join(kept) + "\n")
        return [
            {c: _parse_cell(c, v) for c, v in zip(schema.METRIC_COLUMNS, cells, strict=True)}
            for cells in csv.reader(kept[1:])
        ]

    def write_summary(self, summary: dict[str, Any]) -> None:
        """The summary; marks the run complete."""
        missing = [k for k in schema.SUMMARY_KEYS if k not in summary]
        if missing:
            raise ValueError(f"summary lacks keys {missing}")
        atomic_write_json(self.path(schema.SUMMARY_FILE), summary)

    def read_summary(self) -> dict[str, Any]:
        """The summary of a complete run.

        Raises:
            RunFileError: it is truncated, not JSON, or not an object.
        """
        path = self.path(schema.SUMMARY_FILE)
        try:
            summary = json.loads(path.read_text())
            if not isinstance(summary, dict):
                raise ValueError("not a JSON object")
        except (OSError, ValueError) as e:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
            reason = (str(e).splitlines() or [type(e).__name__])[0][:200]
            raise RunFileError(
                f"summary {path} is unreadable ({reason}); run again with resume=false to run it anew"
            ) from None
        return summary

    def plan_record(self) -> dict[str, Any] | None:
        """The plan the run records it was launched under (``plan.json``), or None without one."""
        path = self.path(schema.PLAN_FILE)
        return json.loads(path.read_text()) if path.is_file() else None

    def record_plan(self, record: dict[str, Any]) -> dict[str, Any]:
        """Record ``record`` (a plan's hash and files) as the plan this run was launched under, unless
        it records one already: a run is made under one plan, so its first record is kept whatever
        plan is in force later (the report compares the two). Written atomically, beside the summary;
        it is no part of the run's config, identity or numbers. Returns the record the run keeps."""
        kept = self.plan_record()
        if kept is None:
            atomic_write_json(self.path(schema.PLAN_FILE), record)
            return record
        return kept

    def save_checkpoint(self, obj: Any, types: Iterable[type]) -> None:
        """Replace the checkpoint atomically with ``obj``, a data-only state file.

        Args:
            obj: Dataclasses (listed in ``types``) of arrays, scalars, strings and containers of
                these; see :mod:`esbench.utils.statefile`.
            types: The dataclass types ``obj`` may contain.
        """
        statefile.save(self.path(schema.CHECKPOINT_FILE), obj, types)

    def load_checkpoint(self, types: Iterable[type]) -> Any:
        """The latest checkpoint, rebuilding only the dataclasses in ``types``; no code in it runs.

        Raises:
            RunFileError: the checkpoint is missing, truncated, corrupt, names another type, or
                is a pickle (the legacy ``checkpoint.pkl``, or pickle bytes under the new name).
        """
        path = self.path(schema.CHECKPOINT_FILE)
        legacy = self.path(schema.LEGACY_CHECKPOINT_FILE)
        if not path.exists() and legacy.exists():
            raise self.checkpoint_error(
                "a pickle from an older esbench: esbench never unpickles a results directory, since that "
                "can run any code",
                legacy,
            )
        try:
            return statefile.load(path, types)
        except statefile.StateFileError as e:
            raise self.checkpoint_error(str(e)) from None

    def checkpoint_error(self, reason: str, path: Path | None = None) -> RunFileError:
        """The one-line error for a checkpoint that cannot be resumed from, saying what to do."""
        path = path or self.path(schema.CHECKPOINT_FILE)
        return RunFileError(
            f"checkpoint {path} is unreadable ({reason}); run again with resume=false to start over"
        )

    def clear(self) -> None:
        """Remove the run's files (a fresh start with ``resume=false``), keeping its lock file.

        Refuses (``ValueError``) when the run directory, symlinks resolved, is not strictly inside
        the resolved store root: a symlinked experiment or run directory pointing elsewhere is
        never emptied. Symlinks inside the run are removed as links, never followed.
        """
        if not self.dir.exists():
            return
        root, target = self.root.resolve(), self.dir.resolve()
        if target == root or not target.is_relative_to(root):
            raise ValueError(
                f"refusing to clear {self.dir}: it resolves to {target}, outside the results store {root}"
            )
        lock = target / LOCK_FILE
        for p in sorted(target.rglob("*"), reverse=True):
            if p == lock:
                continue
            p.unlink() if p.is_file() or p.is_symlink() else p.rmdir()

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the run directory exclusively for the ``with`` block (the run's lifetime).

        An exclusive, non-blocking ``fcntl.flock`` on ``<run dir>/.lock``: a second process (or a
        second ``lock()`` in this one) raises :class:`RunLockedError` at once instead of waiting.
        Stopping beats waiting: a run can take hours, and once the first finishes the second would
        only find the run complete and skip it (or, with ``resume=false``, delete it). The kernel
        drops the lock when the holder exits, however it dies, so a killed run never leaves a stale
        lock; the pid written into the file only makes the message say who holds it. Works on local
        file systems and on NFS (Linux maps ``flock`` to NFS locks).
        """
        self.dir.mkdir(parents=True, exist_ok=True)
        path = self.path(LOCK_FILE)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise
                holder = os.pread(fd, 200, 0).decode(errors="replace").strip()
                who = f" ({holder})" if holder else ""
                raise RunLockedError(
                    f"run directory {self.dir} is in use: another process{who} holds its lock "
                    f"{path}; wait for it to finish, or give this run another run_id"
                ) from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode(), 0)
            yield
        finally:
            os.close(fd)  # releases the flock


_ENV_INTERPOLATION = re.compile(r"\$\{\s*oc\.env\s*:")


@register_check
def refuse_env_interpolations(cfg: DictConfig) -> None:
    """Raise :class:`ConfigError` if a value of ``cfg`` reads the environment (``${oc.env:VAR}``).

    A run's config is stored resolved, with its results (``config.yaml``) and in its W&B run
    (config and debug log), and results are made to be shared: such a value would copy the
    variable, an API key or a token say, into them. Writing it unresolved instead would break the
    promise that a run is a pure function of its stored config. W&B reads its own credentials
    (``WANDB_API_KEY``) from the environment, so no config value needs to. Registered as a
    validation check, so ``esbench run`` and every job of a sweep stop before any work starts.
    """

    def strings(node: Any, key: str) -> Iterator[tuple[str, str]]:
        if isinstance(node, dict):
            for k, v in node.items():
                yield from strings(v, f"{key}.{k}" if key else str(k))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                yield from strings(v, f"{key}[{i}]")
        elif isinstance(node, str):
            yield key, node

    for key, value in strings(OmegaConf.to_container(cfg, resolve=False), ""):
        if _ENV_INTERPOLATION.search(value):
            raise ConfigError(
                f"{key}={value!r} reads an environment variable; allowed: a literal value (a run's "
                "config is stored in its results and its W&B run, where a secret must not go)"
            )


def _csv_row(row: dict[str, Any]) -> list[str]:
    """One metrics row as CSV cells, in :data:`schema.METRIC_COLUMNS` order."""
    return [_fmt(row.get(c)) for c in schema.METRIC_COLUMNS]


_TEXT_COLUMNS = frozenset({"train_task", "eval_task"})


def _parse_cell(column: str, cell: str) -> Any:
    """A ``metrics.csv`` cell as :func:`_fmt` wrote it: text for the task columns, else an int, a
    float, or NaN for an empty cell."""
    if column in _TEXT_COLUMNS:
        return cell
    if cell == "":
        return math.nan
    try:
        return int(cell)
    except ValueError:
        return float(cell)


def _fmt(v: Any) -> str:
    """CSV cell: empty for None/NaN, shortest round-trip repr for floats."""
    if v is None:
        return ""
    if isinstance(v, float):
        return "" if math.isnan(v) else repr(v)
    if hasattr(v, "item"):
        return _fmt(v.item())
    return str(v)


#: The code revision a sweep started from, pinned by the sweep launcher for each of its jobs
#: (:func:`pinned_code_revision`); ``None`` outside a sweep: a run reads git when it starts.
_PINNED_REVISION: ContextVar[dict[str, Any] | None] = ContextVar("esbench_code_revision", default=None)


def code_revision(repo: Path | None = None, outputs: Sequence[str] = ()) -> dict[str, Any]:
    """``{"git_commit": sha, "git_dirty": bool}`` of the esbench checkout, now.

    esbench installed from a wheel (or with ``pip install .``) is not a git checkout: it records
    ``{"git_commit": "esbench <version> (no git checkout)", "git_dirty": None}``, naming the code
    that ran. The checkout must be esbench's own (its top level holds this package): a
    site-packages that happens to sit inside some other repository (a ``.venv`` in a project) is
    not read as that repository's commit.

    Args:
        repo: The directory holding the ``esbench`` package (default: this installation's).
        outputs: Paths in the checkout whose changes are outputs, not code: a change there does not
            make the tree dirty (reports re-rendered one after another change ``paper/``, not the
            code that renders the next one).
    """
    root = (repo or Path(__file__).resolve().parents[2]).resolve()
    top = _git(root, "rev-parse", "--show-toplevel")
    if top is None or Path(top).resolve() != root:
        return {"git_commit": f"esbench {installed_version()} (no git checkout)", "git_dirty": None}
    excluded = [f":(exclude){path}" for path in outputs]
    commit, dirty = _git(root, "rev-parse", "HEAD"), _git(root, "status", "--porcelain", "--", ".", *excluded)
    return {"git_commit": commit, "git_dirty": bool(dirty) if commit else None}


def installed_version() -> str:
    """esbench's version: the installed distribution's, else the package's ``__version__``."""
    try:
        return metadata.version("esbench")
    except metadata.PackageNotFoundError:
        from esbench import __version__

        return __version__


@contextlib.contextmanager
def pinned_code_revision(revision: dict[str, Any]) -> Iterator[None]:
    """Record ``revision`` (from :func:`code_revision`) as the code of every run started inside.

    A sweep takes the revision once, when it starts, so all its runs name the same commit: a commit
    made while a long sweep runs must not split one report's runs across commits, nor flag runs that
    started before an edit as "with uncommitted changes".
    """
    token = _PINNED_REVISION.set(dict(revision))
    try:
        yield
    finally:
        _PINNED_REVISION.reset(token)


def installed_versions(names: Iterable[str]) -> dict[str, str | None]:
    """The installed version of each distribution in ``names`` (None where it is not installed)."""
    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def environment_record(workers: int) -> dict[str, Any]:
    """Versions, commit, hardware: stored with every run and quoted by reports."""
    versions = installed_versions(_PACKAGES)
    revision = _PINNED_REVISION.get() or code_revision()
    return {
        "packages": versions,
        "git_commit": revision["git_commit"],
        "git_dirty": revision["git_dirty"],
        "cpu_count": os.cpu_count(),
        "workers": workers,
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_model": cpu_model(),
        "python": sys.version.split()[0],
    }


def _git(repo: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None
