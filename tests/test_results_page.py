"""docs/results.md's claims are the committed reports' own: one source, checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from esbench.analysis.results_page import BEGIN, END, REPORTS, claims_block, with_block

ROOT = Path(__file__).resolve().parents[1]


def test_the_results_page_holds_every_committed_reports_claims_as_the_reports_give_them() -> None:
    page = (ROOT / "docs" / "results.md").read_text()
    assert with_block(page, claims_block(ROOT)) == page, (
        "docs/results.md disagrees with the committed reports: "
        "run `python -m esbench.analysis.results_page --write`"
    )
    committed = {p.parent.relative_to(ROOT).as_posix() for p in (ROOT / "paper").rglob("REPORT.md")}
    assert committed == {rel for rel, _ in REPORTS}, "every committed report is on the page, and only those"


def test_a_report_whose_claims_change_changes_the_page(tmp_path: Path) -> None:
    for rel, _ in REPORTS:
        (tmp_path / rel).mkdir(parents=True)
        (tmp_path / rel / "REPORT.md").write_text((ROOT / rel / "REPORT.md").read_text())
    before = claims_block(tmp_path)
    report = tmp_path / "paper" / "table2" / "REPORT.md"
    report.write_text(
        report.read_text().replace("| claim | paper | ours | verdict |", "| claim | paper | OURS | verdict |")
    )
    assert claims_block(tmp_path) != before and "| claim | paper | OURS | verdict |" in claims_block(tmp_path)


def test_a_page_without_its_markers_or_a_report_without_claims_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no generated block"):
        with_block("# Results\n", claims_block(ROOT))
    assert with_block(f"a\n{BEGIN}\nold\n{END}\nb\n", "new\n") == "a\nnew\nb\n"
    for rel, _ in REPORTS:
        (tmp_path / rel).mkdir(parents=True)
        (tmp_path / rel / "REPORT.md").write_text("# Report\n\n## Provenance\n")
    with pytest.raises(ValueError, match="no claims section"):
        claims_block(tmp_path)
