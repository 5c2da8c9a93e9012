"""The documentation site's build hooks: benchmark tables come from bench JSON, the home page from the README.

The strict build itself (`make docs`, run by CI) checks links, pages and docstrings; these tests hold
what the hooks promise: a table on the benchmark page is the bench command's own output for the
newest committed JSON, never text typed into the page.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType

import pytest

from esbench.bench.store import bench_store, format_store

ROOT = Path(__file__).resolve().parent.parent


def _hook(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"docs_hook_{name}", ROOT / "docs" / "hooks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _write_bench(path: Path, date: str, section: str, data: object) -> None:
    machine = {"cpu_count": 2, "platform": "Linux-test", "python": "3.11.7"}
    path.write_text(json.dumps({"machine": machine, "date": date, section: data}))


def test_a_bench_marker_renders_the_newest_json_with_the_bench_formatter(tmp_path: Path) -> None:
    hooks = _hook("bench_tables")
    old = bench_store(sizes=(3,))
    new = bench_store(sizes=(7,))
    _write_bench(tmp_path / "bench-all.json", "2026-01-01 10:00:00", "store", old)
    _write_bench(tmp_path / "bench-store.json", "2026-02-01 10:00:00", "store", new)

    page = hooks.render_markers("# Store\n\n<!-- bench:store -->\n\nafter\n", tmp_path)

    assert "<!--" not in page and page.endswith("after\n")
    assert format_store(new) in page  # the command's own table, for the newer file
    assert format_store(old) not in page
    caption = re.search(r"\*Measured with `esbench bench store` on (.+?) \((.+?)\); data: `(.+?)`\.\*", page)
    assert caption is not None
    assert caption.groups() == (
        "2026-02-01 10:00:00",
        "2 cores, Linux-test, Python 3.11.7",
        "docs/bench/bench-store.json",
    )


def test_a_note_in_the_json_is_printed_beside_the_caption(tmp_path: Path) -> None:
    hooks = _hook("bench_tables")
    path = tmp_path / "bench-store.json"
    _write_bench(path, "2026-02-01 10:00:00", "store", bench_store(sizes=(2,)))
    path.write_text(json.dumps({**json.loads(path.read_text()), "note": "Shared machine, load 8."}))
    assert "docs/bench/bench-store.json`.* Shared machine, load 8.\n" in hooks.render_markers(
        "<!-- bench:store -->", tmp_path
    )


def test_a_section_without_json_says_which_command_measures_it(tmp_path: Path) -> None:
    hooks = _hook("bench_tables")
    page = hooks.render_markers("<!-- bench:atari -->", tmp_path)
    assert page.startswith('!!! note "Not measured in this build"')
    assert "`esbench bench atari`" in page


def test_an_unknown_marker_fails_the_build_naming_the_allowed_sections(tmp_path: Path) -> None:
    hooks = _hook("bench_tables")
    with pytest.raises(ValueError, match=r"unknown bench section 'stor'.*allowed: mujoco, baselines"):
        hooks.render_markers("<!-- bench:stor -->", tmp_path)


def test_every_committed_bench_json_renders() -> None:
    """The JSON under docs/bench/ is readable by today's formatters (the site would not build)."""
    hooks = _hook("bench_tables")
    sections = hooks.newest_sections()
    assert sections, "no bench JSON committed under docs/bench/"
    for key in sections:
        rendered = hooks.render_section(key, sections)
        assert rendered.startswith("*Measured with `")
        assert "\n| " in rendered  # at least one table row


def test_the_home_page_is_the_readme_with_links_into_the_site() -> None:
    hooks = _hook("repo_files")
    readme = (ROOT / "README.md").read_text()
    home = hooks.home_page(readme)
    assert "](docs/" in readme and "](docs/" not in home
    assert "](guides/clusters.md)" in home
    for target in re.findall(r"\]\(([^)#]+\.md)\)", home):
        assert (ROOT / "docs" / target).exists() or (ROOT / target).exists(), target
