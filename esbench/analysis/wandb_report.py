"""Put a written report in W&B: a ``report`` run that uses the runs' artifacts, and a W&B Report.

``esbench report TARGET tracker=wandb_online`` (or ``tracker=wandb_offline``) does three things
after ``REPORT.md`` is written:

1. It starts a W&B run of job type ``report`` and logs the report's tables (``tables/<name>`` as
   ``wandb.Table``) and figures (``figures/<name>`` as ``wandb.Image``); a ``wandb_summary.json``
   there (flat name -> number) becomes the run's summary.
2. It declares the lineage: the report run uses the artifact ``run-<run_id>`` (type
   ``run-results``) of every complete run the report was computed from. An artifact is rebuilt from
   the run directory when it is still there: the same files give the same digest, so W&B resolves it
   to the version the run logged itself (and uploads it if the run was never synced). A run whose
   directory is gone is used by name, ``run-<run_id>:latest`` (online only).
3. It builds the W&B Report (``wandb-workspaces``): one heading per ``REPORT.md`` section, the
   section's prose, and a panel grid of the section's tables and figures from the report run. The
   specification needs no network (:func:`report_spec`); saving it does, so offline it is skipped
   with one line.

Offline, the report run goes to ``<out_dir>/wandb/`` (beside, not inside, the report directory, so
``esbench report --check`` sees only the report) for a later ``wandb sync``. Every W&B network call
has a bound (:func:`esbench.tracking.wandb_writer.timeout_settings`, and ``report_timeout_s`` for
saving the Report). A W&B failure is one warning and never fails the report.
"""

from __future__ import annotations

import json
import os
import re
import threading
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from esbench.analysis.report import REPORT_FILE, WANDB_SUMMARY_FILE
from esbench.analysis.report_data import DATA_DIR, read_report_data
from esbench.tracking.wandb_artifacts import RUN_ARTIFACT_TYPE, build_run_artifact, run_artifact_name
from esbench.tracking.wandb_writer import timeout_settings

#: ``tracker=`` values of ``esbench report`` and the W&B mode each means (``none``: no W&B).
TRACKERS = {"none": "disabled", "wandb_offline": "offline", "wandb_online": "online"}

_TABLE = re.compile(r"\]\(tables/([^)/]+)\.csv\)")
_FIGURE = re.compile(r"!\[[^\]]*\]\(figures/([^)/]+)\.png\)")


@dataclass(frozen=True)
class WandbReportSettings:
    """Where and how long: the W&B project and entity, and the bounds on every network call."""

    project: str = "esbench"
    entity: str | None = None
    init_timeout_s: float = 15.0
    finish_timeout_s: float = 120.0
    http_timeout_s: float = 30.0
    report_timeout_s: float = 60.0  # saving the W&B Report (online)


@dataclass(frozen=True)
class ReportSection:
    """One ``## `` section of ``REPORT.md``: its title, its prose, and the tables and figures it shows
    (by file stem, in order of appearance)."""

    title: str
    text: str
    tables: tuple[str, ...] = ()
    figures: tuple[str, ...] = ()


@dataclass
class ReportLog:
    """What :func:`log_report_to_wandb` did: the report run, the artifacts it used, the Report."""

    mode: str
    run_id: str
    run_dir: Path
    used_artifacts: list[str] = field(default_factory=list)
    report: Any = None  # the wandb_workspaces Report specification
    report_url: str | None = None


