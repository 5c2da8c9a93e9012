"""Targets near a task's ceiling: where crossing a target says little about learning.

A target score close to the best return anyone has reached on a task (or to the most its reward
allows) is crossed late, by few evaluations, and partly by luck: a policy that scores at the
target on average crosses it on about half of its evaluations, and a run that stops at its first
crossing stops on a lucky one. Times to such targets are fragile (one good evaluation moves them
by a large fraction of the budget), and how the policy acts at evaluation matters most there (the
paper's TRPO targets come from a stochastic policy; esbench evaluates ES deterministically).
Reports flag them rather than hide them.

The best known returns are data (``results/reference/best_known_returns.csv``): per Gymnasium id,
``best_return``, whether it is the reward's own ``ceiling`` (what the reward function allows over
an episode) or the best ``published`` return found, and the ``source``. A task without a
checked number has an empty ``best_return`` and is never flagged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from esbench.utils.resources import reference_dir

BEST_KNOWN_FILE = reference_dir() / "best_known_returns.csv"
#: A target within this fraction of the best known return is flagged.
NEAR_CEILING = 0.05


@dataclass(frozen=True)
class BestKnown:
    """One task's best known return.

    Attributes:
        gymnasium_id: The task.
        value: The return (NaN: none checked).
        kind: ``ceiling`` (what the reward allows), ``published`` or ``none``.
        source: Where the number comes from.
    """

    gymnasium_id: str
    value: float
    kind: str
    source: str


def load_best_known(path: str | Path = BEST_KNOWN_FILE) -> dict[str, BestKnown]:
    """The best known return of each task, by Gymnasium id.

    Raises:
        ValueError: A row whose ``kind`` is not ``ceiling``, ``published`` or ``none``.
    """
    frame = pd.read_csv(path)
    out = {}
    for row in frame.itertuples(index=False):
        kind = str(row.kind)
        if kind not in ("ceiling", "published", "none"):
            raise ValueError(f"{path}: {row.gymnasium_id}: kind={kind!r}; allowed: ceiling, published, none")
        value = float(row.best_return) if pd.notna(row.best_return) else math.nan
        out[str(row.gymnasium_id)] = BestKnown(str(row.gymnasium_id), value, kind, str(row.source))
    return out


def near_ceiling(target: float, best: float, within: float = NEAR_CEILING) -> bool:
    """Whether ``target`` is within ``within`` (a fraction) of ``best``: ``target >= best -
    within * |best|``. False where either is not a finite number."""
    if not (math.isfinite(target) and math.isfinite(best)):
        return False
    return target >= best - within * abs(best)


def ceiling_columns(env_id: str, target: float, best: dict[str, BestKnown]) -> dict[str, object]:
    """The ``best_known`` and ``near_ceiling`` columns of a table row for ``env_id``'s ``target``."""
    known = best.get(env_id)
    value = known.value if known is not None else math.nan
    return {"best_known": value, "near_ceiling": near_ceiling(target, value)}


def ceiling_note(flagged: pd.DataFrame, within: float = NEAR_CEILING) -> str:
    """The table note for rows flagged ``near_ceiling`` (columns ``env_id``, ``target``,
    ``best_known``), or "" when none is."""
    if flagged.empty:
        return ""
    parts = sorted(
        {
            f"{r.env_id} {r.target:.6g} = {100 * r.target / r.best_known:.1f}% of {r.best_known:.6g}"
            for r in flagged.itertuples()
        }
    )
    return (
        f" †: target within {round(100 * within)}% of the task's best known return "
        f"(results/reference/best_known_returns.csv): {'; '.join(parts)}. Near the ceiling a "
        "target is crossed late and partly by luck, and how the policy acts at evaluation "
        "(deterministic or stochastic) matters most: read these times with care."
    )


__all__ = [
    "BEST_KNOWN_FILE",
    "NEAR_CEILING",
    "BestKnown",
    "ceiling_columns",
    "ceiling_note",
    "load_best_known",
    "near_ceiling",
]
