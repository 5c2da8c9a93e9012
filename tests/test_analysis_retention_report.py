"""The retention report (``esbench report retention``) on synthetic sequence stores with
hand-computed answers, with seeds and reference runs missing, and bad sequence input at the CLI.

The store (:func:`_store`): a two-stage sequence ``pair`` (forward, backward; 100 timesteps each,
5 evaluations per stage after the one at timestep 0). Every algorithm's single-stage reference
runs reach 10 on their stage from 0, so R_random = 0 and R_ref = 10 and p = return / 10. In the
sequence run, forward reaches 10 during stage 0 and falls to ``x`` during stage 1; backward is 0
during stage 0 except 5 at its last point, then 10. Hence, per seed (LAST_K = 5):

* forgetting of forward = its early drop (to the mean over backward's first third) = 1 - x/10;
  backward's forgetting 0;
* average performance (x/10 + 1) / 2, average forgetting (1 - x/10) / 2;
* forward transfer of backward: AUC over [100, 200] = ((0.5 + 1) / 2 * 20 + 4 * 20) / 100 = 0.95
  against the reference's 0.9: (0.95 - 0.9) / (1 - 0.9) = 0.5; of forward 0 (same curve);
* new-stage gain of backward: 1 - mean(0, 0, 0, 0, 0.5) = 0.9; old-stage change x/10 - 1.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from esbench.analysis.cli import main
from esbench.analysis.report import build_report
from esbench.analysis.report_check import check_report
from esbench.analysis.retention_behaviour import Probes, write_probes
from esbench.analysis.retention_report import (
    analyse_retention,
    mean_reference,
    read_snapshot_drift,
    scan_sequence_runs,
)
from esbench.analysis.wandb_report import log_report_to_wandb
from esbench.measures.distribution import gaussian
from esbench.recipes import all_jobs, get_recipe, sequence_shape
from esbench.tracking.schema import SNAPSHOT_DRIFT_FILE
from esbench.utils.layout import Block
from tests.conftest import esbench
from tests.synthetic_store import write_sequence_run
from tests.test_wandb_tracking import finished_wandb_records

STAGES = ("forward", "backward")
#: Forward's return during stage 1, per (algo, seed): ES forgets more than RL.
X = {("openai_es", 0): 4.0, ("openai_es", 1): 6.0, ("trpo", 0): 9.0, ("trpo", 1): 9.0}
SNAPS = np.array([[1, 1, 1, 1], [1, 1, 1, 3], [1, 1, 4, 3]], dtype=float)
LAYOUT = (Block(0, (2,)), Block(2, (2,)))  # two "layers" of two parameters


def _sequence_points(x: float) -> list[tuple[float, str, dict[str, float]]]:
    pts: list[tuple[float, str, dict[str, float]]] = [(0.0, "forward", {"forward": 0.0, "backward": 0.0})]
    pts += [(20.0 * k, "forward", {"forward": 10.0, "backward": 5.0 if k == 5 else 0.0}) for k in range(1, 6)]
    pts += [(100.0 + 20.0 * k, "backward", {"forward": x, "backward": 10.0}) for k in range(1, 6)]
    return pts


def _reference_points(stage: str) -> list[tuple[float, str, dict[str, float]]]:
    return [(20.0 * k, stage, {stage: 0.0 if k == 0 else 10.0}) for k in range(6)]


def _store(root: Path, x: dict[tuple[str, int], float] = X, references: bool = True) -> Path:
    for (algo, seed), value in x.items():
        write_sequence_run(
            root,
            "retention",
            algo,
            "pair",
            seed,
            STAGES,
            _sequence_points(value),
            snapshots=SNAPS,
            layout=LAYOUT,
        )
        if references:
            for k, stage in enumerate(STAGES):
                write_sequence_run(
                    root, "retention", algo, "pair", seed, STAGES, _reference_points(stage), only_stage=k
                )
    return root


def _metric(table: pd.DataFrame, algo: str, metric: str, stage: int = -1) -> pd.Series:
    rows = table[
        (table["algo"] == algo)
        & (table["metric"] == metric)
        & (table["stage_index"] == stage)
        & (table["layer"] == -1)
    ]
    assert len(rows) == 1, (algo, metric, stage, rows)
    return rows.iloc[0]


def test_per_run_metrics_match_the_hand_computed_answers(tmp_path: Path) -> None:
    runs, superseded, unreadable = scan_sequence_runs(_store(tmp_path / "runs") / "retention")
    assert len(runs) == 12 and superseded.empty and unreadable.empty  # 4 sequence + 8 reference runs
    data = analyse_retention(runs)
    assert data.problems == []
    es0 = data.per_run[(data.per_run["algo"] == "openai_es") & (data.per_run["seed"] == 0)]
    flat = es0[(es0["layer"] == -1) & (es0["during"] == -1)]
    value = {(r.metric, r.stage_index): r.value for r in flat.itertuples()}
    assert value[("forgetting", 0)] == pytest.approx(0.6)
    assert value[("forgetting", 1)] == pytest.approx(0.0)
    assert value[("max_early_drop", 0)] == pytest.approx(0.6)
    assert value[("average_performance", -1)] == pytest.approx(0.7)
    assert value[("average_forgetting", -1)] == pytest.approx(0.3)
    assert value[("forward_transfer", 0)] == pytest.approx(0.0)
    assert value[("forward_transfer", 1)] == pytest.approx(0.5)
    assert value[("new_stage_gain", 1)] == pytest.approx(0.9)
    assert value[("old_stage_change", 1)] == pytest.approx(-0.6)
    assert value[("update_l2", 0)] == pytest.approx(2.0)  # [1,1,1,1] -> [1,1,1,3]
    assert value[("drift_l2", 0)] == pytest.approx(3.0)  # [1,1,1,3] -> [1,1,4,3]
    assert value[("drift_l2", 1)] == pytest.approx(0.0)
    assert value[("update_sparsity@1e-06", 0)] == pytest.approx(0.75)
    layers = es0[(es0["metric"] == "drift_l2") & (es0["stage_index"] == 0) & (es0["layer"] >= 0)]
    assert dict(zip(layers["layer"], layers["value"], strict=True)) == pytest.approx({0: 0.0, 1: 3.0})
    norm = data.normalization
    assert set(norm["source"]) == {"reference (openai_es)"} and set(norm["n_reference_seeds"]) == {2}
    assert np.allclose(norm["r_random"], 0.0) and np.allclose(norm["r_ref"], 10.0)
    # Drift against timesteps: from the first snapshot, at the stage boundaries T_0 = 100, T_1 = 200.
    d = data.drift[(data.drift["algo"] == "openai_es") & (data.drift["seed"] == 0)].sort_values("boundary")
    assert list(d["timesteps"]) == [100.0, 200.0]
    assert list(d["l2"]) == pytest.approx([2.0, np.sqrt(13.0)])
    assert list(d["rel"]) == pytest.approx([1.0, np.sqrt(13.0) / 2.0])
    assert data.seeds["missing"].tolist() == ["", ""]


def test_reference_curves_of_seeds_with_different_evaluation_timesteps_are_interpolated() -> None:
    # ES evaluates at the first generation past each interval: the seeds' timesteps differ.
    t, r = mean_reference([(np.array([0.0, 10.0, 20.0]), np.array([0.0, 10.0, 20.0])),
                           (np.array([0.0, 12.0, 24.0]), np.array([0.0, 0.0, 0.0]))])  # fmt: skip
    assert list(t) == [0.0, 10.0, 12.0, 20.0]  # within the range both cover
    assert list(r) == pytest.approx([0.0, 5.0, 6.0, 10.0])


def test_report_tables_figures_and_claim(tmp_path: Path) -> None:
    runs = _store(tmp_path / "runs")
    rc = main(["retention", f"results_dir={runs}", f"out_dir={tmp_path / 'paper'}"])
    assert rc == 0
    out = tmp_path / "paper" / "retention"
    for stem in ("retention", "retention_normalization"):
        for suffix in ("md", "tex", "csv"):
            assert (out / "tables" / f"{stem}.{suffix}").stat().st_size > 0
    for stem in ("retention_curves", "retention_drift", "retention_gain"):
        for suffix in ("png", "pdf"):
            assert (out / "figures" / f"{stem}.{suffix}").stat().st_size > 0, stem
    table = pd.read_csv(out / "tables" / "retention.csv")
    es = _metric(table, "openai_es", "forgetting", 0)
    assert es["n_seeds"] == 2 and es["mean"] == pytest.approx(0.5)
    # Student t of {0.4, 0.6}: 0.5 +- 12.706 x 0.1
    assert es["low"] == pytest.approx(0.5 - 1.2706, abs=1e-4) and es["high"] == pytest.approx(
        0.5 + 1.2706, abs=1e-4
    )
    rl = _metric(table, "trpo", "forgetting", 0)
    assert rl["mean"] == pytest.approx(0.1) and rl["low"] == pytest.approx(0.1)  # equal seeds: the point
    assert _metric(table, "openai_es", "average_performance")["mean"] == pytest.approx(0.75)
    assert _metric(table, "trpo", "forward_transfer", 1)["mean"] == pytest.approx(0.5)
    md = (out / "tables" / "retention.md").read_text()
    assert "ES (OpenAI)" in md and "0.5 [-0.771, 1.77]" in md
    report = (out / "REPORT.md").read_text()
    assert "Seeds per condition: 2" in report and "intervals are Student-t 95% CIs over seeds" in report
    assert "figures/retention_curves.png" in report and "figures/retention_gain.png" in report
    # At matched gain: backward's gain is 0.5 at its first point for every run (5 -> 10), so g* = 0.5
    # and retention there is the change of forward's score since backward began (1.0 for every run):
    # ES 0.4 - 1 and 0.6 - 1, TRPO 0.9 - 1 twice.
    matched = pd.read_csv(out / "tables" / "retention_matched_gain.csv").set_index("algo")
    assert matched.loc["openai_es", "matched_gain"] == pytest.approx(0.5)
    assert matched.loc["openai_es", "retention_at_matched_gain"] == pytest.approx(-0.5)
    assert matched.loc["trpo", "retention_at_matched_gain"] == pytest.approx(-0.1)
    assert matched.loc["openai_es", "average_forgetting"] == pytest.approx(0.25)  # unconditional, beside
    # Difference -0.4; Welch t at 2 + 2 seeds (df = 1): the interval holds 0, undecided.
    claim = next(line for line in report.splitlines() if "ES forgets more than RL at matched" in line)
    assert "difference -0.4 [" in claim and "| undecided" in claim
    assert (out / "figures" / "retention_gain_paths.png").stat().st_size > 0
    assert "seeds missing" not in report and "Partial results" not in report
    assert "Scale: smoke" in report and "testhost" in report
    budget = (out / "tables" / "retention_budget.md").read_text()
    assert "| ES (OpenAI) | pair | reference, stage 1 | 2 | 100 |" in budget
    # The W&B summary: one namespace per stage, CI beside the mean.
    summary = json.loads((out / "wandb_summary.json").read_text())
    assert summary["retention/pair/openai_es/0_forward/forgetting"] == pytest.approx(0.5)
    assert summary["retention/pair/openai_es/0_forward/forgetting/low"] == pytest.approx(
        0.5 - 1.2706, abs=1e-4
    )  # the Student-t low end
    assert summary["retention/pair/trpo/all/average_forgetting"] == pytest.approx(0.05)


def test_wandb_gets_the_summary_with_per_stage_namespaces(tmp_path: Path) -> None:
    """The report run's summary (the real client, offline), read back from its ``.wandb`` file."""
    report_dir = build_report("retention", _store(tmp_path / "runs"), tmp_path / "paper").parent
    logged = log_report_to_wandb(report_dir, "offline")
    assert logged is not None
    (path,) = logged.run_dir.glob("run-*.wandb")
    sent = {
        (i.key or "/".join(i.nested_key)): json.loads(i.value_json)
        for r in finished_wandb_records(path)
        if r.WhichOneof("record_type") == "summary"
        for i in r.summary.update
    }
    assert sent["retention/pair/trpo/1_backward/forward_transfer"] == pytest.approx(0.5)


