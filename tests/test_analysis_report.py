"""End to end: `esbench report` (analysis.cli.main) on synthetic results stores."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest
from omegaconf import OmegaConf

from esbench.analysis.cli import main
from esbench.analysis.load import load_results
from esbench.analysis.report import build_report
from tests.synthetic_store import write_run

T = np.arange(0, 1001, 250)
ES_T = np.arange(0, 2001, 250)


def _table1_store(root, es_seeds=(0, 1), missing_trpo_seed=None):
    for seed, off in ((0, 5.0), (1, -5.0)):
        write_run(
            root, "table1", "trpo", "Hopper-v5", seed, T, 0.1 * T + off, complete=seed != missing_trpo_seed
        )
    for seed in es_seeds:
        write_run(root, "table1", "openai_es", "Hopper-v5", seed, ES_T, np.minimum(0.2 * ES_T, 60) + seed)


def test_report_table1_writes_tables_figures_and_report(tmp_path, capsys) -> None:
    _table1_store(tmp_path / "runs")
    rc = main(["table1", f"results_dir={tmp_path / 'runs'}", f"out_dir={tmp_path / 'paper'}"])
    assert rc == 0
    out = tmp_path / "paper" / "table1"
    for suffix in ("md", "tex", "csv"):
        assert (out / "tables" / f"table1.{suffix}").is_file()
    for stem in ("data_efficiency", "curves_timesteps", "curves_wall_clock_s"):
        for suffix in ("png", "pdf"):
            assert (out / "figures" / f"{stem}.{suffix}").stat().st_size > 0
    report = (out / "REPORT.md").read_text()
    assert "Scale: smoke" in report and "CPU cores: 2" in report and "testhost" in report
    assert "0123456789abcdef" in report and "| numpy | 2.0.0 |" in report
    assert "**Claim A** (Section 4.1): “Generally, we were able to solve the environments" in report
    assert "![" in report and "figures/data_efficiency.png" in report
    assert "> 2.7" in report  # censored, never invented
    assert r"\toprule" in (out / "tables" / "table1.tex").read_text()


def test_report_is_byte_reproducible(tmp_path) -> None:
    _table1_store(tmp_path / "runs")
    a = build_report("table1", tmp_path / "runs", tmp_path / "a", seed=3).parent
    b = build_report("table1", tmp_path / "runs", tmp_path / "b", seed=3).parent
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files and files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    for rel in files:
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel


def test_bad_target_exits_2_with_one_line(tmp_path, capsys) -> None:
    assert main(["tabel1", f"results_dir={tmp_path}"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "table1, table2, frameskip, scaling, curves" in err


def test_missing_runs_exit_2_unless_allow_partial(tmp_path, capsys) -> None:
    _table1_store(tmp_path / "runs", missing_trpo_seed=1)
    args = ["table1", f"results_dir={tmp_path / 'runs'}", f"out_dir={tmp_path / 'paper'}"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "trpo/Hopper-v5: 1 seed(s), 1 missing run(s)" in err and "openai_es/Hopper-v5: 2 seed(s)" in err
    assert main([*args, "--allow-partial"]) == 0
    report = (tmp_path / "paper" / "table1" / "REPORT.md").read_text()
    assert "Partial results" in report and "trpo/Hopper-v5" in report
    assert "Hopper *" in (tmp_path / "paper" / "table1" / "tables" / "table1.md").read_text()


def test_unequal_seeds_raise(tmp_path) -> None:
    from esbench.analysis.stats import IncompleteResultsError

    _table1_store(tmp_path / "runs", es_seeds=(0, 1, 2))
    with pytest.raises(IncompleteResultsError, match="openai_es/Hopper-v5: 3 seed"):
        build_report("table1", tmp_path / "runs", tmp_path / "paper")


def _renamed(run_dir, new_dir):
    """Move a run directory and give it the new directory's name as its run id."""
    run_dir.rename(new_dir)
    cfg = OmegaConf.load(new_dir / "config.yaml")
    cfg.run_id = new_dir.name
    OmegaConf.save(cfg, new_dir / "config.yaml")
    return new_dir


