"""``esbench report TARGET [results_dir=PATH] [out_dir=PATH] [seed=N] [tracker=T] [project=P]
[entity=E] [--allow-partial]`` and ``esbench report --check PATH``.

The report goes to ``out_dir/<target>/`` (default ``reports/``, git-ignored; ``out_dir=paper``
updates the committed reports). ``tracker=wandb_online`` / ``wandb_offline`` also logs the report to W&B
(:mod:`esbench.analysis.wandb_report`); ``none`` (the default) does not.

Exit codes: 0 report written; 2 bad usage, unknown target, no runs, or missing runs / unequal
seed counts without ``--allow-partial`` (the message names each condition and its seeds).

``--check PATH`` recomputes the report in PATH (or every report one or two levels below it) from
its ``data/`` and compares (:mod:`esbench.analysis.report_check`): 0 every report up to date; 1 a
report differs (the first difference is named); 2 a report without ``data/`` or not a report.
"""

from __future__ import annotations

import sys

from esbench.analysis.report import REPORT_FILE, TARGETS, UnknownTargetError, build_report
from esbench.analysis.report_check import check_report, find_reports
from esbench.analysis.report_data import ReportDataError
from esbench.analysis.stats import IncompleteResultsError
from esbench.analysis.wandb_report import TRACKERS, WandbReportSettings, log_report_to_wandb

#: Where reports go unless ``out_dir=`` says otherwise: the git-ignored ``reports/``, as for
#: ``esbench reproduce``, so a report never overwrites the committed ones in ``paper/`` unless
#: asked (``out_dir=paper``).
DEFAULT_OUT_DIR = "reports"
USAGE = (
    "usage: esbench report TARGET [results_dir=PATH] [out_dir=PATH (default reports)] [seed=N] "
    f"[tracker={'|'.join(TRACKERS)}] [project=NAME] [entity=NAME] [--allow-partial]; "
    f"TARGET: {', '.join(TARGETS)}, or a path to a results directory\n"
    "       esbench report --check PATH   (PATH: a report directory such as paper/table1, or paper)"
)
_KEYS = ("results_dir", "out_dir", "seed", "tracker", "project", "entity")


def _parse(argv: list[str]) -> tuple[str, dict[str, str], bool]:
    """(target, key=value options, allow_partial). Raises ValueError on bad usage."""
    target = None
    opts: dict[str, str] = {}
    allow_partial = False
    for arg in argv:
        if arg in ("--allow-partial", "--allow_partial", "allow_partial=true"):
            allow_partial = True
        elif "=" in arg and not arg.startswith("-"):
            key, value = arg.split("=", 1)
            key = key.lstrip("+")
            if key == "wandb":  # an older spelling: one spelling only, the one runs use
                raise ValueError(
                    f"wandb={value} is spelled tracker=wandb_{value} (allowed: {', '.join(TRACKERS)})"
                )
            if key not in _KEYS:
                raise ValueError(f"unknown option {key!r}: allowed {', '.join(_KEYS)}")
            if key == "tracker" and value not in TRACKERS:
                raise ValueError(f"tracker={value}: allowed {', '.join(TRACKERS)}")
            opts[key] = value
        elif arg.startswith("-"):
            raise ValueError(f"unknown flag {arg!r}")
        elif target is None:
            target = arg
        else:
            raise ValueError(f"one target only, got {target!r} and {arg!r}")
    if target is None:
        raise ValueError("missing TARGET")
    return target, opts, allow_partial


def main(argv: list[str]) -> int:
    """Run ``esbench report`` with ``argv`` (the arguments after ``report``); return the exit code."""
    if any(a in ("-h", "--help") for a in argv):
        print(USAGE)
        return 0
    if "--check" in argv:
        return _check([a for a in argv if a != "--check"])
    try:
        target, opts, allow_partial = _parse(argv)
        seed = int(opts.get("seed", "0"))
    except ValueError as err:
        print(f"esbench report: {err}\n{USAGE}", file=sys.stderr)
        return 2
    try:
        path = build_report(
            target,
            results_dir=opts.get("results_dir", "results/runs"),
            out_dir=opts.get("out_dir", DEFAULT_OUT_DIR),
            allow_partial=allow_partial,
            seed=seed,
        )
    except UnknownTargetError as err:
        print(f"esbench report: {err}", file=sys.stderr)
        return 2
    except (IncompleteResultsError, FileNotFoundError) as err:
        print(f"esbench report: {err}", file=sys.stderr)
        return 2
    print(f"report written: {path}")
    settings = WandbReportSettings(project=opts.get("project", "esbench"), entity=opts.get("entity"))
    config = {"target": target, "seed": seed}
    logged = log_report_to_wandb(path.parent, TRACKERS[opts.get("tracker", "none")], settings, config)
    if logged is not None and logged.report_url:
        print(f"W&B Report: {logged.report_url}")
    return 0


def _check(paths: list[str]) -> int:
    """``esbench report --check PATH``: check every report at PATH; the worst exit code."""
    if len(paths) != 1 or paths[0].startswith("-") or "=" in paths[0]:
        print(f"esbench report: --check takes one report directory, got {paths}\n{USAGE}", file=sys.stderr)
        return 2
    reports = find_reports(paths[0])
    if not reports:
        print(f"esbench report: no report ({REPORT_FILE}) at {paths[0]} or below it", file=sys.stderr)
        return 2
    status = 0
    for report in reports:
        try:
            result = check_report(report)
        except ReportDataError as err:
            print(f"esbench report: {err}", file=sys.stderr)
            status = 2
            continue
        print(result.message, file=sys.stdout if result.ok else sys.stderr)
        if not result.ok:
            status = max(status, 1)
    return status


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main(sys.argv[1:]))