def test_missing_seeds_are_named_and_the_report_still_renders(tmp_path: Path) -> None:
    runs = _store(tmp_path / "runs")
    # openai_es has seed 2 (sequence and references); trpo's seed-2 sequence run never finished and
    # it has no seed-2 references; ars has sequence runs only (no reference runs at all).
    _store(runs, {("openai_es", 2): 5.0})
    write_sequence_run(
        runs, "retention", "trpo", "pair", 2, STAGES, _sequence_points(9.0)[:4], complete=False
    )
    _store(runs, {("ars", 0): 2.0, ("ars", 1): 2.0, ("ars", 2): 2.0}, references=False)
    assert main(["retention", f"results_dir={runs}", f"out_dir={tmp_path / 'paper'}"]) == 0
    out = tmp_path / "paper" / "retention"
    report = (out / "REPORT.md").read_text()
    assert "**TRPO / pair: seeds missing: 2** (of 0, 1, 2)." in report
    assert "trpo-pair-seq-w1-s2" in report  # the incomplete run, by name
    assert "stage 0 (forward): seed(s) 2; stage 1 (backward): seed(s) 2" in report
    assert "Partial results" in report and "trpo/pair" in report
    table = pd.read_csv(out / "tables" / "retention.csv")
    assert _metric(table, "openai_es", "forgetting", 0)["n_seeds"] == 3
    assert _metric(table, "trpo", "forgetting", 0)["n_seeds"] == 2  # what it has, rendered
    # ars: on the common scale (the best reference of any algorithm), no forward transfer (no
    # reference runs of its own).
    assert _metric(table, "ars", "forgetting", 0)["mean"] == pytest.approx(0.8)  # (10 - 2) / 10
    assert table[(table["algo"] == "ars") & (table["metric"] == "forward_transfer")].empty
    norm = pd.read_csv(out / "tables" / "retention_normalization.csv")
    ars = norm[norm["algo"] == "ars"]
    assert ars["r_ref_own"].isna().all() and set(ars["source"]) == {"reference (openai_es)"}
    assert (out / "figures" / "retention_curves.png").stat().st_size > 0