def _without_backed_tables(lines: list[str]) -> list[str]:
    """``lines`` without each Markdown table followed by a link to its ``tables/*.csv`` (a table
    panel shows it); a table without a CSV (the claims) stays in the text."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        if not lines[i].lstrip().startswith("|"):
            out.append(lines[i])
            i += 1
            continue
        end = i
        while end < len(lines) and lines[end].lstrip().startswith("|"):
            end += 1
        after = next((line for line in lines[end:] if line.strip()), "")
        if "](tables/" not in after:
            out.extend(lines[i:end])
        i = end
    return out


def report_sections(report_md: Path) -> tuple[str, list[ReportSection]]:
    """(title, sections) of a ``REPORT.md``. A section's text drops what its panels show: figure
    images and their captions, table link lines, and the Markdown tables a CSV backs."""
    title, sections = report_md.parent.name, []
    current: str | None = None
    lines: list[str] = []

    def close() -> None:
        if current is None:
            return
        body = "\n".join(lines)
        text = [
            line
            for line in _without_backed_tables(lines)
            if "](figures/" not in line and "](tables/" not in line
        ]
        sections.append(
            ReportSection(
                title=current,
                text=re.sub(r"\n{3,}", "\n\n", "\n".join(text)).strip(),
                tables=tuple(dict.fromkeys(_TABLE.findall(body))),
                figures=tuple(dict.fromkeys(_FIGURE.findall(body))),
            )
        )

    for line in report_md.read_text().splitlines():
        if line.startswith("# ") and current is None:
            title = line[2:].strip()
        elif line.startswith("## "):
            close()
            current, lines = line[3:].strip(), []
        elif current is not None:
            lines.append(line)
    close()
    return title, sections


def report_spec(report_dir: Path, *, project: str, entity: str, run_id: str) -> Any:
    """The W&B Report of ``report_dir`` (a ``wandb_workspaces`` Report, not saved): per
    ``REPORT.md`` section an ``H2`` heading, its prose (``MarkdownBlock``), and a ``PanelGrid`` over
    the report run ``run_id`` with one ``WeavePanelSummaryTable`` per table and one ``MediaBrowser``
    per figure, in the section's order. Building it touches no network."""
    import wandb_workspaces.reports.v2 as wr

    title, sections = report_sections(report_dir / REPORT_FILE)
    runset = wr.Runset(project=project, entity=entity, name="report run", filters=f"ID = '{run_id}'")
    blocks: list[Any] = []
    for section in sections:
        blocks.append(wr.H2(text=section.title))
        if section.text:
            blocks.append(wr.MarkdownBlock(text=section.text))
        panels: list[Any] = [wr.WeavePanelSummaryTable(table_name=f"tables/{t}") for t in section.tables]
        panels += [wr.MediaBrowser(title=f, media_keys=[f"figures/{f}"]) for f in section.figures]
        if panels:
            blocks.append(wr.PanelGrid(runsets=[runset], panels=panels))
    return wr.Report(project=project, entity=entity, title=title[:128], blocks=blocks)


def _report_runs(report_dir: Path) -> list[tuple[str, Path]]:
    """(run id, run directory) of every complete run the report was computed from: the directory in
    the results store it was read from, not the copy of its files in the report's data/runs/
    (which lacks the checkpoint its artifact holds)."""
    data = report_dir / DATA_DIR
    if not data.is_dir():
        return []
    results, _ = read_report_data(data)
    runs = results.runs[results.runs["complete"].astype(bool)]
    paths = runs["store_path"] if "store_path" in runs.columns else runs["path"]
    return [(str(r), Path(str(p))) for r, p in zip(runs["run_id"], paths, strict=True)]


def _use_run_artifacts(run: Any, report_dir: Path, online: bool) -> list[str]:
    """Declare that ``run`` uses each report run's artifact; the names used."""
    used = []
    for run_id, run_dir in _report_runs(report_dir):
        name = run_artifact_name(run_id)
        try:
            artifact = build_run_artifact(run_dir, run_id)
        except FileNotFoundError:  # the run directory is gone: by name, online only
            if online:
                run.use_artifact(f"{name}:latest", type=RUN_ARTIFACT_TYPE)
                used.append(name)
            continue
        # What run.use_artifact(draft) writes online, without its blocking wait and also offline,
        # where wandb refuses use_artifact: the artifact record marked use_after_commit, which the
        # sender (now, or `wandb sync` later) commits and records as an input of this run.
        log_artifact = getattr(run, "_log_artifact", None)
        if log_artifact is not None:
            log_artifact(artifact, is_user_created=True, use_after_commit=True)
        elif online:  # a wandb without the private call: the public one, online only
            run.use_artifact(artifact)
        else:
            continue
        used.append(name)
    return used


