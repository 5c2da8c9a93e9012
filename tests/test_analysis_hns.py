"""Table 2's human-normalized scores and the provenance's environment versions, on known answers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from omegaconf import OmegaConf

from esbench.analysis.env_versions import env_versions_line
from esbench.analysis.load import load_results
from esbench.analysis.report import build_report, provenance
from esbench.analysis.table2 import (
    ATARI_REFERENCE,
    HUMAN_RANDOM_REFERENCE,
    display_table2,
    human_normalized,
    load_atari_reference,
    median_hns,
    table2,
)
from esbench.tracking.schema import CONFIG_FILE
from tests.synthetic_store import write_run


def test_human_normalized_by_hand() -> None:
    score = [60.0, 10.0, 0.0, 5.0, np.nan, 7.0]
    random = [10.0, 10.0, 10.0, 5.0, 1.0, -3.0]
    human = [110.0, 110.0, 20.0, 5.0, 2.0, 2.0]
    # (60-10)/100, (10-10)/100, (0-10)/10, no scale (human == random), NaN score, (7+3)/5
    expected = [0.5, 0.0, -1.0, np.nan, np.nan, 2.0]
    np.testing.assert_allclose(human_normalized(score, random, human), expected)


#: (random, human) per game: Wang et al. 2016, "Dueling Network Architectures for Deep RL"
#: (arXiv:1511.06581), the no-op-starts random and human scores (as also listed in DeepMind's
#: dqn_zoo ``atari_data.py``), for the 51 games of Salimans et al. 2017's Table 2, keyed by ALE id.
PUBLISHED_RANDOM_HUMAN: dict[str, tuple[float, float]] = {
    "Alien": (227.8, 7127.7), "Amidar": (5.8, 1719.5), "Assault": (222.4, 742.0),
    "Asterix": (210.0, 8503.3), "Asteroids": (719.1, 47388.7), "Atlantis": (12850.0, 29028.1),
    "BankHeist": (14.2, 753.1), "BattleZone": (2360.0, 37187.5), "BeamRider": (363.9, 16926.5),
    "Berzerk": (123.7, 2630.4), "Bowling": (23.1, 160.7), "Boxing": (0.1, 12.1),
    "Breakout": (1.7, 30.5), "Centipede": (2090.9, 12017.0), "ChopperCommand": (811.0, 7387.8),
    "CrazyClimber": (10780.5, 35829.4), "DemonAttack": (152.1, 1971.0), "DoubleDunk": (-18.6, -16.4),
    "Enduro": (0.0, 860.5), "FishingDerby": (-91.7, -38.7), "Freeway": (0.0, 29.6),
    "Frostbite": (65.2, 4334.7), "Gopher": (257.6, 2412.5), "Gravitar": (173.0, 3351.4),
    "IceHockey": (-11.2, 0.9), "Kangaroo": (52.0, 3035.0), "Krull": (1598.0, 2665.5),
    "MontezumaRevenge": (0.0, 4753.3), "NameThisGame": (2292.3, 8049.0), "Phoenix": (761.4, 7242.6),
    "Pitfall": (-229.4, 6463.7), "Pong": (-20.7, 14.6), "PrivateEye": (24.9, 69571.3),
    "Qbert": (163.9, 13455.0), "Riverraid": (1338.5, 17118.0), "RoadRunner": (11.5, 7845.0),
    "Robotank": (2.2, 11.9), "Seaquest": (68.4, 42054.7), "Skiing": (-17098.1, -4336.9),
    "Solaris": (1236.3, 12326.7), "SpaceInvaders": (148.0, 1668.7), "StarGunner": (664.0, 10250.0),
    "Tennis": (-23.8, -8.3), "TimePilot": (3568.0, 5229.2), "Tutankham": (11.4, 167.6),
    "UpNDown": (533.4, 11693.2), "Venture": (0.0, 1187.5), "VideoPinball": (16256.9, 17667.9),
    "WizardOfWor": (563.5, 4756.5), "YarsRevenge": (3092.9, 54576.9), "Zaxxon": (32.5, 9173.3),
}  # fmt: skip
assert len(PUBLISHED_RANDOM_HUMAN) == 51


def test_reference_has_the_published_random_and_human_scores_of_all_51_games() -> None:
    table = pd.read_csv(ATARI_REFERENCE)
    scores = pd.read_csv(HUMAN_RANDOM_REFERENCE)
    assert list(scores.columns) == ["game", "gymnasium_id", "random", "human", "source"]
    assert list(scores["gymnasium_id"]) == list(table["gymnasium_id"])  # Table 2's games, its order
    assert (scores["human"] > scores["random"]).all()
    assert scores["source"].str.contains("Wang et al. 2016").all()
    # Every row against the copy below, typed from the published table (not from the file).
    rows = {gid.removeprefix("ALE/").removesuffix("-v5"): (r, h) for gid, r, h in
            zip(scores["gymnasium_id"], scores["random"], scores["human"], strict=True)}  # fmt: skip
    assert rows == PUBLISHED_RANDOM_HUMAN
    ref = load_atari_reference()
    assert len(ref) == 51 and ref[["random", "human"]].notna().all().all()


def _set_eval_policy(run_dir: Path, policy: str) -> None:
    """Give a synthetic run's config an ``eval.policy`` (synthetic configs predate it)."""
    cfg = OmegaConf.load(run_dir / CONFIG_FILE)
    OmegaConf.update(cfg, "eval.policy", policy, force_add=True)
    OmegaConf.save(cfg, run_dir / CONFIG_FILE)