def test_bad_runs_are_listed_not_counted(tmp_path: Path) -> None:
    runs = _store(tmp_path / "runs")
    seq = runs / "retention" / "openai_es-pair-seq-w1-s1"
    (seq / "snapshots.npz").write_bytes(b"PK\x03\x04 cut")
    (seq / SNAPSHOT_DRIFT_FILE).write_text("from_row,to_row\n0,")  # cut too: nothing to fall back on
    # A sequence run without the timestep-0 evaluation cannot be normalized.
    write_sequence_run(
        runs, "retention", "trpo", "pair", 1, STAGES, _sequence_points(9.0)[1:], snapshots=SNAPS
    )
    # ppo's untrained evaluation (50) lifts the common R_random, the mean over every algorithm's
    # runs (0, 0, 0, 50: 12.5), above the best reference's end (10): flagged, kept.
    write_sequence_run(runs, "retention", "ppo", "pair", 0, STAGES, [(0.0, "forward", {"forward": 50.0,
                       "backward": 50.0}), *_sequence_points(9.0)[1:]])  # fmt: skip
    for k, stage in enumerate(STAGES):
        write_sequence_run(
            runs, "retention", "ppo", "pair", 0, STAGES, _reference_points(stage), only_stage=k
        )
    drift, why = read_snapshot_drift(seq, 2)
    assert drift is None and "snapshots.npz unreadable" in why
    report = build_report("retention", runs, tmp_path / "paper").read_text()
    # The report reads its data/, which ships the (cut) drift table in place of the snapshots.
    why = "no drift (snapshot_drift.csv lacks columns"
    assert f"openai_es/pair seed 1 (openai_es-pair-seq-w1-s1): {why}" in report
    assert "trpo/pair seed 1 (trpo-pair-seq-w1-s1): no evaluation at timestep 0" in report
    flagged = "ppo/pair seed 0 (ppo-pair-seq-w1-s0): stage 0 (forward): R_ref 10 is below R_random 12.5"
    assert flagged in report
    assert "reference (openai_es) *" in report and "scores upside down" in report


