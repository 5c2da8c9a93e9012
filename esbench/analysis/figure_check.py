"""Check a drawn figure the way a venue's reviewer looks at it: no two pieces of text overlap,
and no legend covers a plotting area.

:func:`layout_problems` draws the figure at its own size on its Agg canvas and measures, in
display pixels, every visible text it shows (figure and panel titles, axis labels, the tick labels
that are drawn, offset texts, annotations, legend entries and titles). It reports every pair whose
boxes intersect and every legend whose box intersects an axes' data area. The report tests run it
on every figure each report draws.
"""

from __future__ import annotations

from itertools import combinations

from matplotlib.axis import Axis
from matplotlib.backend_bases import RendererBase
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.text import Text
from matplotlib.transforms import Bbox

#: Pixels two boxes must share (on both axes) to count as overlapping: glyph boxes that merely
#: touch at an edge are not a defect a reader sees.
TOLERANCE_PX = 1.0


def _drawn_tick_labels(axis: Axis) -> list[Text]:
    """The tick labels ``axis`` actually draws: visible, non-empty, at a location inside its view."""
    low, high = sorted(axis.get_view_interval())
    span = high - low
    out = []
    for ticks, locs in ((axis.get_major_ticks(), axis.get_majorticklocs()),
                        (axis.get_minor_ticks(), axis.get_minorticklocs())):  # fmt: skip
        for tick, loc in zip(ticks, locs, strict=False):
            if not low - 1e-9 * span <= loc <= high + 1e-9 * span:
                continue
            for label in (tick.label1, tick.label2):
                if label.get_visible() and label.get_text().strip():
                    out.append(label)
    return out


def _legends(fig: Figure) -> list[Legend]:
    found = list(fig.legends)
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is not None:
            found.append(legend)
    return [lg for lg in found if lg.get_visible()]


def text_boxes(fig: Figure, renderer: RendererBase) -> list[tuple[str, Bbox]]:
    """(name, window extent) of every visible, non-empty text of a drawn figure.

    Names say where a text is ("panel 2 x tick '50k'", "legend 'TRPO (3 seeds)'"), so a failing
    check points at the culprit.
    """
    items: list[tuple[str, Text]] = []
    for text in fig.texts:
        items.append(("figure text", text))
    suptitle = getattr(fig, "_suptitle", None)  # matplotlib keeps the suptitle's Text only here
    if isinstance(suptitle, Text):
        items.append(("figure title", suptitle))
    for i, ax in enumerate(fig.axes):
        if not ax.get_visible() or not ax.axison:
            continue
        where = f"panel {i + 1}"
        for title in (ax.title, getattr(ax, "_left_title", None), getattr(ax, "_right_title", None)):
            if isinstance(title, Text):
                items.append((f"{where} title", title))
        items.append((f"{where} x label", ax.xaxis.label))
        items.append((f"{where} y label", ax.yaxis.label))
        items.append((f"{where} x offset", ax.xaxis.get_offset_text()))
        items.append((f"{where} y offset", ax.yaxis.get_offset_text()))
        items += [(f"{where} x tick", t) for t in _drawn_tick_labels(ax.xaxis)]
        items += [(f"{where} y tick", t) for t in _drawn_tick_labels(ax.yaxis)]
        items += [(f"{where} annotation", t) for t in ax.texts]
    for legend in _legends(fig):
        items += [("legend", t) for t in legend.get_texts()]
        items.append(("legend title", legend.get_title()))
    out = []
    for name, text in items:
        if text.get_visible() and text.get_text().strip():
            box = text.get_window_extent(renderer)
            if box.width > 0 and box.height > 0:
                out.append((f"{name} {text.get_text()!r}", box))
    return out


def _overlap(a: Bbox, b: Bbox, tolerance: float = TOLERANCE_PX) -> bool:
    dx = min(a.x1, b.x1) - max(a.x0, b.x0)
    dy = min(a.y1, b.y1) - max(a.y0, b.y0)
    return bool(dx > tolerance and dy > tolerance)


def layout_problems(fig: Figure) -> list[str]:
    """Every overlap of two texts, and every legend over a plotting area, in a figure.

    Args:
        fig: A figure with an Agg canvas (as :func:`esbench.analysis.figures.new_figure` makes),
            at the size it is saved at.

    Returns:
        One line per problem (empty: the layout is clean).
    """
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    problems = []
    boxes = text_boxes(fig, renderer)
    for (name_a, a), (name_b, b) in combinations(boxes, 2):
        if _overlap(a, b):
            problems.append(f"overlapping text: {name_a} and {name_b}")
    for legend in _legends(fig):
        box = legend.get_window_extent(renderer)
        labels = ", ".join(repr(t.get_text()) for t in legend.get_texts()[:2])
        for i, ax in enumerate(fig.axes):
            if ax.get_visible() and ax.axison and _overlap(box, ax.get_window_extent(renderer)):
                problems.append(f"legend ({labels}, ...) over the data area of panel {i + 1}")
    return problems
