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

import dataclasses
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from esbench.analysis.ceiling import ceiling_columns, ceiling_note, load_best_known
from esbench.analysis.curves import first_reach, mean_curve
from esbench.analysis.load import is_es
from esbench.analysis.tables import fmt_num, write_table
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
    "rl_timesteps",
    "es_timesteps",
    "es_low",
    "es_high",
    "es_last_timesteps",
    "censored",
    "ratio",
    "ratio_low",
    "ratio_high",
    "ratio_bound",
    "ratio_text",
    "paper_ratio",
    "n_seeds_es",
    "n_seeds_rl",
    "stopped_below",
    "per_run",
    "claim",
    "verdict",
    "decide",
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
    """

    id: str
    section: str
    quote: str
    tasks: tuple[str, ...]
    fractions: tuple[float, ...]
    limit: float
    direction: str
    reading: str

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
        ValueError: A row with an unknown ``direction`` (names the row and the allowed values).
    """
    claims = []
    for r in pd.read_csv(path, dtype={"section": str}).itertuples():
        if r.direction not in DIRECTIONS:
            raise ValueError(
                f"{path}: claim {r.id}: direction={r.direction!r} is unknown; "
                f"allowed: {', '.join(DIRECTIONS)}"
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
        text ``"> bound"``; a cell TRPO never reached has text ``"n/a"``.
    """
    if not np.isfinite(rl_t) or rl_t <= 0:
        return float("nan"), float("nan"), False, "n/a"
    if not np.isfinite(es_t):
        bound = es_last / rl_t
        return float("nan"), bound, True, f"> {fmt_num(bound, 2)}"
    ratio = es_t / rl_t
    return ratio, float("nan"), False, fmt_num(ratio, 2)


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

    ES's time to each target is read off its mean curve over seeds, with the interval of its
    inverted Student-t band (:func:`esbench.analysis.verdicts.time_to_target`); TRPO's time is read
    off TRPO's mean curve, which also defines the targets (the paper's definition). TRPO's seeds
    are random too, so the ratio's interval resamples both sides
    (:func:`esbench.analysis.verdicts.ratio_interval`). Each row a claim covers (:func:`load_claims`)
    gets its verdict against the claim's limit; every row with a published ratio gets the answer
    to "does our ratio's interval contain the paper's?".

    Runs in ``stopped`` ended at a target score (``budget.stop_at_return``): they count as having
    reached every target up to their stopping score, at their stopping timestep, and are censored at
    their stop for higher targets (``stopped_below``); they never cut the other seeds short.

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
        ``es_timesteps`` is NaN where ES's mean curve never reached the target; ``es_low`` /
        ``es_high`` (95%) are +inf where the band's edge did not reach it; ``ratio_low`` /
        ``ratio_high`` are the ratio's 95% interval (both sides' seeds).
    """
    from esbench.analysis.verdicts import (
        SIDE_CONFIDENCE,
        UNDECIDED,
        Verdict,
        ratio_interval,
        ratio_verdict,
        reproduce_verdict,
        time_to_target,
    )

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
        rl_x, rl_y = rl_curve["x"].to_numpy(), rl_curve["mean"].to_numpy()
        init, final = float(rl_y[0]), float(rl_y[-1])
        targets = progress_targets(init, final, fractions)
        progressed = final > init
        for es_algo in es_algos:
            runs = env[env["algo"] == es_algo]
            for p, target in zip(fractions, targets, strict=True):
                tt = time_to_target(runs, float(target), stopped=stopped)
                rl_t = first_reach(rl_x, rl_y, target) if progressed else float("nan")
                es_t = tt.point if progressed and tt.reached else float("nan")
                ratio, bound, censored, text = ratio_entry(es_t, rl_t, tt.last)
                es_side = time_to_target(runs, float(target), stopped=stopped, confidence=SIDE_CONFIDENCE)
                rl_side = time_to_target(rl, float(target), stopped=stopped, confidence=SIDE_CONFIDENCE)
                ri = ratio_interval(es_side, dataclasses.replace(rl_side, point=rl_t))
                paper_ratio = ref.get((env_id, round(float(p), 6)), float("nan"))
                claim = claim_for(claims, str(env_id), float(p))
                verdict: Verdict | None = None
                reproduced: Verdict | None = None
                if not progressed:
                    text = "n/a (no TRPO progress)"
                    verdict = Verdict(UNDECIDED, "TRPO's mean curve made no progress") if claim else None
                else:
                    if claim is not None:
                        verdict = ratio_verdict(ri, claim.limit, claim.inclusive, tt, float(target), rl_t)
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
                        **ceiling_columns(str(env_id), float(target), best),
                        "rl_timesteps": rl_t,
                        "es_timesteps": es_t,
                        "es_low": tt.low,
                        "es_high": tt.high,
                        "es_last_timesteps": tt.last,
                        "censored": censored,
                        "ratio": ratio,
                        "ratio_low": ri.low if progressed else float("nan"),
                        "ratio_high": ri.high if progressed else float("nan"),
                        "ratio_bound": bound,
                        "ratio_text": text,
                        "paper_ratio": paper_ratio,
                        "n_seeds_es": tt.n_seeds,
                        "n_seeds_rl": int(rl_curve["n_seeds"].iloc[0]),
                        "stopped_below": tt.stopped_below,
                        "per_run": tt.per_run,
                        "claim": claim.id if claim else "",
                        "verdict": verdict.word if verdict else "",
                        "decide": verdict.decide if verdict else "",
                        "reproduced": reproduced.word if reproduced else "",
                        "reproduced_note": reproduced.decide if reproduced else "",
                        "partial": (es_algo, env_id) in partial or (rl_algo, env_id) in partial,
                    }
                )
    return pd.DataFrame(rows, columns=list(TABLE1_COLUMNS))