def test_an_older_run_of_the_same_seed_is_superseded_not_counted(tmp_path) -> None:
    runs = tmp_path / "runs"
    _table1_store(runs)
    old = runs / "table1" / "openai_es-hopper-fs4-w1-s0"
    # The same seed again under another run id (as after a version that changed run ids),
    # finished later and with other numbers, and a killed attempt of it (no summary.json).
    rerun = _renamed(
        write_run(tmp_path / "other", "table1", "openai_es", "Hopper-v5", 0, ES_T, np.full(len(ES_T), 500.0)),
        runs / "table1" / "openai_es-hopper-v5-s0-0a1b2c3d",
    )
    later = (old / "summary.json").stat().st_mtime + 60
    os.utime(rerun / "summary.json", (later, later))
    killed = runs / "table1" / "openai_es-hopper-v5-s0-99999999"
    _renamed(shutil.copytree(old, tmp_path / "copy"), killed)
    (killed / "summary.json").unlink()

    results = load_results(runs)
    assert sorted(results.superseded["path"]) == sorted([str(old), str(killed)])
    es = results.complete[results.complete["algo"] == "openai_es"]
    assert sorted(es["seed"]) == [0, 1]  # two seeds, not three runs
    assert float(es.loc[es["seed"] == 0, "final_eval_return"].iloc[0]) == 500.0  # the newer run's

    report = build_report("table1", runs, tmp_path / "paper").read_text()  # no missing run either
    assert "Superseded, not used: 2 run(s)" in report and "openai_es-hopper-v5-s0-99999999" in report


def test_frameskip_scaling_and_path_targets(tmp_path) -> None:
    runs = tmp_path / "runs"
    for fs in (1, 2, 4):
        for s in (0, 1):
            es = [-21, -10, 0, 5, 10 + s]
            rl = [-21, -15, -10, -5, -5 * fs + s]
            write_run(
                runs, "frameskip", "openai_es", "ALE/Pong-v5", s, T, es, env_kind="atari", frame_skip=fs
            )
            write_run(runs, "frameskip", "a2c", "ALE/Pong-v5", s, T, rl, env_kind="atari", frame_skip=fs)
    for w in (1, 2):
        for s in (0, 1):
            write_run(
                runs,
                "scaling",
                "openai_es",
                "Hopper-v5",
                s,
                T,
                0.1 * T + s,
                workers=w,
                wall_clock_s=T / 100 / w + 1,
            )
    fs_report = build_report("frameskip", runs, tmp_path / "paper").read_text()
    # ES ends at 10 or 11 at every frame skip, 2 seeds: the Bonferroni-adjusted Welch intervals
    # (+-5.4) straddle the +-3.5 margin (10% of Pong's human - random span): undecided.
    claim = next(
        line for line in fs_report.splitlines() if "learns about equally at every frame skip" in line
    )
    assert "fewest seeds 2" in claim and "| undecided: " in claim and "more seeds (now 2)" in claim
    assert (tmp_path / "paper" / "frameskip" / "figures" / "frameskip.pdf").is_file()
    sc_report = build_report("scaling", runs, tmp_path / "paper").read_text()
    assert "ES speeds up linearly with cores" in sc_report
    # Both seeds reach the threshold 100 at t=1000: 11 s on 1 worker, 6 s on 2 -> efficiency
    # (11 / 6) / 2 = 0.917 for each seed, paired: no spread, supported over 1 to 2 workers; the
    # paper's 18-to-1,440-core efficiency is not measured here.
    claim = next(line for line in sc_report.splitlines() if "ES speeds up linearly with cores" in line)
    assert (
        "efficiency per worker (time, geometric mean over 2 seeds paired) 0.92 [95% CI 0.92, 0.92]" in claim
    )
    assert "holds here (near-linear: efficiency >= 0.8 over 1 to 2 workers): supported" in claim
    assert "reproduces the paper's number (efficiency 0.82 over 18 to 1,440 cores, 80x): undecided" in claim
    assert "Efficiency intervals: Student-t interval of the mean over seeds of log(efficiency)" in sc_report
    assert (tmp_path / "paper" / "scaling" / "figures" / "scaling.png").is_file()
    path_report = build_report(str(runs / "scaling"), runs, tmp_path / "paper")
    assert path_report.parent.name == "scaling_curves"
    assert "No claim of the paper" in path_report.read_text()


