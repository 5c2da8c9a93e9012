"""Report figures in one style: PNG + PDF, Okabe-Ito colours, labelled axes with units.

Every figure is drawn on a bare :class:`matplotlib.figure.Figure` with an Agg canvas (no pyplot
state, no GUI backend), and saved without timestamps so that the same data give the same bytes.
"""

from __future__ import annotations

import textwrap
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
from matplotlib.font_manager import font_scalings
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, MaxNLocator

from esbench.analysis.conditions import AWD_SUFFIX, base_algo, condition_label
from esbench.analysis.curves import aggregate_curves, normalized_iqm_curve
from esbench.analysis.metrics.intervals import mean_ci
from esbench.config.registry import colour_of, family_of

#: Okabe & Ito (2008) colour-blind-safe palette (black last; yellow left out: too pale on white).
OKABE_ITO: tuple[str, ...] = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")

X_LABELS: dict[str, str] = {
    "timesteps": "Environment timesteps (agent steps)",
    "wall_clock_s": "Wall-clock time (s)",
    "frames": "Emulator frames",
    "generation": "Update step (generation / logging step)",
}

#: How a series column reads in a legend ("ES (OpenAI), frame-skip 4").
SERIES_LABELS: dict[str, str] = {"frame_skip": "frame-skip", "workers": "workers", "cluster": "cluster"}

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
    """Human-readable algorithm name for legends: the registry's label, with a retention
    condition's variant (:func:`~esbench.analysis.conditions.condition_label`: ``ES (OpenAI) +AWD
    pop 20``)."""
    return condition_label(algo)


def condition_colors(conditions: Collection[str]) -> dict[str, str]:
    """One colour per condition of a figure, no two alike while the palette lasts.

    A registered algorithm keeps its registry colour (:func:`algo_color`). A variant (``+awd``,
    ``@pop<N>``) takes its algorithm's colour when no other condition of the figure has it, else
    the first :data:`OKABE_ITO` colour no condition of the figure uses; conditions are served in
    sorted order (without AWD first), so the same set of conditions gets the same colours in every
    figure.
    """
    names = sorted({str(c) for c in conditions}, key=lambda c: (AWD_SUFFIX in c, c))
    colours = {c: algo_color(c) for c in names if base_algo(c) == c}
    for c in names:
        if c in colours:
            continue
        own = algo_color(base_algo(c))
        free = [k for k in (own, *OKABE_ITO) if k not in colours.values()]
        colours[c] = free[0] if free else algo_color(c)
    return colours


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


def short_number(value: float, _pos: object = None) -> str:
    """A tick label of at most a few characters: 1.5M, 250k, 0.5, -21 (no offset text, which
    collides with axis labels)."""
    if not np.isfinite(value):
        return ""
    for factor, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.3g}{suffix}"
    return f"{value:.3g}"


def compact_ticks(ax: Axes, x: bool = True, y: bool = True, nbins: int = 4) -> None:
    """At most ``nbins`` + 1 ticks per axis, labelled with :func:`short_number`, so that labels
    never overlap at the committed figure size."""
    for on, axis in ((x, ax.xaxis), (y, ax.yaxis)):
        if on:
            axis.set_major_locator(MaxNLocator(nbins=nbins))
            axis.set_major_formatter(FuncFormatter(short_number))


#: Average glyph width as a share of the font size (DejaVu Sans, mixed case): how many characters
#: fit a panel's width or height when a title or an axis label is wrapped to it.
GLYPH_WIDTH_EM = 0.6


