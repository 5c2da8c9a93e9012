"""The language model's section of the lm_retention report, on hand-made runs whose answer is known:
ES keeps less of task A than GRPO at the task-B gain both reach, the verdict says so; and the other
side's decisions (the drop recovers, population size, Anchored Weight Decay) follow the data."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from omegaconf import OmegaConf

from esbench.analysis.lm_retention import is_lm, lm_points, lm_section
from esbench.analysis.retention_report import scan_sequence_runs
from tests.synthetic_store import write_sequence_run

PRE = 1000  # the pretraining's sequences: stage `countdown` starts here
PROMPTS = 200  # held-out prompts per evaluation: the solve rate's standard error


def _run(root: Path, algo: str, seed: int, reward: list[float], accuracy: list[float]) -> dict:
    """A complete sequence run: points of stage countdown every 100 completions, both tasks."""
    run_dir = root / f"{algo}-s{seed}"
    run_dir.mkdir(parents=True)
    rows = []
    for k, (r, a) in enumerate(zip(reward, accuracy, strict=True)):
        t = PRE + 100 * k
        for task, value in (("addition", a), ("countdown", r)):
            rows.append(
                {"timesteps": t, "wall_clock_s": 10.0 + 2.0 * k + seed, "eval_task": task,
                 "eval_return_mean": value, "solve_rate": value / 2, "prior_accuracy": a}
            )  # fmt: skip
    pd.DataFrame(rows).to_csv(run_dir / "metrics.csv", index=False)
    OmegaConf.save(OmegaConf.create({"lm": {"decoding": {"eval_prompts": PROMPTS}}}), run_dir / "config.yaml")
    ends = [PRE, PRE + 100 * (len(reward) - 1)]
    (run_dir / "summary.json").write_text(
        json.dumps({"stages": ["addition", "countdown"], "stage_boundaries": ends})
    )
    return {"run_id": run_dir.name, "algo": algo, "sequence": "lm_addition_to_countdown", "seed": seed,
            "complete": True, "path": str(run_dir)}  # fmt: skip


def test_lm_section_decides_es_forgets_more_at_matched_task_b_gain(tmp_path: Path) -> None:
    runs = pd.DataFrame(
        [
            _run(tmp_path, "eggroll", 0, [0.1, 0.2, 0.3], [0.8, 0.6, 0.4]),
            _run(tmp_path, "eggroll", 1, [0.1, 0.2, 0.3], [0.8, 0.62, 0.42]),
            _run(tmp_path, "eggroll", 2, [0.1, 0.2, 0.3], [0.8, 0.58, 0.38]),
            _run(tmp_path, "grpo", 0, [0.1, 0.3, 0.4], [0.8, 0.78, 0.7]),
            _run(tmp_path, "grpo", 1, [0.1, 0.3, 0.4], [0.8, 0.76, 0.72]),
            _run(tmp_path, "grpo", 2, [0.1, 0.3, 0.4], [0.8, 0.8, 0.74]),
        ]
    )
    assert is_lm(runs)
    points = lm_points(runs)
    first = points[points["point"] == 0]
    assert (first["completions"] == 0).all() and (first["task_a_retention"] == 1).all()
    assert np.allclose(points["wall_clock_s"].max(), 4.0)  # seconds since the stage began
    report = tmp_path / "report"
    blocks, claims = lm_section(runs, report, np.random.default_rng(0))
    verdicts = pd.read_csv(report / "tables" / "lm_claims.csv")
    (row,) = verdicts.itertuples()
    assert (row.a, row.b, row.verdict) == ("eggroll", "grpo", "supported")
    # The gain is the solve rate's (half the reward here), never the reward's.
    assert np.isclose(row.matched_gain, 0.1)  # the largest solve-rate gain every run reaches: EGGROLL's
    # at gain 0.1: EGGROLL keeps 0.4/0.8 .. 0.42/0.8; GRPO (at its second point) ~0.975
    assert np.isclose(row.retention_a, 0.5) and 0.96 < row.retention_b < 0.99 and row.high < 0
    assert claims[0].endswith("| supported |")  # the verdict opens the claims, the other side follows
    assert len(claims) == 5 and sum(line.endswith("| not tested |") for line in claims) == 2
    assert (report / "figures" / "lm_curves.png").exists() and "Completions" in blocks[0]


def _condition_run(
    root: Path,
    algo: str,
    seed: int,
    reward: list[float],
    accuracy: list[float],
    pop: int,
    awd: bool,
    solves: bool = True,
) -> None:
    """A complete LM sequence run in the store's layout (:func:`tests.synthetic_store.write_sequence_run`,
    then the LM columns and the condition's config keys: ``algo.population_size`` and
    ``algo.l2_anchor``, which the report's scan reads to name the condition). The solve rate is
    half the reward, or 0 at every point when not ``solves`` (a reward of format score alone)."""
    jitter = 0.01 * (seed - 1)  # seeds differ a little after the start, so intervals have a width
    acc = [a + (jitter if k else 0.0) for k, a in enumerate(accuracy)]
    points = [(0.0, "addition", {"addition": 0.0, "countdown": 0.0})] + [
        (PRE + 100.0 * k, "addition" if k == 0 else "countdown", {"addition": a, "countdown": r})
        for k, (r, a) in enumerate(zip(reward, acc, strict=True))
    ]
    run_id = f"{algo}-p{pop}-{'awd' if awd else 'plain'}"
    run_dir = write_sequence_run(
        root, "lm_retention", run_id, "lm_addition_to_countdown", seed, ["addition", "countdown"], points,
        stage_timesteps=[PRE, 100 * (len(reward) - 1)], env_id="lm",
    )  # fmt: skip
    metrics = pd.read_csv(run_dir / "metrics.csv")
    at = {t: e["addition"] for t, _, e in points}
    metrics["prior_accuracy"] = metrics["timesteps"].map(at)
    metrics["solve_rate"] = metrics["eval_return_mean"] / 2 if solves else 0.0
    metrics.to_csv(run_dir / "metrics.csv", index=False)
    summary = json.loads((run_dir / "summary.json").read_text())
    summary.update(algo=algo, stages=["addition", "countdown"], stage_boundaries=[PRE, points[-1][0]])
    (run_dir / "summary.json").write_text(json.dumps(summary))
    cfg = OmegaConf.load(run_dir / "config.yaml")
    cfg.algo = {"name": algo, "population_size": None if algo == "grpo" else pop,
                "l2_anchor": "stage_start" if awd else "zero"}  # fmt: skip
    cfg.lm = {"decoding": {"eval_prompts": PROMPTS}}
    OmegaConf.save(cfg, run_dir / "config.yaml")


#: Per condition (algorithm, population, AWD): task-B reward and task-A accuracy at 4 points, when
#: the data support every claim (ES reaches the matched gain 0.3 at its lowest task-A point, then
#: recovers) and when they contradict every claim (every drop permanent, and the other way round).
SUPPORT = {
    ("grpo", 0, False): ([0.1, 0.2, 0.3, 0.4], [0.8, 0.78, 0.76, 0.74]),
    ("eggroll", 32, False): ([0.1, 0.4, 0.4, 0.4], [0.8, 0.4, 0.6, 0.8]),
    ("eggroll", 8, False): ([0.1, 0.4, 0.4, 0.4], [0.8, 0.2, 0.3, 0.4]),
    ("eggroll", 32, True): ([0.1, 0.4, 0.4, 0.4], [0.8, 0.7, 0.75, 0.8]),
}
CONTRADICT = {
    ("grpo", 0, False): ([0.1, 0.2, 0.3, 0.4], [0.8, 0.5, 0.45, 0.4]),
    ("eggroll", 32, False): ([0.1, 0.2, 0.3, 0.4], [0.8, 0.76, 0.74, 0.72]),
    ("eggroll", 8, False): ([0.1, 0.2, 0.3, 0.4], [0.8, 0.78, 0.77, 0.76]),
    ("eggroll", 32, True): ([0.1, 0.2, 0.3, 0.4], [0.8, 0.6, 0.55, 0.5]),
}


@pytest.mark.parametrize("side", ["support", "contradict"])
def test_lm_report_decides_both_sides_and_the_decisions_flip_with_the_data(tmp_path: Path, side: str) -> None:
    data = SUPPORT if side == "support" else CONTRADICT
    for (algo, pop, awd), (reward, accuracy) in data.items():
        for seed in range(3):
            _condition_run(tmp_path / "runs", algo, seed, reward, accuracy, pop, awd)
    runs, _, unreadable = scan_sequence_runs(tmp_path / "runs")
    assert unreadable.empty
    assert set(runs["algo"]) == {"grpo", "eggroll@pop32", "eggroll@pop8", "eggroll+awd@pop32"}
    blocks, claims = lm_section(runs, tmp_path / "report", np.random.default_rng(0))
    table = pd.read_csv(tmp_path / "report" / "tables" / "lm_decisions.csv").fillna("")
    verdict = {(r.decision, r.a, r.b): r.verdict for r in table.itertuples()}
    expect = "supported" if side == "support" else "contradicted"
    assert verdict[("es_forgets_more", "eggroll@pop32", "grpo")] == expect
    assert verdict[("larger_population_forgets_less", "eggroll@pop32", "eggroll@pop8")] == expect
    assert verdict[("awd_keeps_retention", "eggroll+awd@pop32", "eggroll@pop32")] == expect
    assert verdict[("drop_recovers", "eggroll@pop32", "")] == expect  # transient, or permanent
    assert verdict[("drop_recovers", "grpo", "")] == "contradicted"  # GRPO's drop never recovers
    assert set(table["verdict"]) <= {"supported", "contradicted", "undecided"}  # every one tested
    rows = table[table["decision"] != "drop_recovers"]
    assert (rows["low"] < rows["value"]).all() and (rows["value"] < rows["high"]).all()  # intervals
    if side == "support":  # at gain 0.3 EGGROLL is at its lowest point: 0.4/0.8 +- 0.0125
        (row,) = table[
            (table["decision"] == "es_forgets_more") & (table["a"] == "eggroll@pop32")
        ].itertuples()
        assert np.isclose(row.matched_gain, 0.15) and np.isclose(row.value, 0.5 - 0.925)
        transient = pd.read_csv(tmp_path / "report" / "tables" / "lm_transient.csv").set_index("algo")
        assert transient.loc["eggroll@pop32", "reading"] == "transient"
        # The last third's mean (0.8/0.8) minus the first third's (0.4/0.8).
        assert np.isclose(transient.loc["eggroll@pop32", "recovery"], 0.5)
    decided = {line.split("|")[1].split(": ", 1)[1].strip() for line in claims}
    assert len(decided) == 4 and "Decisions" in "".join(blocks)


def test_lm_report_says_which_decision_its_runs_cannot_test(tmp_path: Path) -> None:
    for seed in range(2):
        _condition_run(tmp_path / "runs", "openai_es", seed, [0.1, 0.2], [0.8, 0.7], 32, False)
        _condition_run(tmp_path / "runs", "grpo", seed, [0.1, 0.3], [0.8, 0.75], 0, False)
    runs, _, _ = scan_sequence_runs(tmp_path / "runs")
    _, claims = lm_section(runs, tmp_path / "report", np.random.default_rng(0))
    table = pd.read_csv(tmp_path / "report" / "tables" / "lm_decisions.csv")
    untested = table[table["verdict"] == "not tested"]
    assert set(untested["decision"]) == {"larger_population_forgets_less", "awd_keeps_retention"}
    assert untested["reading"].str.contains("algo.population_size|algo.l2_anchor=stage_start").all()
    assert sum("| not tested |" in line for line in claims) == 2


def test_a_study_that_solves_nothing_decides_nothing(tmp_path: Path) -> None:
    """The data that support every claim, with a reward that rises by its format score alone (the
    solve rate 0 at every point): every decision is "not testable: no learning", none supported."""
    for (algo, pop, awd), (reward, accuracy) in SUPPORT.items():
        for seed in range(3):
            _condition_run(tmp_path / "runs", algo, seed, reward, accuracy, pop, awd, solves=False)
    runs, _, _ = scan_sequence_runs(tmp_path / "runs")
    _, claims = lm_section(runs, tmp_path / "report", np.random.default_rng(0))
    table = pd.read_csv(tmp_path / "report" / "tables" / "lm_decisions.csv")
    assert set(table["verdict"]) == {"not testable: no learning"}
    assert claims and all(line.endswith("| not testable: no learning |") for line in claims)