def _bounded(fn: Callable[[], Any], timeout_s: float) -> Any:
    """``fn()`` in a daemon thread, waited for at most ``timeout_s`` seconds.

    Raises:
        TimeoutError: ``fn`` did not return in time (it is left to finish in the background).
    """
    out: dict[str, Any] = {}

    def target() -> None:
        try:
            out["value"] = fn()
        except BaseException as e:
            out["error"] = e

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        raise TimeoutError(f"no answer within {timeout_s:g} s")
    if "error" in out:
        raise out["error"]
    return out.get("value")


def log_report_to_wandb(
    report_dir: str | Path,
    mode: str,
    settings: WandbReportSettings | None = None,
    config: Mapping[str, Any] | None = None,
) -> ReportLog | None:
    """Log ``report_dir`` as a ``report`` run, declare its lineage and build its W&B Report.

    Args:
        report_dir: A directory written by :func:`esbench.analysis.report.build_report`.
        mode: ``online`` (logs and saves the Report), ``offline`` (writes the run under
            ``<report_dir>/../wandb`` and skips saving the Report with one line), anything else:
            nothing happens and ``wandb`` is not imported.
        settings: Project, entity and timeouts (defaults: :class:`WandbReportSettings`).
        config: Stored as the report run's config (target, bootstrap seed).

    Returns:
        What was logged, or None if skipped or W&B failed (one RuntimeWarning).
    """
    if mode not in ("online", "offline"):
        return None
    report_dir = Path(report_dir)
    s = settings or WandbReportSettings()
    try:
        os.environ.setdefault("WANDB_SILENT", "true")
        import pandas as pd
        import wandb

        run = wandb.init(
            project=s.project,
            entity=s.entity,
            dir=str(report_dir.parent),
            job_type="report",
            group="report",
            name=f"report-{report_dir.name}",
            config=dict(config or {}),
            mode=mode,  # type: ignore[arg-type]
            reinit="create_new",
            settings=wandb.Settings(
                console="off",
                x_disable_stats=True,
                silent=True,
                **timeout_settings(s.init_timeout_s, s.finish_timeout_s, s.http_timeout_s),
            ),
        )
        result = ReportLog(mode=mode, run_id=str(run.id), run_dir=Path(run.dir).parent)
        try:
            payload: dict[str, Any] = {}
            for csv in sorted((report_dir / "tables").glob("*.csv")):
                payload[f"tables/{csv.stem}"] = wandb.Table(dataframe=pd.read_csv(csv))
            for png in sorted((report_dir / "figures").glob("*.png")):
                payload[f"figures/{png.stem}"] = wandb.Image(str(png))
            run.log(payload)
            summary = report_dir / WANDB_SUMMARY_FILE  # flat numbers a report section chose (retention)
            if summary.is_file():
                run.summary.update(json.loads(summary.read_text()))
            try:  # without lineage the tables and figures are still worth having
                result.used_artifacts = _use_run_artifacts(run, report_dir, online=mode == "online")
            except Exception as err:
                warnings.warn(f"W&B lineage of the report not recorded: {err}", RuntimeWarning, stacklevel=2)
            run.config.update({"run_artifacts": result.used_artifacts}, allow_val_change=True)
            entity = s.entity or (run.entity if mode == "online" else "") or ""
            result.report = report_spec(report_dir, project=s.project, entity=entity, run_id=result.run_id)
        finally:
            run.finish()
    except Exception as err:  # never let tracking fail the report
        warnings.warn(f"W&B logging of the report failed: {err}", RuntimeWarning, stacklevel=2)
        return None
    if mode == "online":
        try:
            _bounded(result.report.save, s.report_timeout_s)
            result.report_url = str(result.report.url)
        except Exception as err:
            warnings.warn(f"W&B Report not saved: {err}", RuntimeWarning, stacklevel=2)
    else:
        print(
            f"W&B Report not saved: offline (tracker=wandb_online saves it); report run in "
            f"{result.run_dir} for `wandb sync`"
        )
    return result
