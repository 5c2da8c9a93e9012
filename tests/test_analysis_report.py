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
    assert "Hopper: ES needs < 10x TRPO's timesteps" in report
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
    assert "less sensitive to frame-skip than RL" in fs_report and "supported" in fs_report
    assert (tmp_path / "paper" / "frameskip" / "figures" / "frameskip.pdf").is_file()
    sc_report = build_report("scaling", runs, tmp_path / "paper").read_text()
    assert "linear speedup with workers" in sc_report
    assert (tmp_path / "paper" / "scaling" / "figures" / "scaling.png").is_file()
    path_report = build_report(str(runs / "scaling"), runs, tmp_path / "paper")
    assert path_report.parent.name == "scaling_curves"
    assert "No claim of the paper" in path_report.read_text()


def _claim_rows(ratios, censored, bounds):
    import pandas as pd

    return pd.DataFrame(
        {
            "env_name": "Swimmer",
            "progress_fraction": [0.25, 0.5, 0.75, 1.0],
            "ratio": ratios,
            "censored": censored,
            "ratio_bound": bounds,
            "ratio_text": ["x"] * 4,
            "paper_ratio": [0.56, 0.47, 0.53, 0.3],
        }
    )


@pytest.mark.parametrize(
    ("ratios", "censored", "bounds", "verdict"),
    [
        ([0.5, 0.6, 0.7, 0.9], [False] * 4, [np.nan] * 4, "| supported |"),
        ([0.5, 0.6, 0.7, 1.5], [False] * 4, [np.nan] * 4, "| not supported |"),
        ([0.5, 0.6, 0.7, np.nan], [False, False, False, True], [np.nan] * 3 + [1.2], "| not supported |"),
        ([0.5, 0.6, 0.7, np.nan], [False, False, False, True], [np.nan] * 3 + [0.8], "| inconclusive |"),
        ([np.nan] * 4, [False] * 4, [np.nan] * 4, "| inconclusive |"),  # TRPO made no progress
    ],
)
def test_easy_task_claim_verdicts(ratios, censored, bounds, verdict) -> None:
    from esbench.analysis.report import _table1_claim

    row = _table1_claim("Swimmer-v5", _claim_rows(ratios, censored, bounds))
    assert row.endswith(verdict), row


def test_an_algorithm_that_never_beats_its_first_evaluation_is_flat() -> None:
    import pandas as pd

    from esbench.analysis.report import _improved

    curves = pd.DataFrame(
        {
            "run_id": ["a", "a", "a", "b", "b"],
            "algo": ["a2c", "a2c", "a2c", "openai_es", "openai_es"],
            "env_id": ["ALE/Pong-v5"] * 5,
            "timesteps": [100, 200, 300, 100, 200],
            "eval_return_mean": [-21.0, -21.0, -21.0, -21.0, -20.0],
        }
    )
    assert not _improved(curves, "a2c", "ALE/Pong-v5")
    assert _improved(curves, "openai_es", "ALE/Pong-v5")
