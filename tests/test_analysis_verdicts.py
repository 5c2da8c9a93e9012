"""Times to a target as censored data and the verdicts drawn from them, on synthetic runs with
hand-computed answers (a case for each verdict, censored runs included), and Table 1 against the
paper's own TRPO curve."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from esbench.analysis.load import load_results
from esbench.analysis.metrics import time_to_score
from esbench.analysis.metrics.censored import time_ratio, time_ratio_level
from esbench.analysis.report import build_report
from esbench.analysis.table1 import load_mujoco_reference, table1_paper
from esbench.analysis.verdicts import (
    CONTRADICTED,
    SUPPORTED,
    UNDECIDED,
    TimeToTarget,
    Verdict,
    combine,
    combine_any,
    interval_verdict,
    ratio_interval,
    ratio_interval_at,
    ratio_verdict,
    reproduce_verdict,
    time_to_target,
)
from tests.synthetic_store import write_run

T = [0, 100, 200, 300, 400]


def curves(*runs: list[float]) -> pd.DataFrame:
    """Curve-table rows of one condition: one run per list of evaluation returns at T."""
    rows = [
        {"run_id": f"r{seed}", "seed": seed, "timesteps": t, "eval_return_mean": y}
        for seed, ys in enumerate(runs)
        for t, y in zip(T, ys, strict=False)
    ]
    return pd.DataFrame(rows)


def test_a_censored_run_counts_as_censored_not_dropped_nor_a_switch_of_estimator() -> None:
    """Five runs; four reach 10 at 100, 200, 300, 400 and one never does (censored at its budget,
    400). The Kaplan-Meier S(t) steps 4/5, 3/5, 2/5 at 100, 200, 300: the median is 300, not "> 400"
    (one run short of the score does not make the cell unbounded) and not the median of the four
    that got there (250: dropping the censored run). The interval at 5 runs is first to last run,
    the censored one at +inf above."""
    tt = time_to_target(
        curves([0, 10, 10, 10, 10], [0, 0, 10, 10, 10], [0, 0, 0, 10, 10], [0, 0, 0, 0, 10], [0, 0, 0, 0, 0]),
        10.0,
    )
    assert (tt.point, tt.low, tt.high) == (300.0, 100.0, np.inf)
    assert tt.n_reached == 4 and tt.censored and tt.last == 400.0
    assert tt.cell_text() == "300 [100, > 400]; reached 4/5 [0.28, 0.99]"
    # The same estimator where every run got there: no share beside it.
    every = time_to_target(curves([0, 10, 10, 10, 10], [0, 0, 10, 10, 10], [0, 0, 0, 10, 10]), 10.0)
    assert (every.point, every.low, every.high) == (
        200.0,
        100.0,
        300.0,
    ) and every.cell_text() == "200 [100, 300]"


def test_a_run_stopped_at_the_target_gives_its_first_confirmed_time() -> None:
    """A run that stopped at 200 having confirmed 10 there gives 200; one whose confirmation fell
    short at 100 (9 < 10) counts from its next confirmed point, 200, not from its evaluation."""
    rows = curves([0, 10, 10], [0, 11, 12, 12])
    rows["confirm_return_mean"] = np.nan
    rows.loc[(rows["run_id"] == "r1") & (rows["timesteps"] == 100), "confirm_return_mean"] = 9.0
    tt = time_to_target(rows, 10.0, stopped={"r0"})
    assert tt.times == (100.0, 200.0) and tt.arrived == (True, True)


def test_ratio_over_a_constant_is_the_time_over_it() -> None:
    tt = time_to_target(curves([0, 10, 10, 10, 10], [0, 0, 10, 10, 10], [0, 0, 0, 10, 10]), 10.0)
    ri = ratio_interval(tt, 20.0)
    assert (ri.point, ri.low, ri.high) == (10.0, 5.0, 15.0)
    assert ratio_interval_at(tt, 20.0, 0.5) == (5.0, 15.0, 0.75)  # 3 runs: at most 75%


def test_ratio_over_our_baseline_carries_both_sides() -> None:
    """Our baseline's runs reach at 100 and 200: its side's interval is [100, 200], so the ratio runs
    from ES low / 200 to ES high / 100; its coverage at 3 and 2 runs is exact by ranks."""
    es = time_to_target(curves([0, 10, 10, 10, 10], [0, 0, 10, 10, 10], [0, 0, 0, 10, 10]), 10.0)
    base = time_to_target(curves([0, 10, 10], [0, 0, 10]), 10.0)
    ri = ratio_interval(es, base)
    assert (ri.low, ri.high) == (100.0 / 200.0, 300.0 / 100.0)
    assert (
        ri.point
        == time_ratio(np.array(es.times), np.array(es.arrived), np.array(base.times), np.array(base.arrived))[
            0
        ]
    )
    # P(ES's max over its median below the baseline's min over its): 1 / C(5, 3) = 0.1 each side.
    assert ratio_interval_at(es, base, 0.95)[2] == pytest.approx(time_ratio_level(3, 2)) == pytest.approx(0.8)


def _tt(times: list[float], arrived: list[bool]) -> TimeToTarget:
    t, a = np.array(times), np.array(arrived)
    point, low, high = time_to_score(t, a)
    last = float(t[~a].max()) if (~a).any() else float(t.max())
    return TimeToTarget(point, low, high, last, len(t), tuple(times), tuple(arrived))


@pytest.mark.parametrize(
    ("case", "limit", "word"),
    [
        (_tt([80, 100, 120], [True] * 3), 7.0, SUPPORTED),  # [4, 6] below 7
        (_tt([80, 100, 120], [True] * 3), 3.0, CONTRADICTED),  # [4, 6] above 3
        (_tt([80, 100, 120], [True] * 3), 5.0, UNDECIDED),  # straddles
        (_tt([80, 100, 200], [True, True, False]), 20.0, UNDECIDED),  # [4, > 10]: open above
        (_tt([200, 200, 200], [False] * 3), 5.0, CONTRADICTED),  # [10, > 10]: all past the limit
    ],
)
def test_ratio_verdict_cases(case: TimeToTarget, limit: float, word: str) -> None:
    assert ratio_verdict(ratio_interval(case, 20.0), limit, 20.0).word == word


@pytest.mark.parametrize(
    ("case", "paper", "word", "note"),
    [
        (_tt([80, 100, 120], [True] * 3), 5.0, SUPPORTED, ""),  # [4, 6] contains 5
        (
            _tt([80, 100, 120], [True] * 3),
            7.0,
            CONTRADICTED,
            "ours faster than the paper's ES: 5 [4, 6] vs 7",
        ),
        (
            _tt([80, 100, 120], [True] * 3),
            3.0,
            CONTRADICTED,
            "ours slower than the paper's ES: 5 [4, 6] vs 3",
        ),
        (_tt([80, 100, 200], [True, True, False]), 7.0, UNDECIDED, "is open above"),
        (_tt([200, 200, 200], [False] * 3), 7.0, CONTRADICTED, "ours slower"),  # >= 200 / 20 = 10
        (_tt([100], [True]), 5.0, UNDECIDED, "needs at least 2 seeds"),
    ],
)
def test_reproduce_verdict_cases(case: TimeToTarget, paper: float, word: str, note: str) -> None:
    verdict = reproduce_verdict(ratio_interval(case, 20.0), paper)
    assert verdict.word == word and note in verdict.decide


def test_combine() -> None:
    s, c, i = Verdict(SUPPORTED), Verdict(CONTRADICTED, "slower"), Verdict(UNDECIDED, "needs more")
    assert combine([s, s]).word == SUPPORTED
    assert combine([s, c, i]) == Verdict(CONTRADICTED, "slower")
    assert combine([s, i]) == Verdict(UNDECIDED, "needs more")
    assert combine_any([c, s]).word == SUPPORTED  # "on at least one task"
    assert combine_any([c, c]).word == CONTRADICTED
    assert combine_any([c, i]) == Verdict(UNDECIDED, "needs more")


def test_table1_against_the_paper_curve_on_synthetic_runs(tmp_path: Path) -> None:
    """Hopper-v5: the paper's TRPO targets are 877.45 / 1718.16 / 2561.11 / 3403.46 at 0.729M /
    1.03M / 1.59M / 4.56M TRPO timesteps. Two seeds reach 900 at 1M and 3500 at 5M, never 1718 before
    2M: cells at 25% and 100% are measured, 50% and 75% too; the ratios are hand-computed."""
    ts = [0, 1e6, 2e6, 5e6]
    for seed in (0, 1):
        write_run(tmp_path, "table1", "openai_es", "Hopper-v5", seed, ts, [10.0, 900.0, 2600.0, 3500.0])
    results = load_results(tmp_path / "table1")
    table = table1_paper(results.curves, load_mujoco_reference(), np.random.default_rng(0))
    table = table.set_index("progress_fraction")
    assert table.loc[0.25, "es_timesteps"] == 1e6
    assert table.loc[0.25, "ratio"] == pytest.approx(1e6 / 7.29e5)
    assert table.loc[0.25, "ours_over_paper_es"] == pytest.approx(1e6 / 3.83e5)
    assert table.loc[0.5, "es_timesteps"] == 2e6 and table.loc[0.75, "es_timesteps"] == 2e6
    assert table.loc[1.0, "es_timesteps"] == 5e6
    assert table.loc[1.0, "ratio"] == pytest.approx(5e6 / 4.56e6)
    # Claim A covers Hopper at 100% only ("solve"): 1.1 < 10 with identical seeds (a point interval).
    assert table["claim"].tolist() == ["", "", "", "A"] and table.loc[1.0, "verdict"] == SUPPORTED
    # The paper's own 6.94 there is far above our [1.1, 1.1]: not reproduced, ours faster.
    assert table.loc[1.0, "reproduced"] == CONTRADICTED
    assert table.loc[1.0, "reproduced_note"].startswith(
        "ours faster than the paper's ES: 1.1 [1.1, 1.1] vs 6.94"
    )
    # Censored: a seed that never passes 2000 by 5M at 100% -> "> 5M / 4.56M".
    write_run(tmp_path, "table1", "ars", "Hopper-v5", 0, ts, [10.0, 900.0, 1500.0, 1900.0])
    write_run(tmp_path, "table1", "ars", "Hopper-v5", 1, ts, [10.0, 900.0, 1500.0, 1900.0])
    table = table1_paper(
        load_results(tmp_path / "table1").curves, load_mujoco_reference(), np.random.default_rng(0)
    )
    ars = table[table["es_algo"] == "ars"].set_index("progress_fraction")
    assert np.isposinf(ars.loc[1.0, "es_timesteps"]) and ars.loc[1.0, "es_last_timesteps"] == 5e6
    assert ars.loc[1.0, "verdict"] == UNDECIDED  # 5M < 10 x 4.56M: not yet decided
    assert ars.loc[1.0, "decide"].startswith("needs runs past")
    report = build_report("table1", results_dir=tmp_path, out_dir=tmp_path / "paper", allow_partial=True)
    text = report.read_text()
    assert "Table 1 against the paper's own TRPO curve" in text
    assert "“Generally, we were able to solve the environments in less than 10x penalty" in text
    claim = next(line for line in text.splitlines() if line.startswith("| A (Sec. 4.1)"))
    assert "(ars)" in claim and "holds here vs the paper's TRPO: **undecided**" in claim


@pytest.mark.parametrize(
    ("low", "high", "at_least", "n", "word"),
    [
        (0.85, 0.95, True, 3, SUPPORTED),  # efficiency >= 0.8 over the whole interval
        (0.5, 0.7, True, 3, CONTRADICTED),  # all below 0.8
        (0.7, 0.9, True, 3, UNDECIDED),  # straddles
        (0.85, 0.95, True, 1, UNDECIDED),  # one seed: no interval
        (0.2, 0.4, False, 3, SUPPORTED),  # "below 0.8"
    ],
)
def test_interval_verdict_cases(low: float, high: float, at_least: bool, n: int, word: str) -> None:
    verdict = interval_verdict((low + high) / 2, low, high, 0.8, at_least, n, "seeds")
    assert verdict.word == word
    if word == UNDECIDED:
        assert verdict.decide.startswith("the interval [0.7, 0.9] straddles 0.8: more seeds (now 3)") or (
            verdict.decide == "needs at least 2 seeds for an interval (has 1)"
        )


def _atari_runs(games: dict[str, tuple[list[float], list[float]]]) -> pd.DataFrame:
    rows = [
        {"env_id": g, "algo": algo, "final_eval_return": v}
        for g, (es, rl) in games.items()
        for algo, values in (("openai_es", es), ("a2c", rl))
        for v in values
    ]
    return pd.DataFrame(rows)


def test_table2_report_labels_its_question_and_decides_the_claim(tmp_path: Path) -> None:
    """Paper on Pong, Breakout, Seaquest: ES FF beats A3C FF on 1 of 3 (fewer than half). Ours, three
    seeds a side, far apart: every game decided by its Welch interval, ES winning Pong only -> a
    share of exactly 1/3 of the games, none undecided: supported."""
    games = {"ALE/Pong-v5": ([20, 21, 20.5], [-21, -20, -20.5]),
             "ALE/Breakout-v5": ([1, 2, 1.5], [30, 31, 30.5]),
             "ALE/Seaquest-v5": ([100, 110, 105], [500, 510, 505])}  # fmt: skip
    for env_id, (es, rl) in games.items():
        for seed in (0, 1, 2):
            for algo, values in (("openai_es", es), ("a2c", rl)):
                write_run(
                    tmp_path, "table2", algo, env_id, seed, [0, 100], [0.0, values[seed]], env_kind="atari"
                )
    text = build_report("table2", tmp_path, tmp_path / "paper").read_text()
    assert "*Question answered: at our budget, does ES end up with a higher score" in text
    claim = next(line for line in text.splitlines() if "ES beats A3C on 23 of 51 games" in line)
    assert (
        "| 1 win, 2 losses on these games | 1 win, 2 losses, 0 ties, 0 undecided of 3; share of the games "
        "won 0.333 to 0.333" in claim
    )
    assert (
        "fewest seeds on a side of a game: 3" in claim
        and "| supported (claim: ES wins on fewer than half" in claim
    )