def test_stopped_es_runs_count_as_reached_in_every_table_and_claim(tmp_path) -> None:
    """Three ES seeds that stopped at their target (budget.stop_at_return) at t = 500, 750 and 250
    (scores 100, 110, 105), against two full TRPO runs on Swimmer (targets 25/50/75/100 at TRPO
    timesteps 250/500/750/1000). Each run's first confirmed time at the targets: (250, 250, 250),
    (250, 500, 250), (500, 500, 250) and (500, 750, 250), so the Kaplan-Meier medians are 250, 250,
    500, 500, with the interval first to last run at 3 seeds ([250, 750] at 100). Nothing is held
    past a stop and no estimator switches: the same reading as for runs that never stop."""
    for seed in (0, 1):
        write_run(tmp_path, "table1", "trpo", "Swimmer-v5", seed, T, 0.1 * T)
    stops = {0: ([0, 250, 500], [0.0, 50.0, 100.0]), 1: ([0, 250, 500, 750], [0.0, 40.0, 80.0, 110.0]),
             2: ([0, 250], [0.0, 105.0])}  # fmt: skip
    for seed, (ts, ys) in stops.items():
        write_run(tmp_path, "table1", "openai_es", "Swimmer-v5", seed, ts, ys, stopped_at_return=True)
    report = build_report("table1", tmp_path, tmp_path / "paper", allow_partial=True)
    tables = report.parent / "tables"
    import pandas as pd

    table = pd.read_csv(tables / "table1.csv").set_index("progress_fraction")
    assert table["es_timesteps"].tolist() == [250.0, 250.0, 500.0, 500.0]
    assert not table["censored"].any() and table.loc[1.0, "es_last_timesteps"] == 750.0
    assert (table.loc[1.0, "es_low"], table.loc[1.0, "es_high"], table.loc[1.0, "ratio"]) == (
        250.0,
        750.0,
        0.5,
    )
    # Over our TRPO (2 runs, both at 1000): each side at sqrt(0.95) -> [250 / 1000, 750 / 1000].
    assert (table.loc[1.0, "ratio_low"], table.loc[1.0, "ratio_high"]) == (0.25, 0.75)
    # Claim B (<= 1/3 on some simple task): [0.25, 0.75] straddles it.
    assert table.loc[1.0, "claim"] == "B" and table.loc[1.0, "verdict"] == "undecided"
    md = (tables / "table1.md").read_text()
    assert "500 [250, 750]" in md and "‡" not in md
    text = report.read_text()
    claim = next(line for line in text.splitlines() if line.startswith("| B (Sec. 4.1)"))
    assert "over our TRPO: Swimmer: 0.5 [0.25, 0.75]" in claim and "(n=3 ES, 2 TRPO)" in claim
    assert "vs our TRPO: **undecided**: Holm over 4 tasks; Swimmer: no interval on the claim's side" in claim
    # Time to the common score (100: TRPO's best mean): seeds reach it at 500, 750, 250 -> median 500.
    tts = pd.read_csv(tables / "time_to_score.csv").set_index("algo")
    assert tts.loc["openai_es", "target"] == 100.0 and tts.loc["openai_es", "timesteps"] == 500.0
    assert tts.loc["openai_es", "n_reached"] == 3
    # Against the paper's TRPO (Swimmer's targets 42.6 .. 128.25): reached up to 100, and above the
    # seeds' stopping scores censored at a stop, said so.
    paper = pd.read_csv(tables / "table1_paper.csv").set_index("progress_fraction")
    assert np.isfinite(paper.loc[0.25, "es_timesteps"]) and np.isposinf(paper.loc[1.0, "es_timesteps"])
    assert paper.loc[1.0, "stopped_below"] == 3 and paper.loc[1.0, "es_last_timesteps"] == 750.0
    assert paper.loc[1.0, "n_reached_es"] == 0
    assert "| Stopped at target |" in (tables / "summary.md").read_text()


