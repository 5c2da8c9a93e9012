"""Frame-skip sensitivity (Salimans et al. 2017, Sec. 4.4, Fig. 2).

The paper's claim, in its words (Fig. 2, Pong at frame-skip 1-4): "each setting leads to about
equally fast learning" (:data:`PAPER_CLAIM`). We measure the final evaluation score per (algorithm,
environment, frame-skip) at equal emulator frames, mean over seeds with a 95% Student-t CI, and its
spread across frame-skips (range and standard deviation of those means) for ES and for RL.

The claim is decided from intervals over seeds (:func:`insensitivity_verdict`), as an equivalence
test: for every pair of frame skips, the difference of the mean final scores gets a Welch interval
at a Bonferroni-adjusted level (95% jointly over the pairs). "About equally" needs a margin the
paper does not give; we declare it before looking: :data:`MARGIN` (10%) of the game's human - random
score span (Wang et al. 2016, the scores Table 2 normalizes by). The claim is

* **supported** when every pair's interval lies inside [-margin, margin],
* **contradicted** when some pair's interval lies wholly outside it (a difference surely larger than
  the margin),
* **undecided** otherwise (more seeds would narrow the intervals), with fewer than 2 seeds at some
  frame skip, or when nothing was learned: no run ever scored above its first evaluation, or at no
  frame skip does the Student-t interval of the gain (final score minus the run's first evaluation,
  the untrained policy on the same evaluation seeds) lie above 0 (:func:`learned_frame_skips`).
  Equal scores of policies that learned nothing say nothing about learning speed.

:func:`plot_frameskip_curves` draws the learning curves as the paper's Figure 2 does: one curve per
frame skip, the score against weight updates for ES (the paper's axis), against emulator frames for
a baseline, with the 95% Student-t band over seeds.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from esbench.analysis.figures import (
    _style,
    algo_label,
    compact_ticks,
    env_title,
    figure_legend,
    new_figure,
    savefig,
)
from esbench.analysis.load import is_es
from esbench.analysis.metrics.intervals import mean_ci, welch_ci
from esbench.analysis.stats import interpolate_runs
from esbench.analysis.tables import fmt_num, write_table
from esbench.analysis.verdicts import CONTRADICTED, SUPPORTED, UNDECIDED, Verdict

#: The paper's claim, quoted (results/reference/README.md, "Other headline results").
PAPER_CLAIM = '"each setting leads to about equally fast learning" (Sec. 4.4, Fig. 2: Pong, frame-skip 1-4)'

#: "About equally": a difference within this share of the game's human - random score span.
MARGIN = 0.10

#: Interval method of the frame-skip verdict, as a report names it.
FRAMESKIP_CI_METHOD = (
    "Welch t intervals of the difference of mean final scores for every pair of frame skips, "
    "Bonferroni-adjusted to 95% jointly"
)


def frameskip_scores(
    runs: pd.DataFrame, rng: np.random.Generator, partial: set[tuple[object, ...]] | None = None
) -> pd.DataFrame:
    """Final score per (algo, env_id, frame_skip).

    Args:
        runs: Complete runs of the run table.
        rng: Unused by the Student-t CIs; kept so every table function takes one.
        partial: (algo, env_id, frame_skip) keys marked partial.

    Returns:
        DataFrame with columns algo, env_id, env_name, frame_skip, mean, low, high, n_seeds,
        partial; one row per condition.
    """
    partial = partial or set()
    rows = []
    for (algo, env_id, fs), group in runs.groupby(["algo", "env_id", "frame_skip"], sort=True):
        mean, low, high = mean_ci(group["final_eval_return"].to_numpy(float), rng)
        rows.append(
            {
                "algo": algo,
                "env_id": env_id,
                "env_name": str(group["env_name"].iloc[0]),
                "frame_skip": fs,
                "mean": float(mean),
                "low": float(low),
                "high": float(high),
                "n_seeds": len(group),
                "partial": (algo, env_id, fs) in partial,
            }
        )
    return pd.DataFrame(
        rows,
        columns=["algo", "env_id", "env_name", "frame_skip", "mean", "low", "high", "n_seeds", "partial"],
    )


def frameskip_spread(scores: pd.DataFrame) -> pd.DataFrame:
    """Spread across frame-skips of each algorithm's mean final score, per environment.

    Args:
        scores: Output of :func:`frameskip_scores`.

    Returns:
        DataFrame with columns algo, is_es, env_id, env_name, n_frame_skips, min, max, range
        (max - min), std (population std across frame-skips), rel_range (range divided by the
        span of all algorithms' means on that env; NaN where that span is 0).
    """
    rows = []
    for env_id, env in scores.groupby("env_id", sort=True):
        span = float(env["mean"].max() - env["mean"].min())
        for algo, group in env.groupby("algo", sort=True):
            means = group["mean"].to_numpy(float)
            rng_ = float(means.max() - means.min())
            rows.append(
                {
                    "algo": algo,
                    "is_es": is_es(str(algo)),
                    "env_id": env_id,
                    "env_name": str(group["env_name"].iloc[0]),
                    "n_frame_skips": len(group),
                    "min": float(means.min()),
                    "max": float(means.max()),
                    "range": rng_,
                    "std": float(means.std()),
                    "rel_range": rng_ / span if span > 0 else float("nan"),
                }
            )
    return pd.DataFrame(
        rows,
        columns=[
            "algo",
            "is_es",
            "env_id",
            "env_name",
            "n_frame_skips",
            "min",
            "max",
            "range",
            "std",
            "rel_range",
        ],
    )


def write_frameskip(scores: pd.DataFrame, spread: pd.DataFrame, out_dir: str | Path) -> dict[str, Path]:
    """Write ``frameskip.csv``/``.md``/``.tex`` (scores per frame-skip, then the spread per algo)."""
    wide = scores.pivot_table(
        index=["env_name", "algo"], columns="frame_skip", values="mean", aggfunc="first"
    )
    display_rows = []
    for (env_name, algo), row in wide.iterrows():
        s = spread[(spread["env_name"] == env_name) & (spread["algo"] == algo)].iloc[0]
        part = scores[(scores["env_name"] == env_name) & (scores["algo"] == algo)]["partial"].any()
        display_rows.append(
            {
                "Environment": f"{env_name}{' *' if part else ''}",
                "Algorithm": algo,
                **{f"skip {int(fs)}": fmt_num(v, 4) for fs, v in row.items()},
                "Range": fmt_num(s["range"], 3),
                "Std": fmt_num(s["std"], 3),
            }
        )
    notes = (
        "Mean final evaluation score over seeds at each frame-skip; Range/Std: spread of those means "
        "across frame-skips (smaller = less sensitive to frame-skip)."
    )
    if scores["partial"].any():
        notes += " *: partial results (missing runs or fewer seeds than other conditions)."
    data = scores.merge(spread, on=["algo", "env_id", "env_name"], how="left", suffixes=("", "_spread"))
    return write_table(
        data,
        pd.DataFrame(display_rows),
        Path(out_dir) / "frameskip",
        caption="Frame-skip sensitivity: final score per frame-skip, ES vs RL",
        label="tab:frameskip",
        notes=notes,
    )


@dataclass(frozen=True)
class FrameskipVerdict:
    """The frame-skip claim for one algorithm on one game.

    Attributes:
        verdict: supported / contradicted / undecided, with what would decide it.
        pair: The pair of frame skips with the largest absolute difference of means.
        diff, low, high: That pair's difference (first minus second) and its adjusted interval.
        margin: The equivalence margin in score points (NaN: the game has no human/random scores).
        n_seeds: Fewest seeds at any frame skip.
        n_pairs: Pairs of frame skips compared.
        flat: Whether no run ever scored above its first evaluation.
        learned: Frame skips at which the gain's interval lies above 0 (:func:`learned_frame_skips`);
            None when no curves were given.
    """

    verdict: Verdict
    pair: tuple[int, int]
    diff: float
    low: float
    high: float
    margin: float
    n_seeds: int
    n_pairs: int
    flat: bool
    learned: tuple[int, ...] | None = None

    def text(self) -> str:
        """The largest difference with its interval, the margin and the seeds, in one phrase."""
        if self.n_pairs == 0:
            return f"one frame skip only: no difference to compare (margin ±{fmt_num(self.margin, 3)})"
        a, b = self.pair
        ci = f" [{fmt_num(self.low, 3)}, {fmt_num(self.high, 3)}]" if np.isfinite(self.low) else ""
        return (
            f"largest difference (skip {a} - skip {b}) {fmt_num(self.diff, 3)}{ci}, margin "
            f"±{fmt_num(self.margin, 3)}; {self.n_pairs} pair{'s' if self.n_pairs != 1 else ''}, "
            f"fewest seeds {self.n_seeds}{self._learned_text()}"
        )

    def _learned_text(self) -> str:
        if self.learned is None:
            return ""
        skips = ", ".join(str(k) for k in self.learned) or "none"
        return f"; learned (gain over the first evaluation, 95% interval above 0) at skip: {skips}"


def improved(curves: pd.DataFrame) -> bool:
    """Whether any run of ``curves`` (curve-table rows) evaluated above its own first evaluation."""
    rows = curves.dropna(subset=["eval_return_mean"]).sort_values("timesteps", kind="stable")
    for _, run in rows.groupby("run_id"):
        values = run["eval_return_mean"].to_numpy(float)
        if len(values) > 1 and values[1:].max() > values[0]:
            return True
    return False


def learned_frame_skips(
    runs: pd.DataFrame, curves: pd.DataFrame, confidence: float = 0.95
) -> tuple[int, ...]:
    """Frame skips at which the runs learned: the Student-t interval over seeds of each run's gain,
    final score minus its first evaluation (the untrained policy, same evaluation seeds), lies above 0.

    Args:
        runs: Complete runs (``run_id``, ``frame_skip``, ``final_eval_return``).
        curves: Their curve-table rows (``run_id``, ``timesteps``, ``eval_return_mean``).
        confidence: Level of each frame skip's interval.

    Returns:
        The frame skips, ascending (a frame skip with fewer than 2 seeds has no interval: not listed).
    """
    evals = curves.dropna(subset=["eval_return_mean"]).sort_values("timesteps", kind="stable")
    first = evals.groupby("run_id")["eval_return_mean"].first()
    learned = []
    for fs, group in runs.groupby("frame_skip", sort=True):
        gains = group["final_eval_return"].to_numpy(float) - first.reindex(group["run_id"]).to_numpy(float)
        gains = gains[np.isfinite(gains)]
        if len(gains) >= 2 and float(mean_ci(gains, confidence=confidence)[1]) > 0:
            learned.append(int(fs))
    return tuple(learned)


def insensitivity_verdict(
    runs: pd.DataFrame, curves: pd.DataFrame | None, margin: float, confidence: float = 0.95
) -> FrameskipVerdict:
    """Whether one algorithm's final score is about equal at every frame skip (module doc).

    Args:
        runs: Complete runs of one algorithm on one game (``frame_skip``, ``final_eval_return``).
        curves: Their curve-table rows (None: the flat-curve check is skipped).
        margin: Equivalence margin in score points (``MARGIN`` times the human - random span).
        confidence: Joint level over the pairs (each pair at ``1 - (1 - confidence) / n_pairs``).
    """
    by_skip = {int(fs): g["final_eval_return"].to_numpy(float) for fs, g in runs.groupby("frame_skip")}
    pairs = list(itertools.combinations(sorted(by_skip), 2))
    n_seeds = min((len(v) for v in by_skip.values()), default=0)
    flat = curves is not None and not improved(curves)
    learned = None if curves is None else learned_frame_skips(runs, curves)
    nan = float("nan")
    if not pairs:
        return FrameskipVerdict(
            Verdict(UNDECIDED, "needs at least 2 frame skips"),
            (0, 0),
            nan,
            nan,
            nan,
            margin,
            n_seeds,
            0,
            flat,
            learned,
        )
    level = 1.0 - (1.0 - confidence) / len(pairs)
    intervals = {(a, b): welch_ci(by_skip[a], by_skip[b], level) for a, b in pairs}
    pair = max(pairs, key=lambda p: abs(intervals[p][0]))
    diff, low, high = intervals[pair]
    if flat:
        verdict = Verdict(UNDECIDED, "never above its first evaluation: nothing learned at any frame skip")
    elif n_seeds < 2:
        verdict = Verdict(UNDECIDED, f"needs at least 2 seeds per frame skip for an interval (has {n_seeds})")
    elif learned is not None and not learned:
        verdict = Verdict(
            UNDECIDED,
            "nothing learned to compare: at no frame skip does the final score's gain over the first "
            "evaluation have an interval above 0",
        )
    elif not np.isfinite(margin):
        verdict = Verdict(UNDECIDED, "the game has no published random and human scores to set the margin")
    elif all(-margin <= lo and hi <= margin for _, lo, hi in intervals.values()):
        verdict = Verdict(SUPPORTED)
    elif any(lo > margin or hi < -margin for _, lo, hi in intervals.values()):
        verdict = Verdict(CONTRADICTED)
    else:
        verdict = Verdict(
            UNDECIDED, f"an interval straddles the margin ±{fmt_num(margin, 3)}: more seeds (now {n_seeds})"
        )
    return FrameskipVerdict(verdict, pair, diff, low, high, margin, n_seeds, len(pairs), flat, learned)


def _mean_band(curves: pd.DataFrame, x: str) -> pd.DataFrame:
    """Mean curve over seeds on their common grid, with the 95% Student-t band (columns x, mean,
    low, high)."""
    grid, values, _ = interpolate_runs(curves, x=x)
    ok = np.all(np.isfinite(values), axis=0)
    mean, low, high = mean_ci(values[:, ok])
    return pd.DataFrame({"x": grid[ok], "mean": mean, "low": low, "high": high})


#: Colours of frame skips 1-4 (colour-blind safe), then grey for any other.
SKIP_COLORS: dict[int, str] = {1: "#0072B2", 2: "#E69F00", 3: "#009E73", 4: "#CC79A7"}


def plot_frameskip_curves(curves: pd.DataFrame, stem: str | Path) -> list[Path]:
    """Learning curves per frame skip, drawn like the paper's Figure 2 (module doc).

    One panel per (game, algorithm): ES against weight updates (``generation``), a baseline against
    emulator frames; one line per frame skip, the mean over seeds with its 95% Student-t band; one
    legend (the frame skips) below the panels.

    Args:
        curves: Curve-table rows (``algo``, ``env_id``, ``frame_skip``, ``seed``, ``run_id``,
            ``generation``, ``frames``, ``eval_return_mean``).
        stem: Output path without suffix.
    """
    keys = sorted({(str(e), str(a)) for e, a in curves[["env_id", "algo"]].itertuples(index=False)})
    keys.sort(key=lambda k: (k[0], not is_es(k[1]), k[1]))
    fig, axes = new_figure(len(keys), ncols=2, panel_size=(3.6, 2.7))
    with _style():
        for ax, (env_id, algo) in zip(axes, keys, strict=True):
            g = curves[(curves["env_id"] == env_id) & (curves["algo"] == algo)]
            x = "generation" if is_es(algo) else "frames"
            for fs, runs in g.groupby("frame_skip", sort=True):
                band = _mean_band(runs, x)
                color = SKIP_COLORS.get(int(fs), "#777777")
                ax.plot(
                    band["x"],
                    band["mean"],
                    color=color,
                    marker="o",
                    markersize=3,
                    label=f"frame skip {int(fs)}",
                )
                if np.isfinite(band["low"].to_numpy(float)).any():
                    ax.fill_between(
                        band["x"], band["low"], band["high"], color=color, alpha=0.15, linewidth=0
                    )
            seeds = int(g.groupby("frame_skip")["run_id"].nunique().min())
            ax.set_title(f"{env_title(env_id)}, {algo_label(algo)} ({seeds} seed{'s' if seeds != 1 else ''})")
            ax.set_xlabel("Weight updates (generations)" if is_es(algo) else "Emulator frames")
            ax.set_ylabel("Score (evaluation)")
            compact_ticks(ax)
            if is_es(algo):  # whole weight updates
                ax.xaxis.set_major_locator(MaxNLocator(nbins=4, integer=True))
        figure_legend(fig, axes, ncols=4)
    return savefig(fig, stem)