def figure_legend(fig: Figure, axes: Sequence[Axes], ncols: int = 3) -> None:
    """One legend for the whole figure, below the panels (outside every data area): each label
    once, from whichever panel drew it first, in at most ``ncols`` columns and in no more columns
    than fit the figure's width (long labels take fewer columns and more rows)."""
    seen: dict[str, Any] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            seen.setdefault(label, handle)
    if seen:
        points = _points(mpl.rcParams["legend.fontsize"], float(mpl.rcParams["font.size"]))
        column = (GLYPH_WIDTH_EM * max(map(len, seen)) + 4.0) * points  # label + handle, in points
        fits = int(fig.get_figwidth() * 72.0 // column)
        fig.legend(
            list(seen.values()),
            list(seen),
            loc="outside lower center",
            ncols=max(1, min(ncols, len(seen), fits)),
            frameon=False,
        )


def wrap_to(text: str, inches: float, points: float) -> str:
    """``text`` broken at spaces into lines of at most ``inches`` at a font of ``points``.

    A word longer than a line is left whole (never hyphenated mid-name).
    """
    chars = max(10, int(inches * 72.0 / (GLYPH_WIDTH_EM * points)))
    return "\n".join(textwrap.wrap(text, chars, break_long_words=False, break_on_hyphens=False)) or text


def _panel_inches(ax: Axes) -> tuple[float, float]:
    """(width, height) in inches of the grid cell ``ax`` occupies (labels and ticks included)."""
    fig = ax.get_figure(root=True)
    spec = ax.get_subplotspec()
    if fig is None or spec is None:
        return 3.2, 2.5
    grid = spec.get_gridspec()
    cols = spec.colspan.stop - spec.colspan.start
    rows = spec.rowspan.stop - spec.rowspan.start
    width, height = fig.get_size_inches()
    return float(width) * cols / grid.ncols, float(height) * rows / grid.nrows


def panel_text(
    ax: Axes, title: str | None = None, xlabel: str | None = None, ylabel: str | None = None
) -> None:
    """Set a panel's title and axis labels, each wrapped to fit its panel at the committed size, so
    a long task or sequence name never runs into the neighbouring panel.

    The title and the x label get about 90% of the cell's width (the rest holds the y tick labels),
    the y label about 80% of its height.
    """
    width, height = _panel_inches(ax)
    size = float(mpl.rcParams["font.size"])
    if title is not None:
        ax.set_title(wrap_to(title, 0.9 * width, _points(mpl.rcParams["axes.titlesize"], size)))
    if xlabel is not None:
        ax.set_xlabel(wrap_to(xlabel, 0.9 * width, _points(mpl.rcParams["axes.labelsize"], size)))
    if ylabel is not None:
        ax.set_ylabel(wrap_to(ylabel, 0.8 * height, _points(mpl.rcParams["axes.labelsize"], size)))


def _points(size: Any, base: float) -> float:
    """A matplotlib font size (points, or a name such as ``"large"``) in points."""
    if isinstance(size, int | float):
        return float(size)
    return base * float(font_scalings.get(str(size)) or 1.0)


def env_title(env_id: str) -> str:
    """A panel title short enough for a 3-panel row: the env id without its namespace."""
    return str(env_id).split("/")[-1]


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
    per_seed: bool | None = None,
) -> list[Path]:
    """Mean evaluation return over seeds with its 95% Student-t band, one panel per env.

    With more than one environment (and series = algo only) a last panel shows the IQM over
    tasks of min-max normalized scores against the fraction of each task's budget (stratified
    bootstrap band; :func:`esbench.analysis.curves.normalized_iqm_curve`). One legend for the
    figure, below the panels.

    Args:
        curves: The curve table.
        stem: Output path without suffix.
        x: x column (``timesteps``, ``wall_clock_s``, ``frames``).
        rng: Generator for the bands (None: no bands).
        title: Figure title.
        series: Columns naming one line; the first must be ``algo`` (it sets the colour), the
            others (e.g. ``frame_skip``, ``workers``) set the line style.
        stopped: run_ids that ended at their target score (``budget.stop_at_return``): their
            stop does not cut their condition's curve short, nothing is drawn for them past it
            (the mean there is over the runs still measured), and a marker shows each stop.
        per_seed: Also draw each seed's own curve, thin, to its own end (default: for wall-clock,
            where seeds end at different times and the mean stops at the first to end).

    Returns:
        [png path, pdf path].
    """
    series = list(series)
    per_seed = x == "wall_clock_s" if per_seed is None else per_seed
    envs = sorted(curves["env_id"].unique())
    multi = len(envs) > 1 and series == ["algo"]
    n_panels = len(envs) + int(multi)
    ncols = min(3, n_panels)
    wide = n_panels == 1 and len(series) > 1  # one panel of many conditions: room for their legend
    fig, axes = new_figure(n_panels, ncols=ncols, panel_size=(5.0, 3.0) if wide else (3.2, 2.5))
    agg = aggregate_curves(curves, ["env_id", *series], x=x, rng=rng, stopped=stopped)
    extras = (
        sorted({tuple(k) for k in curves[series[1:]].itertuples(index=False)}) if len(series) > 1 else [()]
    )
    styles = ["-", "--", ":", "-."]
    one_algo = curves["algo"].nunique() == 1 and len(series) > 1  # colour tells the conditions apart
    seeds: dict[str, set[int]] = {}  # legend label -> seed counts over the panels
    with _style():
        for i, (ax, env_id) in enumerate(zip(axes, envs, strict=False)):
            for key, curve in agg[agg["env_id"] == env_id].groupby(series, sort=True):
                key = key if isinstance(key, tuple) else (key,)
                algo, rest = str(key[0]), tuple(key[1:])
                label = algo_label(algo) + "".join(
                    f", {SERIES_LABELS.get(c, c)} {v}" for c, v in zip(series[1:], rest, strict=True)
                )
                seeds.setdefault(label, set()).add(int(curve["n_seeds"].iloc[0]))
                k = extras.index(rest) if rest in extras else 0
                if one_algo:
                    color = OKABE_ITO[k % len(OKABE_ITO)]
                    style = styles[(k // len(OKABE_ITO)) % len(styles)]
                else:
                    color, style = algo_color(algo), styles[k % len(styles)]
                _band(ax, curve, color, label, linestyle=style)
                mine = curves[curves["env_id"] == env_id]
                for c, v in zip(series, key, strict=True):
                    mine = mine[mine[c] == v]
                stops = mine[mine["run_id"].isin(set(stopped or ()))].dropna(subset=[x, "eval_return_mean"])
                if not stops.empty:  # each stopped run's last (confirmed) point
                    ends = stops.sort_values(x, kind="stable").groupby("run_id", sort=True).last()
                    ax.plot(
                        ends[x].to_numpy(float),
                        ends["eval_return_mean"].to_numpy(float),
                        color=color,
                        marker="v",
                        linestyle="none",
                        label="_nolegend_",
                    )
                if per_seed:
                    for _, run in mine.sort_values(x, kind="stable").groupby("run_id", sort=True):
                        ax.plot(
                            run[x].to_numpy(float),
                            run["eval_return_mean"].to_numpy(float),
                            color=color,
                            linestyle=style,
                            linewidth=0.6,
                            alpha=0.45,
                        )
            panel_text(
                ax, env_title(env_id), X_LABELS.get(x, x), "Evaluation return" if i % ncols == 0 else None
            )
            compact_ticks(ax)
        if multi:
            ax = axes[-1]
            for algo in sorted(curves["algo"].unique()):
                curve = normalized_iqm_curve(curves, str(algo), x=x, rng=rng)
                if not curve.empty:
                    _band(ax, curve, algo_color(str(algo)), algo_label(str(algo)))
            panel_text(
                ax,
                f"IQM over {len(envs)} tasks",
                f"Fraction of budget ({X_LABELS.get(x, x).split(' (')[0].lower()})",
                "Normalized return (IQM)",
            )
            compact_ticks(ax, x=False)
        for ax in axes:  # legend labels with the seed counts, for the figure's one legend
            for line in ax.get_lines():
                counts = seeds.get(str(line.get_label()))
                if counts:
                    n = min(counts), max(counts)
                    line.set_label(f"{line.get_label()} ({n[0]} seeds)" if n[0] == n[1] else
                                   f"{line.get_label()} ({n[0]}-{n[1]} seeds)")  # fmt: skip
        figure_legend(fig, axes, ncols=2 if n_panels == 1 else 3)
        if title:
            fig.suptitle(title)
    return savefig(fig, stem)


def plot_performance_profiles(profiles: pd.DataFrame, stem: str | Path) -> list[Path]:
    """Run-score distributions (rliable's performance profiles) with their bootstrap bands, one
    line per algorithm, drawn from numbers computed elsewhere.

    Args:
        profiles: :func:`esbench.analysis.es_family.performance_profiles` (algo, tau, share, low, high).
        stem: Output path without suffix.
    """
    fig, axes = new_figure(1, panel_size=(4.4, 3.0))
    ax = axes[0]
    with _style():
        for algo, curve in profiles.groupby("algo", sort=True):
            band = curve.rename(columns={"tau": "x", "share": "mean"})
            _band(ax, band, algo_color(str(algo)), algo_label(str(algo)), drawstyle="default")
        panel_text(ax, "Performance profiles", "Normalized score (tau)", "Share of runs above tau")
        ax.set_ylim(-0.02, 1.02)
        figure_legend(fig, axes, ncols=2)
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
            ax.set_title(env_title(env_id))
            ax.set_xlabel("Frame-skip (frames per action)")
            ax.set_ylabel("Final evaluation return")
            ax.set_xticks(sorted(env["frame_skip"].unique()))
            compact_ticks(ax, x=False)
            sp = spread[spread["env_id"] == env_id].sort_values("algo")
            ax_spread.bar(
                [algo_label(str(a)) for a in sp["algo"]],
                sp["range"].to_numpy(float),
                color=[algo_color(str(a)) for a in sp["algo"]],
            )
            ax_spread.set_title(f"{env_title(env_id)}: spread over frame-skips")
            ax_spread.set_ylabel("Max - min of mean final return")
            ax_spread.tick_params(axis="x", labelrotation=15)
            compact_ticks(ax_spread, x=False)
        figure_legend(fig, axes)
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
            where = f" ({cluster})" if table["cluster"].nunique() > 1 else ""
            panel_text(
                ax,
                f"{algo_label(algo)}, {env_title(env_id)}{where}",
                "Workers (processes)",
                f"Speedup over {int(w[0])} worker(s) (x)",
            )
            compact_ticks(ax, x=False)
        figure_legend(fig, axes)
    return savefig(fig, stem)


def _ratio_bound(row: Any) -> float:
    """The lower bound of a censored ratio: ``ratio_bound`` (Table 1 against our TRPO) or the last
    ES timestep over the paper's TRPO timesteps (against the paper's)."""
    bound = float(getattr(row, "ratio_bound", np.nan))
    if np.isfinite(bound):
        return bound
    last, trpo = (
        float(getattr(row, "es_last_timesteps", np.nan)),
        float(getattr(row, "paper_trpo_timesteps", np.nan)),
    )
    return last / trpo if trpo > 0 else np.nan


def plot_ratio_intervals(
    table: pd.DataFrame, stem: str | Path, xlabel: str, hard: Collection[str] = ()
) -> list[Path]:
    """ES/TRPO timestep ratio with its 95% interval, per task and progress fraction (log axis).

    One row per task; per progress fraction a point (our ratio) with a bar (its interval) and,
    beside it, the paper's ratio (black cross). A ratio ES never reached is drawn at its lower
    bound with a right-pointing triangle; an interval open to the right ends in an arrow; a ratio
    of 0 (ES at or above the target at its first evaluation) is a left-pointing triangle on the
    left edge. Vertical lines at the paper's two claims and at parity: 10x (its bound on the hard
    tasks, whose names are marked "hard"), 1/3x (its "up to 3x better" on the simple ones) and 1x
    (as many timesteps as TRPO); the legend names every mark and line.

    Args:
        table: :func:`esbench.analysis.table1.table1` or :func:`~esbench.analysis.table1.table1_paper`:
            ``env_name``, ``es_algo``, ``progress_fraction``, ``ratio``, ``ratio_low``,
            ``ratio_high``, ``paper_ratio``, and for censored rows ``ratio_bound`` or
            ``es_last_timesteps`` and ``paper_trpo_timesteps``.
        stem: Output path without suffix.
        xlabel: The x axis label (whose TRPO is the denominator).
        hard: env_ids of the paper's hard tasks (the 10x claim), marked in their row's name.
    """
    several = table["es_algo"].nunique() > 1
    rows = sorted({(str(r.env_name), str(r.es_algo)) for r in table.itertuples()})
    fracs = sorted(table["progress_fraction"].unique())
    values = pd.concat([table[c] for c in ("ratio", "ratio_low", "ratio_high", "paper_ratio")]).to_numpy(
        float
    )
    positive = values[np.isfinite(values) & (values > 0)]
    floor = 10 ** np.floor(np.log10(min(positive.min(), 1.0) / 2)) if len(positive) else 0.01
    top = 10 ** np.ceil(np.log10(max(positive.max(), 10.0) * 2)) if len(positive) else 100.0
    fig, axes = new_figure(1, ncols=1, panel_size=(6.0, 0.55 * len(rows) + 1.8))
    ax = axes[0]
    step = 0.7 / max(1, len(fracs))
    with _style():
        for i, (env, algo) in enumerate(rows):
            y0 = len(rows) - 1 - i
            for j, p in enumerate(fracs):
                hit = table[
                    (table["env_name"] == env)
                    & (table["es_algo"] == algo)
                    & (table["progress_fraction"] == p)
                ]
                if hit.empty:
                    continue
                r = next(hit.itertuples())
                y = y0 + ((len(fracs) - 1) / 2 - j) * step
                color = OKABE_ITO[j % len(OKABE_ITO)]
                ratio, low, high = float(r.ratio), float(r.ratio_low), float(r.ratio_high)
                if np.isposinf(ratio) or bool(getattr(r, "censored", False)):
                    bound = _ratio_bound(r)
                    if np.isfinite(low) and low < top:  # the interval, open above: the target may come early
                        ax.plot([max(low, floor), top], [y, y], color=color, linewidth=1.2)
                        arrow = {"arrowstyle": "->", "color": color}
                        ax.annotate("", (top, y), (top / 2, y), arrowprops=arrow)
                    if np.isfinite(bound):
                        ax.plot(max(bound, floor), y, marker=">", color=color, linestyle="none")  # fmt: skip
                elif np.isfinite(ratio):
                    if np.isfinite(low):
                        right = min(high, top) if np.isfinite(high) else top
                        ax.plot([max(low, floor), right], [y, y], color=color, linewidth=1.2)
                        if not np.isfinite(high):
                            ax.annotate(
                                "", (top, y), (top / 2, y), arrowprops={"arrowstyle": "->", "color": color}
                            )
                    at = ratio if ratio > floor else floor * 1.25  # 0 or below the axis: at its left edge
                    ax.plot(at, y, marker="o" if ratio > floor else "<", color=color, linestyle="none")
                if np.isfinite(float(r.paper_ratio)):
                    ax.plot(float(r.paper_ratio), y, marker="x", color="#000000", linestyle="none",
                            markersize=5)  # fmt: skip
        lines: tuple[tuple[float, Any, str], ...] = (
            (10.0, "--", "10x (paper's bound, hard tasks)"),
            (1.0, ":", "1x (as many as TRPO)"),
            (1 / 3, "-.", "1/3x (paper's best, simple tasks)"),
        )
        for at, style, _ in lines:
            ax.axvline(at, color="#000000", linestyle=style, linewidth=0.8)
        ax.set_xscale("log")
        ax.set_xlim(floor, top)
        ax.set_ylim(-0.6, len(rows) - 0.4)
        ax.set_yticks(range(len(rows)))
        hard_names = {str(h).split("/")[-1].split("-")[0] for h in hard}
        ax.set_yticklabels(
            [
                (f"{e} (hard)" if e in hard_names else e) + (f"\n{algo_label(a)}" if several else "")
                for e, a in reversed(rows)
            ]
        )
        ax.grid(axis="y", visible=False)
        ax.set_xlabel(xlabel)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
        handles = [
            Line2D([], [], color=OKABE_ITO[j % len(OKABE_ITO)], marker="o", label=f"{round(100 * p)}%")
            for j, p in enumerate(fracs)
        ]
        handles += [
            Line2D([], [], color="#777777", marker=">", linestyle="none", label="never reached (bound)"),
            Line2D([], [], color="#000000", marker="x", linestyle="none", label="paper's ES/TRPO"),
        ]
        handles += [
            Line2D([], [], color="#000000", linestyle=st, linewidth=0.8, label=t) for _, st, t in lines
        ]
        fig.legend(
            handles=handles,
            loc="outside lower center",
            ncols=3,
            frameon=False,
            title="Colour: share of TRPO's learning progress (dot: our ratio, bar: 95% interval)",
            columnspacing=1.0,
            handletextpad=0.4,
        )
    return savefig(fig, stem)


def plot_data_efficiency(table: pd.DataFrame, stem: str | Path, hard: Collection[str] = ()) -> list[Path]:
    """ES/TRPO timestep ratio against our TRPO, with intervals (:func:`plot_ratio_intervals`).

    Args:
        table: :func:`esbench.analysis.table1.table1`.
        stem: Output path without suffix.
        hard: env_ids of the paper's hard tasks.
    """
    return plot_ratio_intervals(
        table, stem, "ES timesteps / our TRPO's timesteps to the same score (log)", hard=hard
    )


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
    with a 95% Student-t band. Dotted vertical lines mark the stage boundaries (mean
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
    colours = condition_colors(curves["algo"].unique())
    with _style():
        for ax, (seq, i, name) in zip(axes, keys, strict=False):
            rows = curves[(curves["sequence"] == seq) & (curves["stage_index"] == i)]
            agg = aggregate_curves(rows, ["algo"], x="timesteps", y="p", rng=rng)
            for algo, curve in agg.groupby("algo", sort=True):
                n = int(curve["n_seeds"].iloc[0])
                _band(
                    ax,
                    curve,
                    colours[str(algo)],
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
            panel_text(ax, f"{seq}: {name} (stage {i})", "Timesteps over the sequence",
                       f"Normalized score on {name}")  # fmt: skip
            compact_ticks(ax)
        figure_legend(fig, axes)
    return savefig(fig, stem)


def plot_retention_drift(
    drift: pd.DataFrame, stem: str | Path, rng: np.random.Generator | None = None, tau: float = 1e-6
) -> list[Path]:
    """Parameter drift from the sequence's starting parameters against timesteps, at the stage
    boundaries where snapshots exist: relative L2 distance and update sparsity (``|Δ| <= tau``).

    One pair of panels per sequence; one line per algorithm (ES solid, RL dashed), mean over seeds
    with 95% Student-t error bars, starting from (0, 0) and (0, 1).

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
    colours = condition_colors(drift["algo"].unique())
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
                        color=colours[str(algo)],
                        marker="o",
                        capsize=3,
                        linestyle=_family_style(str(algo)),
                        label=f"{algo_label(str(algo))} (n={g['seed'].nunique()})",
                    )
            for ax, col, _ in panels:
                panel_text(
                    ax,
                    f"{seq}: {'relative L2 drift' if col == 'rel' else f'update sparsity (tau={tau:g})'}",
                    "Timesteps (stage boundaries)",
                    "||θ(t) - θ_0|| / ||θ_0||"
                    if col == "rel"
                    else f"Share of parameters with |Δ| <= {tau:g}",
                )
                compact_ticks(ax)
        figure_legend(fig, axes)
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
    mean over seeds with a 95% Student-t band; dotted lines: the stage boundaries (mean ``T_k``).

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
    colours = condition_colors(drift_curves["algo"].unique())
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
                    _band(ax, curve, colours[str(algo)], label, linestyle=_family_style(str(algo)))
                for k, t in ends.items():
                    if int(k) < len(ends) - 1:
                        ax.axvline(float(t), color="#000000", linestyle=":", linewidth=0.8)
                panel_text(ax, f"{seq}: {title}", "Timesteps over the sequence", ylabel)
                compact_ticks(ax)
        figure_legend(fig, axes)
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
            panel_text(
                ax,
                f"{algo_label(str(algo))} ({'RL' if family_of(str(algo)) == 'rl' else 'ES'})",
                "New-stage gain (normalized score)",
                "Old-stage change (< 0: forgetting)",
            )
            compact_ticks(ax)
        figure_legend(fig, axes)
    return savefig(fig, stem)
