"""The data a report is computed from: ``paper/<name>/data/``, written beside REPORT.md.

A report is a pure function of this directory (:func:`esbench.analysis.report.render_report`),
so anyone holding a report can re-derive every number in it and ``esbench report --check`` can
prove the committed tables still follow from it. Layout::

    data/
      manifest.json     format, report name and target, scales (the runs' budget presets and the
                        recipe's), bootstrap seed, the esbench commit the report was last rendered
                        with (and whether its tree was clean), the commits the runs came from, the
                        versions that drew the figures, sha256 of every other file
      runs.parquet      the run table (one row per run used: config columns + summary keys)
      curves.parquet    every evaluation point of every complete run (the curve table)
      superseded.parquet, unreadable.parquet   runs set aside, and why
      configs.json      each run's resolved config.yaml, by run id
      env.json          each complete run's env.json (versions, host, cores, git commit), by run id
      calibration.json  the scaling projection's measured costs (scaling reports, when measured)
      runs/<run_id>/    each run's config.yaml, metrics.csv, summary.json, env.json and plan.json (the
                        plan it was launched under, when it records one): a complete run
                        directory, to copy into a results store and extend the study; retention
                        reports add the files their analysis reads (the stage-boundary drift, ...).
                        Reports made before runs/ shipped have none (``run_files`` empty).

Tables are Parquet (pyarrow): typed, compact, and read back to the same frames. Text columns lose
the difference between NaN and None on the way (both are "no value"), which is why the report is
always rendered from the data read back, never from the frames in memory: the store and data/
paths then go through the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from esbench.analysis.load import Results, load_results
from esbench.utils.io import atomic_write_text

DATA_DIR = "data"
MANIFEST_FILE = "manifest.json"
#: Version of the data/ layout; a reader refuses another one.
FORMAT = 1
_FRAMES = ("runs", "curves", "superseded", "unreadable")
_JSON = ("configs", "env")
CALIBRATION_DATA_FILE = "calibration.json"


class ReportDataError(ValueError):
    """A data/ directory that cannot be read (missing, another format, a file missing)."""


@dataclass(frozen=True)
class Manifest:
    """What a report was made from, besides the runs.

    Attributes:
        name: The report's directory name (``table1``, ``scaling_curves``).
        target: The target given to ``esbench report`` (a name of
            :data:`esbench.analysis.report.TARGETS`, or a results path).
        kind: How it is built: a named target, or ``path`` (curves and a summary).
        runs_dir: Where the runs were read from, as given (printed in REPORT.md).
        seed: Seed of the Generator every bootstrap draws from.
        allow_partial: Missing runs / unequal seed counts were allowed (and marked).
        scales: The runs' ``budget.scale`` values.
        recipe_scale: The ``esbench reproduce`` scale that made the report (None: made by
            ``esbench report``, or before it was recorded). A recipe scale may run another scale's
            budget preset (``budget.scale``) at more seeds, so the two can differ.
        report_commit: The esbench git commit the report was last rendered with (None: not a git
            checkout): the one whose code reproduces its tables from this data.
        report_dirty: Whether that checkout had uncommitted changes (None: unknown).
        run_commits: The distinct git commits the runs were made with.
        figure_versions: matplotlib and FreeType versions that drew the figures: PNG/PDF bytes
            are compared by ``--check`` only where they are the same.
        calibration: Whether ``calibration.json`` is part of the data.
        run_files: The files of each run copied to ``runs/<run_id>/`` (empty in reports made
            before runs shipped). The run table's ``path`` then names the copy.
        sha256: sha256 of each data file but this one, by path relative to ``data/``.
        format: :data:`FORMAT`.
        plan: The plan of the report's recipe when the report was made or last rendered
            (:meth:`esbench.analysis.claims.plan.Plan.record`: recipe, hash, each claims file's
            sha256), compared with what each run records (``runs/<run_id>/plan.json``); None in
            reports made before plans were recorded.
    """

    name: str
    target: str
    kind: str
    runs_dir: str
    seed: int
    allow_partial: bool
    scales: list[str]
    report_commit: str | None
    report_dirty: bool | None
    run_commits: list[str]
    figure_versions: dict[str, str]
    calibration: bool = False
    run_files: list[str] = field(default_factory=list)
    sha256: dict[str, str] = field(default_factory=dict)
    format: int = FORMAT
    recipe_scale: str | None = None
    plan: dict[str, Any] | None = None


def figure_versions() -> dict[str, str]:
    """The versions that decide a figure's bytes: matplotlib and the FreeType it renders text with."""
    import matplotlib
    from matplotlib import ft2font

    return {"matplotlib": matplotlib.__version__, "freetype": str(ft2font.__freetype_version__)}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _json_text(data: Any) -> str:
    return json.dumps(data, indent=1, sort_keys=True, allow_nan=True) + "\n"


