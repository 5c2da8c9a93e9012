"""MkDocs hook: render the committed benchmark JSON files into the pages that ask for them.

A page writes ``<!-- bench:comm -->`` where the table of ``esbench bench comm`` belongs. At build
time this hook replaces the marker with what ``esbench bench comm`` itself prints for the newest
JSON file under ``docs/bench/`` that holds a ``comm`` section (``esbench bench`` writes
``results/bench/bench-<what>.json``; copy it to ``docs/bench/`` to publish it), preceded by one line
saying when, where and with which command it was measured. The tables come from esbench's own
formatters, so the site shows exactly what the command printed and no number is typed by hand. A
section with no committed JSON renders as a note saying which command produces it. A JSON file may
carry a ``"note"`` string (added by whoever publishes it: what else ran on the machine, say); it is
printed beside the caption.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent.parent / "bench"
MARKER = re.compile(r"<!--\s*bench:([a-z_]+)\s*-->")

# section -> the command that measures it (``esbench bench`` with no argument is the MuJoCo bench)
COMMANDS = {
    "mujoco": "esbench bench",
    "baselines": "esbench bench baselines",
    "atari": "esbench bench atari",
    "es_family": "esbench bench es_family",
    "eggroll": "OPENBLAS_NUM_THREADS=1 esbench bench eggroll",
    "comm": "esbench bench comm",
    "store": "esbench bench store",
    "projection": "esbench bench projection",
    "lm": "esbench bench lm",
    "calibrate": "esbench bench calibrate",
}


def _format_mujoco(section: Any) -> str:
    from esbench.bench.mujoco import _print_mujoco

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        _print_mujoco(section)
    return out.getvalue()


def _format_baselines(section: Any) -> str:
    from esbench.bench.mujoco import markdown_rows

    return markdown_rows(section)


def _format_atari(section: Any) -> str:
    from esbench.bench.atari import format_atari_bench

    # JSON object keys are strings; the formatter looks the speedups up by worker count.
    speedup = {int(k): v for k, v in section.get("speedup", {}).items()}
    return format_atari_bench({**section, "speedup": speedup})


def _format_es_family(section: Any) -> str:
    from esbench.bench.es_family import format_es_family

    return format_es_family(section)


def _format_eggroll(section: Any) -> str:
    from esbench.bench.eggroll import EggrollBenchRow, format_table

    rows = [EggrollBenchRow(**{**r, "hidden": tuple(r["hidden"])}) for r in section]
    # The formatter reads the thread count from this process's environment; the command line in
    # the caption says the one the measurement ran with.
    return re.sub(r"; OPENBLAS_NUM_THREADS=\S+", "", format_table(rows))


def _format_comm(section: Any) -> str:
    from esbench.bench.comm import format_comm

    return format_comm(section)


def _format_store(section: Any) -> str:
    from esbench.bench.store import format_store

    return format_store(section)


def _format_projection(section: Any) -> str:
    from esbench.bench.projection import format_projection

    return format_projection(section)


def _format_lm(section: Any) -> str:
    from esbench.bench.lm import format_lm

    return format_lm(section)


def _format_calibrate(section: Any) -> str:
    from esbench.bench.calibrate import format_calibration

    return format_calibration(section)


FORMATTERS: dict[str, Callable[[Any], str]] = {
    "mujoco": _format_mujoco,
    "baselines": _format_baselines,
    "atari": _format_atari,
    "es_family": _format_es_family,
    "eggroll": _format_eggroll,
    "comm": _format_comm,
    "store": _format_store,
    "projection": _format_projection,
    "lm": _format_lm,
    "calibrate": _format_calibrate,
}


def newest_sections(bench_dir: Path = BENCH_DIR) -> dict[str, tuple[Path, dict[str, Any]]]:
    """For each section, the newest (by its ``date``) JSON file under ``bench_dir`` holding it."""
    found: dict[str, tuple[Path, dict[str, Any]]] = {}
    for path in sorted(bench_dir.glob("*.json")):
        data = json.loads(path.read_text())
        for key in FORMATTERS:
            if key in data and (key not in found or data["date"] > found[key][1]["date"]):
                found[key] = (path, data)
    return found


def _blank_line_before_tables(text: str) -> str:
    """Python-Markdown starts a table only after a blank line; the formatters print them tight."""
    out: list[str] = []
    for line in text.strip("\n").splitlines():
        if line.startswith("|") and out and out[-1].strip() and not out[-1].startswith("|"):
            out.append("")
        out.append(line)
    return "\n".join(out)


def render_section(key: str, sections: dict[str, tuple[Path, dict[str, Any]]]) -> str:
    """The Markdown for one marker: a provenance line, then the formatter's tables."""
    if key not in FORMATTERS:
        raise ValueError(f"unknown bench section {key!r} in a page marker; allowed: {', '.join(FORMATTERS)}")
    command = COMMANDS[key]
    if key not in sections:
        return (
            f'!!! note "Not measured in this build"\n    No JSON under `docs/bench/` holds a `{key}` '
            f"section yet. Run `{command}` and copy `results/bench/bench-*.json` to `docs/bench/`."
        )
    path, data = sections[key]
    machine = data.get("machine", {})
    where = ", ".join(
        part
        for part in (
            f"{machine['cpu_count']} cores" if "cpu_count" in machine else "",
            machine.get("platform", ""),
            f"Python {machine['python']}" if "python" in machine else "",
        )
        if part
    )
    caption = f"*Measured with `{command}` on {data['date']} ({where}); data: `docs/bench/{path.name}`.*"
    if data.get("note"):
        caption += f" {data['note']}"
    return caption + "\n\n" + _blank_line_before_tables(FORMATTERS[key](data[key]))


def render_markers(markdown: str, bench_dir: Path = BENCH_DIR) -> str:
    """``markdown`` with every ``<!-- bench:<section> -->`` marker replaced by its tables."""
    if not MARKER.search(markdown):
        return markdown
    sections = newest_sections(bench_dir)
    return MARKER.sub(lambda m: render_section(m.group(1), sections), markdown)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """MkDocs hook entry point: expand the bench markers of every page."""
    return render_markers(markdown)
