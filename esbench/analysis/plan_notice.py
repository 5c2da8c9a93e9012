"""The first lines of a report about its plan: whether its runs were made under the claims in force.

A report whose recipe's claims changed after its runs (or whose runs record no plan) says so
before anything else, names the claims files with their recorded and current hashes, and every
verdict in it reads "not decided" (:func:`esbench.analysis.claims.verdicts.plan_changed`).
"""

from __future__ import annotations

from esbench.analysis.claims.plan import PlanCheck
from esbench.analysis.claims.verdicts import NOT_DECIDED

#: Hex digits of a hash a report prints.
SHOWN_DIGITS = 12


def _files(files: dict[str, str]) -> str:
    if not files:
        return "no claims file (the empty plan: its claims are still written in code, not fixed as data)"
    return ", ".join(f"`{name}` (sha256 {digest[:SHOWN_DIGITS]})" for name, digest in sorted(files.items()))


def plan_notice(check: PlanCheck, scale: str | None) -> str:
    """Markdown for the top of a report: one line when every run was made under the plan in force;
    otherwise a warning naming the files and hashes, what the verdicts then read, and how to decide.

    Args:
        check: The plan in force against the runs' records.
        scale: The recipe scale that made the report (for the command to run), if known.
    """
    current = check.current
    recipe, digest = current.get("recipe") or "", str(current["hash"])
    whose = f"recipe `{recipe}`" if recipe else "this report (no recipe)"
    now = f"{_files(current.get('files') or {})}, plan `{digest[:SHOWN_DIGITS]}`"
    total = len(check.recorded)
    if not check.changed:
        return f"Plan: the claims of {whose}, {now}, were fixed before its runs: all {total} record it.\n"
    parts = []
    if none := check.count(None):
        parts.append(f"{none} record no plan (made before runs recorded one, or outside `esbench reproduce`)")
    for other, record in sorted(check.others().items()):
        parts.append(
            f"{check.count(other)} record plan `{other[:SHOWN_DIGITS]}` ({_files(record.get('files') or {})})"
        )
    command = f"esbench reproduce {recipe or '<recipe>'} scale={scale or '<scale>'}"
    return (
        f"> **Not decided: the plan changed after these runs.** The plan in force for {whose}: {now}; "
        f"of its {total} complete runs, {'; '.join(parts)}. Every verdict below reads "
        f'"{NOT_DECIDED}": claims chosen after the data were seen decide nothing. To decide them, '
        f"run seeds these runs did not use under this plan, into a fresh results directory (`{command} "
        "seed=... results_dir=...`; the same seeds give the same numbers). docs/statistics.md, "
        '"Claims are fixed before the runs".\n'
    )
