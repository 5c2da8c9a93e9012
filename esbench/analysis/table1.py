"""Table 1 of Salimans et al. (2017): ES timesteps / TRPO timesteps to reach TRPO's progress.

For each environment, TRPO's mean evaluation curve over seeds gives ``init`` (its first point)
and ``final`` (its last); the target for fraction p is ``init + p * (final - init)`` (the
paper's "percentage of TRPO's learning progress", not ``p * final``). Each algorithm's time to a
target is the first timestep at which its mean curve reaches it. Where ES never reaches a target
the ratio is censored: ``> X`` with X = ES's last timestep / TRPO's timesteps (a lower bound,
never an invented number). The published ratio (supplementary Table 3) stands beside ours,
matched on ``gymnasium_id`` and ``progress_fraction``.

The paper's claims are data (``results/reference/salimans2017_claims.csv``: the quoted sentence,
its section, tasks, fraction, limit and direction; :func:`load_claims`). Each row a claim covers
gets two separate answers (:mod:`esbench.analysis.verdicts`): does the claim hold here (our ratio's
interval against the claim's limit) and did we reproduce the paper's number (our interval
contains the paper's ratio); :func:`claims_table` combines them per claim.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from esbench.analysis.ceiling import ceiling_columns, ceiling_note, load_best_known
from esbench.analysis.claims.multiplicity import Quantifier, decide_family, p_value
from esbench.analysis.curves import mean_curve
from esbench.analysis.load import is_es
from esbench.analysis.tables import fmt_num, write_table
from esbench.analysis.verdicts import (
    CONTRADICTED,
    SUPPORTED,
    TIME_CI_METHOD,
    UNDECIDED,
    TimeToTarget,
    Verdict,
    combine,
    ratio_interval,
    ratio_interval_at,
    ratio_verdict,
    reproduce_verdict,
    time_to_target,
)
from esbench.utils.resources import reference_dir

PROGRESS_FRACTIONS: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0)
REFERENCE_DIR = reference_dir()  # results/reference, shipped in the package
MUJOCO_REFERENCE = REFERENCE_DIR / "salimans2017_mujoco_table3.csv"
CLAIMS_FILE = REFERENCE_DIR / "salimans2017_claims.csv"

#: How a claim's limit applies across its tasks.
DIRECTIONS: tuple[str, ...] = ("below_on_every_task", "at_or_below_on_some_task")

TABLE1_COLUMNS: tuple[str, ...] = (
    "env_name",
    "env_id",
    "es_algo",
    "rl_algo",
    "progress_fraction",
    "init",
    "final",
    "target",
    "best_known",
    "near_ceiling",
    "beaten_at_start",
    "excluded",
    "rl_timesteps",
    "rl_low",
    "rl_high",
    "rl_text",
    "es_timesteps",
    "es_low",
    "es_high",
    "es_last_timesteps",
    "es_text",
    "censored",
    "ratio",
    "ratio_low",
    "ratio_high",
    "ratio_bound",
    "ratio_text",
    "paper_ratio",
    "n_seeds_es",
    "n_reached_es",
    "n_seeds_rl",
    "n_reached_rl",
    "stopped_below",
    "claim",
    "verdict",
    "decide",
    "p_supported",
    "p_contradicted",
    "reproduced",
    "reproduced_note",
    "partial",
)


@dataclass(frozen=True)
class Claim:
    """One of the paper's claims (a row of ``salimans2017_claims.csv``).

    Attributes:
        id: Short name (``A``, ``B``).
        section: The paper's section.
        quote: The paper's sentence, verbatim.
        tasks: Gymnasium ids the claim is about.
        fractions: Progress fractions it is tested at.
        limit: The bound on ES/TRPO timesteps.
        direction: One of :data:`DIRECTIONS`.
        reading: How esbench tests it, and why at those fractions.
        estimand: What is estimated (the ratio of times).
        estimator: How it is estimated, with its interval.
        family: The tasks and fraction the claim ranges over (its multiplicity family).
        correction: ``holm`` for a claim on some task, ``none (...)`` for one on every task (an
            intersection-union test needs none).
    """

    id: str
    section: str
    quote: str
    tasks: tuple[str, ...]
    fractions: tuple[float, ...]
    limit: float
    direction: str
    reading: str
    estimand: str = ""
    estimator: str = ""
    family: str = ""
    correction: str = ""

    @property
    def quantifier(self) -> Quantifier:
        """``every`` or ``some``: how the claim ranges over its tasks."""
        return "every" if self.direction == "below_on_every_task" else "some"

    @property
    def inclusive(self) -> bool:
        """Whether a ratio equal to the limit satisfies the claim (``at_or_below``)."""
        return self.direction.startswith("at_or_below")

    def covers(self, env_id: str, fraction: float) -> bool:
        """Whether this claim is about ``env_id`` at ``fraction``."""
        return env_id in self.tasks and any(abs(fraction - f) < 1e-9 for f in self.fractions)

    def limit_text(self) -> str:
        """``< 10x on every task`` / ``<= 0.333x on some task``."""
        op = "<=" if self.inclusive else "<"
        where = "every task" if self.direction == "below_on_every_task" else "at least one task"
        return f"ES/TRPO {op} {fmt_num(self.limit, 3)} on {where}"


def load_claims(path: str | Path = CLAIMS_FILE) -> list[Claim]:
    """The paper's claims, from data.

    Raises:
        ValueError: A row with an unknown ``direction``, or a ``correction`` that does not match it
            (a claim on some task needs ``holm``; one on every task none), naming the row.
    """
    claims = []
    for r in pd.read_csv(path, dtype={"section": str}).itertuples():
        if r.direction not in DIRECTIONS:
            raise ValueError(
                f"{path}: claim {r.id}: direction={r.direction!r} is unknown; "
                f"allowed: {', '.join(DIRECTIONS)}"
            )
        correction = str(r.correction)
        wanted = "none" if r.direction == "below_on_every_task" else "holm"
        if correction.split(" ")[0] != wanted:
            raise ValueError(
                f"{path}: claim {r.id}: correction={correction!r} does not fit direction={r.direction!r}; "
                f"allowed: {wanted!r} (Holm over the tasks of a claim on some task, none for every task)"
            )
        claims.append(
            Claim(
                id=str(r.id),
                section=str(r.section),
                quote=str(r.quote),
                tasks=tuple(str(r.tasks).split(";")),
                fractions=tuple(float(f) for f in str(r.fractions).split(";")),
                limit=float(r.limit),
                direction=str(r.direction),
                reading=str(r.reading),
                estimand=str(r.estimand),
                estimator=str(r.estimator),
                family=str(r.family),
                correction=correction,
            )
        )
    return claims


def claim_for(claims: Sequence[Claim], env_id: str, fraction: float) -> Claim | None:
    """The claim covering ``env_id`` at ``fraction`` (None: the paper claims nothing there)."""
    return next((c for c in claims if c.covers(env_id, fraction)), None)


def load_mujoco_reference(path: str | Path = MUJOCO_REFERENCE) -> pd.DataFrame:
    """The published Table 1 / supplementary Table 3 (one row per env and progress fraction)."""
    return pd.read_csv(path)


def progress_targets(
    init: float, final: float, fractions: Sequence[float] = PROGRESS_FRACTIONS
) -> np.ndarray:
    """Targets ``init + p * (final - init)``, with p = 1 exactly ``final``.

    Returns:
        Array of shape (len(fractions),).
    """
    out = np.array([init + p * (final - init) for p in fractions], dtype=float)
    out[np.asarray(fractions) == 1.0] = final
    return out


def ratio_entry(es_t: float, rl_t: float, es_last: float) -> tuple[float, float, bool, str]:
    """One Table 1 cell.

    Args:
        es_t: ES's first timestep at the target (NaN if never reached).
        rl_t: TRPO's first timestep at the target (NaN if never reached).
        es_last: ES's last observed timestep (the censoring point).

    Returns:
        (ratio, bound, censored, text). A censored cell has ratio NaN, bound es_last / rl_t and
        text ``"> bound"``; a cell whose TRPO median is unbounded has text ``"n/a (...)"``.
    """
    if not np.isfinite(rl_t) or rl_t <= 0:
        return float("nan"), float("nan"), False, "n/a (TRPO's median run never reached it)"
    if not np.isfinite(es_t):
        bound = es_last / rl_t
        return float("nan"), bound, True, f"> {fmt_num(bound, 2)}"
    ratio = es_t / rl_t
    return ratio, float("nan"), False, fmt_num(ratio, 2)


def beaten_at_start(runs: pd.DataFrame, target: float) -> bool:
    """Whether every run of ``runs`` evaluated at or above ``target`` at its first evaluation (the
    untrained policy, at timestep 0): such a target measures nothing learned (HalfCheetah's 25%
    target, -1.35, is beaten by every untrained policy). False without evaluations."""
    evals = runs.dropna(subset=["eval_return_mean"]).sort_values("timesteps", kind="stable")
    if evals.empty:
        return False
    first = evals.groupby("run_id", sort=True)["eval_return_mean"].first().to_numpy(float)
    return bool(np.all(first >= target))


def excluded_reason(near: bool, beaten: bool) -> str:
    """Why a row never decides a claim ("" when it may): its target is within 5% of the task's
    ceiling (:mod:`esbench.analysis.ceiling`), or the untrained policy beats it at timestep 0."""
    if near:
        return "target within 5% of the task's ceiling"
    if beaten:
        return "target beaten by the untrained policy at timestep 0"
    return ""


def claim_p_values(
    claim: Claim | None, es: TimeToTarget, base: TimeToTarget | float, excluded: str
) -> tuple[float, float]:
    """(p for the claim's side, p for the other) of one row
    (:func:`esbench.analysis.claims.multiplicity.p_value` on the ratio's interval at each level);
    (1, 1) where no claim covers it, it is excluded, or it has no interval."""
    if claim is None or excluded:
        return 1.0, 1.0
    interval = functools.partial(ratio_interval_at, es, base)
    if np.isnan(interval(0.5)[0]):
        return 1.0, 1.0
    return (
        p_value(interval, claim.limit, "below", SUPPORTED, claim.inclusive),
        p_value(interval, claim.limit, "below", CONTRADICTED, claim.inclusive),
    )


def table1(
    curves: pd.DataFrame,
    reference: pd.DataFrame | None = None,
    rl_algo: str = "trpo",
    fractions: Sequence[float] = PROGRESS_FRACTIONS,
    partial: set[tuple[object, ...]] | None = None,
    rng: np.random.Generator | None = None,
    stopped: set[object] | None = None,
    claims: Sequence[Claim] | None = None,
) -> pd.DataFrame:
    """Compute Table 1 for every environment with both an ES algorithm and ``rl_algo``.

    The targets come from TRPO's mean curve over seeds (the paper's definition). Each side's time to
    a target is the Kaplan-Meier median of its runs' first confirmed times, censored at the budget
    where a run never got there (:func:`esbench.analysis.verdicts.time_to_target`), and the ratio's
    interval carries both sides' uncertainty (:func:`esbench.analysis.verdicts.ratio_interval`).
    Each row a claim covers (:func:`load_claims`) gets its verdict against the claim's limit and
    its p-values (the claim's family is decided in :func:`claims_table`); every row with a published
    ratio gets the answer to "does our ratio's interval contain the paper's?". A row whose target is
    near the task's ceiling or beaten at timestep 0 is flagged (``excluded``) and decides no claim.

    Args:
        curves: The curve table (:func:`esbench.analysis.load.load_curves`).
        reference: Published table (:func:`load_mujoco_reference`); None leaves paper_ratio NaN.
        rl_algo: The baseline whose curve defines the targets.
        fractions: Progress fractions p.
        partial: (algo, env_id) keys with missing runs or too few seeds (marked in ``partial``).
        rng: Unused (the intervals draw nothing); kept so every table function takes one.
        stopped: run_ids of runs that ended at their target score.
        claims: The paper's claims; default :func:`load_claims`.

    Returns:
        DataFrame with columns :data:`TABLE1_COLUMNS`, one row per (env, ES algo, p).
    """
    del rng
    claims = load_claims() if claims is None else claims
    best = load_best_known()
    partial = partial or set()
    stopped = stopped or set()
    ref: dict[tuple[str, float], float] = {}
    names: dict[str, str] = {}
    if reference is not None:
        names = dict(zip(reference["gymnasium_id"], reference["env"], strict=True))
        ref = {
            (r.gymnasium_id, round(float(r.progress_fraction), 6)): float(r.es_over_trpo)
            for r in reference.itertuples()
        }
    rows = []
    for env_id, env in curves.groupby("env_id", sort=True):
        rl = env[env["algo"] == rl_algo]
        es_algos = sorted(a for a in env["algo"].unique() if is_es(a))
        if rl.empty or not es_algos:
            continue
        rl_curve = mean_curve(rl, stopped=stopped)
        if rl_curve.empty:
            continue
        rl_y = rl_curve["mean"].to_numpy()
        init, final = float(rl_y[0]), float(rl_y[-1])
        targets = progress_targets(init, final, fractions)
        progressed = final > init
        for es_algo in es_algos:
            runs = env[env["algo"] == es_algo]
            for p, target in zip(fractions, targets, strict=True):
                tt = time_to_target(runs, float(target), stopped=stopped)
                rl_tt = time_to_target(rl, float(target), stopped=stopped)
                rl_t = rl_tt.point if progressed else float("nan")
                ratio, bound, censored, text = ratio_entry(tt.point, rl_t, tt.last)
                ri = ratio_interval(tt, rl_tt)
                paper_ratio = ref.get((env_id, round(float(p), 6)), float("nan"))
                claim = claim_for(claims, str(env_id), float(p))
                ceiling = ceiling_columns(str(env_id), float(target), best)
                beaten = beaten_at_start(runs, float(target))
                excluded = excluded_reason(bool(ceiling["near_ceiling"]), beaten)
                verdict: Verdict | None = None
                reproduced: Verdict | None = None
                p_sup, p_con = 1.0, 1.0
                if not progressed:
                    text = "n/a (no TRPO progress)"
                    verdict = Verdict(UNDECIDED, "TRPO's mean curve made no progress") if claim else None
                else:
                    if claim is not None:
                        verdict = ratio_verdict(ri, claim.limit, rl_t, claim.inclusive)
                        p_sup, p_con = claim_p_values(claim, tt, rl_tt, excluded)
                    if np.isfinite(paper_ratio):
                        reproduced = reproduce_verdict(ri, paper_ratio)
                rows.append(
                    {
                        "env_name": names.get(str(env_id), str(env["env_name"].iloc[0])),
                        "env_id": env_id,
                        "es_algo": es_algo,
                        "rl_algo": rl_algo,
                        "progress_fraction": float(p),
                        "init": init,
                        "final": final,
                        "target": float(target),
                        **ceiling,
                        "beaten_at_start": beaten,
                        "excluded": excluded,
                        "rl_timesteps": rl_t,
                        "rl_low": rl_tt.low,
                        "rl_high": rl_tt.high,
                        "rl_text": rl_tt.cell_text(),
                        "es_timesteps": tt.point,
                        "es_low": tt.low,
                        "es_high": tt.high,
                        "es_last_timesteps": tt.last,
                        "es_text": tt.cell_text(),
                        "censored": censored,
                        "ratio": ratio,
                        "ratio_low": ri.low if progressed else float("nan"),
                        "ratio_high": ri.high if progressed else float("nan"),
                        "ratio_bound": bound,
                        "ratio_text": text,
                        "paper_ratio": paper_ratio,
                        "n_seeds_es": tt.n_seeds,
                        "n_reached_es": tt.n_reached,
                        "n_seeds_rl": rl_tt.n_seeds,
                        "n_reached_rl": rl_tt.n_reached,
                        "stopped_below": tt.stopped_below,
                        "claim": claim.id if claim else "",
                        "verdict": verdict.word if verdict else "",
                        "decide": verdict.decide if verdict else "",
                        "p_supported": p_sup,
                        "p_contradicted": p_con,
                        "reproduced": reproduced.word if reproduced else "",
                        "reproduced_note": reproduced.decide if reproduced else "",
                        "partial": (es_algo, env_id) in partial or (rl_algo, env_id) in partial,
                    }
                )
    return pd.DataFrame(rows, columns=list(TABLE1_COLUMNS))


def display_table1(table: pd.DataFrame) -> pd.DataFrame:
    """Formatted strings for Markdown/LaTeX; partial conditions get a ``*`` mark on the env."""
    out = pd.DataFrame(
        {
            "Environment": [f"{r.env_name}{' *' if r.partial else ''}" for r in table.itertuples()],
            "% TRPO progress": [f"{round(100 * p)}%" for p in table["progress_fraction"]],
            "Target score": _target_cells(table),
            "TRPO timesteps [95% CI]": table["rl_text"].tolist(),
            "ES timesteps [95% CI]": table["es_text"].tolist(),
            "ES/TRPO (ours) [95% CI]": [
                _ratio_text(r.ratio, r.ratio_low, r.ratio_high, r.es_last_timesteps / r.rl_timesteps)
                if np.isfinite(r.rl_timesteps) and not np.isnan(r.ratio_low)
                else r.ratio_text
                for r in table.itertuples()
            ],
            "ES/TRPO (paper)": [fmt_num(v, 3) or "—" for v in table["paper_ratio"]],
            "Claim holds here": _claim_cells(table),
            "Paper's ratio reproduced": _reproduced_cells(table),
        }
    )
    if table["es_algo"].nunique() > 1:
        out.insert(1, "ES", table["es_algo"].tolist())
    return out


def _target_cells(table: pd.DataFrame) -> list[str]:
    """Target scores, marked ``†`` where within 5% of the task's best known return
    (:mod:`esbench.analysis.ceiling`) and ``§`` where the untrained policy beats it at timestep 0."""
    return [
        f"{fmt_num(v, 4)}{' †' if near else ''}{' §' if beaten else ''}"
        for v, near, beaten in zip(
            table["target"], table["near_ceiling"], table["beaten_at_start"], strict=True
        )
    ]


def _claim_cells(table: pd.DataFrame) -> list[str]:
    """``B: supported`` for the rows a claim covers (the claim's id and this row's own verdict at
    95%), ``B: excluded`` where its target decides no claim, else —."""
    return [
        ("—" if not c else f"{c}: excluded" if x else f"{c}: {v}")
        for c, v, x in zip(table["claim"], table["verdict"], table["excluded"], strict=True)
    ]


def _reproduced_cells(table: pd.DataFrame) -> list[str]:
    """``supported``, ``contradicted (ours faster)``/``(ours slower)``, ``undecided``, or —."""
    out = []
    for word, note in zip(table["reproduced"], table["reproduced_note"], strict=True):
        if word == "contradicted":
            word += " (ours faster)" if note.startswith("ours faster") else " (ours slower)"
        out.append(word or "—")
    return out


def _notes_common(table: pd.DataFrame) -> str:
    """What every Table 1 caption says: the estimator, the claim cells, the flags."""
    text = (
        f"Times: {TIME_CI_METHOD} (95%; coverage: docs/statistics.md); where a run was censored, the "
        "share reached within the budget with its Clopper-Pearson interval. Claim cells: this row's "
        "interval against the claim's limit; the claim itself is decided over its tasks (Holm for "
        "a claim on some task)."
    )
    if table["beaten_at_start"].astype(bool).any():
        text += " §: the untrained policy beats the target at timestep 0 (decides no claim)."
    return text


def write_table1(table: pd.DataFrame, out_dir: str | Path) -> dict[str, Path]:
    """Write ``table1.csv``/``.md``/``.tex`` under ``out_dir``."""
    notes = (
        "Target = init + p (final - init) of TRPO's mean evaluation curve. ES/TRPO: ratio of the "
        "medians, its interval over both sides' runs (each side at sqrt(0.95)). '> X': unbounded by "
        "runs censored by timestep X. " + _notes_common(table)
    )
    notes += ceiling_note(table[table["near_ceiling"].astype(bool)])
    if table["partial"].any():
        notes += " *: partial results (missing runs or fewer seeds than other conditions)."
    return write_table(
        table,
        display_table1(table),
        Path(out_dir) / "table1",
        caption="Table 1: ES timesteps / TRPO timesteps to reach a fraction of TRPO's learning progress",
        label="tab:table1",
        notes=notes,
    )


# --- Table 1 against the paper's own TRPO curve ---------------------------------------------------

PAPER_COLUMNS: tuple[str, ...] = (
    "env_name",
    "env_id",
    "es_algo",
    "progress_fraction",
    "target",
    "best_known",
    "near_ceiling",
    "beaten_at_start",
    "excluded",
    "paper_trpo_timesteps",
    "paper_es_timesteps",
    "paper_ratio",
    "es_timesteps",
    "es_low",
    "es_high",
    "es_last_timesteps",
    "es_text",
    "ours_over_paper_es",
    "ratio",
    "ratio_low",
    "ratio_high",
    "n_seeds_es",
    "n_reached_es",
    "stopped_below",
    "claim",
    "verdict",
    "decide",
    "p_supported",
    "p_contradicted",
    "reproduced",
    "reproduced_note",
    "partial",
)


def table1_paper(
    curves: pd.DataFrame,
    reference: pd.DataFrame,
    rng: np.random.Generator | None = None,
    stopped: set[object] | None = None,
    partial: set[tuple[object, ...]] | None = None,
    claims: Sequence[Claim] | None = None,
) -> pd.DataFrame:
    """Our ES against the paper's TRPO targets (supplementary Table 3), per env, ES algo and p.

    The paper publishes, for every environment and fraction p, TRPO's target score and the
    timesteps TRPO and ES needed to reach it. This table reads our ES's time to that same score
    off its mean curve over seeds (interval: :func:`esbench.analysis.verdicts.time_to_target`),
    and gives ours / the paper's ES timesteps (does esbench's ES behave like the paper's?) and
    ours / the paper's TRPO timesteps (the paper's Table 1 ratio, with our ES in it; the paper's
    TRPO timesteps are a published constant). Each row gets the verdict of the claim covering it
    (:func:`load_claims`) and whether our ratio's interval contains the paper's.

    Returns:
        DataFrame with columns :data:`PAPER_COLUMNS`.
    """
    del rng
    claims = load_claims() if claims is None else claims
    best = load_best_known()
    partial = partial or set()
    rows = []
    for env_id, env in curves.groupby("env_id", sort=True):
        ref = reference[reference["gymnasium_id"] == env_id]
        if ref.empty:
            continue
        for es_algo in sorted(a for a in env["algo"].unique() if is_es(a)):
            runs = env[env["algo"] == es_algo]
            for r in ref.sort_values("progress_fraction").itertuples():
                target = float(r.trpo_score)
                tt = time_to_target(runs, target, stopped=stopped)
                trpo_t, es_t = float(r.trpo_timesteps), float(r.es_timesteps)
                ri = ratio_interval(tt, trpo_t)
                claim = claim_for(claims, str(env_id), float(r.progress_fraction))
                ceiling = ceiling_columns(str(env_id), target, best)
                beaten = beaten_at_start(runs, target)
                excluded = excluded_reason(bool(ceiling["near_ceiling"]), beaten)
                verdict = ratio_verdict(ri, claim.limit, trpo_t, claim.inclusive) if claim else None
                p_sup, p_con = claim_p_values(claim, tt, trpo_t, excluded)
                reproduced = reproduce_verdict(ri, float(r.es_over_trpo))
                rows.append(
                    {
                        "env_name": str(r.env),
                        "env_id": env_id,
                        "es_algo": es_algo,
                        "progress_fraction": float(r.progress_fraction),
                        "target": target,
                        **ceiling,
                        "beaten_at_start": beaten,
                        "excluded": excluded,
                        "paper_trpo_timesteps": trpo_t,
                        "paper_es_timesteps": es_t,
                        "paper_ratio": float(r.es_over_trpo),
                        "es_timesteps": tt.point,
                        "es_low": tt.low,
                        "es_high": tt.high,
                        "es_last_timesteps": tt.last,
                        "es_text": tt.cell_text(),
                        "ours_over_paper_es": tt.point / es_t,
                        "ratio": ri.point,
                        "ratio_low": ri.low,
                        "ratio_high": ri.high,
                        "n_seeds_es": tt.n_seeds,
                        "n_reached_es": tt.n_reached,
                        "stopped_below": tt.stopped_below,
                        "claim": claim.id if claim else "",
                        "verdict": verdict.word if verdict else "",
                        "decide": verdict.decide if verdict else "",
                        "p_supported": p_sup,
                        "p_contradicted": p_con,
                        "reproduced": reproduced.word,
                        "reproduced_note": reproduced.decide,
                        "partial": (es_algo, env_id) in partial,
                    }
                )
    return pd.DataFrame(rows, columns=list(PAPER_COLUMNS))


def _ratio_text(point: float, low: float, high: float, last_over: float) -> str:
    """``point [low, high]``; a missing point (ES's mean curve never reached the target) reads
    ``> last_over``, like an interval end ES did not reach."""
    if np.isnan(point):
        point = np.inf

    def one(v: float) -> str:
        return f"> {fmt_num(last_over, 2)}" if np.isposinf(v) else fmt_num(v, 2)

    if np.isnan(low):
        return one(point)
    return f"{one(point)} [{one(low)}, {one(high)}]"


def display_table1_paper(table: pd.DataFrame) -> pd.DataFrame:
    """Formatted strings for Markdown/LaTeX of :func:`table1_paper`."""
    out = pd.DataFrame(
        {
            "Environment": [f"{r.env_name}{' *' if r.partial else ''}" for r in table.itertuples()],
            "% TRPO progress": [f"{round(100 * p)}%" for p in table["progress_fraction"]],
            "Target (paper's TRPO)": _target_cells(table),
            "ES timesteps, ours [95% CI]": table["es_text"].tolist(),
            "ES timesteps, paper": [fmt_num(v) for v in table["paper_es_timesteps"]],
            "Ours / paper ES": [
                f"> {fmt_num(r.es_last_timesteps / r.paper_es_timesteps, 2)}"
                if np.isposinf(r.es_timesteps)
                else fmt_num(r.ours_over_paper_es, 2)
                for r in table.itertuples()
            ],
            "ES/TRPO, ours over paper's TRPO [95% CI]": [
                _ratio_text(r.ratio, r.ratio_low, r.ratio_high, r.es_last_timesteps / r.paper_trpo_timesteps)
                for r in table.itertuples()
            ],
            "ES/TRPO (paper)": [fmt_num(v, 3) for v in table["paper_ratio"]],
            "Claim holds here": _claim_cells(table),
            "Paper's ratio reproduced": _reproduced_cells(table),
        }
    )
    if table["es_algo"].nunique() > 1:
        out.insert(1, "ES", table["es_algo"].tolist())
    return out


def write_table1_paper(table: pd.DataFrame, out_dir: str | Path) -> dict[str, Path]:
    """Write ``table1_paper.csv``/``.md``/``.tex`` under ``out_dir``."""
    notes = (
        "Targets: the paper's TRPO scores (supplementary Table 3); ratios divide by the paper's TRPO "
        "timesteps, a published constant, so they ask whether our ES behaves like the paper's ES. "
        "'> X': unbounded by runs censored by timestep X. " + _notes_common(table)
    )
    notes += ceiling_note(table[table["near_ceiling"].astype(bool)])
    if table["partial"].any():
        notes += " *: partial results (missing runs or fewer seeds than other conditions)."
    return write_table(
        table,
        display_table1_paper(table),
        Path(out_dir) / "table1_paper",
        caption="Table 1 against the paper's own TRPO curve: our ES's timesteps to the paper's TRPO targets",
        label="tab:table1_paper",
        notes=notes,
    )


# --- The paper's claims, each with its two answers ------------------------------------------------

CLAIM_COLUMNS: tuple[str, ...] = (
    "claim",
    "section",
    "quote",
    "reading",
    "limit_text",
    "es_algo",
    "paper",
    "ours_paper_trpo",
    "holds_paper_trpo",
    "holds_paper_trpo_note",
    "ours_our_trpo",
    "holds_our_trpo",
    "holds_our_trpo_note",
    "reproduced",
    "reproduced_note",
)


def _claim_holds(claim: Claim, rows: pd.DataFrame) -> tuple[str, str]:
    """(label, note) of "does the claim hold here" from the rows it covers (one per task): the
    family's verdict over every task the claim ranges over
    (:func:`esbench.analysis.claims.multiplicity.decide_family`, Holm for a claim on some task), a
    task without runs or excluded entering with p = 1. No label when no run covers any of its
    tasks (a report of the hard tasks alone says so of the simple tasks' claim)."""
    if rows.empty:
        return "", f"not tested: no runs on {', '.join(claim.tasks)}"
    by_task = {str(r.env_id): r for r in rows.itertuples()}
    sup = [float(by_task[t].p_supported) if t in by_task else 1.0 for t in claim.tasks]
    con = [float(by_task[t].p_contradicted) if t in by_task else 1.0 for t in claim.tasks]
    word = decide_family(sup, con, claim.quantifier)
    notes = [
        f"{r.env_name}: excluded ({r.excluded})" if r.excluded else f"{r.env_name}: {_p_text(r.p_supported)}"
        for r in rows.itertuples()
    ]
    missing = [t for t in claim.tasks if t not in by_task]
    if missing:
        notes.append(f"no runs on {', '.join(missing)}")
    how = "Holm over" if claim.quantifier == "some" else "every one of"
    return word, f"{how} {len(claim.tasks)} tasks; " + "; ".join(notes)


def _p_text(p: float) -> str:
    """``p = 0.062``, or "no interval on the claim's side" where none is at any level (p = 1)."""
    return "no interval on the claim's side" if p >= 1.0 else f"p = {fmt_num(p, 2)}"


def _claim_answer(claim: Claim, rows: pd.DataFrame) -> tuple[str, str]:
    """(label, note) of "did we reproduce the paper's number": on every task the claim covers."""
    if rows.empty:
        return "", f"not tested: no runs on {', '.join(claim.tasks)}"
    verdicts = [
        Verdict(w, f"{name}: {n}" if n else "")
        for name, w, n in zip(rows["env_name"], rows["reproduced"], rows["reproduced_note"], strict=True)
        if w
    ]
    missing = [t for t in claim.tasks if t not in set(rows["env_id"])]
    if missing:
        verdicts.append(Verdict(UNDECIDED, f"no runs on {', '.join(missing)}"))
    v = combine(verdicts)
    return v.word, v.decide


def _per_task(rows: pd.DataFrame, cell: Callable[[Any], str]) -> str:
    return "; ".join(f"{r.env_name}: {cell(r)}" for r in rows.itertuples()) or "—"


def _paper_trpo_cell(r: Any) -> str:
    """Our ES over the paper's TRPO timesteps, with its interval and seeds (a table1_paper row)."""
    last = r.es_last_timesteps / r.paper_trpo_timesteps
    return _ratio_text(r.ratio, r.ratio_low, r.ratio_high, last) + f" (n={r.n_seeds_es})"


def _our_trpo_cell(r: Any) -> str:
    """Our ES over our TRPO, with its interval over both sides' seeds (a table1 row)."""
    if not np.isfinite(r.rl_timesteps):
        text = r.ratio_text
    elif not np.isnan(r.ratio_low):
        text = _ratio_text(r.ratio, r.ratio_low, r.ratio_high, r.es_last_timesteps / r.rl_timesteps)
    else:
        text = r.ratio_text
    return text + f" (n={r.n_seeds_es} ES, {r.n_seeds_rl} TRPO)"


def claims_table(
    paper: pd.DataFrame, ours: pd.DataFrame | None = None, claims: Sequence[Claim] | None = None
) -> pd.DataFrame:
    """One row per (claim, ES algo): the paper's words and its numbers, then the two answers.

    **Does the claim hold here**: from our ratios against the paper's TRPO (``paper``, a
    :func:`table1_paper`) and, where we ran TRPO, against ours (``ours``, a :func:`table1`); a
    claim on every task is supported when every task's p-value is at most 0.05 (an
    intersection-union test), one on some task when Holm's step-down over its tasks rejects for at
    least one; an excluded task (near its ceiling, or beaten at timestep 0) decides nothing.
    **Did we reproduce the paper's number**: on every task the claim covers, our ratio's interval
    (over the paper's TRPO timesteps) contains the paper's ratio; otherwise the note says where
    ours is faster or slower than the paper's ES.

    Args:
        paper: :func:`table1_paper` of the runs.
        ours: :func:`table1` of the runs (None or empty: no TRPO of ours).
        claims: Default :func:`load_claims`.

    Returns:
        DataFrame with columns :data:`CLAIM_COLUMNS`.
    """
    claims = load_claims() if claims is None else claims
    ours = ours if ours is not None else pd.DataFrame(columns=list(TABLE1_COLUMNS))
    algos = sorted(set(paper["es_algo"]) | set(ours["es_algo"]))
    out = []
    for claim in claims:
        for es_algo in algos:
            p = paper[(paper["es_algo"] == es_algo) & (paper["claim"] == claim.id)]
            o = ours[(ours["es_algo"] == es_algo) & (ours["claim"] == claim.id)]
            holds_p = _claim_holds(claim, p)
            holds_o = _claim_holds(claim, o) if not o.empty else ("", "we ran no TRPO on these tasks")
            rep = _claim_answer(claim, p)
            out.append(
                {
                    "claim": claim.id,
                    "section": claim.section,
                    "quote": claim.quote,
                    "reading": claim.reading,
                    "limit_text": claim.limit_text(),
                    "es_algo": es_algo,
                    "paper": _per_task(p, lambda r: fmt_num(r.paper_ratio, 3)),
                    "ours_paper_trpo": _per_task(p, _paper_trpo_cell),
                    "holds_paper_trpo": holds_p[0],
                    "holds_paper_trpo_note": holds_p[1],
                    "ours_our_trpo": _per_task(o, _our_trpo_cell),
                    "holds_our_trpo": holds_o[0],
                    "holds_our_trpo_note": holds_o[1],
                    "reproduced": rep[0],
                    "reproduced_note": rep[1],
                }
            )
    return pd.DataFrame(out, columns=list(CLAIM_COLUMNS))


def _answer(word: str, note: str) -> str:
    if not word:
        return f"— ({note})" if note else "—"
    return f"**{word}**" + (f": {note}" if note else "")


def claims_markdown(table: pd.DataFrame) -> str:
    """The claims with their answers, as Markdown: one block per claim (its words, its reading),
    then a table of the answers per ES algorithm."""
    blocks = []
    for claim_id, rows in table.groupby("claim", sort=True):
        first = rows.iloc[0]
        lines = [
            f"**Claim {claim_id}** (Section {first['section']}): \u201c{first['quote']}\u201d  ",
            f"Tested as: {first['limit_text']}. {first['reading']}",
            "",
            "| ES | Paper's ES/TRPO | Ours / paper's TRPO [95% CI] | Holds here (paper's TRPO) | "
            "Ours / our TRPO [95% CI] | Holds here (our TRPO) | Paper's number reproduced |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in rows.itertuples():
            lines.append(
                f"| {r.es_algo} | {r.paper} | {r.ours_paper_trpo} | "
                f"{_answer(r.holds_paper_trpo, r.holds_paper_trpo_note)} | {r.ours_our_trpo} | "
                f"{_answer(r.holds_our_trpo, r.holds_our_trpo_note)} | "
                f"{_answer(r.reproduced, r.reproduced_note)} |"
            )
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)


def claim_rows(table: pd.DataFrame) -> list[str]:
    """Rows ``| claim | paper | ours | verdict |`` of a report's claims table, one per (claim, ES)."""
    out = []
    for r in table.itertuples():
        words = f"{r.claim} (Sec. {r.section}): \u201c{r.quote}\u201d" + (
            f" ({r.es_algo})" if table["es_algo"].nunique() > 1 else ""
        )
        ours = f"over the paper's TRPO: {r.ours_paper_trpo}"
        if r.ours_our_trpo != "—":
            ours += f"; over our TRPO: {r.ours_our_trpo}"
        verdict = (
            f"holds here vs the paper's TRPO: {_answer(r.holds_paper_trpo, r.holds_paper_trpo_note)}; "
            f"vs our TRPO: {_answer(r.holds_our_trpo, r.holds_our_trpo_note)}; "
            f"paper's number reproduced: {_answer(r.reproduced, r.reproduced_note)}"
        )
        out.append(f"| {words} | {r.paper} | {ours} | {verdict} |")
    return out
