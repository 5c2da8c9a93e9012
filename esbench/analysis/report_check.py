"""``esbench report --check``: recompute a report from its ``data/`` and compare it with what is there.

A committed report is stale when the code that renders it has changed what it computes, or when
its REPORT.md, a table or a data file was edited by hand. The check renders the report again from
``data/`` alone into a temporary directory (:func:`esbench.analysis.report.render_report`) and
compares file by file: REPORT.md, then every table (md, csv, tex) and every other text file, line by
line and cell by cell; then the figures. It names the first difference: the file, the line (and
for a table the row and column), the committed text and the recomputed one.

Figures are compared byte for byte only when drawn by the same matplotlib and FreeType as the
committed ones (recorded in ``data/manifest.json``): their PNG and PDF bytes depend on those
versions and on nothing else (no timestamps, no software tag are written), while what they show is
computed from the same data as the tables that are always compared.
"""

from __future__ import annotations

import csv
import io
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from esbench.analysis.report import REPORT_FILE, render_report
from esbench.analysis.report_data import (
    DATA_DIR,
    ReportDataError,
    changed_files,
    figure_versions,
    is_report_data,
    read_manifest,
)
from esbench.analysis.stats import IncompleteResultsError

#: Suffixes of files compared as bytes (and only in the environment that drew them).
FIGURE_SUFFIXES = frozenset({".png", ".pdf", ".svg"})
_SHOWN = 120


class NoReportData(ReportDataError):
    """A report directory without ``data/``: it cannot be recomputed."""


@dataclass(frozen=True)
class CheckResult:
    """The outcome of checking one report.

    Attributes:
        ok: The committed report equals the one recomputed from its data.
        message: One line: "up to date" and what was compared, or the first difference.
    """

    ok: bool
    message: str


def _short(text: str) -> str:
    return repr(text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "...")


def _csv_difference(name: str, committed: str, fresh: str) -> str | None:
    """The first differing cell of two CSV texts, named by line, row key (first column) and column."""
    old = list(csv.reader(io.StringIO(committed)))
    new = list(csv.reader(io.StringIO(fresh)))
    header = new[0] if new else []
    for i in range(max(len(old), len(new))):
        a = old[i] if i < len(old) else None
        b = new[i] if i < len(new) else None
        if a == b:
            continue
        if a is None or b is None:
            which = "recomputed" if a is None else "committed"
            return f"{name} line {i + 1}: only in the {which} file: {_short(','.join(a or b or []))}"
        for j in range(max(len(a), len(b))):
            x = a[j] if j < len(a) else "<absent>"
            y = b[j] if j < len(b) else "<absent>"
            if x != y:
                column = header[j] if j < len(header) else f"#{j + 1}"
                row = f" (row {b[0] if b else ''!s})" if i > 0 and b else ""
                where = f"{name} line {i + 1}{row}, column {column}"
                return f"{where}: committed {_short(x)}, recomputed {_short(y)}"
    return None


def _md_cell(committed: str, fresh: str, header: list[str]) -> str:
    """For two differing Markdown table rows: ``, column NAME`` of their first differing cell."""
    a, b = committed.strip().strip("|").split("|"), fresh.strip().strip("|").split("|")
    for j in range(max(len(a), len(b))):
        x = a[j].strip() if j < len(a) else None
        y = b[j].strip() if j < len(b) else None
        if x != y:
            name = header[j].strip() if j < len(header) else f"#{j + 1}"
            return f", column {name!r}: committed cell {_short(x or '')}, recomputed cell {_short(y or '')}"
    return ""


def _text_difference(name: str, committed: str, fresh: str) -> str | None:
    """The first differing line of two texts (a Markdown table's cell named too)."""
    if committed == fresh:
        return None
    if name.endswith(".csv"):
        found = _csv_difference(name, committed, fresh)
        if found:
            return found
    old, new = committed.splitlines(), fresh.splitlines()
    header: list[str] = []
    for i in range(max(len(old), len(new))):
        a = old[i] if i < len(old) else None
        b = new[i] if i < len(new) else None
        if b is not None and b.startswith("|") and (i == 0 or not new[i - 1].startswith("|")):
            header = b.strip().strip("|").split("|")
        if a == b:
            continue
        if a is None or b is None:
            which = "recomputed" if a is None else "committed"
            return f"{name} line {i + 1}: only in the {which} file: {_short(a or b or '')}"
        cell = _md_cell(a, b, header) if a.startswith("|") and b.startswith("|") else ""
        return f"{name} line {i + 1}{cell}: committed {_short(a)}, recomputed {_short(b)}"
    return f"{name}: differs in line endings or a final newline"