def _modern_curves(es: dict[int, tuple[list[float], list[float]]]):
    """Curve-table rows: TRPO's two seeds reach 25/50/75/100 at 250/500/750/1000 on Swimmer; ES
    seeds as given ((timesteps, returns) per seed)."""
    import pandas as pd

    rows = [
        {"run_id": f"trpo{s}", "seed": s, "algo": "trpo", "env_id": "Swimmer-v5", "env_name": "swimmer",
         "timesteps": t, "eval_return_mean": 0.1 * t}
        for s in (0, 1) for t in T
    ]  # fmt: skip
    rows += [
        {"run_id": f"es{s}", "seed": s, "algo": "openai_es", "env_id": "Swimmer-v5", "env_name": "swimmer",
         "timesteps": t, "eval_return_mean": y}
        for s, (ts, ys) in es.items() for t, y in zip(ts, ys, strict=True)
    ]  # fmt: skip
    return pd.DataFrame(rows)


FAST = ([0, 250, 500, 1000, 2000], [0, 100, 110, 120, 120])  # 100 at 250 (ratio 0.25)
SLOW = ([0, 250, 500, 1000, 1500, 2000], [0, 20, 40, 80, 100, 120])  # 100 at 1500 (ratio 1.5)
SHORT = ([0, 250], [0, 20])  # ends at 250 below 100


def test_a_claim_whose_tasks_have_no_run_is_not_tested_not_undecided(tmp_path) -> None:
    """Runs on a simple task alone (Swimmer): claim B is answered, claim A (Hopper and Walker2d) is
    marked not tested, naming its tasks, in the claims table and the report, instead of reading
    "undecided" as if its data were inconclusive."""
    for seed in range(3):
        write_run(tmp_path, "table1", "openai_es", "Swimmer-v5", seed, T, 0.1 * T + seed)
    report = build_report("table1", tmp_path, tmp_path / "paper")
    text = report.read_text()
    a = next(line for line in text.splitlines() if line.startswith("| A (Sec. 4.1)"))
    b = next(line for line in text.splitlines() if line.startswith("| B (Sec. 4.1)"))
    untested = "— (not tested: no runs on Hopper-v5, Walker2d-v5)"
    assert f"holds here vs the paper's TRPO: {untested}" in a and "undecided" not in a, a
    assert f"paper's number reproduced: {untested}" in a
    assert "not tested" not in b and "holds here vs the paper's TRPO: **" in b, b
    assert "Each answer is supported, contradicted or undecided (or not tested, where no run covers" in text


@pytest.mark.parametrize(
    ("es", "word", "decide", "claim_word"),
    [
        # interval [0.25, 0.25] <= 1/3, but the claim ranges over 4 tasks (Holm): 2 seeds a side
        # cannot give a p-value below 0.05 / 4, so the claim stays undecided
        ({0: FAST, 1: FAST}, "supported", "", "undecided"),
        ({0: SLOW, 1: SLOW}, "contradicted", "", "undecided"),  # [1.5, 1.5] > 1/3, other tasks unrun
        ({0: FAST, 1: SLOW}, "undecided", "more seeds (now 2)", "undecided"),  # straddles 1/3
        (
            {0: SHORT, 1: SHORT},
            "undecided",
            "needs runs past 333 timesteps (the longest censored run ends at 250)",
            "undecided",
        ),
    ],
)
def test_modern_trpo_claim_verdicts(es, word, decide, claim_word) -> None:
    """Claim B (ES/TRPO <= 1/3 on some simple task, at 100%) against our TRPO, decided from the
    ratio's interval over both sides' seeds, a case for each verdict. On Swimmer alone, the claim
    on "some simple task" is supported by Swimmer, but not contradicted: the other three are unrun."""
    from esbench.analysis.table1 import claim_rows, claims_table, load_mujoco_reference, table1, table1_paper

    curves = _modern_curves(es)
    table = table1(curves, rng=np.random.default_rng(0))
    full = table.set_index("progress_fraction").loc[1.0]
    assert full["rl_timesteps"] == 1000.0 and full["claim"] == "B" and full["verdict"] == word
    assert decide in full["decide"]
    claims = claims_table(table1_paper(curves, load_mujoco_reference()), table)
    b = claims.set_index("claim").loc["B"]
    assert b["holds_our_trpo"] == claim_word
    if claim_word == "undecided":
        assert (
            "no runs on HalfCheetah-v5, InvertedDoublePendulum-v5, InvertedPendulum-v5"
            in b["holds_our_trpo_note"]
        )
    row = next(r for r in claim_rows(claims) if r.startswith("| B (Sec. 4.1)"))
    assert f"vs our TRPO: **{claim_word}**" in row and "(n=2 ES, 2 TRPO)" in row


