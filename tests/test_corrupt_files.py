"""Files that fail loudly: a truncated or corrupt run file gives one line naming it and what to do.

`esbench run` reads a run's checkpoint (to resume) and its summary (to skip a complete run): a bad
one stops the run with one line and status 2, never a traceback. `esbench report` reads config.yaml,
summary.json and metrics.csv of every run: a bad one leaves that run out with one warning naming
the file, and the report's provenance lists it; its numbers are never counted, not even as NaN.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from esbench.analysis.cli import main as report_main
from esbench.analysis.load import load_results
from esbench.config.compose import compose_run_config
from esbench.runner import default_run_id
from esbench.tracking.schema import CHECKPOINT_FILE, CONFIG_FILE, METRICS_FILE, SUMMARY_FILE
from esbench.training.checkpoint import Checkpoint
from esbench.training.sb3_checkpoint import CHECKPOINT_TYPES, digest
from esbench.utils import statefile
from tests.conftest import SMALL, esbench, only_run_dir, read_run
from tests.synthetic_store import write_run

ES_RUN = ["algo=openai_es", "env=inverted_pendulum", "budget=smoke", "budget.timesteps=3000", *SMALL]
RL_RUN = ["algo=dqn", "env=cartpole", "budget=smoke", "budget.timesteps=3000", *SMALL[:2]]


def _refusal(proc: subprocess.CompletedProcess[str]) -> str:
    """The one error line of a run that stopped with status 2 and no traceback."""
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("esbench: error:")]
    assert len(errors) == 1, proc.stderr[-3000:]
    return errors[0]


@pytest.fixture(scope="module")
def finished_es_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A complete ES run (real CLI, real MuJoCo) whose directory each test copies and damages."""
    root = tmp_path_factory.mktemp("es-run")
    esbench("run", *ES_RUN, f"results_dir={root}", "checkpoint_every=1")
    return root


def _copy(src_root: Path, dst_root: Path) -> Path:
    shutil.copytree(src_root, dst_root)
    return only_run_dir(dst_root)


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _garbage(path: Path) -> None:
    path.write_bytes(np.random.default_rng(0).bytes(4096))


# --- esbench run ----------------------------------------------------------------------------------


@pytest.mark.parametrize("damage", [_truncate, _garbage], ids=["truncated", "garbage"])
def test_a_damaged_es_checkpoint_stops_the_run_with_one_line(
    finished_es_run: Path, tmp_path: Path, damage: Callable[[Path], None]
) -> None:
    run_dir = _copy(finished_es_run, tmp_path / "results")
    (run_dir / SUMMARY_FILE).unlink()  # a killed run: it resumes from its checkpoint
    damage(run_dir / CHECKPOINT_FILE)
    proc = esbench("run", *ES_RUN, f"results_dir={tmp_path / 'results'}", check=False)
    line = _refusal(proc)
    reason = "truncated or corrupt archive" if damage is _truncate else "not an esbench state file"
    assert line.startswith(f"esbench: error: checkpoint {run_dir / CHECKPOINT_FILE} is unreadable ({reason}")
    assert line.endswith("; run again with resume=false to start over")


def test_resume_false_starts_over_from_a_damaged_checkpoint(finished_es_run: Path, tmp_path: Path) -> None:
    run_dir = _copy(finished_es_run, tmp_path / "results")
    (run_dir / SUMMARY_FILE).unlink()
    _truncate(run_dir / CHECKPOINT_FILE)
    esbench("run", *ES_RUN, f"results_dir={tmp_path / 'results'}", "resume=false")  # the advice works
    again, first = read_run(run_dir), read_run(only_run_dir(finished_es_run))
    assert again[1]["params_sha256"] == first[1]["params_sha256"]  # the same run, from scratch
    assert again[0].equals(first[0])


@pytest.mark.parametrize("damage", [_truncate, _garbage], ids=["truncated", "garbage"])
def test_a_damaged_summary_stops_the_run_with_one_line(
    finished_es_run: Path, tmp_path: Path, damage: Callable[[Path], None]
) -> None:
    run_dir = _copy(finished_es_run, tmp_path / "results")
    damage(run_dir / SUMMARY_FILE)
    proc = esbench("run", *ES_RUN, f"results_dir={tmp_path / 'results'}", check=False)
    line = _refusal(proc)
    assert line.startswith(f"esbench: error: summary {run_dir / SUMMARY_FILE} is unreadable (")
    assert line.endswith("; run again with resume=false to run it anew")


def _rl_run_dir(results: Path) -> Path:
    cfg = compose_run_config([*RL_RUN, f"results_dir={results}"])
    run_dir = results / str(cfg.experiment) / default_run_id(cfg)
    run_dir.mkdir(parents=True)
    return run_dir


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (
            lambda: Checkpoint(b"garbage", digest(b"garbage"), 0),
            "its snapshot: not an esbench state file",
        ),
        (lambda: Checkpoint(b"x", "0" * 64, 0), "its snapshot does not match its digest"),
    ],
    ids=["bad-snapshot", "bad-digest"],
)
def test_a_damaged_baseline_checkpoint_stops_the_run_with_one_line(
    tmp_path: Path, content: Callable[[], Checkpoint], reason: str
) -> None:
    run_dir = _rl_run_dir(tmp_path)
    statefile.save(run_dir / CHECKPOINT_FILE, content(), CHECKPOINT_TYPES)
    proc = esbench("run", *RL_RUN, f"results_dir={tmp_path}", check=False)
    line = _refusal(proc)
    assert line.startswith(f"esbench: error: checkpoint {run_dir / CHECKPOINT_FILE} is unreadable ({reason}")


