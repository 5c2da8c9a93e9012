"""Write a display table as Markdown, LaTeX (booktabs) and CSV, with no extra dependency.

The CSV keeps the full-precision numbers (machine-readable); Markdown and LaTeX take a table of
already formatted strings, so that censored entries (``> 4.2``) and footnote marks survive.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

_LATEX_ESCAPES = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def fmt_num(value: object, digits: int = 3) -> str:
    """A number with ``digits`` significant digits ("" for NaN/None, strings passed through)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        f = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(f):
        return ""
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    if f != 0 and (abs(f) >= 1e6 or abs(f) < 1e-3):
        return f"{f:.{max(digits - 1, 0)}e}"
    return f"{f:.{digits}g}" if abs(f) < 10**digits else f"{f:.0f}"


def interval_cell(mean: float, low: float, high: float, digits: int = 3) -> str:
    """``mean [low, high]`` (``mean`` alone without an interval; "" without a mean)."""
    if math.isfinite(low) and math.isfinite(high):
        return f"{fmt_num(mean, digits)} [{fmt_num(low, digits)}, {fmt_num(high, digits)}]"
    return fmt_num(mean, digits)


def table_block(paths: dict[str, Path], root: Path) -> str:
    """A written table's Markdown (:func:`write_table`) with links to its CSV, MD and TEX files,
    relative to the report's ``root``: the block a report embeds."""
    links = ", ".join(f"[{k.upper()}]({p.relative_to(root).as_posix()})" for k, p in paths.items())
    return paths["md"].read_text() + f"\n({links})\n"


def to_markdown(table: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table of the (string) cells of ``table``."""
    cols = [str(c) for c in table.columns]
    body = [[str(v).replace("|", r"\|") for v in row] for row in table.astype(str).itertuples(index=False)]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return "\n".join(lines) + "\n"


def latex_escape(text: str) -> str:
    """Escape LaTeX special characters; ``>``/``<`` become math so they render as such."""
    out = "".join(_LATEX_ESCAPES.get(ch, ch) for ch in text)
    return out.replace(">", r"$>$").replace("<", r"$<$")


def to_latex(table: pd.DataFrame, caption: str = "", label: str = "") -> str:
    """A booktabs LaTeX table (needs ``\\usepackage{booktabs}``) of the cells of ``table``."""
    align = "l" + "r" * (len(table.columns) - 1)
    lines = [r"\begin{table}[t]", r"\centering"]
    if caption:
        lines.append(rf"\caption{{{latex_escape(caption)}}}")
    if label:
        lines.append(rf"\label{{{label}}}")
    lines += [rf"\begin{{tabular}}{{{align}}}", r"\toprule"]
    lines.append(" & ".join(latex_escape(str(c)) for c in table.columns) + r" \\")
    lines.append(r"\midrule")
    for row in table.astype(str).itertuples(index=False):
        lines.append(" & ".join(latex_escape(v) for v in row) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def write_table(
    data: pd.DataFrame,
    display: pd.DataFrame,
    stem: str | Path,
    caption: str = "",
    label: str = "",
    notes: str = "",
) -> dict[str, Path]:
    """Write ``stem``.csv (``data``), ``stem``.md and ``stem``.tex (``display``).

    Args:
        data: Full-precision table for the CSV.
        display: Formatted string table for Markdown and LaTeX.
        stem: Path without suffix.
        caption: Table caption (LaTeX caption; Markdown line above the table).
        label: LaTeX label.
        notes: Footnotes, appended below the Markdown table and as a LaTeX comment-free paragraph.

    Returns:
        {"csv": path, "md": path, "tex": path}.
    """
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = {"csv": stem.with_suffix(".csv"), "md": stem.with_suffix(".md"), "tex": stem.with_suffix(".tex")}
    data.to_csv(paths["csv"], index=False, lineterminator="\n")
    md = (f"**{caption}**\n\n" if caption else "") + to_markdown(display)
    if notes:
        md += "\n" + notes.strip() + "\n"
    paths["md"].write_text(md)
    tex = to_latex(display, caption, label)
    if notes:
        tex += "\n" + latex_escape(notes.strip()) + "\n"
    paths["tex"].write_text(tex)
    return paths