def test_a_replicate_run_twice_counts_once(tmp_path: Path) -> None:
    """Sequence and reference runs of one seed are different replicates; the same run twice is one."""
    runs = _store(tmp_path / "runs")
    first = runs / "retention" / "openai_es-pair-seq-w1-s0"
    shutil.copytree(first, runs / "retention" / "openai_es-pair-seq-w1-s0-again")
    os.utime(first / "summary.json", (1.0, 1.0))  # the copy is the newer run of this replicate
    used, superseded, _ = scan_sequence_runs(runs / "retention")
    assert len(used) == 12 and list(superseded["path"]) == [str(first)]
    report = build_report("retention", runs, tmp_path / "paper").read_text()
    assert "Superseded, not used: 1 run(s)" in report and "Seeds per condition: 2" in report


def test_report_without_sequence_runs_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "runs" / "retention").mkdir(parents=True)
    assert main(["retention", f"results_dir={tmp_path / 'runs'}"]) == 2
    assert "no complete sequence runs" in capsys.readouterr().err


def test_report_is_byte_reproducible(tmp_path: Path) -> None:
    runs = _store(tmp_path / "runs")
    a = build_report("retention", runs, tmp_path / "a", seed=3).parent
    b = build_report("retention", runs, tmp_path / "b", seed=3).parent
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    for rel in files:
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel


