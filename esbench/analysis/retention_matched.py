"""Forgetting at matched gain: does ES lose more of the earlier stages than RL *for the same gain*
on the new stage? And the other side's tests: does the drop recover, does a larger population
forget less, does Anchored Weight Decay keep more?

Why matched gain: on a sequence whose stages compete, any gain on the new stage is a loss on the
old one, so an algorithm that learns the new stage further also "forgets" more; an unconditional
forgetting number cannot tell the two apart (Abdi, Gupta et al. 2026, arXiv:2601.20861, compare ES
and GRPO at matched new-task reward). Here each run's path through training is read as points
(gain, retention), and algorithms are compared where every one of them has been.

Definitions (normalized scores ``p_i(t)`` on the one scale of
:func:`esbench.analysis.retention_report.common_scale`; a later stage j >= 1 of a run):

* the stage's span: its own evaluation points, preceded by the last point before them (the
  parameters stage j started from; :func:`~esbench.analysis.retention.stage_span`);
* gain ``x(t) = p_j(t) - p_j(t_start)``, the normalized gain on the current stage since it began;
* retention ``y(t) = mean_{i<j} p_i(t) - mean_{i<j} p_i(t_start)``, the change of the normalized
  score on the earlier stages since the stage began (0: nothing lost; -0.3: 30% of the reference's
  progress lost). The change, not the level: algorithms that learned the earlier stages to
  different levels would otherwise differ at matched gain by what they learned, not by what they
  lost;
* a condition's mean path: ``x_bar(tau)`` and ``y_bar(tau)``, the means over its seeds with
  ``tau`` the training progress since the stage began (timesteps; each run linear between its
  points, over the progress every run of the condition covers; :func:`mean_path`);
* the matched gain ``g*`` of a (sequence, stage): the largest gain every compared *condition*
  reaches, ``min over conditions of max_tau x_bar(tau)`` (per pair of conditions in the claims; in
  the per-condition table, over the conditions that learned the stage, their mean path's largest
  gain above the stage's minimum effect, so one condition that never gains does not pin ``g*`` at
  0). A condition's gain is its mean over seeds,
  not its weakest seed's: a minimum over runs falls with every seed added, so more seeds would
  decide less;
* a condition's retention at ``g*``: each run's ``y`` at ``tau*``, the progress where the
  condition's mean gain first reaches ``g*`` (linear between the two points around the crossing),
  so every seed is read at the same point of training and contributes one value.

The claim "ES forgets more than RL" is decided, per (sequence, stage) and per pair (an ES
condition, an RL condition), by ``d = y_ES(g*) - y_RL(g*)``, the difference of the conditions' mean
retention at ``g*`` over seeds, with a Welch t interval
(:func:`~esbench.analysis.retention_measures.welch_diff_ci`; independent groups, unequal
variances), by the one rule of :func:`esbench.analysis.claims.verdicts.decide`: supported when the
interval lies below 0, contradicted when above, undecided when it holds 0, and **not testable: no
learning** when ``g*`` does not exceed the claim's minimum effect, twice the standard error of one
evaluation of the primary measure (:func:`~esbench.analysis.claims.verdicts.learned`; one standard
error per (sequence, stage), pooled over every run's evaluations of the stage: :func:`stage_se`).
Below it, retention would be read at the stage's first points, before any learning a comparison
could be about.
Per condition, the mean and interval of its retention come from
:func:`esbench.analysis.metrics.intervals.mean_ci`.

Transient against permanent (Schweighofer et al. 2026, arXiv:2605.30148, report that ES's drop is
mostly drift that recovers): one definition for every report,
:func:`esbench.analysis.retention_measures.drop_and_recovery` (the early and late drops, means
over the first and the last third of the later stage's budget, and the recovery between them),
per run in :func:`~esbench.analysis.retention.run_retention`'s rows; :func:`transient_summary`
gives their means over seeds with intervals, the drop's reading
(:func:`esbench.analysis.claims.retention.drop_reading`) and the verdict on "the drop recovers"
(the recovery's interval above 0; not testable where the condition did not learn the later stage).

Population size and Anchored Weight Decay: the same difference at ``g*`` between conditions of one
algorithm (``@pop<N>`` conditions: larger minus smaller population; ``+awd`` minus plain), the
claims "forgetting shrinks with population size" and "AWD keeps retention at matched gain".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from esbench.analysis.claims.retention import RETENTION_CLAIMS, drop_reading
from esbench.analysis.claims.verdicts import decide, learned
from esbench.analysis.conditions import AWD_SUFFIX, POP_SEP, base_algo
from esbench.analysis.metrics.intervals import mean_ci
from esbench.analysis.metrics.planning import StudyOutlook, study_outlook
from esbench.analysis.retention import NONE
from esbench.analysis.retention_measures import (
    GainPath,
    RetentionKind,
    gain_and_retention,
    mean_path,
    pooled_se,
    retention_at_matched_gain,
    welch_diff_ci,
)

#: Columns of :func:`matched_gain_table`.
MATCHED_COLUMNS: tuple[str, ...] = (
    "sequence",
    "stage_index",
    "stage",
    "algo",
    "n_seeds",
    "max_gain",
    "min_effect",
    "learned",
    "matched_gain",
    "retention_at_matched_gain",
    "low",
    "high",
)
#: Columns of :func:`matched_gain_claims`.
CLAIM_COLUMNS: tuple[str, ...] = (
    "sequence",
    "stage_index",
    "stage",
    "claim",
    "a",
    "b",
    "matched_gain",
    "min_effect",
    "retention_a",
    "retention_b",
    "difference",
    "low",
    "high",
    "n_a",
    "n_b",
    "verdict",
    "seeds_to_decide",
    "supported_share",
    "contradicted_share",
    "seeds_low",
    "seeds_high",
    "same_side",
)


def gain_paths(curves: pd.DataFrame) -> list[GainPath]:
    """Every run's (gain, retention) path through each of its later stages, on the normalized
    scale: the gain of the stage's own score, the change of the earlier stages' mean score
    (retention as a difference, :func:`~esbench.analysis.retention_measures.gain_and_retention`).

    Args:
        curves: :attr:`esbench.analysis.retention_report.RetentionData.curves` (normalized ``p``
            and its standard error ``se`` per run, stage and point).

    Returns:
        One :class:`~esbench.analysis.retention_measures.GainPath` per (run, later stage with at
        least one point).
    """
    out: list[GainPath] = []
    if curves.empty:
        return out
    se_of = curves if "se" in curves else curves.assign(se=np.nan)
    for (algo, sequence, seed, _), run in se_of.groupby(["algo", "sequence", "seed", "run_id"], sort=True):
        wide = run.set_index(["timesteps", "train_stage", "stage_index"])[["p", "se"]].unstack("stage_index")
        wide = wide.sort_index(level=[1, 0])
        names = run.drop_duplicates("stage_index").set_index("stage_index")["stage"]
        stage = wide.index.get_level_values("train_stage").to_numpy(int)
        timesteps = wide.index.get_level_values("timesteps").to_numpy(float)
        p, se = wide["p"].to_numpy(float).T, wide["se"].to_numpy(float).T  # (K, n_points)
        for j in range(1, p.shape[0]):
            own = np.flatnonzero(stage == j)
            if not len(own):
                continue
            span = np.concatenate([[own[0] - 1], own]) if own[0] > 0 else own
            gain, retention = gain_and_retention(p[j, span], p[:j, span].mean(axis=0), "difference")
            progress = timesteps[span] - timesteps[span[0]]
            out.append(
                GainPath(
                    str(algo),
                    str(sequence),
                    int(seed),
                    j,
                    str(names[j]),
                    gain,
                    retention,
                    progress,
                    se[j, span],
                )
            )
    return out


def path_of_run(
    algo: str,
    sequence: str,
    seed: int,
    stage: str,
    progress: np.ndarray,
    new: np.ndarray,
    earlier: np.ndarray,
    se: np.ndarray,
    retention: RetentionKind,
    stage_index: int = 1,
) -> GainPath:
    """One run's :class:`~esbench.analysis.retention_measures.GainPath` from its raw measures at the
    stage's points (index 0 the stage's start): the one path every report builds."""
    gain, kept = gain_and_retention(new, earlier, retention)
    start = float(np.asarray(progress, dtype=float)[0])
    return GainPath(algo, sequence, seed, stage_index, stage, gain, kept,
                    np.asarray(progress, dtype=float) - start, np.asarray(se, dtype=float))  # fmt: skip


def stage_se(paths: Sequence[GainPath]) -> float:
    """The standard error of one evaluation of a stage's primary measure: pooled over the paths'
    points after the stage's start, every condition's runs together (the measure's noise, not a
    condition's: :func:`~esbench.analysis.retention_measures.pooled_se`)."""
    return pooled_se([p.se[1:] for p in paths])


def matched_gain_table(paths: Sequence[GainPath], rng: np.random.Generator) -> pd.DataFrame:
    """Per (sequence, later stage, condition): the matched gain ``g*`` and the retention there,
    mean over seeds with :func:`~esbench.analysis.metrics.intervals.mean_ci`.

    ``g*`` is the largest gain every condition that learned the stage reaches (its mean path's
    largest gain above the stage's minimum effect, twice the standard error of one evaluation,
    :func:`stage_se`: :func:`~esbench.analysis.claims.verdicts.learned`); a condition that did not
    learn has no retention value (``n_seeds`` 0; ``max_gain``, ``min_effect`` and ``learned`` say
    why).

    Returns:
        Columns :data:`MATCHED_COLUMNS` (``max_gain``: the largest gain of the condition's mean
        path, :func:`~esbench.analysis.retention_measures.mean_path`; ``min_effect``: twice
        :func:`stage_se`).
    """
    rows = []
    for (sequence, j), group in _by_stage(paths).items():
        by_algo, means, top, se = _conditions(group)
        matched = {a for a in by_algo if learned(top[a], se)}
        g_star = min((top[a] for a in matched), default=float("nan"))
        for algo, mine in by_algo.items():
            at = g_star if algo in matched else float("nan")
            values = retention_at_matched_gain(mine, means[algo], at)
            values = values[np.isfinite(values)]
            mean, low, high = _mean_ci(values, rng)
            rows.append(
                {
                    "sequence": sequence,
                    "stage_index": j,
                    "stage": mine[0].stage,
                    "algo": algo,
                    "n_seeds": len(values),
                    "max_gain": top[algo],
                    "min_effect": 2.0 * se,
                    "learned": algo in matched,
                    "matched_gain": g_star,
                    "retention_at_matched_gain": mean,
                    "low": low,
                    "high": high,
                }
            )
    return pd.DataFrame(rows, columns=list(MATCHED_COLUMNS))


def matched_gain_claims(
    paths: Sequence[GainPath],
    family_of: Callable[[str], str | None],
    confidence: float = 0.95,
    per_pair: bool = False,
    rng: np.random.Generator | None = None,
) -> pd.DataFrame:
    """The pairwise claims at matched gain, per (sequence, later stage).

    The matched gain ``g*`` is the largest gain every condition's mean path reaches (module
    docstring); with ``per_pair``, the two conditions compared, so a condition that never gains
    (a small population, say) leaves the other pairs' claims decidable. Each claim's minimum
    effect is twice the stage's :func:`stage_se`; a ``g*`` not above it
    is "not testable: no learning".

    * ``es_forgets_more``: every ES condition against every RL condition (by ``family_of`` of
      the condition), ``d = y_a - y_b``; supported when the interval lies below 0.
    * ``larger_population_forgets_less``: conditions ``X@pop<n>`` and ``X@pop<m>`` with n > m,
      ``d = y_n - y_m``; supported when above 0.
    * ``awd_keeps_retention``: ``X+awd...`` against ``X...``, ``d = y_awd - y_plain``;
      supported when above 0.

    Returns:
        Columns :data:`CLAIM_COLUMNS` (no seeds-to-decide for a claim that is not testable):
        ``seeds_to_decide`` and the larger study's outlook
        (:func:`~esbench.analysis.metrics.planning.study_outlook`, its pilots drawn from ``rng``, a
        Generator seeded 0 by default): the shares of such studies that would support and
        contradict the claim, and over resampled pilots the 10th-90th percentiles of the seeds
        needed and the share that would most likely go the same way.
    """
    rng = rng if rng is not None else np.random.default_rng(0)
    rows = []
    for (sequence, j), group in _by_stage(paths).items():
        by_algo, means, top, se = _conditions(group)
        for claim, a, b in _pairs(sorted(top), family_of):
            stated = RETENTION_CLAIMS[claim]
            g_star = min(top[a], top[b]) if per_pair else min(top.values())
            at = {c: retention_at_matched_gain(by_algo[c], means[c], g_star) for c in (a, b)}
            d, low, high = welch_diff_ci(at[a], at[b], confidence)
            testable = learned(g_star, se, stated.minimum_effect_se)
            ya, yb = at[a][np.isfinite(at[a])], at[b][np.isfinite(at[b])]
            outlook = study_outlook(ya, yb, rng, confidence) if testable else None
            toward, away = _shares(outlook, stated.direction)
            rows.append(
                {
                    "sequence": sequence,
                    "stage_index": j,
                    "stage": group[0].stage,
                    "claim": claim,
                    "a": a,
                    "b": b,
                    "matched_gain": g_star,
                    "min_effect": stated.minimum_effect_se * se,
                    "retention_a": float(np.mean(ya)) if len(ya) else float("nan"),
                    "retention_b": float(np.mean(yb)) if len(yb) else float("nan"),
                    "difference": d,
                    "low": low,
                    "high": high,
                    "n_a": len(ya),
                    "n_b": len(yb),
                    "verdict": decide(low, high, stated.direction, stated.limit, testable=testable),
                    "seeds_to_decide": outlook.seeds if outlook else float("nan"),
                    "supported_share": toward,
                    "contradicted_share": away,
                    "seeds_low": outlook.seeds_low if outlook else float("nan"),
                    "seeds_high": outlook.seeds_high if outlook else float("nan"),
                    "same_side": outlook.same_side if outlook else float("nan"),
                }
            )
    return pd.DataFrame(rows, columns=list(CLAIM_COLUMNS))


def _shares(outlook: StudyOutlook | None, direction: str) -> tuple[float, float]:
    """(supporting, contradicting) shares of a larger study's outlook, for a claim on ``direction``'s
    side of 0; NaN without an outlook."""
    if outlook is None:
        return float("nan"), float("nan")
    return (outlook.below, outlook.above) if direction == "below" else (outlook.above, outlook.below)


def _pairs(conditions: Sequence[str], family_of: Callable[[str], str | None]) -> list[tuple[str, str, str]]:
    """(claim, a, b) of every comparison the conditions allow (:func:`matched_gain_claims`)."""
    pairs: list[tuple[str, str, str]] = []
    fam = {a: family_of(base_algo(a)) for a in conditions}
    for a in conditions:
        for b in conditions:
            if fam[a] == "es" and fam[b] not in (None, "es"):
                pairs.append(("es_forgets_more", a, b))
            if AWD_SUFFIX in a and a.replace(AWD_SUFFIX, "", 1) == b:
                pairs.append(("awd_keeps_retention", a, b))
            if POP_SEP in a and POP_SEP in b:
                (na, pa), (nb, pb) = a.rsplit(POP_SEP, 1), b.rsplit(POP_SEP, 1)
                if na == nb and int(pa) > int(pb):
                    pairs.append(("larger_population_forgets_less", a, b))
    return pairs


#: The per-run measures of a drop during a later stage (:func:`transient_summary`), as
#: :func:`~esbench.analysis.retention.run_retention` names them.
TRANSIENT_MEASURES: tuple[str, ...] = ("early_drop", "late_drop", "recovery")


def transient_table(per_run: pd.DataFrame, matched: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    """Transient against permanent drop of each earlier stage i during each later stage j, from
    the per-run drops of :func:`~esbench.analysis.retention.run_retention` (one definition:
    :func:`~esbench.analysis.retention_measures.drop_and_recovery`).

    Args:
        per_run: :attr:`~esbench.analysis.retention_report.RetentionData.per_run`.
        matched: :func:`matched_gain_table` of the same runs: whether each condition learned stage
            j (the verdict is not testable where it did not).
        rng: For the intervals.

    Returns:
        :func:`transient_summary` per (sequence, condition, i, j).
    """
    rows = per_run[per_run["metric"].isin(TRANSIENT_MEASURES) & (per_run["during"] != NONE)]
    if rows.empty:
        return pd.DataFrame()
    keys = ["sequence", "algo", "stage_index", "stage", "during"]
    wide = rows.pivot_table(index=[*keys, "seed"], columns="metric", values="value").reset_index()
    learned_of = {
        (str(r.sequence), str(r.algo), int(r.stage_index)): bool(r.learned) for r in matched.itertuples()
    }
    learned_col = [
        learned_of.get((str(s), str(a), int(d)), False)
        for s, a, d in zip(wide["sequence"], wide["algo"], wide["during"], strict=True)
    ]
    return transient_summary(wide.assign(learned=learned_col), keys, rng)


def transient_summary(per_run: pd.DataFrame, keys: Sequence[str], rng: np.random.Generator) -> pd.DataFrame:
    """Per group of ``keys``, the mean over seeds of each of :data:`TRANSIENT_MEASURES` with its
    :func:`~esbench.analysis.metrics.intervals.mean_ci` interval, the drop's reading
    (:func:`~esbench.analysis.claims.retention.drop_reading`) and the verdict on "the drop
    recovers" (the recovery's interval above 0, by :func:`~esbench.analysis.claims.verdicts.decide`;
    not testable where the group's ``learned`` is False).

    Args:
        per_run: One row per run (and group), with ``keys``, the three measures and ``learned``
            (whether the condition learned the later stage).
        keys: The columns that name a group (a condition, the stages).

    Returns:
        ``keys``, ``n_seeds``, each measure with ``_low``/``_high``, ``reading`` and ``verdict``.
    """
    rows = []
    if per_run.empty:
        return pd.DataFrame()
    for key, group in per_run.groupby(list(keys), sort=True):
        row: dict[str, object] = dict(zip(keys, key, strict=True))
        row["n_seeds"] = len(group)
        ci: dict[str, tuple[float, float, float]] = {}
        for col in TRANSIENT_MEASURES:
            ci[col] = _mean_ci(group[col].to_numpy(float), rng)
            mean, low, high = ci[col]
            row.update({col: mean, f"{col}_low": low, f"{col}_high": high})
        testable = bool(group["learned"].all())
        (_, early_low, _), (_, late_low, _), (_, rec_low, rec_high) = (ci[c] for c in TRANSIENT_MEASURES)
        row["reading"] = drop_reading(early_low, late_low, rec_low, rec_high)
        recovers = RETENTION_CLAIMS["drop_recovers"]
        row["verdict"] = decide(rec_low, rec_high, recovers.direction, recovers.limit, testable=testable)
        rows.append(row)
    return pd.DataFrame(rows)


def _mean_ci(values: np.ndarray, rng: np.random.Generator) -> tuple[float, float, float]:
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if not len(values):
        return float("nan"), float("nan"), float("nan")
    if len(values) < 2:
        return float(values[0]), float("nan"), float("nan")
    mean, low, high = mean_ci(values, rng)
    return float(mean), float(low), float(high)


def _conditions(
    paths: Sequence[GainPath],
) -> tuple[dict[str, list[GainPath]], dict[str, tuple[np.ndarray, np.ndarray]], dict[str, float], float]:
    """Per condition of one (sequence, stage): its paths, its mean path and that path's largest gain;
    and the stage's :func:`stage_se`."""
    by_algo = _by_condition(paths)
    means = {a: mean_path(mine) for a, mine in by_algo.items()}
    top = {a: float(np.max(gain)) for a, (_, gain) in means.items()}
    return by_algo, means, top, stage_se(paths)


def _by_condition(paths: Sequence[GainPath]) -> dict[str, list[GainPath]]:
    groups: dict[str, list[GainPath]] = {}
    for p in paths:
        groups.setdefault(p.algo, []).append(p)
    return dict(sorted(groups.items()))


def _by_stage(paths: Sequence[GainPath]) -> dict[tuple[str, int], list[GainPath]]:
    groups: dict[tuple[str, int], list[GainPath]] = {}
    for p in paths:
        groups.setdefault((p.sequence, p.stage_index), []).append(p)
    return dict(sorted(groups.items()))


def learned_by_condition(matched: pd.DataFrame) -> Mapping[tuple[str, str], bool]:
    """Whether each (sequence, condition) learned every later stage (:func:`matched_gain_table`)."""
    return {(str(s), str(a)): bool(g["learned"].all()) for (s, a), g in matched.groupby(["sequence", "algo"])}