def _files(root: Path) -> set[str]:
    """Every file of a report directory but its data, as posix paths relative to it."""
    return {
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and p.relative_to(root).parts[0] != DATA_DIR
    }


def _order(name: str) -> tuple[int, str]:
    """REPORT.md first, then tables, then other text files, then figures."""
    if name == REPORT_FILE:
        return (0, name)
    if Path(name).suffix in FIGURE_SUFFIXES:
        return (3, name)
    return (1 if name.startswith("tables/") else 2, name)


def first_difference(committed: Path, fresh: Path, figures: bool) -> tuple[str | None, int]:
    """The first difference between a committed report and a recomputed one, and how many files
    were compared.

    Args:
        committed: The committed report directory.
        fresh: The recomputed one.
        figures: Compare figure files byte for byte (else only that the same ones exist).
    """
    names = sorted(_files(committed) | _files(fresh), key=_order)
    for n, name in enumerate(names):
        a, b = committed / name, fresh / name
        if not b.is_file():
            return f"{name}: committed, but the report recomputed from data/ has no such file (stale)", n
        if not a.is_file():
            return f"{name}: recomputed from data/, but missing from the committed report", n
        if Path(name).suffix in FIGURE_SUFFIXES:
            if figures and a.read_bytes() != b.read_bytes():
                return f"{name}: the committed figure differs from the one drawn from data/", n
            continue
        found = _text_difference(name, a.read_text(), b.read_text())
        if found:
            return found, n
    return None, len(names)


def check_report(report_dir: str | Path) -> CheckResult:
    """Recompute the report in ``report_dir`` from its ``data/`` and compare (see module docstring).

    Raises:
        NoReportData: ``report_dir`` has REPORT.md but no ``data/`` (made before reports carried
            their data, or shipped without it).
        ReportDataError: ``report_dir`` is not a report, or its data has another format.
    """
    root = Path(report_dir)
    if not (root / REPORT_FILE).is_file():
        raise ReportDataError(f"{root} is not a report directory (no {REPORT_FILE})")
    if not is_report_data(root / DATA_DIR):
        raise NoReportData(
            f"{root} has no {DATA_DIR}/ directory: it cannot be recomputed; regenerate it with "
            "`esbench report TARGET` (or `esbench reproduce`), which writes the data beside the report"
        )
    manifest = read_manifest(root / DATA_DIR)
    same_figures = manifest.figure_versions == figure_versions()
    with tempfile.TemporaryDirectory(prefix="esbench-check-") as tmp:
        fresh = Path(tmp) / root.name
        shutil.copytree(root / DATA_DIR, fresh / DATA_DIR)
        try:
            render_report(fresh)
        except (ReportDataError, IncompleteResultsError, OSError, ValueError, KeyError) as e:
            return CheckResult(False, f"{root}: cannot be recomputed from its data: {e}")
        diff, n = first_difference(root, fresh, figures=same_figures)
    changed = changed_files(root / DATA_DIR, manifest)
    data_note = (
        f" (data/{', data/'.join(changed)} also changed since the report was made: sha256 differs "
        "from data/manifest.json)"
        if changed
        else ""
    )
    if diff:
        return CheckResult(
            False, f"{root}: differs from the report recomputed from its data: {diff}{data_note}"
        )
    if changed:
        return CheckResult(
            False,
            f"{root}: data/{changed[0]} differs from its sha256 in data/manifest.json (edited after the "
            "report was made), though the recomputed report is the same",
        )
    figures_note = (
        "figures compared byte for byte"
        if same_figures
        else f"figures not compared: drawn with {_versions(manifest.figure_versions)}, "
        f"here {_versions(figure_versions())}"
    )
    return CheckResult(True, f"{root}: up to date ({n} files compared; {figures_note})")


def _versions(versions: dict[str, str]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(versions.items()))


def find_reports(path: str | Path) -> list[Path]:
    """The report directories at ``path``: itself if it holds REPORT.md, else those one or two
    levels below it (``paper/table1``, ``paper/decisive/table1``), sorted."""
    root = Path(path)
    if (root / REPORT_FILE).is_file():
        return [root]
    found = {p.parent for pattern in (f"*/{REPORT_FILE}", f"*/*/{REPORT_FILE}") for p in root.glob(pattern)}
    return sorted(found)