def test_an_es_checkpoint_where_a_baseline_one_belongs_is_refused(
    finished_es_run: Path, tmp_path: Path
) -> None:
    run_dir = _rl_run_dir(tmp_path)
    shutil.copy(only_run_dir(finished_es_run) / CHECKPOINT_FILE, run_dir / CHECKPOINT_FILE)
    proc = esbench("run", *RL_RUN, f"results_dir={tmp_path}", check=False)
    line = _refusal(proc)
    assert "is not allowed here" in line and "esbench.training.es.ESLearnerState" in line


# --- esbench report -------------------------------------------------------------------------------

T = np.arange(0, 1001, 250)


def _store(root: Path) -> dict[str, Path]:
    """Two seeds of TRPO and of ES on Hopper: the smallest table1."""
    runs = {}
    for algo in ("trpo", "openai_es"):
        for seed in (0, 1):
            runs[f"{algo}{seed}"] = write_run(root, "table1", algo, "Hopper-v5", seed, T, 0.1 * T + seed)
    return runs


def _cut_mid_row(path: Path) -> None:
    text = path.read_text()
    path.write_text(text[: text.rindex("\n", 0, len(text) - 1) + 12])  # the last row cut short


def _text_in_numbers(path: Path) -> None:
    lines = path.read_text().splitlines(keepends=True)
    lines[2] = lines[2].replace(",", ",oops", 1)
    path.write_text("".join(lines))


def _truncate_text(path: Path) -> None:
    text = path.read_text()
    path.write_text(text[: len(text) // 2])


CASES = [
    (SUMMARY_FILE, _truncate_text, ""),
    (SUMMARY_FILE, lambda p: p.write_text('{"status": "complete"}\n'), "no final_eval_return"),
    (METRICS_FILE, _cut_mid_row, "truncated: no final newline"),
    (METRICS_FILE, lambda p: p.write_text(p.read_text()[:-1] + ",1\n"), "fields, the header"),
    (METRICS_FILE, _text_in_numbers, "holds text"),
    (METRICS_FILE, lambda p: p.unlink(), "No such file"),
    (CONFIG_FILE, _truncate_text, ""),
    (CONFIG_FILE, lambda p: p.write_text("{{{ not yaml\n"), ""),
]


@pytest.mark.parametrize(
    ("name", "damage", "reason"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_a_damaged_run_file_leaves_the_run_out_of_the_report_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, name: str, damage: Callable[[Path], None], reason: str
) -> None:
    runs = _store(tmp_path / "runs")
    bad = runs["openai_es1"]
    damage(bad / name)
    with caplog.at_level(logging.WARNING, logger="esbench"):
        results = load_results(tmp_path / "runs")
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "\n" not in warnings[0], warnings
    assert warnings[0].startswith(f"{bad / name} is unreadable (") and reason in warnings[0], warnings
    assert warnings[0].endswith("run it again with resume=false, or delete its directory")
    # never counted: not complete, no numbers from it in the curves
    assert str(bad) not in set(results.complete["path"])
    assert len(results.complete) == 3
    assert set(results.curves["run_id"]) == {p.name for k, p in runs.items() if k != "openai_es1"}
    assert list(results.unreadable["path"]) == [str(bad)] and list(results.unreadable["file"]) == [name]

    out = tmp_path / "paper"
    caplog.clear()
    assert (
        report_main(["table1", f"results_dir={tmp_path / 'runs'}", f"out_dir={out}", "--allow-partial"]) == 0
    )
    report = (out / "table1" / "REPORT.md").read_text()
    assert "- Runs: 3 complete, 0 missing (no summary.json), 1 unreadable" in report
    listed = [line for line in report.splitlines() if line.startswith("- Unreadable, not used: 1 run(s)")]
    assert len(listed) == 1 and bad.name in listed[0] and f"({name}: " in listed[0], report


def test_the_report_cli_warns_in_one_line_and_still_writes_the_report(tmp_path: Path) -> None:
    runs = _store(tmp_path / "runs")
    _truncate_text(runs["trpo0"] / SUMMARY_FILE)
    proc = esbench(
        "report",
        "table1",
        f"results_dir={tmp_path / 'runs'}",
        f"out_dir={tmp_path / 'paper'}",
        "--allow-partial",
    )
    assert "Traceback" not in proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if "unreadable" in line]
    assert len(warnings) == 1, proc.stderr
    assert warnings[0].startswith(f"esbench: WARNING: {runs['trpo0'] / SUMMARY_FILE} is unreadable (")
    assert warnings[0].endswith(
        "): the run is left out; run it again with resume=false, or delete its directory"
    )
    assert "Unreadable, not used: 1 run(s)" in (tmp_path / "paper" / "table1" / "REPORT.md").read_text()