def test_an_algorithm_that_never_beats_its_first_evaluation_is_flat() -> None:
    import pandas as pd

    from esbench.analysis.frameskip import improved

    curves = pd.DataFrame(
        {
            "run_id": ["a", "a", "a", "b", "b"],
            "algo": ["a2c", "a2c", "a2c", "openai_es", "openai_es"],
            "env_id": ["ALE/Pong-v5"] * 5,
            "timesteps": [100, 200, 300, 100, 200],
            "eval_return_mean": [-21.0, -21.0, -21.0, -21.0, -20.0],
        }
    )
    assert not improved(curves[curves["algo"] == "a2c"])
    assert improved(curves[curves["algo"] == "openai_es"])


def test_curves_report_states_the_coverage_of_its_iqm_band_and_median_intervals(tmp_path) -> None:
    """Two tasks, two algorithms, 3 seeds: the IQM band's caption gives its coverage simulated at
    3 seeds x 2 tasks, and the time-to-score table its medians' exact coverage (75%), not 95%."""
    from esbench.analysis.metrics.coverage import iqm_coverage

    for env_id in ("Hopper-v5", "Swimmer-v5"):
        for seed in range(3):
            write_run(tmp_path / "runs", "curves", "trpo", env_id, seed, T, 0.1 * T + seed)
            write_run(tmp_path / "runs", "curves", "openai_es", env_id, seed, T, 0.08 * T + 2 * seed)
    report = build_report("curves", tmp_path / "runs", tmp_path / "paper").read_text()
    expected = f"measured coverage at 3 seeds x 2 tasks: {100 * iqm_coverage(3, 2):.0f}% on 200 simulated"
    assert report.count(expected) == 4  # two figures (timesteps, wall-clock), each alt text and caption
    assert "exact coverage 75% at 3 seeds (no interval of a median over fewer than 6 seeds" in report


def test_provenance_names_the_recipe_scale_beside_the_runs_budget_preset(tmp_path) -> None:
    """A recipe scale that runs another scale's budget preset at more seeds (the decisive retention
    scale runs the mini's preset) is named in the provenance with the runs' preset, kept in
    data/ (a report rendered again from it says the same); where the two agree, or the report was
    made by ``esbench report``, the line is the runs' preset alone."""
    from esbench.analysis.report import render_report
    from esbench.analysis.report_check import check_report

    runs = tmp_path / "runs"
    for seed in range(2):
        write_run(runs, "table1", "openai_es", "Swimmer-v5", seed, T, 0.1 * T + seed, scale="mini")
    line = (
        "- Scale: decisive (`esbench reproduce ... scale=decisive`); "
        "the runs' budget preset (budget.scale): mini"
    )
    made = build_report("table1", runs, tmp_path / "a", recipe_scale="decisive")
    assert line in made.read_text().splitlines()
    assert check_report(made.parent).ok
    copy = tmp_path / "copy" / "table1"
    shutil.copytree(made.parent / "data", copy / "data")
    assert line in render_report(copy).read_text().splitlines()
    for recipe_scale in ("mini", None):
        text = build_report("table1", runs, tmp_path / "b", recipe_scale=recipe_scale).read_text()
        assert "- Scale: mini" in text.splitlines() and "scale=decisive" not in text


def test_an_interval_on_one_evaluation_point_is_explained(tmp_path) -> None:
    """Three seeds that all pass every Swimmer target at their first evaluation after 0 give ES
    intervals [250, 250]: the table's notes say why (a time is an evaluation point, resolved only
    to the spacing between evaluations), in both Table 1 tables."""
    for seed in range(3):
        write_run(tmp_path, "table1", "openai_es", "Swimmer-v5", seed, T, [0.0] + [400.0 + seed] * 4)
        write_run(tmp_path, "table1", "trpo", "Swimmer-v5", seed, T, 0.1 * T + seed)
    report = build_report("table1", tmp_path, tmp_path / "paper")
    tables = report.parent / "tables"
    for name in ("table1_paper", "table1"):
        md = (tables / f"{name}.md").read_text()
        assert "250 [250, 250]" in md, name
        assert "resolved only to the spacing between evaluations ([x, x]: every run got there between" in md