def test_table2_human_normalizes_ours_and_the_papers_scores(tmp_path: Path) -> None:
    """Two games with hand-made random/human scores; every HNS below is computed by hand."""
    t = [0, 1000]
    for seed in (0, 1):
        write_run(
            tmp_path, "table2", "openai_es", "ALE/Pong-v5", seed, t, [-21, -1 + 2 * seed], env_kind="atari"
        )
        a2c = write_run(tmp_path, "table2", "a2c", "ALE/Pong-v5", seed, t, [-21, -21], env_kind="atari")
        _set_eval_policy(a2c, "auto")
        write_run(tmp_path, "table2", "openai_es", "ALE/Enduro-v5", seed, t, [0, 30], env_kind="atari")
        a2c = write_run(tmp_path, "table2", "a2c", "ALE/Enduro-v5", seed, t, [0, 0], env_kind="atari")
        _set_eval_policy(a2c, "deterministic")
    reference = pd.DataFrame(
        {
            "game": ["Pong", "Enduro"],
            "gymnasium_id": ["ALE/Pong-v5", "ALE/Enduro-v5"],
            "dqn": [np.nan, 300.0],
            "a3c_ff_1day": [11.0, -82.5],
            "es_ff_1hour": [21.0, 95.0],
            "random": [-21.0, 0.0],
            "human": [19.0, 100.0],
        }
    )
    res = load_results(tmp_path / "table2")
    table = table2(res.complete, reference, rng=np.random.default_rng(0)).set_index("game")
    pong, enduro = table.loc["Pong"], table.loc["Enduro"]
    assert pong["es_score"] == 0.0 and pong["es_score_hns"] == pytest.approx(21 / 40)  # (0+21)/40
    assert pong["rl_score_hns"] == 0.0  # -21: random play
    assert pong["paper_a3c_hns"] == pytest.approx(32 / 40) and pong["paper_es_hns"] == pytest.approx(1.05)
    assert np.isnan(pong["paper_dqn_hns"])
    assert enduro["es_score_hns"] == pytest.approx(0.30) and enduro["rl_score_hns"] == 0.0
    assert enduro["paper_dqn_hns"] == pytest.approx(3.0) and enduro["paper_a3c_hns"] == pytest.approx(-0.825)
    med = median_hns(table)
    assert med["es_score_hns"] == pytest.approx((0.525 + 0.30) / 2)
    assert med["paper_a3c_hns"] == pytest.approx((0.8 - 0.825) / 2)
    assert med["paper_dqn_hns"] == pytest.approx(3.0)  # the one game with a DQN score
    # How A2C acted at evaluation, from each run's config: auto on Atari is sampled.
    assert pong["rl_eval"] == "sampled" and enduro["rl_eval"] == "deterministic"
    shown = display_table2(table.reset_index()).set_index("Game")
    assert shown.loc["Pong", "ES HNS"] == "52.5%" and shown.loc["Enduro", "A3C FF HNS (paper)"] == "-82.5%"


def test_env_versions_line_names_ours_and_the_papers() -> None:
    runs = pd.DataFrame(
        {
            "env_id": ["Hopper-v5", "HalfCheetah-v5", "Hopper-v5", "ALE/Pong-v5"],
            "env_kind": ["mujoco", "mujoco", "mujoco", "atari"],
        }
    )
    info = [
        {"packages": {"gymnasium": "1.4.0", "mujoco": "4.0.0", "ale-py": "0.12.1"}},
        {"packages": {"gymnasium": "1.4.0"}},
    ]
    line = env_versions_line(runs, info)
    assert line.startswith(
        "- Environments: ALE v5 (ALE/Pong-v5; gymnasium 1.4.0, ale-py 0.12.1); the paper: "
    )
    assert "Gymnasium MuJoCo v5 (HalfCheetah-v5, Hopper-v5; gymnasium 1.4.0, mujoco 4.0.0)" in line
    assert "the paper: gym v1 MuJoCo tasks (mujoco-py, MuJoCo 1.31)" in line
    assert env_versions_line(runs.iloc[:0], info) == "- Environments: unknown"


def test_report_states_env_versions_and_human_normalized_scores(tmp_path: Path) -> None:
    for algo in ("openai_es", "a2c"):
        write_run(
            tmp_path / "runs", "table2", algo, "ALE/SpaceInvaders-v5", 0, [0, 1000], [0, 0], env_kind="atari"
        )
    results = load_results(tmp_path / "runs" / "table2")
    assert "- Environments: ALE v5 (ALE/SpaceInvaders-v5; gymnasium 1.0.0)" in provenance(results)
    text = build_report("table2", tmp_path / "runs", tmp_path / "paper").read_text()
    # A raw 0 on Space Invaders is far below random play (148): (0 - 148) / (1668.7 - 148).
    assert "| Space Invaders | 0 | 0 | tie | 0 | -9.73% | -9.73% |" in text  # a tie: no dagger
    assert (
        "Below random play (HNS < 0: a lower score than a uniformly random agent's): ES on Space Invaders"
        in text
    )
