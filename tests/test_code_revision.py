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


def test_changes_under_outputs_do_not_make_the_tree_dirty(tmp_path: Path) -> None:
    """A checkout whose only change is a re-rendered report is clean for a report's provenance
    (``outputs``), dirty for everything else; a change to the code is dirty either way."""
    repo = tmp_path / "checkout"
    (repo / "esbench").mkdir(parents=True)
    (repo / "paper").mkdir()
    (repo / "esbench" / "code.py").write_text("x = 1\n")
    (repo / "paper" / "REPORT.md").write_text("old\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first"], check=True)
    assert code_revision(repo)["git_dirty"] is False
    (repo / "paper" / "REPORT.md").write_text("re-rendered\n")
    assert code_revision(repo)["git_dirty"] is True
    assert code_revision(repo, outputs=("paper",))["git_dirty"] is False
    (repo / "esbench" / "code.py").write_text("x = 2\n")
    assert code_revision(repo, outputs=("paper",))["git_dirty"] is True
