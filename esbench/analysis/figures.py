"""Report figures in one style: PNG + PDF, Okabe-Ito colours, labelled axes with units.

Every figure is drawn on a bare :class:`matplotlib.figure.Figure` with an Agg canvas (no pyplot
state, no GUI backend), and saved without timestamps so that the same data give the same bytes.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any, cast

import matplotlib as mpl
import numpy as np
import pandas as pd
from cycler import cycler
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from esbench.analysis.curves import aggregate_curves, normalized_iqm_curve
from esbench.analysis.stats import mean_ci
from esbench.config.registry import colour_of, family_of, label_of

#: Okabe & Ito (2008) colour-blind-safe palette (black last; yellow left out: too pale on white).
OKABE_ITO: tuple[str, ...] = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")

X_LABELS: dict[str, str] = {
    "timesteps": "Environment timesteps (agent steps)",
    "wall_clock_s": "Wall-clock time (s)",
    "frames": "Emulator frames",
    "generation": "Update step (generation / logging step)",
}

STYLE: dict[str, Any] = {
    "font.size": 9,
    "axes.titlesize": 9,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.5,
    "lines.linewidth": 1.5,
    "figure.dpi": 150,
    "savefig.dpi": 150,
    "savefig.bbox": "tight",
    "pdf.fonttype": 42,
    "svg.hashsalt": "esbench",
    "axes.prop_cycle": cycler(color=list(OKABE_ITO)),
}


def _style() -> Any:
    """A context manager applying :data:`STYLE` (matplotlib's rc_context)."""
    return mpl.rc_context(cast(Any, STYLE))


def algo_color(algo: str) -> str:
    """The fixed colour of ``algo`` from the registry, so it looks the same in every figure of
    every report (an unregistered name gets a stable palette entry by name)."""
    return colour_of(algo, default=OKABE_ITO[sum(map(ord, algo)) % len(OKABE_ITO)])


def algo_label(algo: str) -> str:
    """Human-readable algorithm name for legends (the registry's label)."""
    return label_of(algo)


def new_figure(
    n_panels: int, ncols: int = 3, panel_size: tuple[float, float] = (3.2, 2.5)
) -> tuple[Figure, list[Axes]]:
    """A figure with ``n_panels`` axes on a grid of up to ``ncols`` columns (Agg canvas)."""
    ncols = max(1, min(ncols, n_panels))
    nrows = int(np.ceil(n_panels / ncols))
    with _style():
        fig = Figure(figsize=(panel_size[0] * ncols, panel_size[1] * nrows), layout="constrained")
        FigureCanvasAgg(fig)
        axes = [fig.add_subplot(nrows, ncols, i + 1) for i in range(n_panels)]
    return fig, axes


def savefig(fig: Figure, stem: str | Path) -> list[Path]:
    """Save ``stem``.png and ``stem``.pdf with no timestamps (byte-reproducible).

    Returns:
        [png path, pdf path].
    """
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    png, pdf = stem.with_suffix(".png"), stem.with_suffix(".pdf")
    with _style():
        fig.savefig(png, metadata={"Software": None})
        fig.savefig(pdf, metadata={"CreationDate": None, "ModDate": None, "Creator": None, "Producer": None})
    return [png, pdf]


def _band(ax: Axes, curve: pd.DataFrame, color: str, label: str, **line_kw: Any) -> None:
    x = curve["x"].to_numpy(float)
    ax.plot(x, curve["mean"].to_numpy(float), color=color, label=label, **line_kw)
    low, high = curve["low"].to_numpy(float), curve["high"].to_numpy(float)
    if np.isfinite(low).any():
        ax.fill_between(x, low, high, color=color, alpha=0.2, linewidth=0)


def plot_learning_curves(
    curves: pd.DataFrame,
    stem: str | Path,
    x: str = "timesteps",
    rng: np.random.Generator | None = None,
    title: str = "",
    series: Sequence[str] = ("algo",),
    stopped: Collection[object] | None = None,
) -> list[Path]:
    """Mean evaluation return over seeds with its 95% bootstrap band, one panel per env.

    With more than one environment (and series = algo only) a last panel shows the IQM over
    tasks of min-max normalized scores against the fraction of each task's budget (stratified
    bootstrap band).

    Args:
        curves: The curve table.
        stem: Output path without suffix.
        x: x column (``timesteps``, ``wall_clock_s``, ``frames``).
        rng: Generator for the bands (None: no bands).
        title: Figure title.
        series: Columns naming one line; the first must be ``algo`` (it sets the colour), the
            others (e.g. ``frame_skip``, ``workers``) set the line style.
        stopped: run_ids that ended at their target score (``budget.stop_at_return``): drawn at
            their stopping score from their stop to the end of the other seeds, so that an early
            stopper does not cut its condition's curve short.

    Returns:
        [png path, pdf path].
    """
    series = list(series)
    envs = sorted(curves["env_id"].unique())
    multi = len(envs) > 1 and series == ["algo"]
    fig, axes = new_figure(len(envs) + int(multi))
    agg = aggregate_curves(curves, ["env_id", *series], x=x, rng=rng, stopped=stopped)
    names = curves.drop_duplicates("env_id").set_index("env_id")["env_name"]
    extras = (
        sorted({tuple(k) for k in curves[series[1:]].itertuples(index=False)}) if len(series) > 1 else [()]
    )
    styles = ["-", "--", ":", "-."]
    with _style():
        for ax, env_id in zip(axes, envs, strict=False):
            for key, curve in agg[agg["env_id"] == env_id].groupby(series, sort=True):
                key = key if isinstance(key, tuple) else (key,)
                algo, rest = str(key[0]), tuple(key[1:])
                n = int(curve["n_seeds"].iloc[0])
                label = algo_label(algo) + "".join(
                    f", {c}={v}" for c, v in zip(series[1:], rest, strict=True)
                )
                k = extras.index(rest) if rest in extras else 0
                _band(ax, curve, algo_color(algo), f"{label} (n={n})", linestyle=styles[k % len(styles)])
            ax.set_title(f"{names[env_id]} ({env_id})")
            ax.set_xlabel(X_LABELS.get(x, x))
            ax.set_ylabel("Evaluation return (mean over seeds)")
            ax.legend(loc="best", frameon=False)
        if multi:
            ax = axes[-1]
            for algo in sorted(curves["algo"].unique()):
                curve = normalized_iqm_curve(curves, str(algo), x=x, rng=rng)
                if not curve.empty:
                    _band(ax, curve, algo_color(str(algo)), algo_label(str(algo)))
            ax.set_title(f"IQM over {len(envs)} tasks")
            ax.set_xlabel(f"Fraction of budget ({X_LABELS.get(x, x).split(' (')[0].lower()})")
            ax.set_ylabel("Normalized return (IQM)")
            ax.legend(loc="best", frameon=False)
        if title:
            fig.suptitle(title)
    return savefig(fig, stem)


def plot_frameskip(scores: pd.DataFrame, spread: pd.DataFrame, stem: str | Path) -> list[Path]:
    """Final score against frame-skip (mean and 95% CI over seeds), and the spread per algorithm.

    Args:
        scores: :func:`esbench.analysis.frameskip.frameskip_scores`.
        spread: :func:`esbench.analysis.frameskip.frameskip_spread`.
        stem: Output path without suffix.
    """
    envs = sorted(scores["env_id"].unique())
    fig, axes = new_figure(2 * len(envs), ncols=2)
    with _style():
        for i, env_id in enumerate(envs):
            ax, ax_spread = axes[2 * i], axes[2 * i + 1]
            env = scores[scores["env_id"] == env_id]
            for algo, g in env.groupby("algo", sort=True):
                g = g.sort_values("frame_skip")
                mean = g["mean"].to_numpy(float)
                err = np.vstack([mean - g["low"].to_numpy(float), g["high"].to_numpy(float) - mean])
                ax.errorbar(
                    g["frame_skip"].to_numpy(float),
                    mean,
                    yerr=np.where(np.isfinite(err), err, 0.0),
                    color=algo_color(str(algo)),
                    marker="o",
                    capsize=3,
                    label=algo_label(str(algo)),
                )
            ax.set_title(str(env["env_name"].iloc[0]))
            ax.set_xlabel("Frame-skip (emulator frames per action)")
            ax.set_ylabel("Final evaluation return")
            ax.set_xticks(sorted(env["frame_skip"].unique()))
            ax.legend(loc="best", frameon=False)
            sp = spread[spread["env_id"] == env_id].sort_values("algo")
            ax_spread.bar(
                [algo_label(str(a)) for a in sp["algo"]],
                sp["range"].to_numpy(float),
                color=[algo_color(str(a)) for a in sp["algo"]],
            )
            ax_spread.set_title(f"{env['env_name'].iloc[0]}: spread across frame-skips")
            ax_spread.set_ylabel("Range of mean final return (max - min)")
            ax_spread.set_xlabel("Algorithm")
    return savefig(fig, stem)


def plot_scaling(table: pd.DataFrame, stem: str | Path) -> list[Path]:
    """Speedup against workers (time-to-threshold and throughput), with the ideal linear line.

    Args:
        table: :func:`esbench.analysis.scaling.scaling_table`.
        stem: Output path without suffix.
    """
    if "cluster" not in table.columns:
        table = table.assign(cluster="local")
    keys = sorted({tuple(map(str, k)) for k in table[["algo", "env_id", "cluster"]].itertuples(index=False)})
    fig, axes = new_figure(len(keys))
    with _style():
        for ax, (algo, env_id, cluster) in zip(axes, keys, strict=True):
            g = table[(table["algo"] == algo) & (table["env_id"] == env_id) & (table["cluster"] == cluster)]
            g = g.sort_values("workers")
            w = g["workers"].to_numpy(float)
            ax.plot(
                w, g["ideal_speedup"].to_numpy(float), color="#000000", linestyle=":", label="ideal (linear)"
            )
            ax.plot(
                w,
                g["speedup_time"].to_numpy(float),
                color=algo_color(algo),
                marker="o",
                label="time to threshold",
            )
            ax.plot(
                w,
                g["speedup_throughput"].to_numpy(float),
                color=algo_color(algo),
                marker="s",
                linestyle="--",
                alpha=0.7,
                label="throughput (timesteps/s)",
            )
            ax.set_xticks(w)
            ax.set_title(f"{algo_label(algo)} on {g['env_name'].iloc[0]} ({cluster})")
            ax.set_xlabel("Workers (processes)")
            ax.set_ylabel(f"Speedup over {int(w[0])} worker(s) (x)")
            ax.legend(loc="best", frameon=False)
    return savefig(fig, stem)


def plot_data_efficiency(table: pd.DataFrame, stem: str | Path) -> list[Path]:
    """ES/TRPO timestep ratio per environment and progress fraction (log scale).

    Censored ratios (ES never reached the target) are drawn hatched at their lower bound with
    an upward arrow; the published ratios are black crosses; dotted lines mark 1x and 10x.

    Args:
        table: :func:`esbench.analysis.table1.table1`.
        stem: Output path without suffix.
    """
    envs = sorted(table["env_name"].unique())
    fracs = sorted(table["progress_fraction"].unique())
    fig, axes = new_figure(1, ncols=1, panel_size=(max(4.0, 1.2 * len(envs) + 1.5), 3.0))
    ax = axes[0]
    width = 0.8 / max(1, len(fracs))
    with _style():
        for j, p in enumerate(fracs):
            color = OKABE_ITO[j % len(OKABE_ITO)]
            for i, env in enumerate(envs):
                row = table[(table["env_name"] == env) & (table["progress_fraction"] == p)]
                if row.empty:
                    continue
                r = row.iloc[0]
                xpos = i + (j - (len(fracs) - 1) / 2) * width
                value = r["ratio_bound"] if r["censored"] else r["ratio"]
                if np.isfinite(value):
                    ax.bar(
                        xpos,
                        value,
                        width=width,
                        color=color,
                        hatch="//" if r["censored"] else None,
                        edgecolor="white" if r["censored"] else color,
                        label=f"{round(100 * p)}% of TRPO progress" if i == 0 else None,
                    )
                    if r["censored"]:
                        ax.annotate("", (xpos, value * 1.6), (xpos, value), arrowprops={"arrowstyle": "->"})
                if np.isfinite(r["paper_ratio"]):
                    ax.plot(
                        xpos,
                        r["paper_ratio"],
                        marker="x",
                        color="#000000",
                        linestyle="none",
                        label="paper" if (i == 0 and j == 0) else None,
                    )
        ax.axhline(1.0, color="#000000", linestyle=":", linewidth=0.8)
        ax.axhline(10.0, color="#000000", linestyle="--", linewidth=0.8)
        ax.set_yscale("log")
        ax.set_xticks(range(len(envs)))
        ax.set_xticklabels(envs, rotation=20, ha="right")
        ax.set_xlabel("Environment")
        ax.set_ylabel("ES timesteps / TRPO timesteps (x, log)")
        ax.set_title("Data efficiency: ES vs TRPO (hatched: censored lower bound)")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return savefig(fig, stem)


# --- retention (issue #14) -------------------------------------------------------------------------


def _family_style(algo: str) -> str:
    """Line style of an algorithm's family: ES solid, RL dashed (the retention figures' contrast)."""
    return "--" if family_of(algo) == "rl" else "-"


def plot_retention_curves(
    curves: pd.DataFrame,
    boundaries: pd.DataFrame,
    stem: str | Path,
    rng: np.random.Generator | None = None,
) -> list[Path]:
    """Normalized score of every stage over the whole sequence, one panel per (sequence, stage).

    Earlier stages' curves during later stages show the forgetting (and its transient drops);
    ES algorithms are drawn solid, RL dashed, each in its registry colour, as the mean over seeds
    with a 95% percentile bootstrap band. Dotted vertical lines mark the stage boundaries (mean
    ``T_k`` over runs); the shaded span is the stage's own training.

    Args:
        curves: :attr:`esbench.analysis.retention_report.RetentionData.curves`.
        boundaries: :attr:`esbench.analysis.retention_report.RetentionData.boundaries`.
        stem: Output path without suffix.
        rng: Generator for the bands (None: no bands).

    Returns:
        [png path, pdf path].
    """
    keys = sorted(
        {
            (str(s), int(i), str(n))
            for s, i, n in curves[["sequence", "stage_index", "stage"]].itertuples(index=False)
        }
    )
    fig, axes = new_figure(max(len(keys), 1), ncols=2)
    with _style():
        for ax, (seq, i, name) in zip(axes, keys, strict=False):
            rows = curves[(curves["sequence"] == seq) & (curves["stage_index"] == i)]
            agg = aggregate_curves(rows, ["algo"], x="timesteps", y="p", rng=rng)
            for algo, curve in agg.groupby("algo", sort=True):
                n = int(curve["n_seeds"].iloc[0])
                _band(
                    ax,
                    curve,
                    algo_color(str(algo)),
                    f"{algo_label(str(algo))} (n={n})",
                    linestyle=_family_style(str(algo)),
                )
            ends = boundaries[boundaries["sequence"] == seq].groupby("stage_index")["end_timesteps"].mean()
            start = float(ends.get(i - 1, 0.0)) if i > 0 else 0.0
            ax.axvspan(start, float(ends.get(i, start)), color="#000000", alpha=0.06, linewidth=0)
            for k, t in ends.items():
                if int(k) < len(ends) - 1:
                    ax.axvline(float(t), color="#000000", linestyle=":", linewidth=0.8)
            ax.axhline(0.0, color="#777777", linewidth=0.5)
            ax.axhline(1.0, color="#777777", linewidth=0.5, linestyle="--")
            ax.set_title(f"{seq}: {name} (stage {i})")
            ax.set_xlabel("Environment timesteps over the sequence")
            ax.set_ylabel(f"Normalized score on {name}")
            ax.legend(loc="best", frameon=False)
    return savefig(fig, stem)


def plot_retention_drift(
    drift: pd.DataFrame, stem: str | Path, rng: np.random.Generator | None = None, tau: float = 1e-6
) -> list[Path]:
    """Parameter drift from the sequence's starting parameters against timesteps, at the stage
    boundaries where snapshots exist: relative L2 distance and update sparsity (``|Δ| <= tau``).

    One pair of panels per sequence; one line per algorithm (ES solid, RL dashed), mean over seeds
    with 95% bootstrap error bars, starting from (0, 0) and (0, 1).

    Args:
        drift: :attr:`esbench.analysis.retention_report.RetentionData.drift`.
        stem: Output path without suffix.
        rng: Generator for the error bars (None: none).
        tau: Threshold of the sparsity panel (a ``sparsity@<tau>`` column of ``drift``).

    Returns:
        [png path, pdf path].
    """
    sparsity = f"sparsity@{tau:g}"
    seqs = sorted(drift["sequence"].unique())
    fig, axes = new_figure(2 * len(seqs), ncols=2)
    with _style():
        for n, seq in enumerate(seqs):
            panels = ((axes[2 * n], "rel", 0.0), (axes[2 * n + 1], sparsity, 1.0))
            for algo, g in drift[drift["sequence"] == seq].groupby("algo", sort=True):
                for ax, col, origin in panels:
                    xs, ys, err = [0.0], [origin], [[0.0], [0.0]]
                    for _, b in g.groupby("boundary", sort=True):
                        values = b[col].to_numpy(float)
                        mean, low, high = (
                            mean_ci(values, rng) if rng is not None else (values.mean(), np.nan, np.nan)
                        )
                        xs.append(float(b["timesteps"].mean()))
                        ys.append(float(mean))
                        err[0].append(float(mean - low) if np.isfinite(low) else 0.0)
                        err[1].append(float(high - mean) if np.isfinite(high) else 0.0)
                    ax.errorbar(
                        xs,
                        ys,
                        yerr=np.array(err),
                        color=algo_color(str(algo)),
                        marker="o",
                        capsize=3,
                        linestyle=_family_style(str(algo)),
                        label=f"{algo_label(str(algo))} (n={g['seed'].nunique()})",
                    )
            for ax, col, _ in panels:
                ax.set_title(
                    f"{seq}: {'relative L2 drift' if col == 'rel' else f'update sparsity (tau={tau:g})'}"
                )
                ax.set_xlabel("Environment timesteps (stage boundaries)")
                ax.set_ylabel(
                    "||θ(t) - θ_0|| / ||θ_0||"
                    if col == "rel"
                    else f"Fraction of parameters with |Δ| <= {tau:g}"
                )
                ax.legend(loc="best", frameon=False)
    return savefig(fig, stem)


#: The panels of :func:`plot_retention_drift_curves`: column, title, y label.
_DRIFT_PANELS: tuple[tuple[str, str, str], ...] = (
    ("drift_rel", "relative L2 drift since the stage began", "||θ(t) - θ_b|| / ||θ_b||"),
    ("drift_sparsity_1e-6", "update sparsity since the stage began (tau=1e-6)", "Fraction with |Δ| <= 1e-6"),
    ("policy_kl", "policy KL on earlier stages' states", "mean KL(π_end of k || π(t))"),
)


def plot_retention_drift_curves(
    drift_curves: pd.DataFrame,
    boundaries: pd.DataFrame,
    stem: str | Path,
    rng: np.random.Generator | None = None,
) -> list[Path]:
    """Drift at every evaluation point against timesteps, one row of three panels per sequence.

    Relative L2 drift and update sparsity of the parameters from the last stage-boundary snapshot
    (they restart at every boundary), and the policy KL on the states each ended stage's final
    policy visited (mean over the ended stages; from the first boundary on). ES solid, RL dashed;
    mean over seeds with a 95% bootstrap band; dotted lines: the stage boundaries (mean ``T_k``).

    Args:
        drift_curves: :attr:`esbench.analysis.retention_report.RetentionData.drift_curves`.
        boundaries: :attr:`esbench.analysis.retention_report.RetentionData.boundaries`.
        stem: Output path without suffix.
        rng: Generator for the bands (None: no bands).

    Returns:
        [png path, pdf path].
    """
    seqs = sorted(drift_curves["sequence"].unique())
    fig, axes = new_figure(len(_DRIFT_PANELS) * max(len(seqs), 1), ncols=len(_DRIFT_PANELS))
    with _style():
        for n, seq in enumerate(seqs):
            rows = drift_curves[drift_curves["sequence"] == seq]
            ends = boundaries[boundaries["sequence"] == seq].groupby("stage_index")["end_timesteps"].mean()
            for m, (col, title, ylabel) in enumerate(_DRIFT_PANELS):
                ax = axes[len(_DRIFT_PANELS) * n + m]
                have = rows[rows[col].notna()]
                for algo, curve in aggregate_curves(have, ["algo"], x="timesteps", y=col, rng=rng).groupby(
                    "algo", sort=True
                ):
                    label = f"{algo_label(str(algo))} (n={int(curve['n_seeds'].iloc[0])})"
                    _band(ax, curve, algo_color(str(algo)), label, linestyle=_family_style(str(algo)))
                for k, t in ends.items():
                    if int(k) < len(ends) - 1:
                        ax.axvline(float(t), color="#000000", linestyle=":", linewidth=0.8)
                ax.set_title(f"{seq}: {title}")
                ax.set_xlabel("Environment timesteps over the sequence")
                ax.set_ylabel(ylabel)
                if ax.get_legend_handles_labels()[0]:
                    ax.legend(loc="best", frameon=False)
    return savefig(fig, stem)


def plot_gain_retention(per_run: pd.DataFrame, stem: str | Path) -> list[Path]:
    """New-stage gain against old-stage retention, one scatter panel per algorithm.

    Each point is one seed's later stage j of one sequence: x the gain on stage j over its own
    training (normalized ``E[j, j] - E[j, j-1]``), y the change of the earlier stages' scores over
    the same span (``mean_{i<j} E[i, j] - E[i, j-1]``; below 0 is forgetting). Top right is
    learning without forgetting. Colour and marker name the sequence; axes are shared.

    Args:
        per_run: :attr:`esbench.analysis.retention_report.RetentionData.per_run`.
        stem: Output path without suffix.

    Returns:
        [png path, pdf path].
    """
    keys = ["algo", "sequence", "seed", "stage_index"]
    rows = per_run[per_run["metric"].isin(["new_stage_gain", "old_stage_change"])]
    wide = rows.pivot_table(index=keys, columns="metric", values="value", aggfunc="first").reset_index()
    algos = sorted(wide["algo"].unique(), key=lambda a: (family_of(str(a)) == "rl", str(a)))
    seqs = sorted(wide["sequence"].unique())
    markers = ["o", "s", "^", "D", "v", "P"]
    fig, axes = new_figure(max(len(algos), 1))
    values = wide[["new_stage_gain", "old_stage_change"]].to_numpy(float) if len(wide) else np.zeros((1, 2))
    lo, hi = float(np.nanmin(values)), float(np.nanmax(values))
    pad = 0.1 * max(hi - lo, 0.1)
    with _style():
        for ax, algo in zip(axes, algos, strict=False):
            mine = wide[wide["algo"] == algo]
            for s, seq in enumerate(seqs):
                pts = mine[mine["sequence"] == seq]
                if len(pts):
                    ax.scatter(
                        pts["new_stage_gain"],
                        pts["old_stage_change"],
                        color=OKABE_ITO[s % len(OKABE_ITO)],
                        marker=markers[s % len(markers)],
                        label=f"{seq} ({len(pts)})",
                        alpha=0.8,
                    )
            ax.axhline(0.0, color="#000000", linewidth=0.6)
            ax.axvline(0.0, color="#000000", linewidth=0.6)
            ax.set_xlim(lo - pad, hi + pad)
            ax.set_ylim(lo - pad, hi + pad)
            ax.set_title(f"{algo_label(str(algo))} ({'RL' if family_of(str(algo)) == 'rl' else 'ES'})")
            ax.set_xlabel("New-stage gain (normalized score)")
            ax.set_ylabel("Old-stage change (< 0: forgetting)")
            ax.legend(loc="best", frameon=False)
    return savefig(fig, stem)
