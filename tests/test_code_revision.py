"""The code a run or report records: a git commit in a checkout, the installed version elsewhere."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from esbench.tracking.store import code_revision, installed_version


def test_a_checkout_records_its_commit() -> None:
    revision = code_revision()
    assert re.fullmatch(r"[0-9a-f]{40}", revision["git_commit"]) and isinstance(revision["git_dirty"], bool)


def test_an_install_without_a_git_checkout_records_its_version(tmp_path: Path) -> None:
    """A wheel install (no .git anywhere above) and one in a venv inside another project's
    repository both record ``esbench <version> (no git checkout)``, never the project's commit."""
    expected = {"git_commit": f"esbench {installed_version()} (no git checkout)", "git_dirty": None}
    site = tmp_path / "venv" / "lib" / "python3" / "site-packages"
    site.mkdir(parents=True)
    assert code_revision(site) == expected
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(tmp_path),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "another project",
        ],
        check=True,
    )
    assert code_revision(site) == expected
    assert installed_version() and installed_version() != "unknown"