#: The largest run file a report's ``data/`` ships: a language model's or an Atari CNN's parameter
#: snapshots (12.7 MB per run for the default 1M-parameter model) stay in the run directory, so
#: a committed report stays a few megabytes; the analysis then notes the run's drift as not shipped.
MAX_SHIPPED_RUN_FILE_BYTES = 1_000_000


def _copy_runs(
    results: Results, out: Path, run_files: Sequence[str], replaced_by: Mapping[str, str]
) -> Results:
    """Copy ``run_files`` of each run to ``out/runs/<run_id>/`` (each up to
    :data:`MAX_SHIPPED_RUN_FILE_BYTES`, and none whose replacement in ``replaced_by`` the run
    has); the results with ``path`` (in the run table and the unreadable table) naming the copy,
    relative to ``out``, and the run table's ``store_path`` the run directory it was copied from
    (where the run's own files, its checkpoint included, are: a report's W&B lineage names the
    artifacts built from them)."""
    moved: dict[str, str] = {}
    for run_id, path in zip(results.runs["run_id"], results.runs["path"], strict=True):
        rel = f"runs/{run_id}"
        if rel in moved.values():
            raise ReportDataError(f"two runs with run id {run_id!r}: cannot ship both")
        (out / rel).mkdir(parents=True)
        for name in run_files:
            source = Path(path) / name
            if name in replaced_by and (Path(path) / replaced_by[name]).is_file():
                continue
            if source.is_file() and source.stat().st_size <= MAX_SHIPPED_RUN_FILE_BYTES:
                shutil.copyfile(source, out / rel / name)
        moved[str(path)] = rel
    runs = results.runs.assign(
        path=[moved[str(p)] for p in results.runs["path"]], store_path=results.runs["path"]
    )
    unreadable = results.unreadable.assign(path=[moved.get(str(p), p) for p in results.unreadable["path"]])
    return replace(results, runs=runs, unreadable=unreadable)


def write_report_data(
    results: Results,
    data_dir: str | Path,
    manifest: Manifest,
    calibration: Path | None = None,
    run_files: Sequence[str] = (),
    replaced_by: Mapping[str, str] | None = None,
) -> Manifest:
    """Write ``results`` (and ``manifest``, with the files' sha256 filled in) to ``data_dir``.

    Whatever ``data_dir`` held before is removed: a report's data is the data of one build.

    Args:
        results: What :func:`esbench.analysis.load.load_results` read.
        data_dir: The report's ``data/``.
        manifest: The report's facts (``sha256``, ``calibration`` and ``run_files`` are filled in).
        calibration: A ``esbench bench projection`` JSON to ship (scaling reports), or None.
        run_files: Files of each run to ship as they are, or none.
        replaced_by: A run file not shipped when the run has the file it maps to (the snapshots,
            when the run wrote the drift table that is all the analysis reads of them).

    Returns:
        The manifest as written.
    """
    out = Path(data_dir)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    if run_files:
        results = _copy_runs(results, out, run_files, replaced_by or {})
    frames = {
        "runs": results.runs,
        "curves": results.curves,
        "superseded": results.superseded,
        "unreadable": results.unreadable,
    }
    for name, frame in frames.items():
        frame = frame.reset_index(drop=True)
        if "stages" in frame.columns:  # tuples of stage names (sequence runs): JSON text in Parquet
            frame = frame.assign(stages=[json.dumps(list(s)) for s in frame["stages"]])
        frame.to_parquet(out / f"{name}.parquet", index=False, compression="zstd")
    atomic_write_text(out / "configs.json", _json_text(results.configs))
    atomic_write_text(out / "env.json", _json_text(results.env_info))
    if calibration is not None:
        shutil.copyfile(calibration, out / CALIBRATION_DATA_FILE)
    sums = {
        p.relative_to(out).as_posix(): _sha256(p)
        for p in sorted(out.rglob("*"))
        if p.is_file() and p.name != MANIFEST_FILE
    }
    written = replace(manifest, sha256=sums, calibration=calibration is not None, run_files=list(run_files))
    atomic_write_text(out / MANIFEST_FILE, _json_text(asdict(written)))
    return written


