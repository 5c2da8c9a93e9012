"""Behavioural distance on one scale: how far a policy's mean action moved on fixed probe states.

The retention study asks whether ES forgets more than RL; a drift number only helps answer that if
it means the same for both. A KL divergence does not: a deterministic ES policy has no
distribution, so any KL for it depends on a made-up action noise. This module measures instead:

* **RMS mean-action change** on a fixed *probe set* of states per stage: ``sqrt(mean over states
  and action coordinates of (a_from - a_to)^2)``, where the *mean action* (:func:`mean_action`)
  is what the policy does on average, in coordinates shared by every algorithm:

  - continuous actions (an ES MLP's action, an SB3 Gaussian's mean): clipped to the action bounds
    (what ``predict(deterministic=True)`` returns) and rescaled so the bounds are -1 and +1;
  - ES's discretized actions (``action_bins``): the bin's value on the same -1..+1 scale (the
    expected value under the bin probabilities for a stochastic policy);
  - discrete actions: the expected one-hot action, i.e. the action probabilities (``softmax`` of
    the logits for a stochastic policy; one-hot of the argmax for a deterministic one: ES, DQN).

* **RMS parameter change per parameter**: ``||θ_to - θ_from||_2 / sqrt(n_params)`` (the Frobenius
  norm over sqrt(n)), so networks of different sizes share the scale.

* **KL, only between two stochastic policies** (SB3's actor-critic policies, which sample their
  actions): ``mean_s KL(π_from(.|s) || π_to(.|s))`` in the column :data:`KL_STOCHASTIC`. A
  deterministic policy (ES, DQN) has NaN there, never 0.

Two kinds of rows per run and stage k (:func:`behaviour_rows`), kept apart:

* ``own_update``: from the start of stage k to its end, on stage k's probe states: what training
  on stage k changed;
* ``drift_after``: from the end of stage k to the end of a later stage j, on stage k's probe
  states: how far the policy moved away from what it did on stage k (``to_index`` j; the end of
  the sequence is the largest j).

The probe set of stage k is recorded by the run when stage k begins: the stage-start policy plays
the first evaluation episodes of stage k deterministically (the run's fixed evaluation seeds) and
at most 256 of the observations it sees are kept (:func:`esbench.training.drift.visited_states`).
Its distributions there, and the distributions of the policy that ends every stage on every probe
set recorded so far, are written with the run (:data:`~esbench.tracking.schema.PROBES_FILE`:
:func:`write_probes`, :func:`load_probes`; the states themselves in
:data:`~esbench.tracking.schema.PROBE_STATES_FILE`), and kept in the run's checkpoints, so a
resumed run and a re-analysis use the same states.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from esbench.analysis.metrics.intervals import mean_ci
from esbench.analysis.tables import fmt_num, write_table
from esbench.config.registry import label_of
from esbench.measures.distribution import CATEGORICAL, GAUSSIAN, ActionDist, kl_divergence
from esbench.tracking.probes import Probes, load_probes, probes_of, write_probes
from esbench.tracking.snapshot_drift import SnapshotDrift

#: The KL column: only between two stochastic policies (NaN otherwise).
KL_STOCHASTIC = "kl_both_stochastic"
#: The measures of a row, in display order.
MEASURES: tuple[str, ...] = ("rms_action_change", "rms_param_change", KL_STOCHASTIC)
#: The two kinds of rows.
OWN_UPDATE = "own_update"
DRIFT_AFTER = "drift_after"
#: Columns of :func:`behaviour_rows`.
BEHAVIOUR_COLUMNS: tuple[str, ...] = (
    "kind",
    "stage_index",
    "stage",
    "to_index",
    "to_stage",
    "to_end",
    *MEASURES,
    "n_states",
)


# --- one scale ----------------------------------------------------------------------------------


def _finite_bounds(
    low: np.ndarray | None, high: np.ndarray | None, dim: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    if low is None or high is None:
        return None
    lo = np.broadcast_to(np.asarray(low, dtype=np.float64).ravel(), (dim,))
    hi = np.broadcast_to(np.asarray(high, dtype=np.float64).ravel(), (dim,))
    ok = np.isfinite(lo) & np.isfinite(hi) & (hi > lo)
    return lo, hi, ok


def mean_action(
    dist: ActionDist, stochastic: bool, low: np.ndarray | None = None, high: np.ndarray | None = None
) -> np.ndarray:
    """The mean action of a policy on each of its states, on the scale every algorithm shares.

    Args:
        dist: The policy's action distributions on n states (:mod:`esbench.measures.distribution`).
        stochastic: The policy samples its actions from ``dist`` (SB3's actor-critic policies);
            False for a policy that acts by the mean or the argmax (ES, DQN).
        low: The Box action space's lower bounds (continuous actions), or None.
        high: Its upper bounds, or None.

    Returns:
        Shape (n, m), float64. Continuous: the mean clipped to the bounds and rescaled to [-1, 1]
        (dimensions without finite bounds unscaled); binned continuous (logits (n, d, bins)): the
        bins' values on [-1, 1] (expected under the softmax when stochastic, the argmax's
        otherwise); discrete (logits (n, k)): the action probabilities (softmax when stochastic,
        one-hot of the argmax otherwise).
    """
    loc = np.asarray(dist.loc, dtype=np.float64)
    n = loc.shape[0]
    if dist.kind == GAUSSIAN:
        a = loc.reshape(n, -1)
        bounds = _finite_bounds(low, high, a.shape[1])
        if bounds is None:
            return a
        lo, hi, ok = bounds
        clipped = np.clip(a, np.where(ok, lo, -np.inf), np.where(ok, hi, np.inf))
        mid = np.where(ok, (hi + lo) / 2.0, 0.0)
        half = np.where(ok, (hi - lo) / 2.0, 1.0)
        return (clipped - mid) / half
    assert dist.kind == CATEGORICAL
    if stochastic:
        z = loc - loc.max(axis=-1, keepdims=True)
        probs = np.exp(z)
        probs /= probs.sum(axis=-1, keepdims=True)
    else:
        probs = np.zeros_like(loc)
        np.put_along_axis(probs, loc.argmax(axis=-1)[..., None], 1.0, axis=-1)
    if loc.ndim == 3:  # one categorical per action dimension over its bins (ES's action_bins)
        bins = loc.shape[-1]
        values = -1.0 + 2.0 * np.arange(bins) / max(bins - 1, 1)
        return probs @ values
    return probs.reshape(n, -1)


def rms_action_change(before: np.ndarray, after: np.ndarray) -> float:
    """``sqrt(mean((after - before)^2))`` over states and action coordinates (two
    :func:`mean_action` arrays of one shape)."""
    a = np.asarray(before, dtype=np.float64)
    b = np.asarray(after, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"mean actions differ in shape: {a.shape} vs {b.shape}")
    return float(np.sqrt(np.mean((b - a) ** 2))) if a.size else math.nan


def rms_param_change(before: np.ndarray, after: np.ndarray) -> float:
    """``||after - before||_2 / sqrt(n_params)`` in float64: the RMS change per parameter."""
    a = np.asarray(before, dtype=np.float64).ravel()
    b = np.asarray(after, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"parameter vectors differ in size: {a.size} vs {b.size}")
    return float(np.linalg.norm(b - a) / math.sqrt(a.size)) if a.size else math.nan


def kl_both_stochastic(before: ActionDist, after: ActionDist, stochastic: bool) -> float:
    """``mean_s KL(before || after)`` when the policies are stochastic; NaN when they are not (a
    deterministic policy has no distribution to compare, and 0 would claim it did not move)."""
    if not stochastic:
        return math.nan
    return float(np.mean(kl_divergence(before, after)))


# --- rows ---------------------------------------------------------------------------------------


def behaviour_rows(probes: Probes, drift: SnapshotDrift | None = None) -> pd.DataFrame:
    """The behavioural distances of one run (see the module docstring), one row per pair.

    Args:
        probes: The run's probe sets (:func:`load_probes`).
        drift: The drift between the run's stage-boundary snapshots (row k the parameters stage
            k started from, row K the final ones; :class:`~esbench.tracking.snapshot_drift.SnapshotDrift`);
            None: no parameter change (NaN).

    Returns:
        Columns :data:`BEHAVIOUR_COLUMNS`: per stage k with an end, an ``own_update`` row (start to
        end of k, ``to_index`` k) and a ``drift_after`` row per later ended stage j (end of k to
        end of j); ``to_end`` marks the rows that end at the last ended stage.
    """
    mean = [[mean_action(d, probes.stochastic, probes.low, probes.high) for d in row] for row in probes.ends]
    last = len(probes.ends) - 1

    def param(i: int, j: int) -> float:
        return math.nan if drift is None else drift.rms(i, j)

    rows = []
    for k in range(min(len(probes.stages), len(probes.ends))):
        start = mean_action(probes.start[k], probes.stochastic, probes.low, probes.high)
        pairs = [(OWN_UPDATE, k, probes.start[k], start, param(k, k + 1))]
        pairs += [
            (DRIFT_AFTER, j, probes.ends[k][k], mean[k][k], param(k + 1, j + 1))
            for j in range(k + 1, last + 1)
        ]
        for kind, j, dist_from, mean_from, dparam in pairs:
            rows.append(
                {
                    "kind": kind,
                    "stage_index": k,
                    "stage": probes.stages[k],
                    "to_index": j,
                    "to_stage": probes.stages[j] if j < len(probes.stages) else str(j),
                    "to_end": j == last,
                    "rms_action_change": rms_action_change(mean_from, mean[j][k]),
                    "rms_param_change": dparam,
                    KL_STOCHASTIC: kl_both_stochastic(dist_from, probes.ends[j][k], probes.stochastic),
                    "n_states": probes.n_states[k],
                }
            )
    return pd.DataFrame(rows, columns=list(BEHAVIOUR_COLUMNS))


# --- over seeds ---------------------------------------------------------------------------------

#: Grouping columns of :func:`behaviour_table`.
TABLE_KEYS: tuple[str, ...] = (
    "algo",
    "sequence",
    *BEHAVIOUR_COLUMNS[: BEHAVIOUR_COLUMNS.index("to_end") + 1],  # the row's identity, not its measures
)


def behaviour_table(per_run: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """Mean over seeds and Student-t interval (:func:`esbench.analysis.metrics.intervals.mean_ci`) of every
    measure per (algo, sequence, kind, stage, to_stage).

    Args:
        per_run: :func:`behaviour_rows` of several runs with ``algo``, ``sequence``, ``seed`` added.
        confidence: Confidence level.

    Returns:
        :data:`TABLE_KEYS`, then per measure ``<measure>_n`` (seeds with a value), ``_mean``,
        ``_low``, ``_high`` (NaN bounds with fewer than 2 seeds; all NaN without a value: the KL of
        a deterministic policy).
    """
    out = []
    for key, group in per_run.groupby(list(TABLE_KEYS), sort=True):
        row: dict[str, object] = dict(zip(TABLE_KEYS, key, strict=True))
        for m in MEASURES:
            v = group.sort_values("seed")[m].to_numpy(float)
            v = v[np.isfinite(v)]
            mean, low, high = mean_ci(v, None, confidence) if len(v) else (math.nan, math.nan, math.nan)
            row.update(
                {f"{m}_n": len(v), f"{m}_mean": float(mean), f"{m}_low": float(low), f"{m}_high": float(high)}
            )
        out.append(row)
    cols = [*TABLE_KEYS, *(f"{m}_{s}" for m in MEASURES for s in ("n", "mean", "low", "high"))]
    return pd.DataFrame(out, columns=cols)


_HEADERS = {
    "rms_action_change": "RMS mean-action change",
    "rms_param_change": "RMS parameter change",
    KL_STOCHASTIC: "KL (both stochastic)",
}


def _cell(r: pd.Series, m: str) -> str:
    if not np.isfinite(r[f"{m}_mean"]):
        return "—"
    if np.isfinite(r[f"{m}_low"]):
        return f"{fmt_num(r[f'{m}_mean'])} [{fmt_num(r[f'{m}_low'])}, {fmt_num(r[f'{m}_high'])}]"
    return fmt_num(r[f"{m}_mean"])


def display_behaviour(table: pd.DataFrame) -> pd.DataFrame:
    """The displayed rows: per (algorithm, sequence, stage) the stage's own update and the drift
    after it to the end of the sequence, as separate rows."""
    shown = table[(table["kind"] == OWN_UPDATE) | table["to_end"].astype(bool)]
    rows = []
    order = {OWN_UPDATE: 0, DRIFT_AFTER: 1}
    for _, r in shown.sort_values(["algo", "sequence", "stage_index"], kind="stable").iterrows():
        what = "own update" if r["kind"] == OWN_UPDATE else f"drift after (to the end of {r['to_stage']})"
        rows.append(
            {
                "_o": (r["algo"], r["sequence"], r["stage_index"], order[str(r["kind"])]),
                "Algorithm": label_of(str(r["algo"])),
                "Sequence": str(r["sequence"]),
                "Stage": f"{r['stage_index']}: {r['stage']}",
                "Row": what,
                **{_HEADERS[m]: _cell(r, m) for m in MEASURES},
                "Seeds": int(r["rms_action_change_n"]),
            }
        )
    rows.sort(key=lambda row: row["_o"])  # type: ignore[arg-type,return-value]
    cols = ["Algorithm", "Sequence", "Stage", "Row", *(_HEADERS[m] for m in MEASURES), "Seeds"]
    return pd.DataFrame([{c: row[c] for c in cols} for row in rows], columns=cols)


BEHAVIOUR_NOTES = (
    "Behavioural distance on one scale for every algorithm. Own update: from the start of the stage to "
    "its end; drift after: from the end of the stage to the end of the sequence; both on the stage's "
    "probe states (up to 256 states the stage-start policy visited on the stage's first evaluation "
    "episodes). RMS mean-action change: root mean square, over probe states and action coordinates, of "
    "the change of the mean action (continuous: clipped to the bounds, rescaled to [-1, 1]; discrete: "
    "the action probabilities, one-hot for a deterministic policy). RMS parameter change: "
    "||Δθ||_2 / sqrt(n_params). KL (both stochastic): mean KL(before || after) over the probe states, "
    "only for policies that sample their actions (SB3 actor-critic); — for deterministic ones (ES, "
    "DQN). Mean over seeds with Student-t 95% CIs."
)


def write_behaviour_table(table: pd.DataFrame, out_dir: Path) -> dict[str, Path]:
    """CSV (all of :func:`behaviour_table`, every later stage too) and Markdown / LaTeX
    (:func:`display_behaviour`) of ``out_dir/retention_behaviour.*``."""
    return write_table(
        table,
        display_behaviour(table),
        Path(out_dir) / "retention_behaviour",
        caption="Behavioural distance: each stage's own update and the drift after it, on one scale",
        label="tab:retention_behaviour",
        notes=BEHAVIOUR_NOTES,
    )


__all__ = [
    "BEHAVIOUR_COLUMNS",
    "DRIFT_AFTER",
    "KL_STOCHASTIC",
    "MEASURES",
    "OWN_UPDATE",
    "Probes",
    "behaviour_rows",
    "behaviour_table",
    "display_behaviour",
    "kl_both_stochastic",
    "load_probes",
    "mean_action",
    "probes_of",
    "rms_action_change",
    "rms_param_change",
    "write_behaviour_table",
    "write_probes",
]