# --- bad sequence input at the CLI (issue #14 part 7), cases tests/test_sequences_config.py lacks --


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["sequence=cartpole_pair", "sequence.stage_timesteps=0"],
            "sequence.stage_timesteps=0 is out of range; allowed: sequence.stage_timesteps >= 1",
        ),
        (
            ["sequence=cartpole_pair", "sequence.only_stage=3"],
            "sequence.only_stage=3 is out of range; allowed: 0 <= sequence.only_stage < 2",
        ),
        (
            ["sequence=cartpole_pair", "+sequence.stages.1.env.dynamic.length=2"],
            "sequence.stages[1] (long_pole): env.dynamic: no such env key (did you mean dynamics?)",
        ),
        (
            ["sequence=cartpole_pair", "sequence.stages.1.env.dynamics.lenght=2"],
            "lenght",
        ),
    ],
)
def test_cli_rejects_bad_stage_input_before_any_work(tmp_path: Path, args: list[str], expected: str) -> None:
    proc = esbench("run", "algo=openai_es", *args, f"results_dir={tmp_path}", check=False, timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and expected in lines[0], proc.stderr
    assert not any(tmp_path.iterdir())  # no run directory


# --- the recipe -------------------------------------------------------------------------------------


@pytest.mark.parametrize("scale", ["smoke", "mini", "paper"])
def test_recipe_has_every_reference_run_on_the_same_stage_budget(scale: str) -> None:
    """Each (algorithm, sequence, seed) has its sequence run and one single-stage reference run per
    stage, all with one per-stage budget, so normalization and forward transfer can be computed."""
    jobs = [dict(o.split("=", 1) for o in job) for job in all_jobs(get_recipe("retention"), scale)]
    groups: dict[tuple[str, ...], list[dict[str, str]]] = {}
    for o in jobs:  # a condition: the algorithm and its variant (population size, weight decay anchor)
        variant = (o.get("algo.population_size", ""), o.get("algo.l2_anchor", ""))
        groups.setdefault((o["algo"], o["sequence"], o["seed"], *variant), []).append(o)
    assert groups
    for (algo, seq, *_), runs in groups.items():
        n_stages = len(sequence_shape(seq)[1])
        assert sorted(o["sequence.only_stage"] for o in runs) == sorted(["null", *map(str, range(n_stages))])
        assert len({o["sequence.stage_timesteps"] for o in runs}) == 1, (algo, seq)
    algos = {a for a, *_ in groups}
    assert {"openai_es", "ppo"} <= algos
    if scale == "mini":  # the ES family against two RL baselines, with AWD and two population sizes
        assert {"openai_es", "eggroll", "pgpe", "ppo", "trpo"} <= algos
        assert {s for _, s, *_ in groups} == {"cheetah_dir", "cheetah_mass"}
        assert {k[3] for k in groups if k[0] == "openai_es"} == {"20", "40"}
        assert any(k[4] == "stage_start" for k in groups)
    if scale == "paper":
        assert {"ars", "cma_es", "trpo", "a2c", "dqn"} <= algos
        assert {s for _, s, *_ in groups} == {
            "cheetah_dir",
            "cheetah_mass",
            "hopper_mass",
            "atari_mode",
            "cw10",
        }


@pytest.mark.slow
def test_reproduce_retention_smoke_end_to_end(tmp_path: Path) -> None:
    """The recipe's smoke scale through the real CLI: every run and every decision is analysed."""
    args = ["retention", "scale=smoke", f"results_dir={tmp_path / 'runs'}", f"out_dir={tmp_path / 'paper'}"]
    proc = esbench("reproduce", *args, timeout=900)
    report = tmp_path / "paper" / "retention" / "REPORT.md"
    assert f"report written: {report}" in proc.stdout
    table = pd.read_csv(report.parent / "tables" / "retention.csv")
    conditions = {"openai_es@pop8", "openai_es@pop16", "openai_es+awd@pop8", "ppo"}
    assert set(table["algo"]) == conditions and set(table["sequence"]) == {"cartpole_pair"}
    assert {"forgetting", "forward_transfer", "drift_l2", "update_sparsity@1e-06"} <= set(table["metric"])
    text = report.read_text()
    assert "not evaluated" not in text and "no drift" not in text
    for stem in ("retention_curves", "retention_drift", "retention_gain", "retention_gain_paths"):
        assert (report.parent / "figures" / f"{stem}.png").stat().st_size > 0
    claims = pd.read_csv(report.parent / "tables" / "retention_claims.csv")
    assert {"es_forgets_more", "awd_keeps_retention", "larger_population_forgets_less"} <= set(
        claims["claim"]
    )
    assert "retention_at_matched_gain" in pd.read_csv(report.parent / "tables" / "retention_matched_gain.csv")


def test_kl_and_drift_logged_at_every_point_reach_the_table_and_the_figure(tmp_path: Path) -> None:
    """The ``policy_kl`` and drift columns of ``metrics.csv`` (esbench.training.drift): the last KL
    of stage 0 is the CSV's ``kl`` (KL(π_0 || π_final)), the drift curve has one row per point."""
    runs = _store(tmp_path / "runs")
    for run_dir in (runs / "retention").iterdir():
        if "-seq-" not in run_dir.name:
            continue
        m = pd.read_csv(run_dir / "metrics.csv")
        ev = m["eval_return_mean"].notna()
        m.loc[ev, "drift_l2"] = m.loc[ev, "timesteps"] / 10.0
        m.loc[ev, "drift_rel"] = m.loc[ev, "timesteps"] / 1000.0
        m.loc[ev, ["drift_sparsity_1e-6", "drift_sparsity_1e-4"]] = 0.5
        ended = ev & (m["eval_task"] == "forward") & (m["timesteps"] >= 100)
        m.loc[ended, "policy_kl"] = m.loc[ended, "timesteps"] / 100.0 - 1.0  # 0 at T_0 = 100, 1 at 200
        m.to_csv(run_dir / "metrics.csv", index=False)
    data = analyse_retention(scan_sequence_runs(runs / "retention")[0])
    kl = data.per_run[data.per_run["metric"] == "kl"]
    assert set(kl["stage_index"]) == {0} and kl["value"].tolist() == pytest.approx([1.0] * 4)
    es0 = data.drift_curves[(data.drift_curves["algo"] == "openai_es") & (data.drift_curves["seed"] == 0)]
    assert es0["timesteps"].tolist() == [
        0.0,
        20.0,
        40.0,
        60.0,
        80.0,
        100.0,
        120.0,
        140.0,
        160.0,
        180.0,
        200.0,
    ]
    assert es0["policy_kl"].isna().sum() == 5 and es0["policy_kl"].iloc[-1] == pytest.approx(1.0)
    assert es0["drift_rel"].iloc[-1] == pytest.approx(0.2)
    assert main(["retention", f"results_dir={runs / 'retention'}", f"out_dir={tmp_path / 'paper'}"]) == 0
    out = tmp_path / "paper" / "retention"
    assert (out / "figures" / "retention_drift_curves.png").stat().st_size > 0
    # The policy KL mixes scales across families (ES: Gaussians of std 0.01): in the CSV, not shown.
    assert "| KL |" not in (out / "tables" / "retention.md").read_text()
    assert "kl" in set(pd.read_csv(out / "tables" / "retention.csv")["metric"])
    assert "figures/retention_drift_curves.png" in (out / "REPORT.md").read_text()


def test_behavioural_distance_reaches_the_report_with_kl_only_for_sampling_policies(tmp_path: Path) -> None:
    """Sequence runs with probes (ES deterministic, TRPO sampling): the report's behaviour table
    has each stage's own update and the drift after stage 0 as separate rows, the RMS parameter
    change from the snapshots, TRPO's KL with an interval and ES's "—"; ES's logged policy KL is
    not drawn beside TRPO's."""
    runs = _store(tmp_path / "runs")
    for run_dir in (runs / "retention").iterdir():
        if "-seq-" not in run_dir.name:
            continue
        stochastic = run_dir.name.startswith("trpo")
        shift = 0.1 * (1 + int(run_dir.name.split("-s")[-1][0]))  # seeds differ: intervals
        g = lambda a: gaussian(np.asarray(a, float), np.zeros(1))  # noqa: E731
        write_probes(
            run_dir / "probes.npz",
            Probes(
                stages=STAGES,
                start=(g([[0.0], [0.0]]), g([[0.0], [0.0]])),
                ends=((g([[shift], [shift]]),), (g([[0.0], [0.0]]), g([[shift], [-shift]]))),
                stochastic=stochastic,
                low=np.array([-1.0]),
                high=np.array([1.0]),
                n_states=(2, 2),
            ),
        )
        m = pd.read_csv(run_dir / "metrics.csv")
        m.loc[m["eval_return_mean"].notna() & (m["timesteps"] > 100), "policy_kl"] = 1.0
        m.to_csv(run_dir / "metrics.csv", index=False)
    data = analyse_retention(scan_sequence_runs(runs / "retention")[0])
    b = data.behaviour
    assert sorted(set(zip(b["kind"], b["stage_index"], b["to_index"], strict=True))) == [
        ("drift_after", 0, 1), ("own_update", 0, 0), ("own_update", 1, 1),
    ]  # fmt: skip
    own0 = b[(b["kind"] == "own_update") & (b["stage_index"] == 0)]
    assert own0["rms_param_change"].tolist() == pytest.approx([1.0] * 4)  # (0, 0, 0, 2) / sqrt(4)
    es0 = b[(b["algo"] == "openai_es") & (b["seed"] == 0)]
    assert es0["rms_action_change"].tolist() == pytest.approx([0.1, 0.1, 0.1])
    assert (
        es0["kl_both_stochastic"].isna().all()
        and b.loc[b["algo"] == "trpo", "kl_both_stochastic"].gt(0).all()
    )
    kl_drawn = data.drift_curves.groupby("algo")["policy_kl"].apply(lambda v: int(v.notna().sum()))
    assert kl_drawn["openai_es"] == 0 and kl_drawn["trpo"] > 0
    assert main(["retention", f"results_dir={runs / 'retention'}", f"out_dir={tmp_path / 'paper'}"]) == 0
    out = tmp_path / "paper" / "retention"
    md = (out / "tables" / "retention_behaviour.md").read_text()
    assert "| own update |" in md and "| drift after (to the end of backward) |" in md
    table = pd.read_csv(out / "tables" / "retention_behaviour.csv")
    trpo = table[(table["algo"] == "trpo") & (table["kind"] == "own_update") & (table["stage_index"] == 0)]
    assert (trpo["kl_both_stochastic_low"] < trpo["kl_both_stochastic_high"]).all()
    assert table.loc[table["algo"] == "openai_es", "kl_both_stochastic_mean"].isna().all()
    assert "### Behavioural distance on one scale" in (out / "REPORT.md").read_text()
    assert (out / "data" / "runs").is_dir() and list((out / "data" / "runs").rglob("probes.npz"))


def test_snapshots_over_the_size_limit_stay_in_the_run_directory(tmp_path: Path) -> None:
    """A report's data/ ships a run's files up to MAX_SHIPPED_RUN_FILE_BYTES: a large model's
    snapshots stay with the run, the drift table the run wrote beside them ships instead, and the
    report rebuilt from data/ has the same drift, per layer too, to the last digit."""
    from esbench.analysis.report_data import MAX_SHIPPED_RUN_FILE_BYTES
    from esbench.training.ruler import write_snapshots

    runs = _store(tmp_path / "runs")
    seq = runs / "retention" / "openai_es-pair-seq-w1-s1"
    n = MAX_SHIPPED_RUN_FILE_BYTES // 8
    big = np.random.default_rng(0).standard_normal((3, n)).astype(np.float32)
    layout = (Block(0, (n // 2,)), Block(n // 2, (n - n // 2,)))
    write_snapshots(
        seq / "snapshots.npz", list(big), list(STAGES), [100, 200], layout=layout
    )  # the real writer
    assert (seq / "snapshots.npz").stat().st_size > MAX_SHIPPED_RUN_FILE_BYTES
    report = build_report("retention", runs, tmp_path / "paper")
    data = report.parent / "data" / "runs"
    assert not (data / seq.name / "snapshots.npz").exists()
    assert (data / seq.name / SNAPSHOT_DRIFT_FILE).is_file()  # a few kB: ships
    assert not (data / "openai_es-pair-seq-w1-s0" / "snapshots.npz").exists()  # its drift table ships instead
    assert "openai_es-pair-seq-w1-s1): no drift" not in report.read_text()
    # The drift the analysis takes from the shipped table is the drift of the snapshots themselves.
    from_data, why = read_snapshot_drift(data / seq.name, 2)
    assert why == "" and from_data is not None
    expected = big[2].astype(np.float64) - big[1].astype(np.float64)
    assert from_data.whole(1, 2)["l2"] == np.linalg.norm(expected)
    per_layer = from_data.layers(1, 2).set_index("layer")["l2"]
    assert per_layer[1] == np.linalg.norm(expected[n // 2 :])
    assert check_report(report.parent).ok
    # Without the table (a run from before it), the report from data/ says why that run has no drift,
    # and a run whose snapshots are small ships them.
    (seq / SNAPSHOT_DRIFT_FILE).unlink()
    (runs / "retention" / "openai_es-pair-seq-w1-s0" / SNAPSHOT_DRIFT_FILE).unlink()
    report = build_report("retention", runs, tmp_path / "paper")
    assert (data / "openai_es-pair-seq-w1-s0" / "snapshots.npz").is_file()
    why = (
        f"no drift (no {SNAPSHOT_DRIFT_FILE} and no snapshots.npz; a report's data/ ships no snapshots "
        "over 1 MB, the run directory keeps them)"
    )
    assert f"openai_es/pair seed 1 (openai_es-pair-seq-w1-s1): {why}" in report.read_text()
    assert check_report(report.parent).ok
