"""MkDocs hook: publish files that live outside ``docs/`` with the site, without copies.

- The README is the site's home page: ``index.md`` is generated from ``README.md`` at build time,
  its ``docs/`` links made relative to the site, so the two never drift apart.
- The reports under ``paper/`` (REPORT.md, figures, tables) and the published numbers under
  ``results/reference/`` are added at their repository paths (``paper/table1/REPORT.md`` becomes
  the page ``paper/table1/REPORT/``), so the guides link to the very files ``esbench reproduce``
  wrote, and the strict build checks those links.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent.parent
PUBLISHED = ("paper", "results/reference")


def home_page(readme: str) -> str:
    """``readme`` with its links into ``docs/`` made relative to the documentation root."""
    return re.sub(r"\]\(docs/", "](", readme)


def on_files(files: Files, config: Any, **kwargs: Any) -> Files:
    """Add the home page and every file under ``paper/`` and ``results/reference/``."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    files.append(File.generated(config, "index.md", content=home_page(readme)))
    for top in PUBLISHED:
        for path in sorted((ROOT / top).rglob("*")):
            if path.is_file():
                src_uri = path.relative_to(ROOT).as_posix()
                files.append(File.generated(config, src_uri, abs_src_path=str(path)))
    return files