def _es_cell(point: float, low: float, high: float, last: float) -> str:
    """ES timesteps ``point [low, high]``, ``> last`` for an end (or point) that was not reached."""

    def one(v: float) -> str:
        return f"> {fmt_num(last)}" if not np.isfinite(v) else fmt_num(v)

    if not (np.isfinite(low) or np.isposinf(low)):
        return one(point)
    return f"{one(point)} [{one(low)}, {one(high)}]"


def display_table1(table: pd.DataFrame) -> pd.DataFrame:
    """Formatted strings for Markdown/LaTeX; partial conditions get a ``*`` mark on the env."""
    from esbench.analysis.verdicts import PER_RUN_MARK

    out = pd.DataFrame(
        {
            "Environment": [f"{r.env_name}{' *' if r.partial else ''}" for r in table.itertuples()],
            "% TRPO progress": [f"{round(100 * p)}%" for p in table["progress_fraction"]],
            "Target score": _target_cells(table),
            "TRPO timesteps": [fmt_num(v) for v in table["rl_timesteps"]],
            "ES timesteps [95% CI]": [
                _es_cell(r.es_timesteps, r.es_low, r.es_high, r.es_last_timesteps)
                + (f" {PER_RUN_MARK}" if r.per_run else "")
                for r in table.itertuples()
            ],
            "ES/TRPO (ours) [95% CI]": [
                _ratio_text(r.ratio, r.ratio_low, r.ratio_high, r.es_last_timesteps / r.rl_timesteps)
                if np.isfinite(r.rl_timesteps) and (np.isfinite(r.ratio_low) or np.isposinf(r.ratio_low))
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
    (:mod:`esbench.analysis.ceiling`)."""
    return [
        f"{fmt_num(v, 4)}{' †' if near else ''}"
        for v, near in zip(table["target"], table["near_ceiling"], strict=True)
    ]


def _claim_cells(table: pd.DataFrame) -> list[str]:
    """``A: supported`` for the rows a claim covers (the claim's id and this row's verdict), else —."""
    return [f"{c}: {v}" if c else "—" for c, v in zip(table["claim"], table["verdict"], strict=True)]


def _reproduced_cells(table: pd.DataFrame) -> list[str]:
    """``supported``, ``contradicted (ours faster)``/``(ours slower)``, ``undecided``, or —."""
    out = []
    for word, note in zip(table["reproduced"], table["reproduced_note"], strict=True):
        if word == "contradicted":
            word += " (ours faster)" if note.startswith("ours faster") else " (ours slower)"
        out.append(word or "—")
    return out


def _per_run_note(table: pd.DataFrame) -> str:
    """What a ‡ cell means, when the table has one."""
    from esbench.analysis.verdicts import PER_RUN_MARK

    if not table["per_run"].astype(bool).any():
        return ""
    return (
        f" {PER_RUN_MARK}: the score the runs stop at (budget.stop_at_return), reached by every run: "
        "the time is the mean of each run's first evaluation at or above it (its first confirmed "
        "point), with the Student-t interval of that mean; a stopped run's curve past its stop is "
        "held, not measured, and a mean curve of held runs cannot bound the time above "
        "(docs/statistics.md)."
    )


def _notes_common() -> str:
    from esbench.analysis.verdicts import TIME_CI_METHOD

    return (
        f"Intervals: {TIME_CI_METHOD} (95%; docs/statistics.md gives its measured coverage). "
        "Claim holds here: the claim's id (results/reference/salimans2017_claims.csv) and whether this "
        "row's ratio interval is on the claim's side of its limit (supported), wholly on the other "
        "side (contradicted) or straddles it (undecided). Paper's ratio reproduced: supported when our "
        "interval contains the paper's ratio, contradicted when it lies wholly below (ours faster) "
        "or above (ours slower)."
    )


def _resolution_note(table: pd.DataFrame) -> str:
    """A note for the rows whose ES interval is one point (``[x, x]``), empty when none is: a time
    to a target is an evaluation point, so two band edges crossing between the same two evaluations
    give the same time."""
    low, high = table["es_low"].to_numpy(float), table["es_high"].to_numpy(float)
    same = np.isfinite(low) & (low == high) & (table["n_seeds_es"].to_numpy() >= 2)
    if not same.any():
        return ""
    return (
        " An interval [x, x]: both edges of the band reached the target at the same evaluation; a "
        "time is an evaluation point, resolved to the spacing between evaluations and no finer."
    )


def write_table1(table: pd.DataFrame, out_dir: str | Path) -> dict[str, Path]:
    """Write ``table1.csv``/``.md``/``.tex`` under ``out_dir``."""
    notes = (
        "Target = init + p (final - init) of TRPO's mean evaluation curve; time = first evaluation "
        "at which the mean curve over seeds reaches the target. ES timesteps: 95% interval over ES's "
        "seeds. ES/TRPO: 95% interval over both ES's and TRPO's seeds (each side at sqrt(0.95)). "
        "'> X': not reached by timestep X, the last all ES seeds cover (a lower bound on the ratio, "
        "never an invented number). A run that stopped at a target score (budget.stop_at_return) "
        "counts as having reached every target up to it, at its stopping timestep. " + _notes_common()
    )
    notes += _resolution_note(table) + _per_run_note(table)
    if (table["stopped_below"] > 0).any():
        notes += (
            " Where a run stopped at a score below a target, it is censored at its stop for that "
            "target (X is then that stop)."
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
    "stopped_below",
    "per_run",
    "claim",
    "verdict",
    "decide",
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
    from esbench.analysis.verdicts import ratio_interval, ratio_verdict, reproduce_verdict, time_to_target

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
                tt = time_to_target(runs, float(r.trpo_score), stopped=stopped)
                trpo_t, es_t = float(r.trpo_timesteps), float(r.es_timesteps)
                ri = ratio_interval(tt, trpo_t)
                claim = claim_for(claims, str(env_id), float(r.progress_fraction))
                verdict = None
                if claim:
                    target, limit_time = float(r.trpo_score), claim.limit * trpo_t
                    plan = functools.partial(
                        _seeds_to_decide, runs, target, stopped, limit_time, claim.inclusive
                    )
                    verdict = ratio_verdict(ri, claim.limit, claim.inclusive, tt, target, trpo_t, plan)
                reproduced = reproduce_verdict(ri, float(r.es_over_trpo))
                rows.append(
                    {
                        "env_name": str(r.env),
                        "env_id": env_id,
                        "es_algo": es_algo,
                        "progress_fraction": float(r.progress_fraction),
                        "target": float(r.trpo_score),
                        **ceiling_columns(str(env_id), float(r.trpo_score), best),
                        "paper_trpo_timesteps": trpo_t,
                        "paper_es_timesteps": es_t,
                        "paper_ratio": float(r.es_over_trpo),
                        "es_timesteps": tt.point,
                        "es_low": tt.low,
                        "es_high": tt.high,
                        "es_last_timesteps": tt.last,
                        "es_text": tt.marked_text(),
                        "ours_over_paper_es": tt.point / es_t,
                        "ratio": ri.point,
                        "ratio_low": ri.low,
                        "ratio_high": ri.high,
                        "n_seeds_es": tt.n_seeds,
                        "stopped_below": tt.stopped_below,
                        "per_run": tt.per_run,
                        "claim": claim.id if claim else "",
                        "verdict": verdict.word if verdict else "",
                        "decide": verdict.decide if verdict else "",
                        "reproduced": reproduced.word,
                        "reproduced_note": reproduced.decide,
                        "partial": (es_algo, env_id) in partial,
                    }
                )
    return pd.DataFrame(rows, columns=list(PAPER_COLUMNS))


def _seeds_to_decide(
    runs: pd.DataFrame, target: float, stopped: set[object] | None, limit_time: float, inclusive: bool
) -> float:
    """The seeds a study needs to decide one claimed row (called only where its interval straddles
    the limit, so the seed curves are read again only there)."""
    from esbench.analysis.verdicts import reach_curves, seeds_to_decide_time

    grid, values, _, _ = reach_curves(runs, target, stopped)
    return seeds_to_decide_time(values, grid, target, limit_time, inclusive)


def _ratio_text(point: float, low: float, high: float, last_over: float) -> str:
    """``point [low, high]``; a missing point (ES's mean curve never reached the target) reads
    ``> last_over``, like an interval end ES did not reach."""
    if np.isnan(point):
        point = np.inf

    def one(v: float) -> str:
        return f"> {fmt_num(last_over, 2)}" if np.isposinf(v) else fmt_num(v, 2)

    if not (np.isfinite(low) or np.isposinf(low)):
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
        "Targets are the paper's TRPO scores (supplementary Table 3). Our ES's time = first evaluation at "
        "which its mean curve over seeds reaches the target, with its 95% interval over seeds; '> X': "
        "not reached by timestep X (the last all seeds cover). Ratios divide by the paper's TRPO "
        "timesteps (a published constant). A run that stopped at a target score "
        "(budget.stop_at_return) counts as having reached every target up to it, at its stopping "
        "timestep. " + _notes_common()
    )
    notes += _resolution_note(table) + _per_run_note(table)
    if (table["stopped_below"] > 0).any():
        notes += (
            " Where a run stopped at a score below a target, it is censored at its stop for that "
            "target (X is then that stop)."
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


def _claim_answer(
    claim: Claim, rows: pd.DataFrame, word_col: str, note_col: str, every: bool
) -> tuple[str, str]:
    """(label, note) of one answer to ``claim`` from the rows it covers (one per task); no label
    when no run covers any of its tasks (the claim is not tested by these runs: a report of the hard
    tasks alone says so of the simple tasks' claim instead of calling it undecided)."""
    from esbench.analysis.verdicts import UNDECIDED, Verdict, combine, combine_any

    if rows.empty:
        return "", f"not tested: no runs on {', '.join(claim.tasks)}"
    verdicts = [
        Verdict(w, f"{name}: {n}" if n else "")
        for name, w, n in zip(rows["env_name"], rows[word_col], rows[note_col], strict=True)
        if w
    ]
    missing = [t for t in claim.tasks if t not in set(rows["env_id"])]
    if missing:
        verdicts.append(Verdict(UNDECIDED, f"no runs on {', '.join(missing)}"))
    v = combine(verdicts) if every else combine_any(verdicts)
    return v.word, v.decide


def _per_task(rows: pd.DataFrame, cell: Callable[[Any], str]) -> str:
    return "; ".join(f"{r.env_name}: {cell(r)}" for r in rows.itertuples()) or "—"


def _paper_trpo_cell(r: Any) -> str:
    """Our ES over the paper's TRPO timesteps, with its interval and seeds (a table1_paper row)."""
    last = r.es_last_timesteps / r.paper_trpo_timesteps
    return _ratio_text(r.ratio, r.ratio_low, r.ratio_high, last) + f" (n={r.n_seeds_es})"


def _our_trpo_cell(r: Any) -> str:
    """Our ES over our TRPO, with its interval over both sides' seeds (a table1 row)."""
    if np.isfinite(r.ratio_low) or np.isposinf(r.ratio_low):
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
    claim on every task is supported when every task's interval is on its side of the limit, one
    on some task when at least one is. **Did we reproduce the paper's number**: on every task
    the claim covers, our ratio's interval (over the paper's TRPO timesteps) contains the paper's
    ratio; otherwise the note says where ours is faster or slower than the paper's ES.

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
        every = claim.direction == "below_on_every_task"
        for es_algo in algos:
            p = paper[(paper["es_algo"] == es_algo) & (paper["claim"] == claim.id)]
            o = ours[(ours["es_algo"] == es_algo) & (ours["claim"] == claim.id)]
            holds_p = _claim_answer(claim, p, "verdict", "decide", every)
            if o.empty:
                holds_o = ("", "we ran no TRPO on these tasks")
            else:
                holds_o = _claim_answer(claim, o, "verdict", "decide", every)
            rep = _claim_answer(claim, p, "reproduced", "reproduced_note", True)
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
