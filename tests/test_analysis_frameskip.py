"""Frame-skip: the paper's claim decided from intervals over seeds, and the Figure 2 style curves."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from esbench.analysis.frameskip import insensitivity_verdict
from esbench.analysis.load import load_results
from esbench.analysis.report import build_report
from tests.synthetic_store import write_run

T = [0, 1000, 2000, 3000]
PONG_MARGIN = 3.0  # about 10% of Pong's human - random span


def _store(root: Path, finals: dict[int, list[float]], algo: str = "openai_es", start: float = -21.0) -> Path:
    """One run per (frame skip, seed) on Pong, rising from ``start`` to its final score."""
    for fs, values in finals.items():
        for seed, final in enumerate(values):
            curve = [start, (start + final) / 2, final, final]
            write_run(root, "frameskip", algo, "ALE/Pong-v5", seed, T, curve, env_kind="atari", frame_skip=fs)
    return root / "frameskip"


@pytest.mark.parametrize(
    ("finals", "word"),
    [
        # Every frame skip ends near 10 on 3 seeds: every pair's interval inside +-3.
        ({1: [10.0, 10.2, 9.8], 2: [10.1, 9.9, 10.0], 4: [10.0, 10.3, 9.7]}, "supported"),
        # Frame skip 1 ends near 10, 4 near -10: that pair's interval lies wholly past +3.
        ({1: [10.0, 10.2, 9.8], 2: [10.1, 9.9, 10.0], 4: [-10.0, -9.7, -10.3]}, "contradicted"),
        # Equal means but seeds 20 points apart: the intervals straddle the margin.
        ({1: [0.0, 10.0, 20.0], 2: [20.0, 0.0, 10.0], 4: [10.0, 20.0, 0.0]}, "undecided"),
    ],
)
def test_frameskip_verdict_follows_the_intervals(tmp_path: Path, finals: dict, word: str) -> None:
    res = load_results(_store(tmp_path, finals))
    fv = insensitivity_verdict(res.complete, res.curves, PONG_MARGIN)
    assert fv.verdict.word == word
    assert (fv.n_seeds, fv.n_pairs) == (3, 3)
    if word == "undecided":
        assert "more seeds (now 3)" in fv.verdict.decide


def test_a_flat_curve_and_one_seed_decide_nothing(tmp_path: Path) -> None:
    """Scores equal because nothing was learned (-21 everywhere) are no evidence; neither is one seed."""
    res = load_results(_store(tmp_path / "flat", {1: [-21.0] * 3, 4: [-21.0] * 3}))
    fv = insensitivity_verdict(res.complete, res.curves, PONG_MARGIN)
    assert fv.flat and fv.verdict.word == "undecided" and "nothing learned" in fv.verdict.decide
    res = load_results(_store(tmp_path / "one", {1: [10.0], 4: [10.0]}))
    fv = insensitivity_verdict(res.complete, res.curves, PONG_MARGIN)
    assert fv.verdict.word == "undecided" and "needs at least 2 seeds" in fv.verdict.decide


def test_equal_scores_near_the_untrained_policy_are_not_equally_fast_learning(tmp_path: Path) -> None:
    """Every frame skip ends within a point of the untrained policy's -21 (some evaluations above it,
    so the curves are not flat): the differences fit the margin, but no frame skip's gain over the
    first evaluation has an interval above 0 (fs 1: gains 1, 0, 0.5, mean 0.5, t interval
    0.5 +- 4.303 * 0.5 / sqrt(3) = [-0.74, 1.74]), so nothing was learned and nothing is decided."""
    near = {1: [-20.0, -21.0, -20.5], 2: [-20.5, -20.0, -21.0], 4: [-21.0, -20.5, -20.0]}
    res = load_results(_store(tmp_path, near))
    fv = insensitivity_verdict(res.complete, res.curves, PONG_MARGIN)
    assert not fv.flat and fv.learned == ()
    assert fv.low >= -PONG_MARGIN and fv.high <= PONG_MARGIN  # the largest difference fits
    assert fv.verdict.word == "undecided" and fv.verdict.decide.startswith("nothing learned to compare")
    assert fv.text().endswith("at skip: none")
    # One frame skip that learned (gains 11, 11.5, 10.5: interval above 0) makes the claim decidable.
    res = load_results(_store(tmp_path / "one_learned", {**near, 2: [-10.0, -9.5, -10.5]}))
    fv = insensitivity_verdict(res.complete, res.curves, PONG_MARGIN)
    assert fv.learned == (2,) and fv.verdict.word == "contradicted"


def test_one_frame_skip_has_no_difference_to_decide(tmp_path: Path) -> None:
    """A partial study with one frame skip says so, instead of a difference of a skip with itself."""
    res = load_results(_store(tmp_path, {1: [10.0, 10.2, 9.8]}))
    fv = insensitivity_verdict(res.complete, res.curves, PONG_MARGIN)
    assert fv.verdict.word == "undecided" and fv.verdict.decide == "needs at least 2 frame skips"
    assert fv.n_pairs == 0 and fv.text() == "one frame skip only: no difference to compare (margin ±3)"


def test_frameskip_report_quotes_the_paper_and_draws_figure_2(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    _store(runs, {1: [10.0, 10.2, 9.8], 2: [10.1, 9.9, 10.0], 4: [10.0, 10.3, 9.7]})
    _store(runs, {1: [0.0, 1.0, -1.0], 2: [-10.0, -11.0, -9.0], 4: [-20.0, -19.0, -20.5]}, algo="a2c")
    text = build_report("frameskip", runs, tmp_path / "paper").read_text()
    claim = next(line for line in text.splitlines() if "learns about equally at every frame skip" in line)
    assert '"each setting leads to about equally fast learning" (Sec. 4.4, Fig. 2' in claim
    assert "fewest seeds 3" in claim and claim.rstrip().endswith("| supported |")
    assert "for contrast" in claim and "(contradicted)" in claim
    assert "Bonferroni-adjusted to 95% jointly" in text
    figures = tmp_path / "paper" / "frameskip" / "figures"
    assert (figures / "frameskip_curves.png").is_file() and (figures / "frameskip_curves.pdf").is_file()
    assert np.isfinite(float(len(text)))
