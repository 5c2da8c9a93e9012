"""``esbench report TARGET [results_dir=PATH] [out_dir=PATH] [seed=N] [wandb=MODE] [--allow-partial]``.

Exit codes: 0 report written; 2 bad usage, unknown target, no runs, or missing runs / unequal
seed counts without ``--allow-partial`` (the message names each condition and its seeds).
"""

from __future__ import annotations

import sys

from esbench.analysis.report import TARGETS, UnknownTargetError, build_report
from esbench.analysis.stats import IncompleteResultsError
from esbench.analysis.wandb_report import log_report_to_wandb

USAGE = (
    "usage: esbench report TARGET [results_dir=PATH] [out_dir=PATH] [seed=N] [wandb=online|offline] "
    f"[--allow-partial]; TARGET: {', '.join(TARGETS)}, or a path to a results directory"
)
_KEYS = ("results_dir", "out_dir", "seed", "wandb")


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
            if key not in _KEYS:
                raise ValueError(f"unknown option {key!r}: allowed {', '.join(_KEYS)}")
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
            out_dir=opts.get("out_dir", "paper"),
            allow_partial=allow_partial,
            seed=seed,
        )
    except UnknownTargetError as err:
        print(f"esbench report: {err}", file=sys.stderr)
        return 2
    except (IncompleteResultsError, FileNotFoundError) as err:
        print(f"esbench report: {err}", file=sys.stderr)
        return 2
    log_report_to_wandb(path.parent, {"target": target, "seed": seed}, mode=opts.get("wandb"))
    print(f"report written: {path}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main(sys.argv[1:]))