def read_manifest(data_dir: str | Path) -> Manifest:
    """The manifest of a report's ``data/``.

    Raises:
        ReportDataError: no manifest, or another :data:`FORMAT`.
    """
    path = Path(data_dir) / MANIFEST_FILE
    if not path.is_file():
        raise ReportDataError(f"{path} not found: {Path(data_dir)} is not a report's data directory")
    raw = json.loads(path.read_text())
    if raw.get("format") != FORMAT:
        raise ReportDataError(f"{path}: data format {raw.get('format')!r}, this esbench reads {FORMAT}")
    return Manifest(**raw)


def restamp_manifest(
    data_dir: str | Path,
    report_commit: str | None,
    report_dirty: bool | None,
    versions: dict[str, str],
    plan: dict[str, Any] | None = None,
) -> Manifest:
    """Record in ``data_dir``'s manifest the code rendering the report now and what draws its figures.

    A report rendered again from its shipped data (``esbench report <name> results_dir=.../data``)
    is made by today's code, not by the code that first wrote the data: its tables can differ (a new
    column, a new estimator), so the commit it names must be the one that reproduces them, and
    ``--check`` must compare figures against the versions that drew them now. So must the plan
    (``plan``, the recipe's claims now): the report compares it with the plan its runs were made
    under. The data files and their sha256 are unchanged.
    """
    manifest = replace(
        read_manifest(data_dir),
        report_commit=report_commit,
        report_dirty=report_dirty,
        figure_versions=dict(versions),
        plan=plan,
    )
    atomic_write_text(Path(data_dir) / MANIFEST_FILE, _json_text(asdict(manifest)))
    return manifest


def read_report_data(data_dir: str | Path) -> tuple[Results, Manifest]:
    """The :class:`Results` and :class:`Manifest` stored in a report's ``data/``.

    Raises:
        ReportDataError: not a data directory, another format, or a file missing.
    """
    root = Path(data_dir)
    manifest = read_manifest(root)
    missing = [
        f
        for f in (*(f"{n}.parquet" for n in _FRAMES), *(f"{n}.json" for n in _JSON))
        if not (root / f).is_file()
    ]
    if missing:
        raise ReportDataError(f"{root}: missing {', '.join(missing)}")
    frames = {name: pd.read_parquet(root / f"{name}.parquet") for name in _FRAMES}
    for name, frame in frames.items():
        if "stages" in frame.columns:
            frame["stages"] = [tuple(json.loads(s)) for s in frame["stages"]]
        if manifest.run_files and name in ("runs", "unreadable"):  # shipped runs: read the copies
            frame["path"] = [str(root / p) if str(p).startswith("runs/") else p for p in frame["path"]]
    configs = json.loads((root / "configs.json").read_text())
    env_info = json.loads((root / "env.json").read_text())
    results = Results(
        root=Path(manifest.runs_dir),
        runs=frames["runs"],
        curves=frames["curves"],
        env_info=env_info,
        configs=configs,
        superseded=frames["superseded"],
        unreadable=frames["unreadable"],
    )
    return results, manifest


def changed_files(data_dir: str | Path, manifest: Manifest) -> list[str]:
    """Data files whose sha256 differs from the manifest's (or that are missing), sorted by name."""
    root = Path(data_dir)
    return [
        name
        for name, digest in sorted(manifest.sha256.items())
        if not (root / name).is_file() or _sha256(root / name) != digest
    ]


def is_report_data(path: str | Path) -> bool:
    """Whether ``path`` is a report's ``data/`` directory (it holds a manifest)."""
    return (Path(path) / MANIFEST_FILE).is_file()


def open_results(source: str | Path) -> Results:
    """The one loader of a report's runs: a results store, or a report's ``data/`` directory.

    Args:
        source: A results directory (:func:`esbench.analysis.load.load_results`) or a
            ``data/`` directory (:func:`read_report_data`).
    """
    if is_report_data(source):
        return read_report_data(source)[0]
    return load_results(source)
